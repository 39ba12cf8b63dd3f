import CouchbaseLite
import CouchbaseLiteSwift
import Foundation
import SQLiteKit

/// A `NAME.cblite2` database named on the command line, its storage format recognised from the
/// file itself (spec 1.3, 1.5; cbl2-format 2.1) before any library opens it, so a wrong, damaged
/// or foreign file gets one clear message.
struct DatabaseBundle {
    enum Format { case v1, v2 }

    /// The `.cblite2` directory.
    let url: URL
    let format: Format
    /// `PRAGMA user_version`: 17…102 for 1.x, 201…599 for 2.x/3.x.
    let schemaVersion: Int
    /// The path as the user gave it (for messages).
    let argument: String
    /// The key of an encrypted (SQLCipher) 1.x database, from `--password`/`--key-file`.
    var encryptionKey: CBLSymmetricKey? = nil

    /// The database name: the bundle name without `.cblite2`.
    var name: String { url.deletingPathExtension().lastPathComponent }

    var formatDescription: String {
        switch format {
        case .v1: return "Couchbase Lite 1.x (SQLite storage, schema \(schemaVersion))"
        case .v2: return "Couchbase Lite 2.x/3.x (schema \(schemaVersion))"
        }
    }

    var databaseFile: URL { url.appendingPathComponent("db.sqlite3") }

    /// The blob directory: `attachments/` in 1.x, `Attachments/` in 2.x (case matters on Linux).
    var blobDirectory: URL { url.appendingPathComponent(format == .v1 ? "attachments" : "Attachments") }

