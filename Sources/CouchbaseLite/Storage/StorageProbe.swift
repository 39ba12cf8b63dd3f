import Foundation
import SQLiteKit

/// The storage of a `NAME.cblite2` bundle, recognised from its files and its `db.sqlite3` before
/// any database type opens it (spec 1.3, 1.5, 1.7; cbl2-format 2.1), for read-only tools (`cbl`)
/// that show either generation or say exactly why they cannot. It uses the one format detection
/// (`CouchbaseStorageFormat`) and the one read-only open the stores and the upgrader use, so it
/// writes nothing beside the file.
package struct StorageProbe: Sendable {
    /// Which Couchbase Lite wrote the file.
    package enum Generation: Sendable, Equatable {
        /// Couchbase Lite 1.x SQLite storage (schema 17…102 in practice).
        case sqlite1x
        /// Couchbase Lite 2.x/3.x LiteCore storage (schema 201…599).
        case liteCore
    }

    /// Why the bundle holds no database this package can read; each tool words its own message.
    package enum Failure: Error, Sendable, Equatable {
        /// `db.forest*` files and no `db.sqlite3`: 1.x ForestDB storage.
        case forestDB
        /// No `db.sqlite3` at all.
        case noDatabaseFile
        /// `attachments/_encryption` exists and no key was given (spec 1.7).
        case encryptedWithoutKey
        /// A key was given but SQLCipher cannot be loaded; the loader's reason.
        case sqlCipherUnavailable(String)
        /// SQLite says the file is not a database: encrypted (and no or a wrong key), or not SQLite.
        /// `plainSQLiteHeader` tells a plain SQLite file (magic string) from an encrypted one (random salt).
        case notADatabase(plainSQLiteHeader: Bool)
        /// SQLite says the file is damaged; its message.
        case corrupt(String)
        /// Any other SQLite failure while reading; its message.
        case unreadable(String)
        /// A readable SQLite file that is neither generation (`tables` empty for an empty file).
        case unknownFormat(schemaVersion: Int, tables: Set<String>)
    }

    /// Which Couchbase Lite wrote the database.
    package let generation: Generation
    /// `PRAGMA user_version`: 17…102 for 1.x, 201…599 for 2.x/3.x.
    package let schemaVersion: Int

    /// Recognises the storage of the bundle `directory`; with `encryptionKey` the file is read as an
    /// encrypted (SQLCipher) 1.x database. Throws a ``Failure`` saying what the bundle holds instead.
    package init(bundle directory: URL, encryptionKey: CBLSymmetricKey?) throws {
        if CouchbaseStorageFormat.isForestDB(directory) { throw Failure.forestDB }
        let file = directory.appendingPathComponent(CouchbaseStorageFormat.databaseFileName)
        guard FileManager.default.fileExists(atPath: file.path) else { throw Failure.noDatabaseFile }
        if encryptionKey == nil, CouchbaseStorageFormat.hasEncryptedBlobStore(directory) {
            throw Failure.encryptedWithoutKey
        }
        var tables = Set<String>()
        let version: Int
        do {
            let connection = try SQLiteStore.openReadOnly(directory: directory, encryptionKey: encryptionKey)
            defer { connection.close() }
            try connection.prepare("SELECT name FROM sqlite_master WHERE type='table'").forEachRow {
                tables.insert($0.string(0) ?? "")
            }
            version = Int(try connection.scalarInt("PRAGMA user_version") ?? 0)
        } catch let e as SQLCipherUnavailable {
            throw Failure.sqlCipherUnavailable(e.message)
        } catch let e as SQLiteError {
            if e.isNotADatabase { throw Failure.notADatabase(plainSQLiteHeader: Self.hasPlainSQLiteHeader(file)) }
            throw e.isCorrupt ? Failure.corrupt(e.message) : Failure.unreadable(e.message)
        }
        switch CouchbaseStorageFormat(schemaVersion: version, hasDocsAndRevs: tables.contains("revs") && tables.contains("docs")) {
        case .sqlite1x: generation = .sqlite1x
        case .liteCore: generation = .liteCore
        case .unknown: throw Failure.unknownFormat(schemaVersion: version, tables: tables)
        }
        schemaVersion = version
    }

    /// True when the file starts with "SQLite format 3\0" (never true of an SQLCipher file).
    static func hasPlainSQLiteHeader(_ file: URL) -> Bool {
        guard let handle = try? FileHandle(forReadingFrom: file) else { return false }
        defer { try? handle.close() }
        return (try? handle.read(upToCount: 16)) == Data("SQLite format 3\0".utf8)
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
