import Foundation
import JSONCore
import SQLiteKit

/// The `localdocs` table: `_local/…` documents, one row each, no history (spec 5).
extension SQLiteStore {
    /// A local document's revision ID and stored JSON body, or nil.
    func localDocument(_ fullID: String) throws -> (String, [UInt8])? {
        let stmt = try connection.cached("SELECT revid, json FROM localdocs WHERE docid=?")
        defer { stmt.reset() }
        try stmt.bind(fullID, at: 1)
        guard try stmt.step() else { return nil }
        return (stmt.string(0) ?? "", stmt.bytes(1) ?? [])
    }

    /// Every local document in ID order.
    func allLocalDocuments() throws -> [(docID: String, revID: String, json: [UInt8])] {
        var out: [(docID: String, revID: String, json: [UInt8])] = []
        try connection.prepare("SELECT docid, revid, json FROM localdocs ORDER BY docid").forEachRow {
            out.append(($0.string(0) ?? "", $0.string(1) ?? "", $0.bytes(2) ?? []))
        }
        return out
    }

    /// Writes a local document; revision IDs are `N-local` (spec 5).
    func putLocalDocument(_ fullID: String, body: [UInt8], prevRevID: String?, checkRev: Bool) throws -> String {
        let existing = try localDocument(fullID)
        if checkRev, existing?.0 != prevRevID {
            throw existing == nil && prevRevID != nil ? CBLError.notFound("Local document \(fullID) not found") : CBLError.conflict()
        }
        let generation = existing.map { RevisionID.generation($0.0) } ?? 0
        let revID = "\(generation + 1)-local"
        try connection.run("INSERT OR REPLACE INTO localdocs (docid, revid, json) VALUES (?, ?, ?)",
                           [.text(fullID), .text(revID), .blob(body)])
        return revID
    }

    /// Deletes a local document: 404 when missing, 409 when `revID` is not its revision.
    func deleteLocalDocument(_ fullID: String, revID: String?) throws {
        guard let existing = try localDocument(fullID) else { throw CBLError.notFound("Local document \(fullID) not found") }
        if let revID, revID != existing.0 { throw CBLError.conflict() }
        try connection.run("DELETE FROM localdocs WHERE docid=?", [.text(fullID)])
    }

    /// Records the pre-replace private UUID so replication checkpoints stay valid (spec 1.6).
    func putLocalCheckpointUUID(_ uuid: String) throws {
        let body = try JSON.canonicalData(["localUUID": uuid])
        _ = try putLocalDocument("_local/CBL_LocalCheckpoint", body: body, prevRevID: nil, checkRev: false)
    }
}
