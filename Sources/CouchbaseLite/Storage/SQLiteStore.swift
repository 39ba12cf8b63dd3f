import CCollation
import Foundation
import SQLiteKit

/// The 1.x SQLite storage of one database directory (`NAME.cblite2/`): every SQL statement that
/// reads or writes documents, revisions, local documents and the `info` table lives in this type
/// and its extensions.
///
/// One store object works on one connection and is not thread-safe. The store that opens the
/// directory works on the writer connection (`CBLDatabase` serialises it); each read on a
/// reader connection of the database's pool gets a reader store sharing everything else.
// @unchecked because each instance is used by one thread at a time (the writer under the database lock, a reader store for one read).
package final class SQLiteStore: @unchecked Sendable {
    let connection: SQLiteConnection
    /// The `.cblite2` directory.
    let directory: URL
    let readOnly: Bool
    /// True when the schema has `docs.expiry_timestamp` (v102); a read-only v101 file has not.
    private(set) var hasExpiryColumn = true
    let blobStore: BlobStore
    /// The key the database file is encrypted with (SQLCipher, raw key as 1.x); nil when plain.
    let encryptionKey: CBLSymmetricKey?

    static let databaseFileName = "db.sqlite3"
    static let attachmentsDirectoryName = "attachments"

    var databasePath: String { directory.appendingPathComponent(Self.databaseFileName).path }

    /// Opens the store in `directory`, creating it when `create` is true and nothing is there.
    init(directory: URL, create: Bool, readOnly: Bool, encryptionKey: CBLSymmetricKey? = nil) throws {
        self.directory = directory
        self.readOnly = readOnly
        self.encryptionKey = encryptionKey
        let fm = FileManager.default
        let dbPath = directory.appendingPathComponent(Self.databaseFileName).path
        let attachments = directory.appendingPathComponent(Self.attachmentsDirectoryName)

        try Self.checkStorageFormat(directory: directory, encrypted: encryptionKey != nil)
        if !readOnly { try DatabaseRekey.recover(directory: directory) }
        let exists = fm.fileExists(atPath: dbPath)
        if !exists {
            guard create, !readOnly else { throw CBLError.notFound("Database not found at \(directory.path)") }
            try fm.createDirectory(at: directory, withIntermediateDirectories: true)
        }
        if !readOnly, !fm.fileExists(atPath: attachments.path) {
            try fm.createDirectory(at: attachments, withIntermediateDirectories: true)
        }
        connection = try Self.openConnection(path: dbPath, mode: .init(readOnly: readOnly, create: !exists),
                                             key: encryptionKey)
        do {
            try Self.registerCollations(on: connection)
            // The one detection's first read (the 2.x file, the upgrader and `cbl` run it too)
            // tells a real database from garbage or a SQLCipher file before any pragma could
            // write to it (the file must be left untouched, spec 1.7), and what it holds.
            let contents = try CouchbaseStorageFormat.contents(of: connection, file: dbPath)
            // The blob store opens only once SQLCipher accepted the key: with a key, a plain store
            // is encrypted on the spot (1.x's rule), which a wrong key must never trigger. A blob
            // re-key cut short by a crash is finished or rolled back to match the database's key.
            if !readOnly { try BlobStore.recoverInterruptedKeyChange(directory: attachments, currentKey: encryptionKey) }
            blobStore = try BlobStore(directory: attachments, encryptionKey: encryptionKey, readOnly: readOnly)
            try connection.execute("PRAGMA foreign_keys = ON")
            if !readOnly {
                try connection.execute("PRAGMA journal_mode = WAL")
                // NORMAL in WAL mode never loses a committed transaction when the process dies.
                try connection.execute("PRAGMA synchronous = NORMAL")
            }
            try openSchema(contents)
        } catch let failure as CouchbaseStorageFormat.Failure {
            connection.close()
            throw Self.openError(failure, subject: dbPath, keyGiven: encryptionKey != nil)
        } catch let e as SQLiteError {
            connection.close()
            throw Self.openError(e, subject: dbPath, keyGiven: encryptionKey != nil)
        } catch {
            connection.close()
            throw error
        }
    }

    /// A store working on `reader`, another connection on the same file (see ``openReader()``).
    init(reader: SQLiteConnection, sharing store: SQLiteStore) {
        connection = reader
        encryptionKey = store.encryptionKey
        directory = store.directory
        readOnly = store.readOnly
        hasExpiryColumn = store.hasExpiryColumn
        blobStore = store.blobStore
    }

    /// Opens one more connection on this store's file for the reader pool, configured for reading
    /// as the writer is (same collations). It is `query_only`: a write routed to it by mistake
    /// fails instead of bypassing the writer.
    func openReader() throws -> SQLiteConnection {
        let reader = try Self.openConnection(path: databasePath, mode: .init(readOnly: readOnly, create: false),
                                             key: encryptionKey)
        do {
            try Self.registerCollations(on: reader)
            if !readOnly { try reader.execute("PRAGMA query_only = 1") }
        } catch {
            reader.close()
            throw error
        }
        return reader
    }

    func close() {
        connection.close()
    }

    /// Registers the collations the 1.x schema names (spec 2.1): without them SQLite refuses
    /// any statement touching `revs`, `localdocs` or a view table.
    package static func registerCollations(on connection: SQLiteConnection) throws {
        try connection.createCollation("JSON", cbl_sqlite_collate_json)
        try connection.createCollation("JSON_RAW", cbl_sqlite_collate_json_raw)
        try connection.createCollation("JSON_ASCII", cbl_sqlite_collate_json_ascii)
        try connection.createCollation("REVID", cbl_sqlite_collate_revid)
    }

    /// Opens a connection on the database file: the system SQLite for a plain file, SQLCipher
    /// with the raw key for an encrypted one (1.x `decryptWithKey:`). Nothing is read yet.
    static func openConnection(path: String, mode: SQLiteConnection.OpenMode, key: CBLSymmetricKey?) throws -> SQLiteConnection {
        do {
            if let key {
                return try SQLiteConnection(path: path, mode: mode, rawKey: [UInt8](key.keyData))
            }
            return try SQLiteConnection(path: path, mode: mode)
        } catch let e as SQLiteError {
            throw openError(e, subject: path, keyGiven: key != nil)
        } catch let e as SQLCipherUnavailable {
            // 1.x answered 501 when the app was not built with SQLCipher.
            throw CBLError.notImplemented("Cannot open encrypted database \(path): \(e.message)")
        }
    }

    /// Refuses ForestDB databases, and encrypted attachments when no key is given, with the
    /// statuses 1.x used (spec 1.5, 1.7): the one bundle check, a missing `db.sqlite3` allowed
    /// (the store creates it or says "not found" itself).
    static func checkStorageFormat(directory: URL, encrypted: Bool = false) throws {
        do {
            try CouchbaseStorageFormat.checkBundle(directory, keyGiven: encrypted, requireDatabaseFile: false)
        } catch CouchbaseStorageFormat.Failure.forestDB {
            throw CBLError.notAcceptable("Unsupported storage: \(directory.lastPathComponent) is a ForestDB database; only SQLite storage is supported")
        } catch CouchbaseStorageFormat.Failure.encryptedWithoutKey {
            throw CBLError.unauthorized("Database \(directory.lastPathComponent) is encrypted and no encryption key was given: open it with its encryption key")
        }
    }

    /// The 1.x status for a file SQLite cannot open or read: 401 for an encrypted file or one that
    /// is not a database (spec 1.7), 500 otherwise. `subject` names the file in the message.
    static func openError(_ e: SQLiteError, subject: String, keyGiven: Bool = false) -> CBLError {
        openError(CouchbaseStorageFormat.failure(for: e, file: subject) ?? .unreadable(e.message), subject: subject, keyGiven: keyGiven)
    }

    /// The 1.x status for what the detection found instead of a database (see above).
    static func openError(_ failure: CouchbaseStorageFormat.Failure, subject: String, keyGiven: Bool = false) -> CBLError {
        switch failure {
        case .notADatabase where keyGiven:
            return .unauthorized("Cannot open \(subject): wrong encryption key (or the file is not an encrypted database)")
        case .notADatabase:
            return .unauthorized("Cannot open \(subject): the database is encrypted and no encryption key was given (or it is not a database)")
        case .corrupt:
            return .dbError("Cannot open \(subject): database file is corrupt or truncated")
        case .unreadable(let message):
            return .dbError("Cannot open \(subject): \(message)")
        case .sqlCipherUnavailable(let message):
            // 1.x answered 501 when the app was not built with SQLCipher.
            return .notImplemented("Cannot open encrypted database \(subject): \(message)")
        case .forestDB, .noDatabaseFile, .encryptedWithoutKey, .unknownFormat:
            return .dbError("Cannot open \(subject): not a Couchbase Lite 1.x database")
        }
    }

    // MARK: Schema

    /// The 1.x store's decision on what the detection found: create the schema in an empty file,
    /// refuse 2.x and too-old files (406), bring 17…101 to 102.
    private func openSchema(_ contents: CouchbaseStorageFormat.Contents) throws {
        let version = contents.schemaVersion
        if version == 0, !contents.tables.contains("docs") {
            guard !readOnly else { throw CBLError.notFound("Database at \(directory.path) is empty") }
            try createSchema()
            return
        }
        if contents.format == .liteCore || version >= Schema.firstIncompatibleVersion {
            throw CBLError.notAcceptable("Database schema \(version) is too new: this is a Couchbase Lite 2.x database")
        }
        if version < Schema.oldestSupportedVersion {
            throw CBLError.notAcceptable("Database schema \(version) is too old for a .cblite2 database")
        }
        if version < Schema.currentVersion {
            try upgradeSchema(from: version)
        }
        try reindexForeignViewIndexes()
    }

    /// The `info` key marking that view indexes were rebuilt with our collator.
    static let reindexedInfoKey = "linuxJSONCollation"
    /// The `info` key holding the database's CouchDB `_security` object as JSON text (1.x reads
    /// only the keys it knows, so the file stays a 1.x database).
    static let securityInfoKey = "security"

    /// View indexes in a file written by another platform were sorted by that platform's
    /// collator; rebuilding them once with ours keeps B-tree range scans exact (spec 6.8).
    private func reindexForeignViewIndexes() throws {
        guard !readOnly, try info(Self.reindexedInfoKey) == nil else { return }
        let hasViews = try connection.scalarInt(
            "SELECT count(*) FROM sqlite_master WHERE type='table' AND name LIKE 'maps%'") ?? 0
        guard hasViews > 0 else { return }
        try connection.transaction {
            try connection.execute("REINDEX JSON")
            try setInfo(Self.reindexedInfoKey, "1")
        }
    }

    private func createSchema() throws {
        try connection.transaction {
            for sql in Schema.createStatements { try connection.execute(sql) }
            try connection.setUserVersion(Schema.currentVersion)
            try setInfo("privateUUID", Self.generateUUID())
            try setInfo("publicUUID", Self.generateUUID())
            // New databases are born pruned (spec 2.1, 2.7).
            try setInfo("pruned", "true")
        }
    }

    /// Brings 17…101 schemas to 102 as 1.x did (spec 2.4).
    private func upgradeSchema(from version: Int) throws {
        let docColumns = try connection.columns(of: "docs")
        let revColumns = try connection.columns(of: "revs")
        if readOnly {
            hasExpiryColumn = docColumns.contains("expiry_timestamp")
            return
        }
        try connection.transaction {
            if !revColumns.contains("doc_type") {
                try connection.execute("ALTER TABLE revs ADD COLUMN doc_type TEXT")
            }
            if !docColumns.contains("expiry_timestamp") {
                try connection.execute("ALTER TABLE docs ADD COLUMN expiry_timestamp INTEGER")
                try connection.execute(Schema.createExpiryIndex)
            }
            try connection.setUserVersion(Schema.currentVersion)
        }
        connection.clearStatementCache()
    }

    /// A 1.x-style random ID: `-` followed by 22 URL-safe base64 characters (spec 2.7, 3.1).
    static func generateUUID() -> String {
        var rng = SystemRandomNumberGenerator()
        let bytes = (0..<17).map { _ in UInt8.random(in: 0...255, using: &rng) }
        let b64 = Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
        return "-" + b64.prefix(22)
    }

    // MARK: info table

    func info(_ key: String) throws -> String? {
        try connection.scalarString("SELECT value FROM info WHERE key=?", [.text(key)])
    }

    func setInfo(_ key: String, _ value: String?) throws {
        if let value {
            try connection.run("INSERT OR REPLACE INTO info (key, value) VALUES (?, ?)", [.text(key), .text(value)])
        } else {
            try connection.run("DELETE FROM info WHERE key=?", [.text(key)])
        }
    }

    // MARK: Transactions

    func inTransaction<R>(_ body: () throws -> R) throws -> R {
        do {
            return try connection.transaction(body)
        } catch let e as SQLiteError {
            throw CBLError.database(e)
        }
    }
}
