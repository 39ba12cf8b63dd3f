import CSQLite
import CSQLiteAPI
import Foundation

/// SQLCipher databases as Couchbase Lite 1.x wrote them: a raw 256-bit key given as
/// `PRAGMA key = "x'<64 hex digits>'"` (no passphrase KDF: the key is used as is, the salt is the
/// file's first 16 bytes) and SQLCipher 3's settings: 1024-byte pages, AES-256-CBC, HMAC-SHA1,
/// 48 reserved bytes per page (see zetetic.net/sqlcipher/sqlcipher-api, `PRAGMA key`).
extension SQLiteConnection {
    /// Opens an encrypted database file with SQLCipher and `rawKey` (32 bytes). Opening reads
    /// nothing: call ``verifyReadable()`` to learn whether the key is right.
    package convenience init(path: String, mode: OpenMode = OpenMode(), rawKey: [UInt8]) throws {
        try self.init(path: path, mode: mode, library: try SQLiteLibrary.sqlCipher())
        do {
            try applyRawKey(rawKey)
        } catch {
            close()
            throw error
        }
    }

    /// `x'…'`: SQLCipher's spelling of a raw key (hex digits only, so it is safe to splice into SQL).
    package static func rawKeyLiteral(_ rawKey: [UInt8]) -> String {
        "x'" + rawKey.map { String(format: "%02x", $0) }.joined() + "'"
    }

    /// Gives SQLCipher the raw key (must be the first statement on the connection). With SQLCipher 4
    /// the version-3 settings are asked for explicitly (4 changed page size, HMAC and KDF).
    func applyRawKey(_ rawKey: [UInt8]) throws {
        guard library.isSQLCipher else {
            throw SQLiteError(code: SQLITE_MISUSE, message: "a key needs a SQLCipher connection")
        }
        guard rawKey.count == 32 else {
            throw SQLiteError(code: SQLITE_MISUSE, message: "an encryption key must be 32 bytes, not \(rawKey.count)")
        }
        let major = try Self.sqlCipherMajorVersion(self)
        try execute("PRAGMA key = \"\(Self.rawKeyLiteral(rawKey))\"")
        if major >= 4 { try execute("PRAGMA cipher_compatibility = 3") }
        // Every page read from the file is decrypted and checked (HMAC), and 1.x's pages are 1 KiB,
        // a quarter of SQLite's default: a larger page cache (at most 64 MiB instead of 2, allocated
        // only as pages are used) saves most re-decryptions and spills of a big transaction.
        // Debian builds SQLCipher with secure_delete on; freed pages of an encrypted file hold only
        // ciphertext, so zeroing them buys nothing.
        try execute("PRAGMA cache_size = -65536")
        try execute("PRAGMA secure_delete = OFF")
    }

    private static func sqlCipherMajorVersion(_ connection: SQLiteConnection) throws -> Int {
        let version = try connection.scalarString("PRAGMA cipher_version") ?? ""
        return Int(version.prefix { $0.isNumber }) ?? 3
    }

    /// Reads the schema, the first access that needs the key: throws `SQLITE_NOTADB` when the key
    /// is wrong, missing, or given for an unencrypted file. Nothing is written to the file.
    package func verifyReadable() throws {
        _ = try scalarInt("SELECT count(*) FROM sqlite_master")
    }

    /// Attaches the database file at `path` as `schema`, encrypted with `rawKey`, or plain when
    /// `rawKey` is nil (SQLCipher connection only; SQLCipher's `ATTACH … KEY`).
    package func attach(path: String, as schema: String, rawKey: [UInt8]?) throws {
        guard library.isSQLCipher else {
            throw SQLiteError(code: SQLITE_MISUSE, message: "ATTACH … KEY needs a SQLCipher connection")
        }
        let key = rawKey.map { "\"\(Self.rawKeyLiteral($0))\"" } ?? "''"
        let stmt = try prepare("ATTACH DATABASE ? AS \(schema) KEY \(key)")
        try stmt.bind([.text(path)])
        try stmt.step()
    }

    /// Copies the whole main database (schema and rows, `sqlite_sequence` included) into the
    /// attached, empty database `schema` with `sqlcipher_export`, SQLCipher's documented way to
    /// encrypt, decrypt or re-key; `PRAGMA user_version` is carried over too (export does not).
    package func exportMainDatabase(to schema: String) throws {
        guard library.isSQLCipher else {
            throw SQLiteError(code: SQLITE_MISUSE, message: "sqlcipher_export needs a SQLCipher connection")
        }
        let version = userVersion
        _ = try scalar("SELECT sqlcipher_export('\(schema)')")
        try execute("PRAGMA \(schema).user_version = \(version)")
    }
}
