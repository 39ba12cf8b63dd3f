import CouchbaseLite
import CouchbaseLiteSwift
import Foundation

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
        do {
            let probe = try StorageProbe(bundle: url, encryptionKey: key)
            return DatabaseBundle(url: url, format: probe.generation == .sqlite1x ? .v1 : .v2,
                                  schemaVersion: probe.schemaVersion, argument: path, encryptionKey: key)
        } catch let failure as StorageProbe.Failure {
            throw CommandFailure(message(for: failure, argument: path, keyGiven: key != nil))
        }
    }

    /// What `cbl` says about a bundle holding no database it can read.
    private static func message(for failure: StorageProbe.Failure, argument: String, keyGiven: Bool) -> String {
        switch failure {
        case .forestDB:
            return "\(argument) is a ForestDB database (Couchbase Lite 1.x); only SQLite storage can be read"
        case .noDatabaseFile:
            return "\(argument) holds no db.sqlite3: it is not a Couchbase Lite database"
        case .encryptedWithoutKey:
            return "\(argument) is encrypted and the key is missing; give it with --password or --key-file"
        case .sqlCipherUnavailable(let reason):
            return "\(argument) is encrypted, but SQLCipher is not available: \(reason)"
        case .notADatabase(let plain) where keyGiven:
            return plain
                ? "\(argument) is not encrypted; omit --password/--key-file"
                : "\(argument) is encrypted and the key is wrong (or db.sqlite3 is not a database)"
        case .notADatabase(let plain):
            return plain
                ? "\(argument): db.sqlite3 is not an SQLite database"
                : "\(argument): db.sqlite3 is encrypted or is not an SQLite database "
                  + "(if it is an encrypted database, the key is missing: give it with --password or --key-file)"
        case .corrupt(let reason):
            return "\(argument): db.sqlite3 is corrupt or truncated (\(reason))"
        case .unreadable(let reason):
            return "\(argument): cannot read db.sqlite3: \(reason)"
        case .unknownFormat(_, let tables) where tables.isEmpty:
            return "\(argument): db.sqlite3 is empty, not a database"
        case .unknownFormat(let version, let tables):
            return "\(argument) is not a Couchbase Lite database (schema version \(version), tables "
                + tables.sorted().prefix(5).joined(separator: ", ") + ")"
        }
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
