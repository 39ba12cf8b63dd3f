import CouchbaseLite
import CouchbaseLiteSwift
import Fleece
import Foundation
import JSONCore
import SQLiteKit

/// The reading side of the conversion: one pass over the 1.x `revs` rows (grouped by document,
/// winner first), each winning body re-encoded from JSON text straight to Fleece, each rev tree
/// serialized straight from the text revision IDs of the winner's history as the 1.x
/// ``CouchbaseLite/RevsTableTree`` walks it, rows handed to the writer in batches (`RowBatch`).
/// Per-document scratch buffers are reused. Runs on its own thread while the caller's thread
/// inserts rows.
struct DocumentConverter {
    let source: LegacySource
    let sharedKeys: SharedKeys
    let blobStore: BlobStore
    let options: UpgradeOptions
    /// Documents in the source (for progress).
    private(set) var total = 0

    private var encoder: FleeceEncoder
    /// The current document's `revs` rows, winner first (the statement's order).
    private var nodes: [RevsTableTree.Node] = []
    private var tree: [UInt8] = []
    private var docIDBytes: [UInt8] = []
    private var winnerBody: [UInt8]?
    private var winnerNoAttachments: Int64?
    private var winnerExpiry: Int64?
    private var designJSON: [UInt8]?
    private var copiedBlobs: Set<[UInt8]> = []

    private var batch = RowBatch()
    private static let batchSize = 256

    init(source: LegacySource, output: DataFile, options: UpgradeOptions) {
        self.source = source
        self.sharedKeys = output.sharedKeys
        self.blobStore = output.blobStore
        self.options = options
        self.encoder = FleeceEncoder(sharedKeys: output.sharedKeys)
        tree.reserveCapacity(4096)
        nodes.reserveCapacity(16)
    }

    private var docID: String { String(decoding: docIDBytes, as: UTF8.self) }

    // MARK: Documents

    /// Converts every document into batches pushed to `queue`; stops early (returning) when the
    /// writer cancels. Returns how many source documents were read.
    @discardableResult
    mutating func convertDocuments(into report: inout UpgradeReport, queue: HandOffQueue<RowBatch>) throws -> Int {
        total = try source.documentCount()
        return try convert(rows: try source.revisionRows(), into: &report, queue: queue)
    }

    /// Converts the documents of `rows` (``LegacySource/revisionRows(ofDocuments:)``) into one
    /// batch, returned (a catch-up batch: the caller writes it in one transaction).
    mutating func convertBatch(rows: SQLiteStatement, into report: inout UpgradeReport) throws -> RowBatch {
        try convert(rows: rows, into: &report, queue: nil)
        defer { batch = RowBatch() }
        return batch
    }

    /// The one per-document loop: with a `queue`, batches are handed over as they fill; without,
    /// every row stays in `batch`.
    @discardableResult
    private mutating func convert(rows stmt: SQLiteStatement, into report: inout UpgradeReport,
                                  queue: HandOffQueue<RowBatch>?) throws -> Int {
        var currentDoc: Int64?
        var done = 0
        while try stmt.step() {
            let docRow = stmt.int64(0)
            if docRow != currentDoc {
                if currentDoc != nil {
                    try flushDocument(into: &report)
                    done += 1
                    if let queue, batch.entries.count >= Self.batchSize {
                        guard deliver(sourceDocumentsRead: done, to: queue) else { return done }
                    }
                }
                currentDoc = docRow
                nodes.removeAll(keepingCapacity: true)
                winnerBody = nil; winnerNoAttachments = nil; winnerExpiry = nil; designJSON = nil
                docIDBytes.removeAll(keepingCapacity: true)
                stmt.withBytes(1) { if let b = $0 { docIDBytes.append(contentsOf: b) } }
            }
            let current = stmt.int64(5) != 0
            let row = RevsTableTree.Node(sequence: stmt.int64(2), revID: stmt.string(3) ?? "",
                                      parent: stmt.isNull(4) ? nil : stmt.int64(4), current: current,
                                      deleted: stmt.int64(6) != 0)
            if nodes.isEmpty && current {
                winnerNoAttachments = stmt.isNull(8) ? nil : stmt.int64(8)
                winnerExpiry = stmt.isNull(9) ? nil : stmt.int64(9)
                if docIDBytes.first == UInt8(ascii: "_") {
                    if docIDBytes.starts(with: "_design/".utf8) { designJSON = stmt.bytes(7) }
                } else {
                    try stmt.withBytes(7) { try encodeWinnerBody($0, deleted: row.deleted) }
                }
            }
            nodes.append(row)
        }
        if currentDoc != nil {
            try flushDocument(into: &report)
            done += 1
        }
        if let queue { _ = deliver(sourceDocumentsRead: done, to: queue) }
        return done
    }