    /// Finds the bundle at `path` (a `NAME.cblite2` directory, or the `db.sqlite3` inside one)
    /// and recognises its format; throws a ``CommandFailure`` (exit status 2) saying what it is instead.
    /// With `key`, the file is opened as an encrypted 1.x database; a wrong or missing key gets a
    /// message of its own (not "corrupt").
    static func locate(_ path: String, key: CBLSymmetricKey? = nil) throws -> DatabaseBundle {
        let fm = FileManager.default
        var url = URL(fileURLWithPath: path).standardizedFileURL
        var isDirectory: ObjCBool = false
        guard fm.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
            throw CommandFailure("no database at \(path)")
        }
        if !isDirectory.boolValue {
            if url.lastPathComponent == "db.sqlite3", url.deletingLastPathComponent().pathExtension == "cblite2" {
                url = url.deletingLastPathComponent()
            } else if url.pathExtension == "cblite" {
                throw CommandFailure("\(path) is a legacy single-file 1.0/1.1 database; "
                                     + "convert it first (cbl upgrade --legacy, or open it once with 1.x)")
            } else {
                throw CommandFailure("\(path) is a file, not a NAME.cblite2 database directory")
            }
        }
        guard url.pathExtension == "cblite2" else {
            throw CommandFailure("\(path) is not a NAME.cblite2 database directory")
        }
        if CouchbaseStorageFormat.isForestDB(url) {
            throw CommandFailure("\(path) is a ForestDB database (Couchbase Lite 1.x); only SQLite storage can be read")
        }
        let database = url.appendingPathComponent(CouchbaseStorageFormat.databaseFileName)
        guard fm.fileExists(atPath: database.path) else {
            throw CommandFailure("\(path) holds no db.sqlite3: it is not a Couchbase Lite database")
        }
        if key == nil, CouchbaseStorageFormat.hasEncryptedBlobStore(url) {
            throw CommandFailure(Self.missingKeyMessage(path))
        }
        let (version, tables) = try probe(database, argument: path, key: key)
        switch CouchbaseStorageFormat(schemaVersion: version, hasDocsAndRevs: tables.contains("revs") && tables.contains("docs")) {
        case .liteCore:
            return DatabaseBundle(url: url, format: .v2, schemaVersion: version, argument: path, encryptionKey: key)
        case .sqlite1x:
            return DatabaseBundle(url: url, format: .v1, schemaVersion: version, argument: path, encryptionKey: key)
        case .unknown:
            break
        }
        if tables.isEmpty {
            throw CommandFailure("\(path): db.sqlite3 is empty, not a database")
        }
        throw CommandFailure("\(path) is not a Couchbase Lite database (schema version \(version), tables "
                             + tables.sorted().prefix(5).joined(separator: ", ") + ")")
    }

    /// The schema version and table names, read without writing anything next to the file
    /// (immutable unless a `-wal`/journal holds committed data, spec 1.7).
    private static func probe(_ file: URL, argument: String, key: CBLSymmetricKey?) throws -> (Int, Set<String>) {
        do {
            let connection = try SQLiteConnection.openReadOnly(path: file.path, rawKey: key.map { [UInt8]($0.keyData) })
            defer { connection.close() }
            var tables = Set<String>()
            try connection.prepare("SELECT name FROM sqlite_master WHERE type='table'").forEachRow {
                tables.insert($0.string(0) ?? "")
            }
            let version = try connection.scalarInt("PRAGMA user_version") ?? 0
            return (Int(version), tables)
        } catch let e as SQLCipherUnavailable {
            throw CommandFailure("\(argument) is encrypted, but SQLCipher is not available: \(e.message)")
        } catch let e as SQLiteError {
            if e.isNotADatabase {
                // A plain SQLite file starts with its magic string; an encrypted one with random salt.
                let plain = hasPlainSQLiteHeader(file)
                if key != nil {
                    throw CommandFailure(plain
                        ? "\(argument) is not encrypted; omit --password/--key-file"
                        : "\(argument) is encrypted and the key is wrong (or db.sqlite3 is not a database)")
                }
                throw CommandFailure(plain
                    ? "\(argument): db.sqlite3 is not an SQLite database"
                    : "\(argument): db.sqlite3 is encrypted or is not an SQLite database "
                      + "(if it is an encrypted database, the key is missing: give it with --password or --key-file)")
            }
            if e.isCorrupt {
                throw CommandFailure("\(argument): db.sqlite3 is corrupt or truncated (\(e.message))")
            }
            throw CommandFailure("\(argument): cannot read db.sqlite3: \(e.message)")
        }
    }

    /// The message for an encrypted database opened without a key.
    static func missingKeyMessage(_ argument: String) -> String {
        "\(argument) is encrypted and the key is missing; give it with --password or --key-file"
    }

    /// True when the file starts with "SQLite format 3\0" (never true of an SQLCipher file).
    static func hasPlainSQLiteHeader(_ file: URL) -> Bool {
        guard let handle = try? FileHandle(forReadingFrom: file) else { return false }
        defer { try? handle.close() }
        return (try? handle.read(upToCount: 16)) == Data("SQLite format 3\0".utf8)
    }

    /// Fails with exit status 2 unless the database is in `format`; `purpose` says why
    /// ("views exist only in 1.x databases").
    func require(_ expected: Format, _ purpose: String) throws {
        guard format != expected else { return }
        throw CommandFailure("\(argument) is a \(formatDescription) database; \(purpose)")
    }

    // MARK: Opening

    /// Opens a 1.x database through a `CBLManager` (read-only unless `readOnly` is false).
    func openV1(readOnly: Bool) throws -> V1Database {
        try V1Database(bundle: self, readOnly: readOnly)
    }

    /// The 2.x file itself, read-only (no pragma, no `-shm` when the WAL is empty).
    func openV2File() throws -> DataFile {
        try DataFile(directory: url, create: false, readOnly: true)
    }

    /// A 2.x `Database` on the bundle.
    func openV2Database(readOnly: Bool) throws -> Database {
        var config = DatabaseConfiguration(directory: url.deletingLastPathComponent().path)
        config.readOnly = readOnly
        return try Database(name: name, config: config)
    }
}

/// Bytes used by the bundle: the SQLite file with its side files, and the blobs.
struct BundleSize {
    var database: Int64 = 0
    var blobs: Int64 = 0
    var total: Int64 { database + blobs }

    init(_ bundle: DatabaseBundle) {
        let fm = FileManager.default
        for suffix in ["", "-wal", "-shm", "-journal"] {
            database += Self.size(of: bundle.databaseFile.path + suffix)
        }
        for name in (try? fm.contentsOfDirectory(atPath: bundle.blobDirectory.path)) ?? [] {
            blobs += Self.size(of: bundle.blobDirectory.appendingPathComponent(name).path)
        }
    }

    static func size(of path: String) -> Int64 {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.int64Value ?? 0
    }
}
