import Fleece
import Foundation
import SQLiteKit

/// What a reader `DataFile` last saw of the file, to tell when another connection's commit
/// changed what it caches (layouts, schema version, shared keys).
struct ReaderState {
    /// `PRAGMA data_version`: changes when another connection commits.
    var dataVersion: Int64 = -1
    /// `PRAGMA schema_version`: changes with any DDL (a new collection, index or column).
    var schemaCookie: Int64 = -1
    /// The stored shared-keys record the reader's table was loaded from.
    var sharedKeysState: [UInt8]?

    init() {}

    init(_ connection: SQLiteConnection) throws {
        dataVersion = try Self.dataVersion(connection)
        schemaCookie = try Self.schemaCookie(connection)
    }

    static func dataVersion(_ connection: SQLiteConnection) throws -> Int64 {
        let stmt = try connection.cached(static: "PRAGMA data_version")
        defer { stmt.reset() }
        return try stmt.step() ? stmt.int64(0) : 0
    }

    static func schemaCookie(_ connection: SQLiteConnection) throws -> Int64 {
        let stmt = try connection.cached(static: "PRAGMA schema_version")
        defer { stmt.reset() }
        return try stmt.step() ? stmt.int64(0) : 0
    }
}

extension DataFile {
    /// Brings a reader's caches up to the snapshot of the read transaction it is in: called first
    /// in each read, it costs one `PRAGMA data_version` when nothing was committed since the last
    /// one. After a commit, the shared keys are reloaded when their stored record changed (a
    /// writer adds keys in the transaction that first uses them, spec 6.7, so a document this
    /// snapshot holds never uses a key this snapshot's table lacks). Returns true when the schema
    /// changed (the caller registers collations new indexes use).
    @discardableResult
    func refreshForRead() throws -> Bool {
        let version = try ReaderState.dataVersion(connection)
        guard version != readerState.dataVersion else { return false }
        readerState.dataVersion = version
        var schemaChanged = false
        let cookie = try ReaderState.schemaCookie(connection)
        if cookie != readerState.schemaCookie {
            readerState.schemaCookie = cookie
            layouts = [:]
            schemaChanged = true
        }
        // `user_version` is not part of the schema cookie: a schema step may set it alone.
        refreshSchemaVersion()
        let state = try info(Schema2.InfoKey.sharedKeys)
        if state != readerState.sharedKeysState {
            // A new table, not the old one changed: documents read earlier keep theirs.
            do {
                sharedKeys = try state.map { try SharedKeys(stateData: $0) } ?? SharedKeys()
            } catch {
                throw CouchbaseLiteError(.corruptData, "The SharedKeys record of \(directory.lastPathComponent) is corrupt: \(error)")
            }
            readerState.sharedKeysState = state
        }
        return schemaChanged
    }
}