    private mutating func deliver(sourceDocumentsRead: Int, to queue: HandOffQueue<RowBatch>) -> Bool {
        batch.sourceDocumentsRead = sourceDocumentsRead
        batch.sourceDocumentsTotal = max(total, sourceDocumentsRead)
        defer { batch = RowBatch() }
        return queue.push(batch)
    }

    /// JSON text → Fleece with the output's shared keys (spec 8.2: "invalid JSON data" aborts).
    private mutating func encodeWinnerBody(_ json: UnsafeRawBufferPointer?, deleted: Bool) throws {
        guard let json, json.contains(where: { !JSONLexer.isWhitespace($0) }) else {
            guard deleted else {
                throw upgradeError(.corruptRevisionData, "the current revision has no body")
            }
            // A tombstone whose body was dropped: an empty dict, as 2.x stores tombstones.
            let emptyObject: [UInt8] = [UInt8(ascii: "{"), UInt8(ascii: "}")]
            try emptyObject.withUnsafeBytes { try encoder.writeJSON($0) }
            winnerBody = try encoder.finish()
            return
        }
        guard json.first(where: { !JSONLexer.isWhitespace($0) }) == UInt8(ascii: "{") else {
            throw upgradeError(.corruptRevisionData, "invalid JSON data (the body is not a JSON object)")
        }
        do {
            try encoder.writeJSON(json)
            winnerBody = try encoder.finish()
        } catch {
            encoder.reset()
            throw upgradeError(.corruptRevisionData, "invalid JSON data (\(error))")
        }
    }

    /// LiteCore's wording (spec 8.2 step 5), naming the document.
    private func upgradeError(_ code: CouchbaseLiteError.Code, _ what: String) -> CouchbaseLiteError {
        CouchbaseLiteError(code, "Error upgrading database: \(what), converting doc \"\(docID)\"")
    }

    private mutating func flushDocument(into report: inout UpgradeReport) throws {
        if docIDBytes.first == UInt8(ascii: "_") {
            report.skippedDocuments.append(.init(docID: docID, reason: "document IDs starting with '_' are not migrated"))
            if let designJSON {
                let views = ((try? JSON.parseObject(designJSON))?["views"] as? [String: Any]).map { $0.keys.sorted() } ?? []
                report.designDocuments.append(.init(docID: docID, views: views))
            } else if docIDBytes.starts(with: "_design/".utf8) {
                report.designDocuments.append(.init(docID: docID, views: []))
            }
            return
        }
        let revisions = RevsTableTree(nodes: nodes)
        guard let winner = revisions.winner, let body = winnerBody else {
            report.skippedDocuments.append(.init(docID: docID, reason: "no current revision"))
            return
        }
        // The statement reads the winner first (its body was encoded then); both orders are the
        // REVID collation's, so they can only disagree in a damaged file.
        guard winner.sequence == nodes.first?.sequence else {
            throw upgradeError(.corruptRevisionData, "the winning revision '\(winner.revID)' is not the first current row")
        }
        if revisions.isInConflict {
            let losers = revisions.leaves.dropFirst().filter { !$0.deleted }
            report.conflictsDropped.append(.init(docID: docID, winningRevisionID: winner.revID,
                                                 losingRevisionIDs: losers.map(\.revID)))
        }
        let hasAttachments = try copyAttachments(body: body, into: &report)

        // The rev tree: winner with body, then its ancestors, bodiless (spec 3.5), at most
        // `maxRevTreeDepth` of them (one more is read to tell whether the history was cut).
        let maxDepth = max(options.maxRevTreeDepth, 1)
        let history = revisions.history(of: winner.sequence, limit: maxDepth == .max ? maxDepth : maxDepth + 1)
        let kept = min(history.count, maxDepth)
        if history.count > kept { report.historiesPruned += 1 }
        tree.removeAll(keepingCapacity: true)
        for depth in 0..<kept {
            var revID = history[depth].revID
            let isLast = depth + 1 == kept
            let flags = depth == 0 ? RevisionFlags.leaf(deleted: winner.deleted, hasAttachments: hasAttachments)
                                   : RevisionFlags(rawValue: 0)
            let ok = revID.withUTF8 { bytes in
                LiteCoreRevTree.appendRecord(into: &tree, revID: UnsafeRawBufferPointer(bytes),
                                                             parentIndex: isLast ? nil : depth + 1, flags: flags,
                                                             body: depth == 0 ? body : nil)
            }
            guard ok else {
                throw upgradeError(.badRevisionID, "invalid revision ID '\(revID)'")
            }
        }
        LiteCoreRevTree.appendEnd(into: &tree)

        var expiration: Int64?
        if options.includeExpiration, let seconds = winnerExpiry, seconds > 0 {
            // 1.x: whole seconds since 1970 (1.x spec 3.9); 2.5+: milliseconds (spec 5).
            expiration = seconds * 1000
            report.expirationsCopied += 1
        }
        batch.append(docID: docIDBytes, flags: .current(deleted: winner.deleted, hasAttachments: hasAttachments),
                     tree: tree, expirationMilliseconds: expiration)
        report.documentsConverted += 1
        if winner.deleted { report.tombstones += 1 }
    }

