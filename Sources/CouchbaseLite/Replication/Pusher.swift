import Foundation
import JSONCore
import NIOCore

/// Push (spec 9.5): local changes since the checkpoint (every leaf: winners and conflicts),
/// through the app's filter / `documentIDs`, → `_revs_diff` → revisions the remote lacks go
/// by `_bulk_docs` with `new_edits=false`, or alone as a `multipart/related`
/// `PUT ?new_edits=false` when they carry attachments the remote lacks that are big enough to
/// stream (read from the blob store while sending). The checkpoint is the local sequence up to
/// which everything was sent.
struct Pusher {
    let replicator: Replicator
    let remote: RemoteDatabase
    var configuration: CBLReplication.Configuration { replicator.configuration }
    var tuning: ReplicationTuning { replicator.tuning }

    func run() async throws {
        let db = replicator.db
        // Listen before reading, so no change slips between the last read and the wait.
        let (signals, signal) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        var token: CBLListenerToken?
        if configuration.continuous {
            token = db.addChangeListener { _ in signal.yield() }
        }
        defer {
            if let token { db.removeChangeListener(token) }
            signal.finish()
        }

        let (start, checkpoint, remoteMissing) = try await replicator.startCheckpoint(remote)
        if configuration.createTarget && remoteMissing {
            let response = try await remote.send(.PUT, "")
            guard response.status < 300 || response.status == 412 || response.status == 405 else {
                throw RemoteDatabase.error(response, "Cannot create the remote database")
            }
        } else {
            try await replicator.checkRemoteDatabase(remote)
        }
        var since = start.flatMap { Int64($0) } ?? 0
        replicator.report { $0.lastPushedSequence = since }
        var iterator = signals.makeAsyncIterator()
        while !Task.isCancelled {
            let changes = try await readLocalChanges(since: since)
            if changes.isEmpty {
                if !configuration.continuous { return }
                replicator.report { $0.status = .idle }
                guard await iterator.next() != nil else { break }
                continue
            }
            replicator.report { $0.status = .active }
            let pushedThrough: Int64
            do {
                pushedThrough = try await push(changes)
            } catch let failure as PushPageError {
                if let through = failure.through, through > since {
                    try await replicator.saveCheckpoint(checkpoint, String(through))
                    replicator.report { $0.lastPushedSequence = through }
                }
                throw failure.error
            }
            if pushedThrough > since {
                since = pushedThrough
                try await replicator.saveCheckpoint(checkpoint, String(since))
                replicator.report { $0.lastPushedSequence = since }
            }
        }
        throw CancellationError()
    }

    /// A local revision to consider: its document's change sequence and its revision ID.
    struct Candidate: Sendable {
        let sequence: Int64
        let docID: String
        let revID: String
    }

    private func readLocalChanges(since: Int64) async throws -> [SyncChange] {
        let db = replicator.db
        let limit = tuning.changesPageSize
        let docIDs = configuration.documentIDs
        return try await replicator.onDatabase {
            try db.syncChanges(since: since, limit: limit, descending: false, allLeaves: true, docIDs: docIDs,
                               activeOnly: false, includeDocs: false)
        }
    }

    /// Pushes one page; returns the sequence through which everything is on the remote.
    private func push(_ changes: [SyncChange]) async throws -> Int64 {
        let pageEnd = changes.last!.sequence
        let candidates = try await filteredCandidates(changes)
        replicator.report { $0.total &+= UInt32(clamping: candidates.count) }
        guard !candidates.isEmpty else { return pageEnd }
        let missing = try await revisionsMissingOnRemote(candidates)

        var upload = PushPageUpload(pusher: self)
        defer { upload.cancel() }
        try await upload.send(missing)
        try await upload.finish()
        if let failure = upload.firstFailure {
            // Everything in the changes before the failed document's is on the remote.
            throw PushPageError(through: changes.filter { $0.sequence < failure.sequence }.map(\.sequence).max(),
                                error: failure.error)
        }
        return pageEnd
    }

