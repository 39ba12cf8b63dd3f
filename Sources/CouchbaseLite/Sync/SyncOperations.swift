import Foundation
import JSONCore
import SQLiteKit

// The CouchDB replication-protocol operations on a database, shared by the REST listener
// (`CouchbaseLiteListener`) and the replicator (`CBLReplication`): revision trees, `_revs_diff`,
// the changes feed, `new_edits=false` inserts, purge with revision lists, local documents with
// MVCC, raw attachment blobs. One implementation serves both directions of a replication.
// They wrap the internal machinery (`putRevision`, `forceInsert`, `SQLiteStore`…).

/// One revision as the REST layer sees it.
package struct SyncRevision: Sendable {
    package let docID: String
    package let revID: String
    package let sequence: Int64
    package let deleted: Bool
    /// Stored JSON body (without `_id`/`_rev`), nil when not loaded or not available.
    package let body: [UInt8]?
    package let isLeaf: Bool

    init(_ stored: StoredRevision) {
        docID = stored.docID
        revID = stored.revID
        sequence = stored.sequence
        deleted = stored.deleted
        body = stored.body
        isLeaf = stored.isLeaf
    }

    /// The body read typed, members in stored order (nil when unavailable or unreadable).
    package var typedProperties: JSONObject? {
        guard let body else { return nil }
        if body.isEmpty { return [:] }
        return try? JSON.object(body)
    }

    /// The body parsed, without special keys (empty when unavailable).
    package var properties: [String: Any]? {
        guard let body else { return nil }
        if body.isEmpty { return [:] }
        return try? JSON.parseObject(body)
    }
}

/// One entry of a revision's history (`_revs_info`).
package struct SyncHistoryEntry: Sendable {
    package let revID: String
    package let deleted: Bool
    /// The body is still stored (not compacted away / never received).
    package let available: Bool
}

/// One row of the changes feed: a document with the leaves changed since the requested sequence.
package struct SyncChange: Sendable {
    package let sequence: Int64
    package let docID: String
    /// Leaves to report, winner first (only the winner unless all leaves were asked for).
    package let revIDs: [String]
    /// True when the document's winning revision is a deletion.
    package let deleted: Bool
    /// The winning revision's stored body, when requested.
    package let winnerBody: [UInt8]?
    package let winnerRevID: String
}

extension CBLDatabase {
    // MARK: Identifiers

    /// Spec 3.1: non-empty, not starting with `_` unless `_design/…`.
    package static func syncIsValidDocumentID(_ docID: String) -> Bool { isValidDocumentID(docID) }

    /// A new random document ID in the 1.x form.
    package static func syncGenerateDocumentID() -> String { generateDocumentID() }

    /// The generation of a revision ID, 0 when invalid (spec 3.2).
    package static func syncGeneration(_ revID: String) -> Int { RevisionID.generation(revID) }

    /// `_revisions` for a history, newest first (spec 3.4).
    package static func syncRevisionsDictionary(_ history: [String]) -> [String: Any] {
        RevisionID.revisionsDictionary(history)
    }

    /// Parses `_revisions` into rev IDs, newest first; nil when malformed.
    package static func syncHistory(fromRevisions revisions: [String: Any]) -> [String]? {
        RevisionID.history(fromRevisions: revisions)
    }

    /// True for a read-only database.
    package var syncIsReadOnly: Bool { isReadOnly }

    /// Bytes used on disk by the SQLite file and its WAL.
    package var syncDiskSize: Int64 {
        let fm = FileManager.default
        var total: Int64 = 0
        for name in [SQLiteStore.databaseFileName, SQLiteStore.databaseFileName + "-wal"] {
            let path = directoryURL.appendingPathComponent(name).path
            if let size = (try? fm.attributesOfItem(atPath: path))?[.size] as? NSNumber { total += size.int64Value }
        }
        return total
    }

    /// Documents whose winning revision is a deletion.
    package var syncDeletedDocumentCount: Int {
        (try? read { try $0.deletedDocumentCount() }) ?? 0
    }

    // MARK: Reading revisions

    /// The winning revision (it may be a tombstone), with its body; nil if the document is unknown.
    package func syncWinningRevision(docID: String) throws -> SyncRevision? {
        try read { store in try store.winningRevision(docID: docID).map(SyncRevision.init) }
    }

    /// A specific revision with its body (nil body when not available); nil if unknown.
    package func syncRevision(docID: String, revID: String) throws -> SyncRevision? {
        try read { store in try store.revision(docID: docID, revID: revID).map(SyncRevision.init) }
    }

    /// Every leaf of a document, winner first (deleted leaves included).
    package func syncLeaves(docID: String, withBodies: Bool) throws -> [SyncRevision] {
        try read { store in
            guard let id = try store.numericID(of: docID) else { return [] }
            return try store.leaves(docID: docID, numericID: id, withBodies: withBodies).map(SyncRevision.init)
        }
    }

