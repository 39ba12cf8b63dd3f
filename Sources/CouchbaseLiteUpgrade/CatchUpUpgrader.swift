import CouchbaseLite
import CouchbaseLiteSwift
import Foundation
import SQLiteKit

/// Brings a database made by ``DatabaseUpgrader`` up to date with its 1.x source: the documents
/// changed since the source sequence the destination records (new, changed, deleted, conflicted;
/// their attachments' blobs) are converted again by the same `DocumentConverter` a full
/// conversion uses, so each ends as a full conversion would make it; documents the source has
/// purged since are purged from the destination.
///
/// Changed documents are taken in the order of their newest sequence and written in batches,
/// each in one destination transaction that also records the source sequence it covers: a run
/// killed at any point leaves a destination the next run completes. The source's `publicUUID`,
/// recorded by the full conversion, must match: catching up from another database is refused.
///
/// ```swift
/// let catchUp = CatchUpUpgrader(source: URL(fileURLWithPath: "old.cblite2"),
///                               destination: URL(fileURLWithPath: "out/new.cblite2"))
/// print(try catchUp.run().summary)
/// ```
public struct CatchUpUpgrader: Sendable {
    public let source: URL
    public let destination: URL
    public let options: UpgradeOptions
    /// Documents per destination transaction.
    public var batchSize = 1000
    /// Called inside each batch's transaction after its rows are written, before its sequence is
    /// recorded (tests: throwing rolls the batch back as a kill would).
    var beforeCommit: (@Sendable (_ batch: Int) throws -> Void)?

    public init(source: URL, destination: URL, options: UpgradeOptions = UpgradeOptions()) {
        self.source = source
        self.destination = destination
        self.options = options
    }

    /// Converts the changes since the last run. `shouldStop` is asked between batches (the batch
    /// under way is finished first). `progress` is called on the calling thread after each batch.
    @discardableResult
    public func run(shouldStop: () -> Bool = { false }, progress: ((UpgradeProgress) -> Void)? = nil) throws -> CatchUpReport {
        let started = DispatchTime.now()
        let fm = FileManager.default
        guard fm.fileExists(atPath: destination.path) else {
            throw CouchbaseLiteError(.notFound, "No converted database at \(destination.path); convert it first (cbl upgrade without --catch-up)")
        }
        // Private scratch for a source that must be read from a copy (see LegacySource).
        let work = destination.deletingLastPathComponent()
            .appendingPathComponent(".\(destination.lastPathComponent).catch-up-\(UUID().uuidString)", isDirectory: true)
        try fm.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? fm.removeItem(at: work) }
        let legacy = try LegacySource(bundle: source, workDirectory: work, encryptionKey: options.encryptionKey,
                                      readingLiveInPlace: true)
        defer { legacy.close() }
        try legacy.beginSnapshot()
        let output = try DataFile(directory: destination, create: false)
        defer { output.close() }

        guard let checkpoint = try SourceCheckpoint.load(from: output) else {
            throw CouchbaseLiteError(.invalidParameter,
                "\(destination.lastPathComponent) records no source sequence (not made by cbl upgrade); cannot catch up")
        }
        let uuid = try legacy.publicUUID()
        guard uuid == checkpoint.publicUUID else {
            throw CouchbaseLiteError(.invalidParameter,
                "\(source.lastPathComponent) is not the database \(destination.lastPathComponent) was converted from "
                + "(its publicUUID is \(uuid), the conversion's source was \(checkpoint.publicUUID)); refusing to catch up")
        }
        // A 2.x/3.x app that opened the destination may have written to it or changed its layout.
        guard !output.hasExtraColumn, !output.hasDeletedTable else {
            throw CouchbaseLiteError(.invalidParameter,
                "\(destination.lastPathComponent) was opened and upgraded by Couchbase Lite 3.x since the conversion; convert again instead")
        }
        // Nor may a 2.x app have written documents since: catching up would overwrite its edits.
        let written = try output.lastSequence()
        if let expected = checkpoint.destinationSequence, written != expected {
            throw CouchbaseLiteError(.invalidParameter,
                "\(destination.lastPathComponent) was written since it was converted (its sequence is \(written), the "
                + "conversion left it at \(expected)): a 2.x app has used it; catching up would overwrite its changes, convert again instead")
        }
        try output.checkWritable()
        let last = try legacy.lastSequence()
        guard last >= checkpoint.sequence else {
            throw CouchbaseLiteError(.invalidParameter,
                "\(source.lastPathComponent) is at sequence \(last), behind the \(checkpoint.sequence) already converted (restored from a backup?); convert again instead")
        }

