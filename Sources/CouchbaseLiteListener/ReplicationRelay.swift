import CouchbaseLite
import Foundation

/// A replication between two remote databases, run by the listener as a replication service
/// (CouchDB's `_replicate` with two URLs): the package's replicator pulls the source into a
/// private database and pushes that database to the target. Both legs are the ordinary
/// `CBLReplication` (revisions keep their IDs and histories, `new_edits=false`; attachments and
/// conflicts travel as in any 1.x replication; the target's `_revs_diff` keeps pushes minimal).
///
/// The private database lives in its own manager under the temporary directory (never listed by
/// `_all_dbs`) and is deleted when the relay ends: a one-shot relay reads the whole source each
/// time (its checkpoints go with it) but sends the target only what `_revs_diff` says it lacks.
// @unchecked because `closed`, its only mutable state, is only touched under `lock`.
final class ReplicationRelay: @unchecked Sendable {
    /// A remote end: URL, extra headers, credentials.
    struct Remote {
        var url: URL
        var headers: [String: String]
        var authenticator: CBLAuthenticatorProtocol?
    }

    let pull: CBLReplication
    let push: CBLReplication
    private let manager: CBLManager
    private let directory: URL
    private let lock = NSLock()
    private var closed = false

    init(source: Remote, target: Remote, continuous: Bool, createTarget: Bool) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("cbl-relay-\(UUID().uuidString)")
        manager = try CBLManager(directory: directory.path)
        do {
            let relay = try manager.databaseNamed("relay")
            pull = relay.createPullReplication(source.url)
            pull.headers = source.headers
            pull.authenticator = source.authenticator
            pull.continuous = continuous
            push = relay.createPushReplication(target.url)
            push.headers = target.headers
            push.authenticator = target.authenticator
            push.continuous = continuous
            push.createTarget = createTarget
        } catch {
            manager.close()
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
    }

    /// True while either leg runs.
    var running: Bool { pull.running || push.running }

    /// One-shot: the source into the relay database, then the relay database to the target.
    /// Returns the first leg's error, if any; the relay is closed afterwards.
    func runOnce() -> Error? {
        defer { close() }
        if let error = pull.runToCompletion() { return error }
        return push.runToCompletion()
    }

    /// Continuous: both legs run until stopped; each change flows on as it arrives.
    func startContinuous() {
        pull.start()
        push.start()
    }

    /// Stops both legs and deletes the relay database.
    func stop() {
        pull.stop()
        push.stop()
        close()
    }

    /// Deletes the relay database once nothing runs on it (idempotent).
    func close() {
        lock.lock()
        let first = !closed
        closed = true
        lock.unlock()
        guard first else { return }
        for leg in [pull, push] where leg.running {
            leg.stop()
            let deadline = Date().addingTimeInterval(10)
            while leg.running && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        }
        manager.close()
        try? FileManager.default.removeItem(at: directory)
    }
}