    /// The page's leaves that pass the app's filter (run on the database queue: it reads revisions).
    private func filteredCandidates(_ changes: [SyncChange]) async throws -> [Candidate] {
        let db = replicator.db
        let filterName = configuration.filter
        // The app's parameters cross to the database queue typed (Sendable), not as `Any`.
        let typedParams = configuration.filterParams
        return try await replicator.onDatabase {
            var out: [Candidate] = []
            let params = typedParams?.foundation
            let block: CBLFilterBlock?
            if let filterName {
                // A design document's filter (`design/filter`) when the database has a filter compiler.
                guard let registered = try db.filterNamedOrCompiled(filterName) else {
                    throw CBLError(404, "No filter named '\(filterName)' is registered on \(db.name)")
                }
                block = registered
            } else {
                block = nil
            }
            for change in changes {
                for revID in change.revIDs {
                    if let block {
                        guard let rev = db.existingDocument(withID: change.docID)?.revision(withID: revID),
                              block(rev, params) else { continue }
                    }
                    out.append(Candidate(sequence: change.sequence, docID: change.docID, revID: revID))
                }
            }
            return out
        }
    }

    /// Asks `_revs_diff` which candidates the remote lacks; returns them with their possible
    /// ancestors on the remote, and counts the others as completed.
    private func revisionsMissingOnRemote(_ candidates: [Candidate]) async throws -> [(Candidate, [String])] {
        var offers: [RevsDiff.Offer] = []
        var offerIndex: [String: Int] = [:]
        for c in candidates {
            if let index = offerIndex[c.docID] {
                offers[index].revIDs.append(c.revID)
            } else {
                offerIndex[c.docID] = offers.count
                offers.append(RevsDiff.Offer(docID: c.docID, revIDs: [c.revID]))
            }
        }
        let response = try await remote.send(.POST, "_revs_diff", body: .bytes(RevsDiff.encodeRequest(offers)),
                                             contentType: "application/json")
        guard response.status < 300 else { throw RemoteDatabase.error(response, "_revs_diff failed") }
        let diff = try RevsDiff.decodeAnswer(response.body)
        var missing: [(Candidate, [String])] = []
        var done = 0
        for c in candidates {
            guard let entry = diff[c.docID], entry.missing.contains(c.revID) else {
                done += 1
                continue
            }
            missing.append((c, entry.possibleAncestors))
        }
        if done > 0 { replicator.report { $0.completed &+= UInt32(clamping: done) } }
        return missing
    }

    /// What one `_bulk_docs` request did: documents sent, per-document failures worth a retry,
    /// and the last rejection (401/403: handled, reported).
    struct BulkOutcome: Sendable {
        var count: Int
        var failures: [(Candidate, CBLError)] = []
        var rejected: CBLError?
    }

