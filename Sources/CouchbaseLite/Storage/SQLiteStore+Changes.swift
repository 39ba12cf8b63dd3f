import Foundation
import SQLiteKit

/// The reads behind `_changes`, the listener's database info and the design-document list.
extension SQLiteStore {
    /// Each changed document once, at its newest leaf, after sequence `since`: `(numeric ID,
    /// doc ID, sequence)` in sequence order, stopping after `limit` rows. The rows are read in
    /// sequence order from the primary key, keeping a leaf only when the document has no newer
    /// one (a look-up in `revs_current`): a GROUP BY over every leaf after `since` would sort the
    /// rest of the database for each page, making a pull quadratic in its size.
    func newestLeaves(since: Int64, docIDs: [String]?, descending: Bool, limit: Int) throws -> [(Int64, String, Int64)] {
        var sql = "SELECT revs.doc_id, docs.docid, revs.sequence FROM revs, docs WHERE revs.doc_id = docs.doc_id AND revs.current=1 AND revs.sequence > ?"
            + " AND NOT EXISTS (SELECT 1 FROM revs AS newer WHERE newer.doc_id = revs.doc_id AND newer.current=1 AND newer.sequence > revs.sequence)"
        var params: [SQLiteValue] = [.integer(since)]
        if let docIDs {
            if docIDs.isEmpty { return [] }
            sql += " AND docs.docid IN (" + docIDs.map { _ in "?" }.joined(separator: ",") + ")"
            params += docIDs.map { .text($0) }
        }
        sql += " ORDER BY revs.sequence " + (descending ? "DESC" : "ASC")
        let stmt = try connection.prepare(sql)
        try stmt.bind(params)
        defer { stmt.reset() }
        var docs: [(Int64, String, Int64)] = []
        while docs.count < limit, try stmt.step() {
            docs.append((stmt.int64(0), stmt.string(1) ?? "", stmt.int64(2)))
        }
        return docs
    }

    /// Documents whose winning revision is a deletion.
    func deletedDocumentCount() throws -> Int {
        Int(try connection.scalarInt(
            "SELECT COUNT(DISTINCT doc_id) FROM revs r WHERE current=1 AND deleted=1 AND NOT EXISTS (SELECT 1 FROM revs l WHERE l.doc_id=r.doc_id AND l.current=1 AND l.deleted=0)") ?? 0)
    }

    /// Bytes of stored revisions (bodies and revision IDs), and of the current live bodies alone.
    func revisionBytes() throws -> (stored: Int64, current: Int64) {
        let stored = try connection.scalarInt("SELECT IFNULL(SUM(IFNULL(length(json), 0) + length(revid)), 0) FROM revs") ?? 0
        let current = try connection.scalarInt(
            "SELECT IFNULL(SUM(IFNULL(length(json), 0)), 0) FROM revs WHERE current=1 AND deleted=0") ?? 0
        return (Int64(stored), Int64(current))
    }

    /// The IDs of the design documents (deleted ones included).
    func designDocumentIDs() throws -> [String] {
        var out: [String] = []
        try connection.prepare("SELECT docid FROM docs WHERE docid >= '_design/' AND docid < '_design0' ORDER BY docid")
            .forEachRow { out.append($0.string(0) ?? "") }
        return out
    }
}
