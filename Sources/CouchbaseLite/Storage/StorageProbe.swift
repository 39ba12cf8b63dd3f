import Foundation
import SQLiteKit

/// The storage of a `NAME.cblite2` bundle, recognised from its files and its `db.sqlite3` before
/// any database type opens it (spec 1.3, 1.5, 1.7; cbl2-format 2.1), for read-only tools (`cbl`)
/// that show either generation or say exactly why they cannot. It runs the one format detection
/// (`CouchbaseStorageFormat.checkBundle` and `contents(of:file:)`, which the stores and the
/// upgrader run too) over the one read-only open, so it writes nothing beside the file.
package struct StorageProbe: Sendable {
    /// Which Couchbase Lite wrote the file.
    package enum Generation: Sendable, Equatable {
        /// Couchbase Lite 1.x SQLite storage (schema 17…102 in practice).
        case sqlite1x
        /// Couchbase Lite 2.x/3.x LiteCore storage (schema 201…599).
        case liteCore
    }

    /// Why the bundle holds no database this package can read; each tool words its own message.
    package typealias Failure = CouchbaseStorageFormat.Failure

    /// Which Couchbase Lite wrote the database.
    package let generation: Generation
    /// `PRAGMA user_version`: 17…102 for 1.x, 201…599 for 2.x/3.x.
    package let schemaVersion: Int

    /// Recognises the storage of the bundle `directory`; with `encryptionKey` the file is read as an
    /// encrypted (SQLCipher) 1.x database. Throws a ``Failure`` saying what the bundle holds instead.
    package init(bundle directory: URL, encryptionKey: CBLSymmetricKey?) throws {
        try CouchbaseStorageFormat.checkBundle(directory, keyGiven: encryptionKey != nil)
        let file = directory.appendingPathComponent(CouchbaseStorageFormat.databaseFileName).path
        let contents: CouchbaseStorageFormat.Contents
        do {
            let connection = try SQLiteStore.openReadOnly(directory: directory, encryptionKey: encryptionKey)
            defer { connection.close() }
            contents = try CouchbaseStorageFormat.contents(of: connection, file: file)
        } catch {
            throw CouchbaseStorageFormat.failure(for: error, file: file) ?? error
        }
        switch contents.format {
        case .sqlite1x: generation = .sqlite1x
        case .liteCore: generation = .liteCore
        case .unknown: throw Failure.unknownFormat(schemaVersion: contents.schemaVersion, tables: contents.tables)
        }
        schemaVersion = contents.schemaVersion
    }
}

extension SQLiteStore {
    /// The bundle's `db.sqlite3` opened with the one read-only open (SQLCipher with the raw key
    /// as 1.x when `encryptionKey` is given), for tools that read a file no store has open.
    static func openReadOnly(directory: URL, encryptionKey: CBLSymmetricKey?) throws -> SQLiteConnection {
        try SQLiteConnection.openReadOnly(path: directory.appendingPathComponent(databaseFileName).path,
                                          rawKey: encryptionKey.map { [UInt8]($0.keyData) })
    }
}