    /// The leaves descending from a revision (itself when it is a leaf), winner first, with
    /// bodies; empty when the revision is unknown. This is what CouchDB's `latest=true` returns
    /// for a requested revision (`couch_key_tree:get_key_leafs`): a replicator that asked for a
    /// revision superseded meanwhile gets the current leaves of that branch instead of nothing.
    package func syncLatestLeaves(docID: String, from revID: String) throws -> [SyncRevision] {
        try read { store in
            guard let id = try store.numericID(of: docID) else { return [] }
            let tree = try store.revisionTree(numericID: id)
            guard let start = tree.node(revID: revID) else { return [] }
            if start.current {
                return try store.revision(docID: docID, numericID: id, revID: revID).map { [SyncRevision($0)] } ?? []
            }
            let descendants = tree.descendants(of: start.sequence)
            return try store.leaves(docID: docID, numericID: id, withBodies: true)
                .filter { descendants.contains($0.sequence) }
                .map(SyncRevision.init)
        }
    }

    /// The history of a revision, itself first, with availability of each body.
    package func syncHistory(docID: String, revID: String) throws -> [SyncHistoryEntry] {
        try read { store in
            guard let id = try store.numericID(of: docID) else { return [] }
            return try store.revisionTree(numericID: id).history(ofRevID: revID).map {
                SyncHistoryEntry(revID: $0.revID, deleted: $0.deleted, available: $0.hasBody)
            }
        }
    }

    /// `_revs_diff` (spec 9.5): which of the given revisions are missing, and which local
    /// revisions with bodies could be their ancestors.
    package func syncRevsDiff(_ offers: [RevsDiff.Offer]) throws -> [String: RevsDiff.Missing] {
        try read { store in
            var result: [String: RevsDiff.Missing] = [:]
            for offer in offers {
                let docID = offer.docID, revIDs = offer.revIDs
                let tree: [RevsTableTree.Node]
                if let id = try store.numericID(of: docID) { tree = try store.revisionTree(numericID: id).nodes } else { tree = [] }
                let known = Set(tree.map(\.revID))
                var seen = Set<String>()
                let missing = revIDs.filter { !known.contains($0) && seen.insert($0).inserted }
                guard !missing.isEmpty else { continue }
                let maxGen = missing.map(RevisionID.generation).max() ?? 0
                let ancestors = tree
                    .filter { $0.hasBody && RevisionID.generation($0.revID) < maxGen }
                    .sorted { a, b in
                        if a.current != b.current { return a.current }
                        let ga = RevisionID.generation(a.revID), gb = RevisionID.generation(b.revID)
                        return ga != gb ? ga > gb : a.revID > b.revID
                    }
                    .prefix(10)
                    .map(\.revID)
                result[docID] = RevsDiff.Missing(missing: missing, possibleAncestors: Array(ancestors))
            }
            return result
        }
    }

    // MARK: Changes feed

    /// Documents with a leaf revision newer than `since`, ordered by their newest leaf sequence.
    ///
    /// - Parameters:
    ///   - allLeaves: report every leaf (`style=all_docs`), else only the winner.
    ///   - docIDs: only these documents (`filter=_doc_ids`).
    ///   - activeOnly: skip documents whose winner is deleted.
    ///   - limit: maximum rows (nil = all).
    package func syncChanges(since: Int64, limit: Int?, descending: Bool, allLeaves: Bool, docIDs: [String]?,
                             activeOnly: Bool, includeDocs: Bool) throws -> [SyncChange] {
        try read { store in
            // Rows are filtered (active_only) after the query, so keep reading until enough survive.
            let wanted = limit ?? Int.max
            let docs = try store.newestLeaves(since: since, docIDs: docIDs, descending: descending,
                                              limit: activeOnly ? Int.max : wanted)
            var out: [SyncChange] = []
            for (numericID, docID, seq) in docs {
                if out.count >= wanted { break }
                let leaves = try store.leaves(docID: docID, numericID: numericID, withBodies: false)
                guard let winner = leaves.first else { continue }
                if activeOnly && winner.deleted { continue }
                let revIDs = allLeaves ? leaves.map(\.revID) : [winner.revID]
                let body = includeDocs ? try store.body(sequence: winner.sequence) : nil
                out.append(SyncChange(sequence: seq, docID: docID, revIDs: revIDs, deleted: winner.deleted,
                                      winnerBody: body, winnerRevID: winner.revID))
            }
            return out
        }
    }

    // MARK: Attachments

    /// The stored bytes of a blob by its `sha1-…` digest (still gzip-encoded if it was stored so).
    package func syncAttachmentBlob(digest: String) -> Data? {
        guard let key = BlobKey(digest: digest) else { return nil }
        return storeIfOpenForBlobs?.contents(of: key)
    }

    /// Decodes gzip data (attachments stored with `"encoding":"gzip"`).
    package static func syncGunzip(_ data: Data) throws -> Data { try Gzip.decompress(data) }

