import Foundation
import SQLiteKit
import XCTest
@testable import CouchbaseLiteSwift

/// Scratch databases and raw SQLite looks for the collection tests.
enum CollectionTestSupport {
    static func open(_ name: String, in directory: URL) throws -> Database {
        try Database(name: name, config: DatabaseConfiguration(directory: directory.path))
    }

    /// A second, read-only connection to the database file (works while the database is open: WAL).
    static func raw(_ name: String, in directory: URL) throws -> SQLiteConnection {
        try SQLiteConnection(path: directory.appendingPathComponent("\(name).cblite2/db.sqlite3").path,
                             mode: .init(readOnly: true, create: false))
    }

    /// The first column of every row of `sql`, as text.
    static func strings(_ sql: String, _ connection: SQLiteConnection) throws -> [String] {
        let stmt = try connection.prepare(sql)
        var out: [String] = []
        while try stmt.step() { out.append(stmt.string(0) ?? "NULL") }
        return out
    }

    /// The key-store tables in the file (`kv_…`), sorted.
    static func tables(_ connection: SQLiteConnection) throws -> [String] {
        try strings("SELECT name FROM sqlite_master WHERE type='table' AND name GLOB 'kv_*' ORDER BY name", connection)
    }

    /// Copies the whole fixture bundle `lite_dbs/<fixture>.cblite2` (with any `-wal`/`-shm`) into
    /// `directory` as `<name>.cblite2`, made writable; skips when the shared fixtures are absent.
    static func copyFixture(_ fixture: String, to directory: URL, as name: String) throws {
        let source = try QueryTestSupport.requireFixtures().appendingPathComponent("lite_dbs/\(fixture).cblite2")
        guard FileManager.default.fileExists(atPath: source.path) else { throw XCTSkip("fixture \(fixture) not present") }
        let target = directory.appendingPathComponent("\(name).cblite2")
        try FileManager.default.copyItem(at: source, to: target)
        // The shared fixtures are read-only; the copy must not be.
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: target.path)
        for entry in FileManager.default.subpaths(atPath: target.path) ?? [] {
            let path = target.appendingPathComponent(entry).path
            var isDirectory: ObjCBool = false
            _ = FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory)
            try FileManager.default.setAttributes([.posixPermissions: isDirectory.boolValue ? 0o755 : 0o644], ofItemAtPath: path)
        }
    }

    static func code(_ error: Error) -> CouchbaseLiteError.Code? {
        (error as? CouchbaseLiteError)?.code
    }
}
