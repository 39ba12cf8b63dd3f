import Foundation
import JSONCore
import NIOCore

/// A value carried across a concurrency boundary that the compiler cannot prove safe: JSON
/// trees (`[String: Any]`) handed from the database queue to the replication task, each used
/// by one side at a time.
struct Unchecked<Value>: @unchecked Sendable {
    var value: Value
}

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
/// (one-shot) or stopped (continuous). Transient failures make a continuous run go offline
/// and retry with backoff; permanent ones (401, 403, 404, bad URL) end it with `lastError`.
final class Replicator: @unchecked Sendable {
    unowned let replication: CBLReplication
    let configuration: CBLReplication.Configuration
    let runID: Int
    let db: CBLDatabase
    let spec: CheckpointSpec
    var tuning: ReplicationTuning { configuration.tuning }

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
                retryDelays: tuning.requestRetryDelays)
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
            do {
                try await login(remote)
                if replication.pull {
                    try await Puller(replicator: self, remote: remote).run()
                } else {
                    try await Pusher(replicator: self, remote: remote).run()
                }
                return
            } catch is CancellationError {
                return
            } catch {
                if Task.isCancelled { return }
                let cblError = CBLReplication.asCBLError(error)
                CBLLog.warning("Sync", "\(replication) failed: \(cblError.message)")
                guard configuration.continuous, RemoteDatabase.isTransient(error) else {
                    report { $0.lastError = cblError }
                    return
                }
                report {
                    $0.lastError = cblError
                    $0.status = .offline
                }
                do {
                    try await Task.sleep(for: offlineDelay)
                } catch {
                    return
                }
                offlineDelay = min(offlineDelay * 2, tuning.maxOfflineRetryDelay)
                report { $0.status = .active }
            }
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
