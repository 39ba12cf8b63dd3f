import CSQLite
#if canImport(Glibc)
import Glibc
#endif

/// An error reported by SQLite, with the result code, the message and the SQL that caused it.
package struct SQLiteError: Error, CustomStringConvertible, Sendable {
    /// The primary result code (`SQLITE_BUSY`, `SQLITE_NOTADB`, …).
    package let code: Int32
    /// The extended result code, when SQLite reported one.
    package let extendedCode: Int32
    /// SQLite's message.
    package let message: String
    /// The statement being prepared or run, if any.
    package let sql: String?
    /// The errno of the system call behind an I/O error (`sqlite3_system_errno`), else 0.
    package let systemErrno: Int32

    package init(code: Int32, extendedCode: Int32? = nil, message: String, sql: String? = nil, systemErrno: Int32 = 0) {
        self.code = code & 0xFF
        self.extendedCode = extendedCode ?? code
        self.message = message
        self.sql = sql
        self.systemErrno = systemErrno
    }

    package var description: String {
        var text = "SQLite error \(code): \(message)"
        if let sql { text += " (in `\(sql)`)" }
        return text
    }

    /// True for `SQLITE_CONSTRAINT` (e.g. a UNIQUE violation).
    package var isConstraintViolation: Bool { code == SQLITE_CONSTRAINT }
    /// True when the file is not a database (garbage, or encrypted with a key we don't have).
    package var isNotADatabase: Bool { code == SQLITE_NOTADB }
    /// True when SQLite found the file damaged.
    package var isCorrupt: Bool { code == SQLITE_CORRUPT }
    /// True when the write failed for lack of space: `SQLITE_FULL` (SQLite's VFS reports a short
    /// write with ENOSPC so), or an I/O error whose system call failed with ENOSPC (growing the
    /// WAL index, truncating or syncing on a full disk).
    package var isDiskFull: Bool {
        code == SQLITE_FULL || (code == SQLITE_IOERR && (systemErrno == ENOSPC || systemErrno == EDQUOT))
    }
}
