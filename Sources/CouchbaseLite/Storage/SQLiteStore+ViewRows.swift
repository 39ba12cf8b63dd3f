import Foundation
import SQLiteKit

/// The read of a view query (spec 7.4–7.5): the rows of a view's `maps_N` table in key order,
/// joined to their revisions. ``QueryRunner`` encodes the keys and reduces; the SQL is here.
extension SQLiteStore {
    /// One end of a key range.
    struct ViewKeyBound {
        /// The key's canonical JSON text.
        var key: String
        var inclusive: Bool
        /// The first (or last) document ID of the rows with that key (`startkey_docid`/`endkey_docid`).
        var documentID: String?
    }

    /// What a view query reads.
    struct ViewRowsRequest {
        /// The low end of the range (the start key, or the end key when descending).
        var lowerBound: ViewKeyBound?
        var upperBound: ViewKeyBound?
        var descending = false
        /// Reads the index table alone, `(key, value, sequence)` in key order: a reduce needs
        /// neither document IDs nor their order. Not with document-ID bounds or bodies.
        var lean = false
        /// Reads each row's revision body too (`prefetch`).
        var withBodies = false
        /// `LIMIT`/`OFFSET` on the rows (a limit of -1 has none); nil when the caller filters first.
        var page: (limit: Int64, offset: Int64)?
        /// The collation keys are compared and ordered with (the index itself is in `JSON` order).
        var collation: CBLViewCollation = .unicode
    }

    /// Runs a view query (one key range; a `keys` query runs one per key). Repeated queries reuse
    /// their prepared statement.
    func viewRows(_ view: ViewRecord, _ request: ViewRowsRequest) throws -> ViewRows {
        let table = "'\(view.table)'"
        let lean = request.lean
        let c = request.collation.sqlSuffix
        var sql = lean ? "SELECT key, value, sequence" : "SELECT key, value, docid, revs.sequence, revid"
        if request.withBodies { sql += ", json" }
        sql += lean ? " FROM \(table) WHERE 1" : " FROM \(table), revs, docs WHERE 1"
        var params: [SQLiteValue] = []
        // One bound at a time: the low side uses >, >=; the high side <, <= (spec 7.4). A bound with
        // a document ID is the pair (key, docid), inclusive or not (CouchDB; 1.x used the document
        // ID of inclusive bounds only).
        func add(_ bound: ViewKeyBound?, op: String) {
            guard let bound else { return }
            if let docID = bound.documentID {
                sql += " AND key \(op)= ?\(c) AND (key \(op) ?\(c) OR docid \(op)\(bound.inclusive ? "=" : "") ?)"
                params += [.text(bound.key), .text(bound.key), .text(docID)]
            } else {
                sql += bound.inclusive ? " AND key \(op)= ?\(c)" : " AND key \(op) ?\(c)"
                params.append(.text(bound.key))
            }
        }
        add(request.lowerBound, op: ">")
        add(request.upperBound, op: "<")
        if lean {
            sql += request.descending ? " ORDER BY key\(c) DESC" : " ORDER BY key\(c)"
        } else {
            sql += " AND revs.sequence = \(table).sequence AND docs.doc_id = revs.doc_id"
            sql += request.descending ? " ORDER BY key\(c) DESC, docid DESC" : " ORDER BY key\(c), docid"
        }
        if let page = request.page {
            sql += " LIMIT ? OFFSET ?"
            params += [.integer(page.limit), .integer(page.offset)]
        }
        let stmt = try connection.cached(sql)
        try stmt.bind(params)
        return ViewRows(statement: stmt, lean: lean)
    }

    /// How many index rows come before `start` in a query's order (CouchDB's `offset`): for an
    /// ascending query the rows below the start key (and, with a start document ID, those with the
    /// start key and a smaller document ID); for a descending one the rows above it.
    func countViewRows(_ view: ViewRecord, before start: ViewKeyBound, descending: Bool,
                       collation: CBLViewCollation) throws -> Int64 {
        let c = collation.sqlSuffix
        let table = "'\(view.table)'"
        let op = descending ? ">" : "<"
        if let docID = start.documentID {
            // An inclusive start keeps its own document ID's row; an exclusive one skips it too.
            let docOp = start.inclusive ? op : op + "="
            let stmt = try connection.cached("""
                SELECT count(*) FROM \(table), revs, docs WHERE (key \(op) ?\(c) OR (key = ?\(c) AND docid \(docOp) ?))
                AND revs.sequence = \(table).sequence AND docs.doc_id = revs.doc_id
                """)
            defer { stmt.reset() }
            try stmt.bind([.text(start.key), .text(start.key), .text(docID)])
            return try stmt.step() ? stmt.int64(0) : 0
        }
        let stmt = try connection.cached("SELECT count(*) FROM \(table) WHERE key \(op)\(start.inclusive ? "" : "=") ?\(c)")
        defer { stmt.reset() }
        try stmt.bind([.text(start.key)])
        return try stmt.step() ? stmt.int64(0) : 0
    }

    /// A cursor over a view query's rows: ``step()`` moves to the next row, whose columns the
    /// properties read (byte arrays copied out of SQLite's buffers).
    struct ViewRows {
        fileprivate let statement: SQLiteStatement
        /// The rows have no document ID, revision ID or body (``ViewRowsRequest/lean``).
        let lean: Bool

        func step() throws -> Bool { try statement.step() }
        /// Releases the statement (cached statements must be reset before their next use).
        func reset() { statement.reset() }

        /// The key's JSON text.
        var key: [UInt8] { statement.bytes(0) ?? [] }
        /// The value's JSON text; nil when the row has none.
        var value: [UInt8]? { statement.bytes(1) }
        /// The sequence of the revision that emitted the row.
        var sequence: Int64 { statement.int64(lean ? 2 : 3) }
        var documentID: String? { lean ? nil : statement.string(2) }
        var revisionID: String? { lean ? nil : statement.string(4) }
        /// The revision's JSON body (only with ``ViewRowsRequest/withBodies``).
        var body: [UInt8]? { lean ? nil : statement.bytes(5) }
    }

    /// The document and revision IDs of the revision at `sequence`; nil when there is none.
    func revisionIdentity(sequence: Int64) throws -> (documentID: String?, revisionID: String?)? {
        let stmt = try connection.cached(static: "SELECT docid, revid FROM revs, docs WHERE revs.sequence=? AND docs.doc_id=revs.doc_id")
        defer { stmt.reset() }
        try stmt.bind(sequence, at: 1)
        guard try stmt.step() else { return nil }
        return (stmt.string(0), stmt.string(1))
    }
}
