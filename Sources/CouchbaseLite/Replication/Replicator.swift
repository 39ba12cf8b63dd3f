import Foundation
import JSONCore
import NIOCore

/// `transform` applied to every item, at most `limit` at a time; the results in the items' order.
func concurrentMap<Item: Sendable, Output: Sendable>(_ items: [Item], limit: Int,
                                                     _ transform: @escaping @Sendable (Item) async throws -> Output) async throws -> [Output] {
    var results = [Output?](repeating: nil, count: items.count)
    try await withThrowingTaskGroup(of: (Int, Output).self) { group in
        var next = 0
        func addNext() {
            guard next < items.count else { return }
            let index = next
            next += 1
            group.addTask { (index, try await transform(items[index])) }
        }
        for _ in 0..<max(1, limit) { addNext() }
        while let (index, output) = try await group.next() {
            results[index] = output
            addNext()
        }
    }
    return results.map { $0! }
}

/// One run of a replication: connects, finds the checkpoint, then pulls or pushes until done
/// (one-shot) or stopped (continuous). Transient failures make the run go offline and retry
/// with jittered exponential backoff from its checkpoint: a continuous run for as long as it
/// runs, a one-shot run until `retryTimeLimit` has passed without progress. Permanent
/// failures (401, 403, 404, bad URL) end it with `lastError`.
final class Replicator: Sendable {
    unowned let replication: CBLReplication
    let configuration: CBLReplication.Configuration
    let runID: Int
    let db: CBLDatabase
    let spec: CheckpointSpec
    var tuning: ReplicationTuning { configuration.tuning }
    /// When the current streak of transient failures began (nil: the last thing that happened
    /// was progress). A one-shot run gives up when it is older than `retryTimeLimit`.
    private let failingSince = Locked<ContinuousClock.Instant?>(nil)
    /// Counts checkpoints saved, so a retry can tell whether the attempt before it moved on.
    private let progressCount = Locked(0)
    /// Set when a multipart upload timed out, failed with 5xx or was refused (415): the rest
    /// of this run sends attachments inline in `_bulk_docs` (a CouchDB cluster with a node
    /// down hangs `multipart/related` PUTs while `_bulk_docs` works).
    let inlineAttachmentsOnly = Locked(false)

    init(replication: CBLReplication, configuration: CBLReplication.Configuration, runID: Int) {
        self.replication = replication
        self.configuration = configuration
        self.runID = runID
        self.db = replication.localDatabase
        self.spec = replication.checkpointSpec(configuration)
    }

    /// The remote URL as the `source` recorded on pulled revisions (spec 9.5: a push does not
    /// send back what it just pulled from the same peer).
    var remoteSource: String { replication.remoteURL.absoluteString }

    func report(_ body: (inout CBLReplication.Progress) -> Void) {
        replication.update(runID: runID, body)
    }

