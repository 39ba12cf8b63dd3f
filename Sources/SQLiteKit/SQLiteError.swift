import CSQLite

/// An error reported by SQLite, with the result code, the message and the SQL that caused it.
public struct SQLiteError: Error, CustomStringConvertible, Sendable {
    /// The primary result code (`SQLITE_BUSY`, `SQLITE_NOTADB`, …).
    public let code: Int32
    /// The extended result code, when SQLite reported one.
    public let extendedCode: Int32
    /// SQLite's message.
    public let message: String
    /// The statement being prepared or run, if any.
    public let sql: String?

    public init(code: Int32, extendedCode: Int32? = nil, message: String, sql: String? = nil) {
        self.code = code & 0xFF
        self.extendedCode = extendedCode ?? code
        self.message = message
        self.sql = sql
    }

    public var description: String {
        var text = "SQLite error \(code): \(message)"
        if let sql { text += " (in `\(sql)`)" }
        return text
    }

    /// True for `SQLITE_CONSTRAINT` (e.g. a UNIQUE violation).
    public var isConstraintViolation: Bool { code == SQLITE_CONSTRAINT }
    /// True when the file is not a database (garbage, or encrypted with a key we don't have).
    public var isNotADatabase: Bool { code == SQLITE_NOTADB }
    /// True when SQLite found the file damaged.
    public var isCorrupt: Bool { code == SQLITE_CORRUPT }
}