    /// `POST _bulk_docs` with `new_edits=false`.
    func bulkDocs(_ docs: [[UInt8]], _ candidates: [Candidate]) async throws -> BulkOutcome {
        // The revisions were written as JSON when prepared; the request only joins them.
        var body = Array(#"{"docs":["#.utf8)
        body.reserveCapacity(docs.reduce(32) { $0 + $1.count + 1 })
        for (index, doc) in docs.enumerated() {
            if index > 0 { body.append(UInt8(ascii: ",")) }
            body += doc
        }
        body += Array(#"],"new_edits":false}"#.utf8)
        let response = try await remote.send(.POST, "_bulk_docs", body: .bytes(body), contentType: "application/json")
        guard response.status < 300 else { throw RemoteDatabase.error(response, "_bulk_docs failed") }
        let items = (try? JSON.value(response.body))?.arrayValue ?? []
        var errors: [String: JSONObject] = [:]
        for case .object(let item) in items where item["error"] != nil {
            if let id = item["id"]?.stringValue { errors[id] = item }
        }
        var outcome = BulkOutcome(count: candidates.count)
        for candidate in candidates {
            guard let item = errors[candidate.docID] else { continue }
            let status = Pusher.status(item)
            let error = Replicator.documentError(status, candidate.docID, candidate.revID,
                                                 item["reason"]?.stringValue ?? item["error"]?.stringValue ?? "error")
            if status == 401 || status == 403 {
                outcome.rejected = error
            } else {
                outcome.failures.append((candidate, error))
            }
        }
        return outcome
    }

    static func status(_ item: JSONObject) -> Int {
        if let status = item["status"]?.intValue, status >= 400 { return status }
        switch item["error"]?.stringValue {
        case "unauthorized": return 401
        case "forbidden": return 403
        case "conflict": return 409
        case "missing", "not_found": return 404
        default: return 589
        }
    }

    // MARK: Preparing a revision

    enum Prepared: Sendable {
        case gone
        /// The revision as JSON text, and about how many bytes it adds to a `_bulk_docs` body.
        case inline([UInt8], size: Int)
        case multipart(MultipartUpload)
    }

    /// A `PUT {doc}?new_edits=false` with the JSON first and one part per `follows` attachment.
    struct MultipartUpload: Sendable {
        let docID: String
        let json: [UInt8]
        let attachments: [(name: String, contentType: String, source: AttachmentSource)]
    }

    enum AttachmentSource: Sendable {
        case file(URL, length: Int)
        /// An encrypted blob file, decrypted as it is sent.
        case encrypted(URL, CBLSymmetricKey, BlobKey, length: Int)
        case data(Data)

        var length: Int {
            switch self {
            case .file(_, let length): return length
            case .encrypted(_, _, _, let length): return length
            case .data(let data): return data.count
            }
        }
    }

    /// Loads the bodies to send for a batch of revisions (one trip to the database queue).
    func prepare(_ batch: [(Candidate, [String])], threshold: Int? = nil) async throws -> [Prepared] {
        let db = replicator.db
        let threshold = threshold ?? (replicator.inlineAttachmentsOnly.withLock { $0 } ? .max : tuning.multipartThreshold)
        return try await replicator.onDatabase(reading: true) {
            try batch.map { try Pusher.prepare($0.0, possibleAncestors: $0.1, db: db, threshold: threshold) }
        }
    }

    /// The body to send for one revision: inline JSON (attachments as base64 or stubs), or a
    /// multipart upload when an attachment the remote lacks is at least `threshold` bytes.
    static func prepare(_ candidate: Candidate, possibleAncestors: [String], db: CBLDatabase, threshold: Int) throws -> Prepared {
        guard let rev = try db.syncRevision(docID: candidate.docID, revID: candidate.revID), rev.body != nil else {
            return .gone
        }
        // The stored body, read once for everything below.
        let properties = rev.typedProperties ?? [:]
        if properties["_removed"]?.boolValue == true { return .gone }
        var options = SyncBodyOptions()
        options.revs = true
        options.attachments = true
        options.attsSince = possibleAncestors
        if let from = possibleAncestors.isEmpty ? nil : possibleAncestors { options.revsFrom = from }
        let stored = properties["_attachments"]?.objectValue ?? [:]
        // Which attachments travel, and are any of them big enough for multipart?
        var doc = try db.syncTypedDocumentBody(rev, options, followsAttachments: true, properties: properties)
        var streamed: [(String, String, AttachmentSource)] = []
        if case .object(var atts)? = doc["_attachments"] {
            var big = false
            for (_, meta) in atts where meta["follows"]?.boolValue == true && (meta["length"]?.intValue ?? 0) >= threshold {
                big = true
            }
            if !big {
                doc = try db.syncTypedDocumentBody(rev, options, followsAttachments: false, properties: properties)
            } else {
                for name in atts.keys.sorted() {
                    guard case .object(var meta)? = atts[name], meta["follows"]?.boolValue == true else { continue }
                    let storedMeta = stored[name]?.objectValue ?? meta
                    let length = meta["length"]?.intValue ?? 0
                    let source: AttachmentSource
                    if storedMeta["encoding"] == nil, let url = db.syncAttachmentFile(meta: storedMeta) {
                        source = .file(url, length: length)
                    } else if storedMeta["encoding"] == nil, let blob = db.syncEncryptedAttachment(meta: storedMeta) {
                        // Encrypted store: streamed through decryption, never held whole.
                        source = .encrypted(blob.url, blob.key, blob.digest, length: length)
                    } else {
                        source = .data(try db.syncAttachmentContent(meta: storedMeta, docID: rev.docID, name: name))
                    }
                    meta["length"] = .int(Int64(source.length))
                    atts[name] = .object(meta)
                    streamed.append((name, meta["content_type"]?.stringValue ?? "application/octet-stream", source))
                }
                doc["_attachments"] = .object(atts)
                let json = try JSON.data(.object(doc), sortedKeys: true)
                return .multipart(MultipartUpload(docID: rev.docID, json: json, attachments: streamed))
            }
        }
        var inlineData = 0
        for (_, meta) in doc["_attachments"]?.objectValue ?? [:] { inlineData += meta["data"]?.stringValue?.utf8.count ?? 0 }
        return .inline(try JSON.data(.object(doc), sortedKeys: true), size: (rev.body?.count ?? 0) + 256 + inlineData)
    }

    /// Sends a multipart upload; nil when it must go inline instead: the peer refused multipart
    /// (415, spec 9.5), or the upload timed out or got a 5xx (a CouchDB cluster with a node down
    /// never answers `multipart/related` PUTs while `_bulk_docs` works). Either way the rest of
    /// the run sends inline. Broken connections are thrown (the run retries from its checkpoint).
    func sendOrFallBack(_ upload: MultipartUpload, _ candidate: Candidate) async throws -> Int? {
        if replicator.inlineAttachmentsOnly.withLock({ $0 }) { return nil }
        let status: Int
        do {
            status = try await send(upload, candidate)
        } catch let error as CBLError where (500...599).contains(error.code) {
            CBLLog.warning("Sync", "Multipart upload of \(candidate.docID) failed (\(error.message)); sending attachments inline from now on")
            replicator.inlineAttachmentsOnly.withLock { $0 = true }
            return nil
        }
        if status == 415 {
            replicator.inlineAttachmentsOnly.withLock { $0 = true }
            return nil
        }
        return status
    }

    /// Sends a multipart upload, streaming file-backed attachments; returns the HTTP status.
    private func send(_ upload: MultipartUpload, _ candidate: Candidate) async throws -> Int {
        let boundary = MultipartWriter.newBoundary()
        var head = MultipartWriter.partHead(boundary: boundary, headers: [("Content-Type", "application/json")], first: true)
        head += upload.json
        var pieces: [(prefix: [UInt8], source: AttachmentSource)] = []
        for (name, contentType, source) in upload.attachments {
            let prefix = MultipartWriter.partHead(boundary: boundary, headers: [
                ("Content-Disposition", "attachment; filename=\"\(MultipartWriter.quoted(name))\""),
                ("Content-Type", contentType),
            ], first: false)
            pieces.append((prefix, source))
        }
        let tail = MultipartWriter.closing(boundary: boundary) + Array("\r\n".utf8)
        let length = head.count + pieces.reduce(0) { $0 + $1.prefix.count + $1.source.length } + tail.count
        let body = RemoteBody.stream(length: length,
                                     MultipartBodySequence(head: head, pieces: pieces, tail: tail))
        let response = try await remote.send(.PUT, RemoteDatabase.encodeDocID(upload.docID), query: [("new_edits", "false")],
                                             body: body, contentType: "multipart/related; boundary=\"\(boundary)\"",
                                             retryStatuses: false)
        return response.status
    }
}

/// A multipart/related body produced on demand: the JSON part, then each attachment part,
/// file-backed ones read 256 KB at a time as the connection takes them.
struct MultipartBodySequence: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let head: [UInt8]
    let pieces: [(prefix: [UInt8], source: Pusher.AttachmentSource)]
    let tail: [UInt8]

    struct AsyncIterator: AsyncIteratorProtocol {
        let body: MultipartBodySequence
        var step = 0
        var piece = 0
        var handle: FileHandle?
        var reader: BlobReader?

        mutating func next() async throws -> ByteBuffer? {
            while true {
                switch step {
                case 0:
                    step = 1
                    return ByteBuffer(bytes: body.head)
                case 1:
                    guard piece < body.pieces.count else {
                        step = 3
                        continue
                    }
                    step = 2
                    return ByteBuffer(bytes: body.pieces[piece].prefix)
                case 2:
                    switch body.pieces[piece].source {
                    case .data(let data):
                        piece += 1
                        step = 1
                        return ByteBuffer(bytes: data)
                    case .file(let url, _):
                        if handle == nil {
                            do {
                                handle = try FileHandle(forReadingFrom: url)
                            } catch {
                                throw CBLError(592, "Cannot read attachment file \(url.lastPathComponent): \(error)")
                            }
                        }
                        if let chunk = try handle?.read(upToCount: 256 << 10), !chunk.isEmpty {
                            return ByteBuffer(bytes: chunk)
                        }
                        try? handle?.close()
                        handle = nil
                        piece += 1
                        step = 1
                    case .encrypted(let url, let key, let blob, _):
                        if reader == nil { reader = try BlobReader(url: url, key: key, expected: blob) }
                        if let chunk = try reader?.read(upToCount: 256 << 10) {
                            return ByteBuffer(bytes: chunk)
                        }
                        reader?.close()
                        reader = nil
                        piece += 1
                        step = 1
                    }
                case 3:
                    step = 4
                    return ByteBuffer(bytes: body.tail)
                default:
                    return nil
                }
            }
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(body: self) }
}

/// A page of a push stopped at a document that failed transiently: everything up to
/// `through` is on the remote.
struct PushPageError: Error, CustomStringConvertible {
    let through: Int64?
    let error: CBLError
    var description: String { error.message }
}
