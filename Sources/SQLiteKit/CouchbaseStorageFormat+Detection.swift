import Foundation

/// The one detection every reader of a `NAME.cblite2` bundle runs (the 1.x store, the 2.x data
/// file, the upgrader, `cbl`'s probe): the bundle's files are checked before SQLite touches
/// anything, then the first read of whatever connection the caller opened says what the file
/// holds. Each caller keeps its own decisions (which versions it opens or converts) and words its
/// own error, with its own status, for each ``Failure``.
extension CouchbaseStorageFormat {
    /// Why a bundle holds no database the caller can read.
    package enum Failure: Error, Sendable, Equatable {
        /// `db.forest*` files and no `db.sqlite3`: 1.x ForestDB storage (spec 1.5).
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
        /// Any other SQLite failure while opening or first reading; its message.
        case unreadable(String)
        /// A readable SQLite file that is neither generation (`tables` empty for an empty file).
        case unknownFormat(schemaVersion: Int, tables: Set<String>)
    }

    /// What the first read of a database file found: its schema version and tables, and the
    /// format they name.
    package struct Contents: Sendable, Equatable {
        package let format: CouchbaseStorageFormat
        /// `PRAGMA user_version`: 17…102 for 1.x, 201…599 for 2.x/3.x, 0 for a new file.
        package let schemaVersion: Int
        /// The names of the file's tables.
        package let tables: Set<String>
    }

    /// Checks the files of the bundle `directory` before SQLite opens anything (spec 1.5, 1.7):
    /// ForestDB storage, no `db.sqlite3` (unless `requireDatabaseFile` is false: a store about to
    /// create one), an encrypted blob store when `keyGiven` is false. Throws a ``Failure``.
    package static func checkBundle(_ directory: URL, keyGiven: Bool, requireDatabaseFile: Bool = true) throws {
        if isForestDB(directory) { throw Failure.forestDB }
        if requireDatabaseFile,
           !FileManager.default.fileExists(atPath: directory.appendingPathComponent(databaseFileName).path) {
            throw Failure.noDatabaseFile
        }
        if !keyGiven, hasEncryptedBlobStore(directory) { throw Failure.encryptedWithoutKey }
    }

    /// The first read of `connection`, open on the database file `file`: it tells a database from
    /// an encrypted or foreign file before anything is written, and what the database is. SQLite's
    /// refusal is thrown as a ``Failure``; an unknown format is returned (`format == .unknown`),
    /// since a store may create its schema in an empty file.
    package static func contents(of connection: SQLiteConnection, file: String) throws -> Contents {
        do {
            var tables = Set<String>()
            try connection.prepare("SELECT name FROM sqlite_master WHERE type='table'").forEachRow {
                tables.insert($0.string(0) ?? "")
            }
            let version = Int(try connection.scalarInt("PRAGMA user_version") ?? 0)
            let format = CouchbaseStorageFormat(schemaVersion: version,
                                                hasDocsAndRevs: tables.contains("docs") && tables.contains("revs"))
            return Contents(format: format, schemaVersion: version, tables: tables)
        } catch {
            throw failure(for: error, file: file) ?? error
        }
    }

    /// The ``Failure`` an error thrown while opening or first reading the database file `file`
    /// stands for; nil when it is no SQLite or SQLCipher error.
    package static func failure(for error: any Error, file: String) -> Failure? {
        if let e = error as? Failure { return e }
        if let e = error as? SQLCipherUnavailable { return .sqlCipherUnavailable(e.message) }
        guard let e = error as? SQLiteError else { return nil }
        if e.isNotADatabase { return .notADatabase(plainSQLiteHeader: hasPlainSQLiteHeader(file)) }
        return e.isCorrupt ? .corrupt(e.message) : .unreadable(e.message)
    }

    /// True when the file starts with "SQLite format 3\0" (never true of an SQLCipher file).
    package static func hasPlainSQLiteHeader(_ path: String) -> Bool {
        guard let handle = FileHandle(forReadingAtPath: path) else { return false }
        defer { try? handle.close() }
        return (try? handle.read(upToCount: 16)) == Data("SQLite format 3\0".utf8)
    }
}
