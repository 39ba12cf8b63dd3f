import BlobDigest
import Foundation
import JSONCore

/// Pull (spec 9.4): read the remote `_changes` feed from the checkpoint, ask the local store
/// which revisions are missing (the same revs-diff the listener serves), fetch them with
/// `_bulk_get` (or single `GET ?rev=&revs=true` when the peer has none), stream the
/// attachments the local store lacks into the blob store, insert the revisions with their
/// history, and checkpoint once a page is fully stored (every 2 s, and when caught up).
struct Puller {
    let replicator: Replicator
    let remote: RemoteDatabase
    var configuration: CBLReplication.Configuration { replicator.configuration }
    var tuning: ReplicationTuning { replicator.tuning }

    /// A revision to fetch, with the local revisions the server may treat as known.
    struct Wanted: Sendable {
        let docID: String
        let revID: String
        let attsSince: [String]
    }

    /// A page of the feed with its missing revisions fetched, ready to insert.
    struct Page: Sendable {
        let changes: [ChangesRow]
        let lastSeq: RemoteSequence?
        /// Revisions the local store already had.
        let known: Int
        let fetched: [FetchResult]

        var end: String? { (lastSeq ?? changes.last?.sequence)?.checkpointString }
    }

    func run() async throws {
        try await replicator.checkRemoteDatabase(remote)
        let (start, checkpoint, _) = try await replicator.startCheckpoint(remote)
        var since = start
        var saved = start
        var lastSave = ContinuousClock.now
        let bulkGet = Locked(true)
        var caughtUp = false
        // While one page is inserted, the next is read and fetched (pipelining: the peer and the
        // network work while the local store writes).
        var prefetch: Task<Page, Error>?
        defer { prefetch?.cancel() }

        func checkpointIfDue(force: Bool) async throws {
            guard let since, since != saved else { return }
            guard force || ContinuousClock.now - lastSave >= tuning.checkpointInterval else { return }
            try await replicator.saveCheckpoint(checkpoint, since)
            saved = since
            lastSave = ContinuousClock.now
        }

        while !Task.isCancelled {
            let page: Page
            if let pending = prefetch {
                prefetch = nil
                page = try await pending.value
            } else {
                page = try await fetchPage(since: since, feed: caughtUp ? "longpoll" : "normal", bulkGet: bulkGet)
            }
            if page.changes.isEmpty {
                if let lastSeq = page.lastSeq { since = lastSeq.checkpointString }
                try await checkpointIfDue(force: true)
                if !configuration.continuous { return }
                if !caughtUp {
                    caughtUp = true
                    replicator.report { $0.status = .idle }
                }
                continue
            }
            let full = page.changes.count >= tuning.changesPageSize
            if full, let next = page.end {
                let puller = self
                prefetch = Task { try await puller.fetchPage(since: next, feed: "normal", bulkGet: bulkGet) }
            }
            replicator.report {
                $0.status = .active
                $0.total &+= UInt32(clamping: page.changes.reduce(0) { $0 + $1.revIDs.count })
                $0.completed &+= UInt32(clamping: page.known)
            }
            try await insert(page)
            if let end = page.end { since = end }
            if !full {
                try await checkpointIfDue(force: true)
                if !configuration.continuous { return }
                caughtUp = true
                replicator.report { $0.status = .idle }
            } else {
                try await checkpointIfDue(force: false)
            }
        }
        throw CancellationError()
    }

    /// Reads one page of the feed, asks the local store which revisions are missing, and
    /// fetches them.
    func fetchPage(since: String?, feed: String, bulkGet: Locked<Bool>) async throws -> Page {
        let (changes, lastSeq) = try await readChanges(since: since, feed: feed)
        guard !changes.isEmpty else { return Page(changes: [], lastSeq: lastSeq, known: 0, fetched: []) }
        let (wanted, known) = try await missingRevisions(changes)
        let fetched = try await downloadAttachments(try await fetch(wanted, bulkGet: bulkGet))
        return Page(changes: changes, lastSeq: lastSeq, known: known, fetched: fetched)
    }

    // MARK: Changes feed

