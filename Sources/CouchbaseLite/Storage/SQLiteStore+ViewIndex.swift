import Foundation
import SQLiteKit

/// The writes and reads of a view index update (spec 7.3): emptying or invalidating a view's
/// `maps_N` rows, writing what the map functions emitted, and reading the revisions changed since
/// the index's last sequence. ``ViewIndexer`` decides what to map; the SQL is here.
extension SQLiteStore {
    /// Empties a view's table before a first index and drops its two indexes: the table is filled
    /// with no index to update row by row, then ``createViewIndexes(_:)`` builds each in one
    /// sorted pass.
    func clearViewIndexForRebuild(_ view: ViewRecord) throws {
        try connection.execute("DELETE FROM '\(view.table)'")
        for index in Schema.mapsIndexNames(viewID: view.id) {
            try connection.execute("DROP INDEX IF EXISTS '\(index)'")
        }
    }

    /// Deletes the rows emitted by revisions indexed before (sequence ≤ the view's last sequence)
    /// that have since got a child (spec 7.3 step 2). Returns how many rows went.
    func deleteRowsOfReplacedRevisions(_ view: ViewRecord) throws -> Int64 {
        try connection.run(
            "DELETE FROM '\(view.table)' WHERE sequence IN (SELECT parent FROM revs WHERE sequence>? AND +parent>0 AND +parent<=?)",
            [.integer(view.lastSequence), .integer(view.lastSequence)])
        return Int64(connection.changes)
    }

    /// Creates a view table's two indexes (key under the JSON collation, sequence) if missing.
    func createViewIndexes(_ view: ViewRecord) throws {
        for sql in Schema.createMapsIndexes(viewID: view.id) { try connection.execute(sql) }
    }

    /// The prepared (cached) statements writing one view's rows.
    func viewRowWriter(_ view: ViewRecord) throws -> ViewRowWriter {
        ViewRowWriter(connection: connection,
                      insert: try connection.cached("INSERT INTO '\(view.table)' (sequence, key, value) VALUES (?, ?, ?)"),
                      deleteBySequence: try connection.cached("DELETE FROM '\(view.table)' WHERE sequence=?"))
    }

    /// Writes the rows of one view's `maps_N` table during an index update.
    struct ViewRowWriter {
        fileprivate let connection: SQLiteConnection
        fileprivate let insert: SQLiteStatement
        fileprivate let deleteBySequence: SQLiteStatement

        /// Inserts one emitted row: `key` and `value` are JSON texts, bound without copying (they
        /// need only outlive the call); a nil value is stored as NULL.
        func insert(sequence: Int64, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer?) throws {
            defer { insert.reset() }
            try insert.bind(sequence, at: 1)
            try insert.bindTextNoCopy(key, at: 2)
            if let value { try insert.bindTextNoCopy(value, at: 3) } else { try insert.bindNull(at: 3) }
            try insert.step()
        }

        /// Deletes the rows a revision emitted. Returns how many went.
        func deleteRows(sequence: Int64) throws -> Int64 {
            defer { deleteBySequence.reset() }
            try deleteBySequence.bind(sequence, at: 1)
            try deleteBySequence.step()
            return Int64(connection.changes)
        }
    }

    // MARK: Changed revisions

    /// The leaves to consider for an index update from `since` (0: a first index), grouped by
    /// document, the winner first in each group; with `documentTypes`, only revisions of those
    /// types (1.x `documentType`).
    ///
    /// A first index reads every live leaf: walking the `revs_by_docid_revid` index (doc_id,
    /// revid desc, …) gives them grouped by document, winner first, with no sort. An incremental
    /// update selects the new rows by sequence (a rowid range) and sorts just those
    /// (`+revs.doc_id` keeps it off `revs_current`): it must not scan the database (1.x issues
    /// #615, #1737).
    func changedLeaves(since: Int64, documentTypes: [String]?) throws -> ChangedLeaves {
        var sql = "SELECT revs.doc_id, sequence, docid, revid, json, deleted, doc_type FROM revs, docs WHERE current!=0"
        sql += since == 0 ? " AND deleted=0" : " AND sequence>?"
        if let documentTypes {
            sql += " AND doc_type IN (" + documentTypes.map { _ in "?" }.joined(separator: ",") + ")"
        }
        sql += " AND revs.doc_id=docs.doc_id ORDER BY "
        sql += since == 0 ? "revs.doc_id, revid DESC" : "+revs.doc_id, deleted, revid DESC"
        let scan = try connection.prepare(sql)
        var parameter: Int32 = 1
        if since > 0 {
            try scan.bind(since, at: parameter)
            parameter += 1
        }
        for type in documentTypes ?? [] {
            try scan.bind(type, at: parameter)
            parameter += 1
        }
        return ChangedLeaves(scan: scan)
    }

    /// A cursor over ``changedLeaves(since:documentTypes:)``: ``step()`` moves to the next leaf,
    /// whose columns the properties read.
    struct ChangedLeaves {
        fileprivate let scan: SQLiteStatement

        func step() throws -> Bool { try scan.step() }
        /// Ends the scan early (the statement is not cached: this releases its read).
        func reset() { scan.reset() }

        var documentNumericID: Int64 { scan.int64(0) }
        var sequence: Int64 { scan.int64(1) }
        var documentID: String { scan.string(2) ?? "" }
        var revisionID: String { scan.string(3) ?? "" }
        var body: [UInt8]? { scan.bytes(4) }
        var deleted: Bool { scan.bool(5) }
        var documentType: String? { scan.string(6) }
    }

    /// The cached look-up of a document's winning live leaf among those indexed before (spec 7.3
    /// step 5: it may still win over the new leaves, or its rows must go).
    func indexedLeafLookup() throws -> IndexedLeafLookup {
        IndexedLeafLookup(statement: try connection.cached(
            "SELECT revid, sequence, json, doc_type FROM revs WHERE doc_id=? AND sequence<=? AND current!=0 AND deleted=0 ORDER BY revid DESC LIMIT 1"))
    }

    /// A live leaf found by ``IndexedLeafLookup``.
    struct IndexedLeaf {
        var revisionID: String
        var sequence: Int64
        var body: [UInt8]?
        var documentType: String?
    }

    /// Finds a document's highest live leaf at or below a sequence.
    struct IndexedLeafLookup {
        fileprivate let statement: SQLiteStatement

        func leaf(documentNumericID: Int64, atOrBefore sequence: Int64) throws -> IndexedLeaf? {
            try statement.bind(documentNumericID, at: 1)
            try statement.bind(sequence, at: 2)
            defer { statement.reset() }
            guard try statement.step() else { return nil }
            return IndexedLeaf(revisionID: statement.string(0) ?? "", sequence: statement.int64(1),
                               body: statement.bytes(2), documentType: statement.string(3))
        }
    }
}