    /// Copies the blobs of the winner's `_attachments` (spec 8.2): SHA-1 verified, each once;
    /// missing files and non-SHA-1 digests are reported and skipped, as LiteCore skips them.
    /// Returns whether the document must carry the HasAttachments flag.
    private mutating func copyAttachments(body: [UInt8], into report: inout UpgradeReport) throws -> Bool {
        if winnerNoAttachments == 1 { return false }
        let flagged = winnerNoAttachments == 0
        let doc: FleeceDocument
        do {
            doc = try FleeceDocument(bytes: body, sharedKeys: sharedKeys)
        } catch {
            throw upgradeError(.corruptRevisionData, "re-encoded body does not decode (\(error))")
        }
        guard let attachments = doc.root.dictValue?["_attachments"]?.dictValue, attachments.count > 0 else { return flagged }
        for (name, meta) in attachments {
            guard let digest = meta.dictValue?["digest"]?.stringValue else { continue }
            guard let key = BlobStore.key(fromDigest: digest) else {
                report.attachmentsSkipped.append(.init(docID: docID, name: name, digest: digest))
                continue
            }
            if copiedBlobs.contains(key) {
                report.attachmentsDeduplicated += 1
                continue
            }
            guard let file = source.attachmentFile(forKey: key) else {
                report.attachmentsMissing.append(.init(docID: docID, name: name, digest: digest))
                continue
            }
            do {
                // An encrypted 1.x store's blobs go in as plaintext: their names are the plaintext's SHA-1.
                report.attachmentBytes += try source.withPlaintext(of: file) { plain in
                    _ = try blobStore.install(copying: plain, expectedKey: key)
                    return DatabaseUpgrader.size(of: plain)
                }
            } catch let e as CouchbaseLiteError {
                throw upgradeError(e.code, e.message)
            }
            copiedBlobs.insert(key)
            report.attachmentsCopied += 1
        }
        return true
    }

    // MARK: Local documents

    /// `_local/…` documents into the raw key-store `local` (an option: 2.x drops them).
    func copyLocalDocuments(to output: DataFile, into report: inout UpgradeReport) throws {
        var plain = FleeceEncoder()
        for local in try source.localDocuments() {
            report.localDocumentsFound += 1
            guard let json = local.json, !json.isEmpty else { continue }
            try copyLocalDocument(local.docID, revID: local.revID, json: json, to: output, encoder: &plain)
            report.localDocumentsCopied += 1
        }
    }

    /// Makes the destination's `local` key-store equal to the source's `_local` documents again
    /// (catch-up: they have no sequences): copies those whose revision differs, removes those the
    /// source no longer has. Returns how many it wrote or removed.
    func syncLocalDocuments(to output: DataFile, into report: inout UpgradeReport) throws -> Int {
        var converted: [String: [UInt8]] = [:]
        for record in try output.rawRecords(store: LocalDocuments.keyStore) { converted[record.key] = record.version }
        var plain = FleeceEncoder()
        var changed = 0
        for local in try source.localDocuments() {
            report.localDocumentsFound += 1
            guard let json = local.json, !json.isEmpty else { continue }
            if converted.removeValue(forKey: local.docID) == Array(local.revID.utf8) { continue }
            try copyLocalDocument(local.docID, revID: local.revID, json: json, to: output, encoder: &plain)
            report.localDocumentsCopied += 1
            changed += 1
        }
        for gone in converted.keys {
            try output.deleteRawRecord(store: LocalDocuments.keyStore, key: gone)
            changed += 1
        }
        return changed
    }

    private func copyLocalDocument(_ docID: String, revID: String, json: [UInt8], to output: DataFile,
                                   encoder plain: inout FleeceEncoder) throws {
        do {
            try json.withUnsafeBytes { try plain.writeJSON($0) }
            let body = try plain.finish()
            try output.putRawRecord(store: LocalDocuments.keyStore, key: docID, version: Array(revID.utf8), body: body)
        } catch let e as CouchbaseLiteError {
            throw e
        } catch {
            plain.reset()
            throw CouchbaseLiteError(.corruptRevisionData,
                "Error upgrading database: invalid JSON data (\(error)), converting local doc \"\(docID)\"")
        }
    }
}

/// Where converted `_local` documents live in the 2.x file.
public enum LocalDocuments {
    /// The raw key-store (table `kv_local`).
    public static let keyStore = "local"
}
