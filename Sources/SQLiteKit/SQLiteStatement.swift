import CSQLite
import CSQLiteAPI
import Foundation

/// SQLite copies bound strings and blobs when given this destructor.
let SQLITE_TRANSIENT = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// A prepared statement. Not thread-safe: the owning connection's user serialises access.
package final class SQLiteStatement {
    let handle: OpaquePointer
    /// The library the statement's connection runs on.
    let api: UnsafePointer<csqlite_api>
    /// The SQL text this statement was prepared from.
    package let sql: String
    unowned let connection: SQLiteConnection

    init(connection: SQLiteConnection, sql: String) throws {
        var stmt: OpaquePointer?
        let api = connection.api
        let rc = api.pointee.prepare_v3(connection.handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &stmt, nil)
        guard rc == SQLITE_OK, let stmt else {
            throw connection.error(rc, sql: sql)
        }
        self.handle = stmt
        self.api = api
        self.sql = sql
        self.connection = connection
    }

    deinit { _ = api.pointee.finalize(handle) }

    // MARK: Binding (1-based indexes, as in SQLite)

    /// Binds a value to the parameter at `index` (1-based).
    package func bind(_ value: SQLiteValue, at index: Int32) throws {
        switch value {
        case .null: try check(api.pointee.bind_null(handle, index))
        case .integer(let i): try bind(i, at: index)
        case .real(let d): try check(api.pointee.bind_double(handle, index, d))
        case .text(let s): try bind(s, at: index)
        case .blob(let b): try bindBlob(b, at: index)
        }
    }

    package func bind(_ value: Int64, at index: Int32) throws {
        try check(api.pointee.bind_int64(handle, index, value))
    }

    package func bind(_ value: Int, at index: Int32) throws {
        try check(api.pointee.bind_int64(handle, index, Int64(value)))
    }

    package func bind(_ value: Bool, at index: Int32) throws {
        try check(api.pointee.bind_int(handle, index, value ? 1 : 0))
    }

    package func bind(_ value: Double, at index: Int32) throws {
        try check(api.pointee.bind_double(handle, index, value))
    }

    /// The index of the named parameter `name` (with its `:`/`@`/`$` prefix), 0 if absent.
    package func parameterIndex(_ name: String) -> Int32 {
        api.pointee.bind_parameter_index(handle, name)
    }

    package func bindNull(at index: Int32) throws {
        try check(api.pointee.bind_null(handle, index))
    }

    package func bind(_ value: String, at index: Int32) throws {
        var s = value
        let rc = s.withUTF8 { buf -> Int32 in
            guard let base = buf.baseAddress else { return api.pointee.bind_text(handle, index, "", 0, SQLITE_TRANSIENT) }
            return UnsafeRawPointer(base).withMemoryRebound(to: CChar.self, capacity: buf.count) {
                api.pointee.bind_text(handle, index, $0, Int32(buf.count), SQLITE_TRANSIENT)
            }
        }
        try check(rc)
    }

    package func bind(_ value: String?, at index: Int32) throws {
        if let value { try bind(value, at: index) } else { try bindNull(at: index) }
    }

    package func bind(_ value: Int64?, at index: Int32) throws {
        if let value { try bind(value, at: index) } else { try bindNull(at: index) }
    }

    /// Binds bytes as a BLOB.
    package func bindBlob(_ bytes: some ContiguousBytes, at index: Int32) throws {
        let rc = bytes.withUnsafeBytes { buf in
            // A zero-length blob needs a non-NULL pointer, or SQLite stores NULL.
            api.pointee.bind_blob(handle, index, buf.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(buf.count), SQLITE_TRANSIENT)
        }
        try check(rc)
    }

    /// Binds bytes as a BLOB without copying them (SQLITE_STATIC): the memory must stay valid
    /// and unchanged until the statement is stepped and reset. For bulk-load hot paths.
    package func bindBlobNoCopy(_ buf: UnsafeRawBufferPointer, at index: Int32) throws {
        try check(api.pointee.bind_blob(handle, index, buf.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(buf.count), nil))
    }

    /// Binds UTF-8 bytes as TEXT without copying them (SQLITE_STATIC); see `bindBlobNoCopy`.
    package func bindTextNoCopy(_ buf: UnsafeRawBufferPointer, at index: Int32) throws {
        let base = buf.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!
        try check(api.pointee.bind_text(handle, index, base.assumingMemoryBound(to: CChar.self), Int32(buf.count), nil))
    }

    /// Binds bytes as TEXT (UTF-8).
    package func bindText(_ bytes: some ContiguousBytes, at index: Int32) throws {
        let rc = bytes.withUnsafeBytes { buf -> Int32 in
            // A zero-length text needs a non-NULL pointer, or SQLite stores NULL.
            let base = buf.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!
            return api.pointee.bind_text(handle, index, base.assumingMemoryBound(to: CChar.self), Int32(buf.count), SQLITE_TRANSIENT)
        }
        try check(rc)
    }

    /// Binds several values, starting at parameter 1.
    package func bind(_ values: [SQLiteValue]) throws {
        for (i, v) in values.enumerated() { try bind(v, at: Int32(i + 1)) }
    }

    // MARK: Stepping

    /// Advances to the next row. Returns false when done.
    @discardableResult
    package func step() throws -> Bool {
        let rc = api.pointee.step(handle)
        switch rc {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            let err = connection.error(rc, sql: sql)
            _ = api.pointee.reset(handle)
            throw err
        }
    }

    /// Resets the statement and clears its bindings, ready for reuse.
    package func reset() {
        _ = api.pointee.reset(handle)
        _ = api.pointee.clear_bindings(handle)
    }

    /// Runs the statement to completion (for INSERT/UPDATE/DELETE), then resets it.
    package func run(_ values: [SQLiteValue] = []) throws {
        defer { reset() }
        if !values.isEmpty { try bind(values) }
        while try step() {}
    }

    /// Iterates over result rows, then resets the statement.
    package func forEachRow(_ body: (SQLiteStatement) throws -> Void) throws {
        defer { reset() }
        while try step() { try body(self) }
    }

    // MARK: Columns (0-based indexes, as in SQLite)

    package var columnCount: Int32 { api.pointee.column_count(handle) }

    package func isNull(_ column: Int32) -> Bool {
        api.pointee.column_type(handle, column) == SQLITE_NULL
    }

    package func int64(_ column: Int32) -> Int64 { api.pointee.column_int64(handle, column) }
    package func int(_ column: Int32) -> Int { Int(api.pointee.column_int64(handle, column)) }
    package func bool(_ column: Int32) -> Bool { api.pointee.column_int64(handle, column) != 0 }
    package func double(_ column: Int32) -> Double { api.pointee.column_double(handle, column) }

    package func string(_ column: Int32) -> String? {
        guard let p = api.pointee.column_text(handle, column) else { return nil }
        let n = Int(api.pointee.column_bytes(handle, column))
        return String(decoding: UnsafeRawBufferPointer(start: p, count: n), as: UTF8.self)
    }

    /// The column's bytes (BLOB or TEXT), or nil for SQL NULL.
    package func bytes(_ column: Int32) -> [UInt8]? {
        let type = api.pointee.column_type(handle, column)
        if type == SQLITE_NULL { return nil }
        let p = api.pointee.column_blob(handle, column)
        let n = Int(api.pointee.column_bytes(handle, column))
        guard let p, n > 0 else { return [] }
        return Array(UnsafeRawBufferPointer(start: p, count: n))
    }

    /// Calls `body` with the column's bytes without copying; nil for SQL NULL. The buffer is valid only inside `body`.
    package func withBytes<R>(_ column: Int32, _ body: (UnsafeRawBufferPointer?) throws -> R) rethrows -> R {
        let type = api.pointee.column_type(handle, column)
        if type == SQLITE_NULL { return try body(nil) }
        let p = api.pointee.column_blob(handle, column)
        let n = Int(api.pointee.column_bytes(handle, column))
        return try body(UnsafeRawBufferPointer(start: n > 0 ? p : nil, count: n))
    }

    package func value(_ column: Int32) -> SQLiteValue {
        switch api.pointee.column_type(handle, column) {
        case SQLITE_INTEGER: return .integer(int64(column))
        case SQLITE_FLOAT: return .real(double(column))
        case SQLITE_TEXT: return .text(string(column) ?? "")
        case SQLITE_BLOB: return .blob(bytes(column) ?? [])
        default: return .null
        }
    }

    package func columnName(_ column: Int32) -> String {
        api.pointee.column_name(handle, column).map { String(cString: $0) } ?? ""
    }

    private func check(_ rc: Int32) throws {
        if rc != SQLITE_OK { throw connection.error(rc, sql: sql) }
    }
}