    private func readChanges(since: String?, feed: String) async throws -> ([ChangesRow], RemoteSequence?) {
        var query: [(String, String)] = [("feed", feed), ("style", "all_docs")]
        var body: JSONObject = ["feed": .string(feed), "style": "all_docs"]
        if let since {
            let sequence = RemoteSequence(checkpoint: since)
            query.append(("since", sequence.checkpointString))
            body["since"] = sequence.json
        }
        query.append(("limit", String(tuning.changesPageSize)))
        body["limit"] = .int(Int64(tuning.changesPageSize))
        if feed == "longpoll" {
            let ms = Int(tuning.longpollTimeout / .milliseconds(1))
            query.append(("timeout", String(ms)))
            body["timeout"] = .int(Int64(ms))
        }
        var filter = configuration.filter
        var params = configuration.filterParams ?? [:]
        if filter == nil, let channels = configuration.channels {
            filter = "sync_gateway/bychannel"
            params = ["channels": .string(channels.joined(separator: ","))]
        }
        if let docIDs = configuration.documentIDs {
            filter = "_doc_ids"
            body["doc_ids"] = .array(docIDs.map(JSONValue.string))
        }
        if let filter {
            query.append(("filter", filter))
            body["filter"] = .string(filter)
            for (key, value) in params.sortedMembers {
                let text = value.stringValue ?? ((try? JSON.string(value, sortedKeys: true)) ?? "")
                query.append((key, text))
                body[key] = value
            }
        }
        let timeout = feed == "longpoll" ? tuning.longpollTimeout + tuning.requestTimeout : tuning.requestTimeout
        let bytes = try JSON.data(.object(body), sortedKeys: true)
        var response = try await remote.send(.POST, "_changes", query: query, body: .bytes(bytes),
                                             contentType: "application/json", timeout: .nanoseconds(Int64(timeout / .nanoseconds(1))))
        if response.status == 405 || response.status == 415 {
            if let docIDs = configuration.documentIDs {
                query.append(("doc_ids", (try? JSON.string(docIDs, sortedKeys: false)) ?? "[]"))
            }
            response = try await remote.send(.GET, "_changes", query: query,
                                             timeout: .nanoseconds(Int64(timeout / .nanoseconds(1))))
        }
        guard response.status < 300 else { throw RemoteDatabase.error(response, "Cannot read the remote changes feed") }
        let (rows, lastSeq) = try ChangesRow.decodeFeed(response.body)
        var changes: [ChangesRow] = []
        changes.reserveCapacity(rows.count)
        for var row in rows {
            row.revIDs = row.revIDs.filter { RevisionID.isValid($0) }
            // Invalid document IDs are not replicated into a 1.x database; design documents
            // are (1.x did replicate them).
            guard !row.revIDs.isEmpty, CBLDatabase.isValidDocumentID(row.docID) else { continue }
            changes.append(row)
        }
        return (changes, lastSeq)
    }

    // MARK: Fetching and inserting

    /// The feed's revisions the local store lacks, with the local ancestors to offer as
    /// `atts_since`; and how many it already has.
    private func missingRevisions(_ changes: [ChangesRow]) async throws -> ([Wanted], Int) {
        let db = replicator.db
        var offers: [RevsDiff.Offer] = []
        var offerIndex: [String: Int] = [:]
        for change in changes {
            if let index = offerIndex[change.docID] {
                offers[index].revIDs += change.revIDs
            } else {
                offerIndex[change.docID] = offers.count
                offers.append(RevsDiff.Offer(docID: change.docID, revIDs: change.revIDs))
            }
        }
        let request = offers
        let diff = try await replicator.onDatabase(reading: true) { try db.syncRevsDiff(request) }
        var wanted: [Wanted] = []
        var known = 0
        for change in changes {
            guard let entry = diff[change.docID] else {
                known += change.revIDs.count
                continue
            }
            for revID in change.revIDs {
                if entry.missing.contains(revID) {
                    wanted.append(Wanted(docID: change.docID, revID: revID, attsSince: entry.possibleAncestors))
                } else {
                    known += 1
                }
            }
        }
        return (wanted, known)
    }

    /// Fetches revisions in `_bulk_get` batches, a few requests at a time, in feed order.
    private func fetch(_ wanted: [Wanted], bulkGet: Locked<Bool>) async throws -> [FetchResult] {
        guard !wanted.isEmpty else { return [] }
        let batches = stride(from: 0, to: wanted.count, by: tuning.revsPerBulkGet).map {
            Array(wanted[$0..<min($0 + tuning.revsPerBulkGet, wanted.count)])
        }
        let fetched = try await concurrentMap(batches, limit: tuning.maxConcurrentFetches) { batch in
            try await self.fetchBatch(batch, bulkGet: bulkGet)
        }
        return fetched.flatMap { $0 }
    }

