import Foundation
import SQLiteKit

/// The reads of an all-documents query (spec 7.6): the current revisions, by document ID or by
/// sequence. ``QueryRunner`` picks the winners and shapes the rows; the SQL is here.
extension SQLiteStore {
    /// One end of a range of document IDs or sequences.
    struct RangeBound<Value> {
        var value: Value
        var inclusive: Bool
    }

    /// Every leaf (`current=1`) of the documents in a range of IDs, grouped by document in ID
    /// order, each document's winner first (live before deleted, then the greatest revision ID).
    func leavesByDocumentID(from lower: RangeBound<String>?, to upper: RangeBound<String>?, descending: Bool,
                            includeDeleted: Bool, withBodies: Bool) throws -> CurrentRevisions {
        var sql = "SELECT revs.doc_id, docid, revid, sequence, deleted"
        if withBodies { sql += ", json" }
        sql += " FROM revs, docs WHERE docs.doc_id = revs.doc_id AND current=1"
        if !includeDeleted { sql += " AND deleted=0" }
        var params: [SQLiteValue] = []
        Self.appendRange(column: "docid", lower.map { ($0.inclusive, .text($0.value)) },
                         upper.map { ($0.inclusive, .text($0.value)) }, to: &sql, params: &params)
        sql += descending ? " ORDER BY docid DESC" : " ORDER BY docid"
        sql += ", deleted ASC, revid DESC"
        let stmt = try connection.prepare(sql)
        try stmt.bind(params)
        return CurrentRevisions(statement: stmt)
    }

    /// Every leaf in a range of sequences, in sequence order; `page` is `LIMIT`/`OFFSET` (a
    /// limit of -1 has none), nil when the caller filters first.
    func leavesBySequence(from lower: RangeBound<Int64>?, to upper: RangeBound<Int64>?, descending: Bool,
                          withBodies: Bool, page: (limit: Int64, offset: Int64)?) throws -> CurrentRevisions {
        var sql = "SELECT revs.doc_id, docid, revid, sequence, deleted"
        if withBodies { sql += ", json" }
        sql += " FROM revs, docs WHERE docs.doc_id = revs.doc_id AND current=1"
        var params: [SQLiteValue] = []
        Self.appendRange(column: "sequence", lower.map { ($0.inclusive, .integer($0.value)) },
                         upper.map { ($0.inclusive, .integer($0.value)) }, to: &sql, params: &params)
        sql += descending ? " ORDER BY sequence DESC" : " ORDER BY sequence"
        if let page {
            sql += " LIMIT ? OFFSET ?"
            params += [.integer(page.limit), .integer(page.offset)]
        }
        let stmt = try connection.prepare(sql)
        try stmt.bind(params)
        return CurrentRevisions(statement: stmt)
    }

    /// ` AND column >= ?` / `> ?` and ` AND column <= ?` / `< ?` for the bounds given, with their values.
    private static func appendRange(column: String, _ lower: (inclusive: Bool, value: SQLiteValue)?,
                                    _ upper: (inclusive: Bool, value: SQLiteValue)?,
                                    to sql: inout String, params: inout [SQLiteValue]) {
        if let lower {
            sql += " AND \(column) \(lower.inclusive ? ">=" : ">") ?"
            params.append(lower.value)
        }
        if let upper {
            sql += " AND \(column) \(upper.inclusive ? "<=" : "<") ?"
            params.append(upper.value)
        }
    }

    /// A cursor over leaf revisions: ``step()`` moves to the next one, whose columns the
    /// properties read.
    struct CurrentRevisions {
        fileprivate let statement: SQLiteStatement

        func step() throws -> Bool { try statement.step() }
        func reset() { statement.reset() }

        var documentNumericID: Int64 { statement.int64(0) }
        var documentID: String { statement.string(1) ?? "" }
        var revisionID: String { statement.string(2) ?? "" }
        var sequence: Int64 { statement.int64(3) }
        var deleted: Bool { statement.bool(4) }
        /// The JSON body (only when asked `withBodies`).
        var body: [UInt8]? { statement.bytes(5) }
    }
}
