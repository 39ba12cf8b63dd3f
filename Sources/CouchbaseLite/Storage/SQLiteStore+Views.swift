import Foundation
import SQLiteKit

/// The `views` table and per-view `maps_N` index tables (spec 7.1–7.3).
extension SQLiteStore {
    struct ViewRecord {
        let id: Int64
        let name: String
        let version: String?
        let lastSequence: Int64
        let totalRows: Int64
        var table: String { "maps_\(id)" }
    }

    /// The names of every view registered in the file, sorted.
    func viewNames() throws -> [String] {
        var names: [String] = []
        try connection.prepare("SELECT name FROM views ORDER BY name").forEachRow { names.append($0.string(0) ?? "") }
        return names
    }

    func viewRecord(named name: String) throws -> ViewRecord? {
        let stmt = try connection.cached("SELECT view_id, version, lastsequence, total_docs FROM views WHERE name=?")
        defer { stmt.reset() }
        try stmt.bind(name, at: 1)
        guard try stmt.step() else { return nil }
        return ViewRecord(id: stmt.int64(0), name: name, version: stmt.string(1), lastSequence: stmt.int64(2),
                          totalRows: stmt.int64(3))
    }

    /// Registers a view (or changes its version, which resets its index: spec 7.2). Returns
    /// true if the version changed.
    @discardableResult
    func registerView(named name: String, version: String) throws -> Bool {
        if let existing = try viewRecord(named: name) {
            guard existing.version != version else { return false }
            try connection.run("UPDATE views SET version=?, lastSequence=0, total_docs=0 WHERE view_id=?",
                               [.text(version), .integer(existing.id)])
            return true
        }
        try connection.run("INSERT OR IGNORE INTO views (name, version, total_docs) VALUES (?, ?, 0)",
                           [.text(name), .text(version)])
        let id = connection.lastInsertRowID
        try connection.execute(Schema.createMapsTable(viewID: id))
        try markViewIndexesOurs()
        return true
    }

    /// Records that every view index in the file is sorted by our collator, so the next open does
    /// not REINDEX them as foreign (spec 6.8; a 1M-row index took seconds). True once a view is
    /// made here: opening already rebuilt any foreign index (and marked the file), or found none.
    /// A file without views keeps exactly 1.x's `info` rows.
    private func markViewIndexesOurs() throws {
        if try info(Self.reindexedInfoKey) == nil { try setInfo(Self.reindexedInfoKey, "1") }
    }

    /// Ensures the view's table exists (a real file may list a view whose table was dropped).
    func ensureMapsTable(_ view: ViewRecord) throws {
        try connection.execute(Schema.createMapsTable(viewID: view.id))
    }

    /// Deletes the index rows and resets the view (keeps the view registered).
    func deleteViewIndex(_ view: ViewRecord) throws {
        try connection.execute("DROP TABLE IF EXISTS 'maps_\(view.id)'")
        try connection.run("UPDATE views SET lastSequence=0, total_docs=0 WHERE view_id=?", [.integer(view.id)])
        try connection.execute(Schema.createMapsTable(viewID: view.id))
        connection.clearStatementCache()
    }

    /// Deletes the view and its table.
    func deleteView(_ view: ViewRecord) throws {
        try connection.execute("DROP TABLE IF EXISTS 'maps_\(view.id)'")
        try connection.run("DELETE FROM views WHERE view_id=?", [.integer(view.id)])
        connection.clearStatementCache()
    }

    func setViewProgress(_ view: ViewRecord, lastSequence: Int64, totalRows: Int64) throws {
        try connection.run("UPDATE views SET lastSequence=?, total_docs=? WHERE view_id=?",
                           [.integer(lastSequence), .integer(totalRows), .integer(view.id)])
    }

    func countRows(_ view: ViewRecord) throws -> Int64 {
        try connection.scalarInt("SELECT COUNT(*) FROM 'maps_\(view.id)'") ?? 0
    }
}

/// The space a view's index takes (CouchDB's `sizes` of `_info`).
extension SQLiteStore {
    struct ViewIndexSizes {
        /// Bytes of the pages the table and its indexes occupy.
        var file: Int64 = 0
        /// Of those, the bytes in use.
        var active: Int64 = 0
        /// The bytes of the keys and values themselves.
        var external: Int64 = 0
    }

    /// Measures a view's table and indexes with SQLite's `dbstat` (where the library has it;
    /// page sizes read as 0 otherwise).
    func viewIndexSizes(_ view: ViewRecord) throws -> ViewIndexSizes {
        var sizes = ViewIndexSizes()
        for name in [view.table] + Schema.mapsIndexNames(viewID: view.id) {
            guard let stmt = try? connection.prepare(
                "SELECT coalesce(sum(pgsize), 0), coalesce(sum(pgsize - unused), 0) FROM dbstat WHERE name=? AND aggregate=1") else {
                break
            }
            try stmt.bind([.text(name)])
            if try stmt.step() {
                sizes.file += stmt.int64(0)
                sizes.active += stmt.int64(1)
            }
            stmt.reset()
        }
        sizes.external = try connection.scalarInt(
            "SELECT coalesce(sum(length(key) + coalesce(length(value), 0)), 0) FROM '\(view.table)'") ?? 0
        return sizes
    }

    /// Rewrites a view's table and rebuilds its indexes, so its pages are packed again after many
    /// updates (CouchDB's view compaction). The rows, their order and the schema are unchanged.
    func compactViewIndex(_ view: ViewRecord) throws {
        try ensureMapsTable(view)
        try connection.execute("CREATE TEMP TABLE cbl_compacting AS SELECT * FROM '\(view.table)'")
        defer { try? connection.execute("DROP TABLE IF EXISTS temp.cbl_compacting") }
        for index in Schema.mapsIndexNames(viewID: view.id) {
            try connection.execute("DROP INDEX IF EXISTS '\(index)'")
        }
        try connection.execute("DELETE FROM '\(view.table)'")
        try connection.execute("INSERT INTO '\(view.table)' SELECT * FROM temp.cbl_compacting ORDER BY rowid")
        try createViewIndexes(view)
        connection.clearStatementCache()
    }
}