    /// Inserts a fetched page in one transaction, with each revision's history.
    private func insert(_ page: Page) async throws {
        guard !page.fetched.isEmpty else { return }
        let db = replicator.db
        let source = replicator.remoteSource
        let results = page.fetched
        let user = replicator.configuration.actingUser
        let outcome = try await replicator.onDatabase { () -> (inserted: Int, failures: [CBLError], rejected: [CBLError]) in
            var inserted = 0
            var failures: [CBLError] = []
            var rejected: [CBLError] = []
            // The whole page as the replication's user: the inserts run on this thread, inside the transaction.
            let committed = CBLRequestUser.acting(ifSet: user) { db.inTransaction {
                for result in results {
                    switch result {
                    case .document(let revision):
                        do {
                            try db.syncInsert(revision, source: source)
                            inserted += 1
                        } catch let e as CBLError where e.code == 403 || e.code == 401 {
                            rejected.append(Replicator.documentError(e.code, revision.docID, revision.revID, e.message))
                        } catch {
                            failures.append(Replicator.documentError(CBLReplication.asCBLError(error).code, revision.docID,
                                                                     revision.revID, "\(error)"))
                        }
                    case .skipped(let error):
                        rejected.append(error)
                    case .failed(let error):
                        failures.append(error)
                    }
                }
                return true
            } }
            // A commit that failed (a full disk) stored nothing of the page: not a success.
            if !committed { return (0, [db.lastCommitError ?? CBLError.dbError("Cannot commit pulled revisions")], []) }
            return (inserted, failures, rejected)
        }
        replicator.report {
            $0.completed &+= UInt32(clamping: outcome.inserted + outcome.rejected.count)
            if let last = outcome.rejected.last { $0.lastError = last }
        }
        if let failure = outcome.failures.first {
            // The page is not checkpointed: the next attempt fetches what is still missing.
            throw failure
        }
    }

    // MARK: Attachments

    /// Revisions arrive with their attachments as stubs (`attachments=false`, as CouchDB's own
    /// replicator asks). A stub the local ancestor already has (same name and revpos) refers to
    /// that ancestor's body, which the revision then names directly (so inserting it does not look
    /// the ancestor up again); every other attachment is downloaded with `GET {doc}/{name}?rev=…`,
    /// streamed into the blob store (never held whole in memory, whatever its size), its MD5
    /// checked against an `md5-` digest, and the revision then refers to it by its SHA-1 digest.
    private func downloadAttachments(_ results: [FetchResult]) async throws -> [FetchResult] {
        struct Needed: Sendable {
            let index: Int
            let docID: String
            let revID: String
            let name: String
            let expectedDigest: String?
        }
        let db = replicator.db
        var out = results
        var needed: [Needed] = []
        for (index, result) in results.enumerated() {
            guard case .document(var revision) = result, let atts = revision.attachments else { continue }
            let stubs = revision.stubNames
            guard !stubs.isEmpty else { continue }
            let docID = revision.docID, history = Array(revision.history.dropFirst())
            let ancestor = try await replicator.onDatabase(reading: true) {
                try db.syncAncestorAttachments(docID: docID, history: history)
            }
            for name in stubs {
                let meta = atts[name]!
                if let revpos = meta.revpos, var have = ancestor?[name], have.revpos == revpos, have.digest != nil {
                    // The ancestor's stored body, named by its digest (the blob is here).
                    have.stub = false
                    have.follows = true
                    revision.attachments?[name] = have
                    continue
                }
                // The peer's digest names the bytes it stores; it is checked only when those are
                // the bytes it sends (not for gzip-encoded storage, which is sent decoded).
                needed.append(Needed(index: index, docID: docID, revID: revision.revID, name: name,
                                     expectedDigest: meta.encoding == nil ? meta.digest : nil))
            }
            out[index] = .document(revision)
        }
        guard !needed.isEmpty else { return out }

        let downloaded = try await concurrentMap(needed, limit: tuning.maxConcurrentFetches) { item in
            (item, try await self.download(item.docID, item.revID, item.name, item.expectedDigest))
        }
        for (item, result) in downloaded {
            guard case .document(var revision) = out[item.index] else { continue }
            switch result {
            case .success(let blob):
                var meta = revision.attachments?[item.name] ?? IncomingAttachment()
                meta.stub = false
                meta.encoding = nil
                meta.encodedLength = nil
                meta.follows = true
                meta.digest = blob.digest
                meta.length = blob.length
                revision.attachments?[item.name] = meta
                out[item.index] = .document(revision)
            case .failure(let error):
                out[item.index] = [403, 404, 410].contains(error.code) ? .skipped(error) : .failed(error)
            }
        }
        return out
    }

