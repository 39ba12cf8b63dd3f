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
