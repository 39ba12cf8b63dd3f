import Crypto
import Foundation
import JSONCore

/// The parts of a replication that its checkpoint ID depends on (spec 9.1, iOS rule).
struct CheckpointSpec: Sendable {
    var push: Bool
    var continuous: Bool
    var filter: String?
    var filterParams: [String: String]?
    var docIDs: [String]?
    var remoteURL: String
    var remoteUUID: String?

    /// `lowercase_hex(SHA-1(canonicalJSON(spec)))` for a local database UUID.
    func checkpointID(localUUID: String) -> String {
        var spec: [String: Any] = ["localUUID": localUUID, "push": push]
        // iOS writes `continuous` only for non-continuous replications, as false.
        if !continuous { spec["continuous"] = false }
        if let filter { spec["filter"] = filter }
        if let filterParams, !filterParams.isEmpty { spec["filterParams"] = filterParams }
        if let docIDs { spec["docids"] = docIDs }
        if let remoteUUID { spec["remoteUUID"] = remoteUUID } else { spec["remoteURL"] = remoteURL }
        let json = (try? JSON.canonicalData(spec)) ?? []
        return Insecure.SHA1.hash(data: json).map { String(format: "%02x", $0) }.joined()
    }
}

extension CBLDatabase {
    static func checkpointInfoKey(_ checkpointID: String) -> String { "checkpoint/" + checkpointID }

    /// The `info` row holding a checkpoint being saved: written before the remote `_local`
    /// document is PUT, removed when the local row catches up. A process killed between the
    /// two saves finds the remote equal to this row and resumes from it (every revision up to
    /// it was stored before the save began) instead of starting over as 1.x would.
    static func pendingCheckpointInfoKey(_ checkpointID: String) -> String { "checkpoint/" + checkpointID + "/pending" }

    /// The sequence a killed process may have saved remotely but not locally (see above).
    func pendingCheckpoint(_ checkpointID: String) throws -> String? {
        try read { store in try store.info(CBLDatabase.pendingCheckpointInfoKey(checkpointID)) }
    }

    /// Records the sequence about to be saved on the remote (see `pendingCheckpointInfoKey`).
    func setPendingCheckpoint(_ checkpointID: String, lastSequence: String) throws {
        try write(atomic: true) { store in
            try store.setInfo(CBLDatabase.pendingCheckpointInfoKey(checkpointID), lastSequence)
        }
    }

    /// The local checkpoint of a replication (spec 9.2): the `info` row `checkpoint/<id>`, or,
    /// for a database installed from elsewhere, the row of the ID computed with the UUID kept in
    /// `_local/CBL_LocalCheckpoint`. Returns the checkpoint ID in use, the sequence (nil if
    /// none), and whether that sequence is the imported one.
    func localCheckpoint(_ spec: CheckpointSpec) throws -> (id: String, lastSequence: String?, imported: Bool) {
        try read { store in
            let uuid = try store.info("privateUUID") ?? ""
            let id = spec.checkpointID(localUUID: uuid)
            if let seq = try store.info(CBLDatabase.checkpointInfoKey(id)) { return (id, seq, false) }
            if let (_, body) = try store.localDocument("_local/CBL_LocalCheckpoint"),
               let imported = (try? JSON.value(body))?["localUUID"]?.stringValue, imported != uuid {
                let importedID = spec.checkpointID(localUUID: imported)
                if let seq = try store.info(CBLDatabase.checkpointInfoKey(importedID)) { return (id, seq, true) }
            }
            return (id, nil, false)
        }
    }

    /// Records a replication's local checkpoint (after the remote one was saved).
    func setLocalCheckpoint(_ checkpointID: String, lastSequence: String?) throws {
        try write(atomic: true) { store in
            try store.setInfo(CBLDatabase.checkpointInfoKey(checkpointID), lastSequence)
            try store.setInfo(CBLDatabase.pendingCheckpointInfoKey(checkpointID), nil)
        }
    }
}

/// The remote half of a checkpoint: the `_local/<id>` document on the peer, saved by PUTting
/// back what was fetched with `lastSequence` replaced (spec 9.6).
actor RemoteCheckpoint {
    let remote: RemoteDatabase
    let checkpointID: String
    private var document: Checkpoint

    init(remote: RemoteDatabase, checkpointID: String) {
        self.remote = remote
        self.checkpointID = checkpointID
        document = Checkpoint(id: "_local/" + checkpointID)
    }

    private var path: String { "_local/" + checkpointID }

    /// Fetches the remote checkpoint; nil when the peer has none (404).
    func fetch() async throws -> String? {
        let response = try await remote.send(.GET, path)
        if response.status == 404 {
            document = Checkpoint(id: path)
            return nil
        }
        guard response.status < 300 else { throw RemoteDatabase.error(response, "Cannot read the remote checkpoint") }
        document = try Checkpoint(jsonText: response.body, fallbackID: path)
        return document.lastSequence
    }

    /// Saves `lastSequence` on the peer: on 404 forget the old body, on 409 re-read its `_rev`;
    /// one retry each.
    func save(_ lastSequence: String) async throws {
        for attempt in 0..<3 {
            var doc = document
            doc.id = path
            doc.lastSequence = lastSequence
            let response = try await remote.send(.PUT, path, body: .bytes(doc.encoded), contentType: "application/json")
            switch response.status {
            case 200..<300:
                doc.rev = try response.typedObject()["rev"]?.stringValue
                document = doc
                return
            case 404 where attempt < 2:
                document = Checkpoint(id: path)
            case 409 where attempt < 2:
                let current = try await remote.send(.GET, path)
                if current.status == 200, let latest = try? Checkpoint(jsonText: current.body, fallbackID: path) {
                    document.rev = latest.rev
                } else {
                    document.rev = nil
                }
            default:
                throw RemoteDatabase.error(response, "Cannot save the remote checkpoint")
            }
        }
    }
}