    /// Runs a database operation on the replication's database queue (SQLite work does not
    /// block the cooperative thread pool).
    /// Reads go to their own queue so they do not wait behind a page being inserted (the
    /// store serves reads from WAL readers while the writer works).
    func onDatabase<R: Sendable>(reading: Bool = false, _ body: @escaping @Sendable () throws -> R) async throws -> R {
        let queue = reading ? replication.readQueue : replication.databaseQueue
        return try await withCheckedThrowingContinuation { continuation in
            queue.async {
                do {
                    continuation.resume(returning: try body())
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }

    func run() async {
        let remote: RemoteDatabase
        do {
            remote = try RemoteDatabase(
                url: replication.remoteURL, headers: configuration.headers, authenticator: configuration.authenticator,
                cookies: replication.cookieJar, trustedRootCertificates: configuration.trustedRootCertificates,
                onlyTrustedRoots: configuration.onlyTrustedRoots,
                requestTimeout: .nanoseconds(Int64(tuning.requestTimeout / .nanoseconds(1))),
                retryDelays: tuning.requestRetryDelays, minimumUploadRate: tuning.minimumUploadRate,
                retryObserver: { [self] error in requestRetry(error) })
        } catch {
            report { $0.lastError = error }
            return
        }
        await run(remote)
        // Close the connections before reporting the end, so a peer that stops right after
        // the replication does not wait for idle keep-alive connections.
        await remote.shutdown()
    }

    private func run(_ remote: RemoteDatabase) async {
        var offlineDelay = tuning.offlineRetryDelay
        while !Task.isCancelled {
            let progressBefore = progressCount.withLock { $0 }
            let failedRequestsBefore = remote.failedRequests.withLock { $0 }
            do {
                try await login(remote)
                if replication.pull {
                    try await Puller(replicator: self, remote: remote).run()
                } else {
                    try await Pusher(replicator: self, remote: remote).run()
                }
                markProgress()
                return
            } catch is CancellationError {
                return
            } catch {
                if Task.isCancelled { return }
                let cblError = CBLReplication.asCBLError(error)
                CBLLog.warning("Sync", "\(replication) failed: \(cblError.message)")
                // A one-shot run retries when it lost the peer (a request failed for good), not
                // when a document failed (a damaged attachment, a 5xx for one revision): 1.x
                // stopped there with the error, and so does this.
                let lostPeer = remote.failedRequests.withLock { $0 } != failedRequestsBefore
                guard RemoteDatabase.isTransient(error), configuration.continuous || lostPeer else {
                    report {
                        $0.lastError = cblError
                        $0.retryingError = nil
                    }
                    return
                }
                // An attempt that saved a checkpoint before failing starts the backoff over.
                if progressCount.withLock({ $0 }) != progressBefore { offlineDelay = tuning.offlineRetryDelay }
                let now = ContinuousClock.now
                let since = failingSince.withLock { since in
                    if since == nil { since = now }
                    return since!
                }
                var delay = RemoteDatabase.jittered(offlineDelay)
                if !configuration.continuous {
                    let limit = Duration.seconds(configuration.retryTimeLimit)
                    let elapsed = now - since
                    guard elapsed < limit else {
                        CBLLog.warning("Sync", "\(replication) gives up after retrying for \(elapsed)")
                        report {
                            $0.lastError = cblError
                            $0.retryingError = nil
                        }
                        return
                    }
                    delay = min(delay, limit - elapsed)
                }
                report {
                    if $0.status != .offline { $0.statusBeforeOffline = $0.status }
                    $0.lastError = cblError
                    $0.retryingError = "\(cblError)"
                    $0.status = .offline
                }
                do {
                    try await Task.sleep(for: delay)
                } catch {
                    return
                }
                offlineDelay = min(offlineDelay * 2, tuning.maxOfflineRetryDelay)
                report {
                    $0.status = .active
                    $0.statusBeforeOffline = nil
                }
            }
        }
    }

    /// A request failed transiently and waits to be retried (`error`), or a retried request
    /// got through (nil): the replication is `.offline` in between, with the error as `lastError`.
    private func requestRetry(_ error: Error?) {
        if let error {
            let now = ContinuousClock.now
            failingSince.withLock { if $0 == nil { $0 = now } }
            report {
                if $0.status != .offline { $0.statusBeforeOffline = $0.status }
                $0.status = .offline
                let cblError = CBLReplication.asCBLError(error)
                $0.lastError = cblError
                $0.retryingError = "\(cblError)"
            }
        } else {
            report(Replicator.backOnline)
        }
    }

    /// The run moved forward (a checkpoint was saved, or it finished): the failure streak and
    /// the error it was retrying are over.
    func markProgress() {
        progressCount.withLock { $0 += 1 }
        failingSince.withLock { $0 = nil }
        report(Replicator.backOnline)
    }

    private static func backOnline(_ p: inout CBLReplication.Progress) {
        if p.status == .offline {
            p.status = p.statusBeforeOffline ?? .active
            p.statusBeforeOffline = nil
        }
        if let retrying = p.retryingError {
            if let current = p.lastError, "\(current)" == retrying { p.lastError = nil }
            p.retryingError = nil
        }
    }

    /// Session-cookie login (spec 8.1): `POST {db}/_session`, then `POST /_session` when the
    /// database-level endpoint does not exist (CouchDB).
    private func login(_ remote: RemoteDatabase) async throws {
        if let token = configuration.authenticator as? CBLTokenAuthenticator {
            try await token.logIn(remote)
            return
        }
        guard let auth = configuration.authenticator as? CBLPasswordAuthenticator, auth.kind == .session else { return }
        let body = try JSON.canonicalData(["name": auth.username, "password": auth.password])
        var response = try await remote.send(.POST, "_session", body: .bytes(body), contentType: "application/json")
        if [400, 401, 404, 405].contains(response.status) {
            response = try await remote.send(.POST, "/_session", body: .bytes(body), contentType: "application/json")
        }
        guard response.status < 300 else { throw RemoteDatabase.error(response, "Login failed") }
    }

    /// Reads the checkpoints (spec 9.3): the local one first; the remote one only when a local
    /// one exists. Returns the sequence to start after (nil = from the beginning), the remote
    /// checkpoint handle, and whether the remote checkpoint was missing.
    func startCheckpoint(_ remote: RemoteDatabase) async throws -> (since: String?, checkpoint: RemoteCheckpoint, remoteMissing: Bool) {
        let spec = self.spec
        let db = self.db
        let (id, local, imported) = try await onDatabase(reading: true) { try db.localCheckpoint(spec) }
        let checkpoint = RemoteCheckpoint(remote: remote, checkpointID: id)
        // A process killed between the remote save and the local one left the new value in the
        // pending row and on the remote (the first save included, when there is no local row yet).
        // The local row then catches up, as the killed process would have written it.
        let pending = try await onDatabase(reading: true) { try db.pendingCheckpoint(id) }
        func resumeFromPending(_ sequence: String) async throws -> (String?, RemoteCheckpoint, Bool) {
            try await onDatabase { try db.setLocalCheckpoint(id, lastSequence: sequence) }
            return (sequence, checkpoint, false)
        }
        guard let local else {
            guard let pending else { return (nil, checkpoint, true) }
            let remoteSeq = try await checkpoint.fetch()
            if remoteSeq == pending { return try await resumeFromPending(pending) }
            return (nil, checkpoint, remoteSeq == nil)
        }
        let remoteSeq = try await checkpoint.fetch()
        if remoteSeq == local { return (local, checkpoint, false) }
        if let remoteSeq, remoteSeq == pending { return try await resumeFromPending(remoteSeq) }
        // An installed copy of a database (spec 9.2/9.3): no checkpoint under its own ID on
        // either side counts as equal, and the one recorded under its previous UUID is used.
        if imported && remoteSeq == nil { return (local, checkpoint, true) }
        CBLLog.debug("Sync", "\(replication): checkpoint mismatch (local \(local), remote \(remoteSeq ?? "none")); starting over")
        return (nil, checkpoint, remoteSeq == nil)
    }

    /// Saves a checkpoint on the remote, then locally (spec 9.6).
    func saveCheckpoint(_ checkpoint: RemoteCheckpoint, _ sequence: String) async throws {
        let db = self.db
        let id = checkpoint.checkpointID
        try await onDatabase { try db.setPendingCheckpoint(id, lastSequence: sequence) }
        try await checkpoint.save(sequence)
        try await onDatabase { try db.setLocalCheckpoint(id, lastSequence: sequence) }
        markProgress()
    }

    /// Checks that the remote database exists (404 stops the replication).
    func checkRemoteDatabase(_ remote: RemoteDatabase) async throws {
        let response = try await remote.send(.GET, "")
        guard response.status < 300 else {
            throw RemoteDatabase.error(response, "Cannot open the remote database \(remote.baseURL)")
        }
    }

    /// An error for a per-document failure.
    static func documentError(_ status: Int, _ docID: String, _ revID: String, _ reason: String) -> CBLError {
        CBLError(status, "\(docID) \(revID): \(reason)")
    }
}