        var report = CatchUpReport()
        report.source = source.path
        report.destination = destination.path
        report.fromSequence = checkpoint.sequence
        report.toSequence = checkpoint.sequence
        func finished() -> CatchUpReport {
            report.seconds = Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9
            return report
        }
        guard last > checkpoint.sequence else {
            if !shouldStop() { try finishCaughtUp(legacy, output, &report) }
            return finished()
        }

        let changed = try legacy.changedDocuments(since: checkpoint.sequence, upTo: last)
        var converter = DocumentConverter(source: legacy, output: output, options: options)
        let size = max(1, batchSize)
        var start = 0
        repeat {
            if shouldStop() { break }
            let end = min(start + size, changed.count)
            let slice = changed[start..<end]
            // Every document whose newest change is at most `reached` is in this batch or an earlier one.
            let reached = end == changed.count ? last : slice[end - 1].sequence
            var found = UpgradeReport()
            let batch = try converter.convertBatch(rows: try legacy.revisionRows(ofDocuments: slice.lazy.map { $0.docRow }), into: &found)
            let number = report.batches
            try output.inTransaction {
                try Self.write(batch, to: output)
                try beforeCommit?(number)
                try SourceCheckpoint(publicUUID: uuid, sequence: reached, destinationSequence: try output.lastSequence())
                    .save(in: output)
                try output.saveSharedKeysIfChanged()
            }
            report.conversion.merge(found)
            report.batches += 1
            report.documentsRead = end
            report.toSequence = reached
            progress?(UpgradeProgress(phase: .documents, completed: end, total: changed.count))
            start = end
        } while start < changed.count
        if report.toSequence == last, !shouldStop() { try finishCaughtUp(legacy, output, &report) }
        return finished()
    }

    /// What has no sequence in the source, once every sequence is caught up: purged documents,
    /// and with ``UpgradeOptions/includeLocalDocuments`` the `_local` documents.
    private func finishCaughtUp(_ legacy: LegacySource, _ output: DataFile, _ report: inout CatchUpReport) throws {
        report.documentsPurged = try Self.purgeRemovedDocuments(source: legacy, output: output)
        guard options.includeLocalDocuments else { return }
        let converter = DocumentConverter(source: legacy, output: output, options: options)
        try output.inTransaction {
            report.localDocumentsChanged = try converter.syncLocalDocuments(to: output, into: &report.conversion)
        }
    }

    /// Purges from the destination the documents purged from the source since they were
    /// converted (by the app or by expiration): a 1.x purge leaves no tombstone and takes no
    /// sequence, so it shows only as a document the destination has and the source no longer
    /// does. Counts are compared first (two index counts); IDs only when they differ. Purged as
    /// LiteCore purges (the row removed, `kvmeta.purgeCnt` counted), in one transaction.
    private static func purgeRemovedDocuments(source: LegacySource, output: DataFile) throws -> Int {
        let converted = Int(try output.connection.scalarInt("SELECT count(*) FROM kv_default") ?? 0)
        guard try converted != source.convertibleDocumentCount() else { return 0 }
        let present = try source.convertibleDocumentIDs()
        var removed: [String] = []
        let keys = try output.connection.prepare("SELECT key FROM kv_default")
        while try keys.step() {
            if let key = keys.string(0), !present.contains(key) { removed.append(key) }
        }
        guard !removed.isEmpty else { return 0 }
        try output.inTransaction {
            for docID in removed { _ = try output.purgeRecord(docID: docID) }
        }
        return removed.count
    }

    /// Replaces each document's row with the converted one, under a new sequence (a changed
    /// document, as 2.x's own save gives it), and advances `kvmeta.lastSeq`. Delete-then-insert
    /// rather than an update in place: the bulk-loaded pages are full, so a grown row updated in
    /// place splits its page (measured on 1,000 documents spread over 100,000: 8,664 `pwrite`s against 4,656).
    private static func write(_ batch: RowBatch, to output: DataFile) throws {
        let delete = try output.connection.cached("DELETE FROM kv_default WHERE key=?")
        var lastSequence: UInt64 = 0
        try batch.forEach { docID, version, tree, entry in
            try delete.bindTextNoCopy(docID, at: 1)
            _ = try delete.step()
            delete.reset()
            lastSequence = try output.insertRecord(docID: docID, flags: entry.flags, version: version, tree: tree)
            if let ms = entry.expirationMilliseconds {
                try output.setExpiration(docID: String(decoding: docID, as: UTF8.self), milliseconds: ms)
            }
        }
        if lastSequence > 0 { try output.setLastSequence(lastSequence, of: .default) }
    }

    /// Runs ``run(shouldStop:progress:)`` every `interval` seconds until `shouldStop` says so
    /// (checked between batches and while waiting), calling `afterRun` with each run's report.
    public func follow(interval: TimeInterval, shouldStop: () -> Bool, afterRun: (CatchUpReport) -> Void) throws {
        while !shouldStop() {
            afterRun(try run(shouldStop: shouldStop))
            let until = Date().addingTimeInterval(interval)
            while !shouldStop(), Date() < until { usleep(50_000) }
        }
    }
}

