import CouchbaseLite
import Foundation

/// A design document's index information and compaction, and the versions a view index depends
/// on, answered as CouchDB 3.4 does.
extension RESTRouter {
    /// `GET /{db}/_design/{ddoc}/_info`: the `view_index` of the design document's views.
    func designInfo(_ db: CBLDatabase, designDoc: String, _ request: RESTRequest) throws -> RESTResponse {
        guard let info = try db.designIndexInfo(designDoc) else { throw RESTError.missing }
        let pending = Int(info.pendingSequences)
        let index: [String: Any] = [
            "signature": info.signature,
            "language": info.language,
            "update_seq": Int(info.updateSeq),
            // A purge removes index rows in its own transaction: the index has seen every purge.
            "purge_seq": db.purgeSequence,
            "updates_pending": ["minimum": pending, "preferred": pending, "total": pending],
            "sizes": ["file": Int(info.fileSize), "active": Int(info.activeSize), "external": Int(info.externalSize)],
            // Views are indexed inside the query that needs them, and compacted inside the request.
            "compact_running": false,
            "updater_running": false,
            "waiting_clients": 0,
            "waiting_commit": false,
            "collator_versions": [CollationVersions.current.collator],
        ]
        return .json(200, ["name": designDoc, "view_index": index])
    }

    /// `POST /{db}/_compact/{ddoc}`: rewrites the design document's view indexes.
    func compactDesignIndexes(_ db: CBLDatabase, designDoc: String, _ request: RESTRequest) throws -> RESTResponse {
        try requireJSONBody(request)
        guard try db.compactDesignIndexes(designDoc) else {
            throw RESTError(404, "not_found", "missing")
        }
        return .json(202, ["ok": true])
    }

    /// `GET /_node/{node}/_versions`: the JavaScript engine views run on (when one is registered)
    /// and the collation library.
    func nodeVersions(_ request: RESTRequest) throws -> RESTResponse {
        let versions = CollationVersions.current
        var answer: [String: Any] = [
            "collation_driver": ["name": "libicu", "library_version": versions.library,
                                 "collator_version": versions.collator],
        ]
        if let engine = CBLView.compiler()?.engineName { answer["javascript_engine"] = ["name": engine] }
        return .json(200, answer)
    }
}