    /// Streams one attachment into the blob store, retrying transient failures from scratch.
    private func download(_ docID: String, _ revID: String, _ name: String,
                          _ expectedDigest: String?) async throws -> Result<(digest: String, length: Int), CBLError> {
        let db = replicator.db
        var attempt = 0
        while true {
            let blob = try db.syncBeginBlobDownload()
            do {
                let path = RemoteDatabase.encodeDocID(docID) + "/" + RemoteDatabase.encodePathSegment(name)
                let status = try await remote.download(path, query: [("rev", revID)]) { try blob.append($0) }
                guard status < 300 else {
                    blob.cancel()
                    if RemoteDatabase.isTransient(status: status) {
                        throw CBLError(status, "HTTP \(status) downloading attachment '\(name)'")
                    }
                    return .failure(Replicator.documentError(status, docID, revID, "attachment '\(name)': HTTP \(status)"))
                }
                let installed = try blob.finish()
                if let expectedDigest, expectedDigest.hasPrefix("md5-"), expectedDigest != installed.md5Digest {
                    return .failure(Replicator.documentError(491, docID, revID,
                                                             "attachment '\(name)' does not match its digest \(expectedDigest)"))
                }
                if let expectedDigest, expectedDigest.hasPrefix(SHA1BlobDigest.prefix), expectedDigest != installed.digest {
                    return .failure(Replicator.documentError(491, docID, revID,
                                                             "attachment '\(name)' does not match its digest \(expectedDigest)"))
                }
                return .success((installed.digest, installed.length))
            } catch {
                blob.cancel()
                if Task.isCancelled { throw CancellationError() }
                guard attempt < tuning.requestRetryDelays.count, RemoteDatabase.isTransient(error) else {
                    return .failure(CBLReplication.asCBLError(error))
                }
                try await Task.sleep(for: tuning.requestRetryDelays[attempt])
                attempt += 1
            }
        }
    }

    enum FetchResult: Sendable {
        case document(IncomingRevision)
        /// The server says this revision is gone or forbidden (404/403/410): skip it for good.
        case skipped(CBLError)
        /// A failure worth retrying on the next run.
        case failed(CBLError)
    }

    private func fetchBatch(_ batch: [Wanted], bulkGet: Locked<Bool>) async throws -> [FetchResult] {
        if bulkGet.withLock({ $0 }) {
            if let results = try await fetchBulk(batch) { return results }
            bulkGet.withLock { $0 = false }
        }
        var results: [FetchResult] = []
        for wanted in batch { results.append(try await fetchOne(wanted)) }
        return results
    }

    /// `POST _bulk_get?revs=true&attachments=true` (JSON, or multipart from Sync Gateway); nil
    /// when the peer has no `_bulk_get` (404/405/400 on the endpoint itself). `att_encoding_info`,
    /// as CouchDB's replicator asks: a stub of a gzip-stored attachment says so, so its digest
    /// (which names the gzip bytes) is not checked against the decoded download.
    private func fetchBulk(_ batch: [Wanted]) async throws -> [FetchResult]? {
        let body = Puller.bulkGetRequest(batch)
        let response = try await remote.send(.POST, "_bulk_get",
                                             query: [("revs", "true"), ("attachments", multipartMode ? "true" : "false"),
                                                     ("att_encoding_info", "true")],
                                             body: .bytes(body), contentType: "application/json",
                                             accept: fetchAccept, headers: Puller.fetchHeaders)
        if [400, 404, 405, 501].contains(response.status) { return nil }
        guard response.status < 300 else { throw RemoteDatabase.error(response, "_bulk_get failed") }
        if let results = Puller.multipartResults(response, for: batch) { return results }
        var byKey: [String: FetchResult] = [:]
        for result in try BulkGetResult.decodeAnswer(response.body) {
            for entry in result.docs {
                switch entry {
                case .revision(let revision):
                    byKey[revision.docID + "\u{0}" + revision.revID] = .document(revision)
                case .failure(let failure):
                    guard let id = failure.docID ?? result.docID, let rev = failure.revID else { continue }
                    byKey[id + "\u{0}" + rev] = Puller.failure(id, rev, failure)
                case .encodedRevision:
                    continue
                }
            }
        }
        return batch.map { wanted in
            byKey[wanted.docID + "\u{0}" + wanted.revID]
                ?? .failed(Replicator.documentError(502, wanted.docID, wanted.revID, "missing from the _bulk_get answer"))
        }
    }