    // MARK: Writing

    /// A local edit (spec 3.5): PUT/POST/DELETE of a document. Returns the new revision.
    package func syncPutRevision(docID: String, prevRevID: String?, properties: [String: Any], deleting: Bool,
                                 allowConflict: Bool, memberOrder: JSONMemberOrder? = nil) throws -> (revID: String, sequence: Int64) {
        let saved = try putRevision(docID: docID, prevRevID: prevRevID, properties: properties,
                                    deleting: deleting, allowConflict: allowConflict, memberOrder: memberOrder)
        return (saved.revisionID ?? "", saved.sequence)
    }

    /// The properties an attachment edit starts from: those of `prevRevID` (which must be a leaf:
    /// 409 otherwise, 404 if it is gone and the document has no live winner), or none for a new
    /// (or deleted) document, which must not have a live winner (409).
    func attachmentEditBase(docID: String, prevRevID: String?) throws -> [String: Any] {
        if let prevRevID {
            guard let rev = try syncRevision(docID: docID, revID: prevRevID) else {
                if let winner = try syncWinningRevision(docID: docID), !winner.deleted { throw CBLError.conflict() }
                throw CBLError.notFound("missing")
            }
            if !rev.isLeaf { throw CBLError.conflict() }
            return rev.deleted ? [:] : (rev.properties ?? [:])
        } else if let winner = try syncWinningRevision(docID: docID), !winner.deleted {
            throw CBLError.conflict()
        }
        return [:]
    }

    /// Adds, replaces (content non-nil) or removes (content nil) one attachment, making a new
    /// revision on top of `prevRevID` (or a new document). Returns the new revision ID.
    /// `gzipped`: `content` is gzip-encoded and stays so (`Content-Encoding: gzip`).
    package func syncPutAttachment(docID: String, prevRevID: String?, name: String, contentType: String?,
                                   content: Data?, gzipped: Bool = false) throws -> String {
        var properties = try attachmentEditBase(docID: docID, prevRevID: prevRevID)
        let pending: [String: PendingAttachment?]
        if let content, gzipped {
            // Inline `data` with `encoding` is stored as given (spec 4.3).
            var attachments = properties["_attachments"] as? [String: Any] ?? [:]
            var meta: [String: Any] = ["data": content, "encoding": "gzip"]
            if let contentType { meta["content_type"] = contentType }
            attachments[name] = meta
            properties["_attachments"] = attachments
            pending = [:]
        } else if let content {
            pending = [name: PendingAttachment(contentType: contentType, body: .data(content))]
        } else {
            guard (properties["_attachments"] as? [String: Any])?[name] != nil else {
                throw CBLError.notFound("Document is missing attachment")
            }
            pending = [name: nil]
        }
        let saved = try putRevision(docID: docID, prevRevID: prevRevID, properties: properties, deleting: false,
                                    allowConflict: false, pendingAttachments: pending)
        return saved.revisionID ?? ""
    }

    /// Inserts a revision with its history, without a new revision ID (`new_edits=false`).
    /// Returns the inserted revision ID, or nil when it was already present.
    @discardableResult
    package func syncForceInsert(docID: String, history: [String], properties: [String: Any],
                                 source: String? = nil) throws -> String? {
        try forceInsert(docID: docID, history: history, properties: properties, source: source)?.revisionID
    }

    /// CouchDB's `_purge`: every request purged in one transaction, each advancing the purge
    /// sequence. Returns, per request, the named revisions that were leaves and are now gone:
    /// ancestors that went with them are not listed, nor are revisions another leaf still needs,
    /// as CouchDB answers. `["*"]` purges the whole document and lists every revision.
    package func syncPurge(_ requests: [(docID: String, revIDs: [String])]) throws -> [[String]] {
        try write(atomic: true) { _ in
            try requests.map { request in
                if request.revIDs.contains("*") { return try purgeRevisions(docID: request.docID, revIDs: ["*"]) }
                let leaves = Set(try syncLeaves(docID: request.docID, withBodies: false).map(\.revID))
                let purged = Set(try purgeRevisions(docID: request.docID, revIDs: request.revIDs))
                var listed = Set<String>()
                return request.revIDs.filter { leaves.contains($0) && purged.contains($0) && listed.insert($0).inserted }
            }
        }
    }

    // MARK: Local documents (spec 5)

    /// Writes a local document with MVCC: `prevRevID` must be its current revision (nil when new).
    package func syncPutLocalDocument(_ properties: [String: Any], withID id: String, prevRevID: String?) throws -> String {
        try putLocalDocument(properties, withID: id, prevRevID: prevRevID, checkRev: true)
    }

    /// Deletes a local document; `revID` must be its current revision when given.
    package func syncDeleteLocalDocument(withID id: String, revID: String?) throws {
        try deleteLocalDocument(withID: id, revID: revID)
    }
}