/// What a catch-up run did.
public struct CatchUpReport: Sendable {
    public var source = ""
    public var destination = ""
    /// The source sequence the destination recorded before the run, and after it.
    public var fromSequence: Int64 = 0
    public var toSequence: Int64 = 0
    /// Transactions committed in the destination.
    public var batches = 0
    /// Changed source documents read.
    public var documentsRead = 0
    /// Documents purged from the destination because the source purged them.
    public var documentsPurged = 0
    /// With `includeLocalDocuments`: `_local` documents copied again or removed.
    public var localDocumentsChanged = 0
    /// The per-document findings, as a full conversion reports them (for the changed documents).
    public var conversion = UpgradeReport()
    public var seconds = 0.0

    public init() {}

    public var summary: String {
        let c = conversion
        return "Caught up \(destination) from source sequence \(fromSequence) to \(toSequence): "
            + "\(documentsRead) changed documents read, \(c.documentsConverted) converted (\(c.tombstones) tombstones), "
            + "\(c.conflictsDropped.count) conflicts resolved to their winner, \(c.attachmentsCopied) attachments, "
            + "\(documentsPurged) purged, "
            + "\(batches) transactions, \(String(format: "%.3f", seconds)) s"
    }
}

/// Where a conversion of a 1.x source got to: the source's `publicUUID` and last sequence, and
/// the destination's own last sequence when the conversion left it (a later write there by a 2.x
/// app moves it, and catch-up refuses to overwrite that).
/// A full conversion writes it to a file in the bundle (`upgrade-source.json`), so the database
/// itself stays byte-identical to LiteCore's own upgrade; each catch-up batch writes it to
/// `kv_info` (keys LiteCore does not read) in the transaction of the rows it covers, and that
/// record, when present, is the one that counts.
struct SourceCheckpoint: Equatable, Codable {
    static let publicUUIDKey = "cbl.upgrade.sourcePublicUUID"
    static let sequenceKey = "cbl.upgrade.sourceSequence"
    static let destinationSequenceKey = "cbl.upgrade.destinationSequence"
    static let fileName = "upgrade-source.json"

    var publicUUID: String
    var sequence: Int64
    /// Absent in checkpoints written before it was recorded.
    var destinationSequence: UInt64?

    init(publicUUID: String, sequence: Int64, destinationSequence: UInt64? = nil) {
        self.publicUUID = publicUUID
        self.sequence = sequence
        self.destinationSequence = destinationSequence
    }

    func save(in file: DataFile) throws {
        try file.setInfo(Self.publicUUIDKey, Array(publicUUID.utf8))
        try file.setInfo(Self.sequenceKey, Self.bigEndian(UInt64(bitPattern: sequence)))
        if let destinationSequence { try file.setInfo(Self.destinationSequenceKey, Self.bigEndian(destinationSequence)) }
    }

    /// 8-byte big-endian, as LiteCore's own integer info records.
    private static func bigEndian(_ value: UInt64) -> [UInt8] {
        withUnsafeBytes(of: value.bigEndian) { Array($0) }
    }

    private static func integer(_ bytes: [UInt8]?) -> UInt64? {
        guard let bytes, bytes.count == 8 else { return nil }
        return bytes.reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// Writes the full conversion's checkpoint into the (not yet installed) bundle.
    func write(into bundle: URL) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        try encoder.encode(self).write(to: bundle.appendingPathComponent(Self.fileName), options: .atomic)
    }

    static func load(from file: DataFile) throws -> SourceCheckpoint? {
        if let uuid = try file.info(publicUUIDKey), let sequence = integer(try file.info(sequenceKey)) {
            return SourceCheckpoint(publicUUID: String(decoding: uuid, as: UTF8.self), sequence: Int64(bitPattern: sequence),
                                    destinationSequence: integer(try file.info(destinationSequenceKey)))
        }
        guard let data = try? Data(contentsOf: file.directory.appendingPathComponent(fileName)) else { return nil }
        return try JSONDecoder().decode(SourceCheckpoint.self, from: data)
    }
}