    /// The `_bulk_get` request body: `{"docs":[{"id","rev"[,"atts_since"]}…]}`.
    static func bulkGetRequest(_ batch: [Wanted]) -> [UInt8] {
        var writer = JSONWriter(capacity: 96 * batch.count + 16)
        writer.writeRaw(#"{"docs":["#.utf8)
        for (index, wanted) in batch.enumerated() {
            if index > 0 { writer.writeRawByte(UInt8(ascii: ",")) }
            writer.writeRaw(#"{"id":"#.utf8)
            writer.writeString(wanted.docID)
            writer.writeRaw(#","rev":"#.utf8)
            writer.writeString(wanted.revID)
            if !wanted.attsSince.isEmpty {
                writer.writeRaw(#","atts_since":["#.utf8)
                for (i, rev) in wanted.attsSince.enumerated() {
                    if i > 0 { writer.writeRawByte(UInt8(ascii: ",")) }
                    writer.writeString(rev)
                }
                writer.writeRawByte(UInt8(ascii: "]"))
            }
            writer.writeRawByte(UInt8(ascii: "}"))
        }
        writer.writeRaw("]}".utf8)
        return writer.bytes
    }

    /// A revision the peer could not return: skipped for good when gone or forbidden, else
    /// retried on the next run.
    static func failure(_ docID: String, _ revID: String, _ failure: BulkGetResult.Failure) -> FetchResult {
        let e = Replicator.documentError(failure.status, docID, revID, failure.reason)
        return [403, 404, 410].contains(failure.status) ? .skipped(e) : .failed(e)
    }

    /// A revision read from an answer, or its failure.
    static func revision(_ doc: JSONObject, docID: String, revID: String) -> FetchResult {
        revision(MultipartDocument.RelatedDocument(json: doc, bodies: [:]), docID: docID, revID: revID)
    }

    /// A revision read from a multipart answer (its attachments' bodies alongside), or its failure.
    static func revision(_ doc: MultipartDocument.RelatedDocument, docID: String, revID: String) -> FetchResult {
        do {
            return .document(try doc.revision())
        } catch {
            let e = CBLReplication.asCBLError(error)
            return .failed(Replicator.documentError(e.code, docID, revID, e.message))
        }
    }

    /// `GET {doc}?rev=…&revs=true&attachments=true&atts_since=[…]` (JSON, or multipart when
    /// attachments follow).
    private func fetchOne(_ wanted: Wanted) async throws -> FetchResult {
        var query: [(String, String)] = [("rev", wanted.revID), ("revs", "true"), ("att_encoding_info", "true")]
        if multipartMode {
            query.append(("attachments", "true"))
            if !wanted.attsSince.isEmpty, let since = try? JSON.string(wanted.attsSince, sortedKeys: false) {
                query.append(("atts_since", since))
            }
        }
        let response = try await remote.send(.GET, RemoteDatabase.encodeDocID(wanted.docID), query: query,
                                             accept: fetchAccept, headers: Puller.fetchHeaders)
        switch response.status {
        case 200..<300:
            if let result = Puller.multipartResult(response, for: wanted) { return result }
            var doc = try response.typedObject()
            if doc["_id"] == nil { doc["_id"] = .string(wanted.docID) }
            return Puller.revision(doc, docID: wanted.docID, revID: wanted.revID)
        case 403, 404, 410:
            return .skipped(Replicator.documentError(response.status, wanted.docID, wanted.revID,
                                                     RemoteDatabase.reason(response) ?? "HTTP \(response.status)"))
        case 401:
            throw RemoteDatabase.error(response, "Unauthorized")
        default:
            return .failed(Replicator.documentError(response.status, wanted.docID, wanted.revID,
                                                    RemoteDatabase.reason(response) ?? "HTTP \(response.status)"))
        }
    }
}
