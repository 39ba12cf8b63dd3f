import CSQLite
import CSQLiteAPI
import Foundation

/// The signature SQLite wants for a collation function.
package typealias SQLiteCollationFunction = @convention(c) (
    UnsafeMutableRawPointer?, Int32, UnsafeRawPointer?, Int32, UnsafeRawPointer?
) -> Int32

/// One SQLite connection with a prepared-statement cache.
///
/// A connection is not thread-safe by itself: its owner serialises access (the 1.x store
/// does so with its database lock). `@unchecked Sendable` lets the owner hand it between threads.
// @unchecked because its owner serialises every use (the 1.x store's database lock, the pools' writer/reader hand-out); it only moves between threads.
package final class SQLiteConnection: @unchecked Sendable {
    /// How to open the file.
    package struct OpenMode: Sendable, Equatable {
        package var readOnly: Bool
        package var create: Bool
        package init(readOnly: Bool = false, create: Bool = true) {
            self.readOnly = readOnly
            self.create = create && !readOnly
        }
    }

    let handle: OpaquePointer
    /// The C functions of ``library``.
    let api: UnsafePointer<csqlite_api>
    /// The SQLite library this connection runs on (the system's, or SQLCipher for an encrypted file).
    package let library: SQLiteLibrary
    /// The path of the database file.
    package let path: String
    private var statementCache: [String: SQLiteStatement] = [:]
    /// The same cache keyed by the address of a `StaticString`'s text, in a small open-addressing
    /// table: finding a statement costs a few compares instead of hashing its SQL, which matters
    /// for statements run once per document write.
    /// Unchecked exclusivity: a connection is used by one thread at a time (its pool's rule), and
    /// this is looked up for every statement a document write runs.
    @exclusivity(unchecked) private var staticStatementCache = StaticStatementTable()
    private var savepointDepth = 0
    /// The keys ``once(_:_:)`` has run (extensions registered on this connection).
    var onceKeys: Set<String> = []
    private var isClosed = false

    /// A `file:` URI that opens `path` as immutable: SQLite then never writes or creates anything
    /// next to it (no `-shm`), but also ignores any `-wal`, so use it only when the WAL is absent or empty.
    package static func immutableURI(forPath path: String) -> String {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "?#%")
        return "file:" + (path.addingPercentEncoding(withAllowedCharacters: allowed) ?? path) + "?immutable=1"
    }

    /// True when `path` has a non-empty `-wal` or a `-journal` side file (committed data an
    /// immutable open would not see).
    package static func hasPendingJournal(path: String) -> Bool {
        let fm = FileManager.default
        let walSize = ((try? fm.attributesOfItem(atPath: path + "-wal"))?[.size] as? NSNumber)?.intValue ?? 0
        return walSize > 0 || fm.fileExists(atPath: path + "-journal")
    }

    /// Opens (and with `mode.create`, creates) a database file with `library` (the system SQLite
    /// unless told otherwise; an encrypted file is opened with ``init(path:mode:rawKey:)``).
    package init(path: String, mode: OpenMode = OpenMode(), library: SQLiteLibrary = .system) throws {
        let api = library.api
        var flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI
        if mode.readOnly {
            flags |= SQLITE_OPEN_READONLY
        } else {
            flags |= SQLITE_OPEN_READWRITE
            if mode.create { flags |= SQLITE_OPEN_CREATE }
        }
        var db: OpaquePointer?
        let rc = api.pointee.open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: api.pointee.errmsg($0)) } ?? String(cString: api.pointee.errstr(rc))
            if let db { _ = api.pointee.close_v2(db) }
            throw SQLiteError(code: rc, message: message)
        }
        self.handle = db
        self.api = api
        self.library = library
        self.path = path
        _ = api.pointee.extended_result_codes(db, 1)
        _ = api.pointee.busy_timeout(db, 10_000)
    }

    deinit { close() }

    /// Finalizes cached statements and closes the connection.
    package func close() {
        guard !isClosed else { return }
        isClosed = true
        statementCache.removeAll()
        staticStatementCache.removeAll()
        _ = api.pointee.close_v2(handle)
    }

    func error(_ rc: Int32, sql: String?) -> SQLiteError {
        SQLiteError(code: rc, extendedCode: api.pointee.extended_errcode(handle),
                    message: String(cString: api.pointee.errmsg(handle)), sql: sql,
                    systemErrno: api.pointee.system_errno(handle))
    }

    // MARK: Statements

    /// Prepares a new statement (not cached).
    package func prepare(_ sql: String) throws -> SQLiteStatement {
        try SQLiteStatement(connection: self, sql: sql)
    }

    /// Returns a cached prepared statement for `sql`, reset and ready to bind. If the cached one
    /// is in the middle of a step loop (a callback re-entered the same query), a fresh,
    /// uncached statement is returned instead.
    package func cached(_ sql: String) throws -> SQLiteStatement {
        if let stmt = statementCache[sql] {
            if api.pointee.stmt_busy(stmt.handle) == 0 { return stmt }
            return try prepare(sql)
        }
        let stmt = try prepare(sql)
        statementCache[sql] = stmt
        return stmt
    }

    /// ``cached(_:)`` for SQL known at compile time: the statement is found by the address of the
    /// literal's text instead of by hashing the SQL. Same reuse rules as ``cached(_:)``.
    package func cached(static sql: StaticString) throws -> SQLiteStatement {
        guard sql.hasPointerRepresentation else { return try cached(sql.description) }
        let key = UnsafeRawPointer(sql.utf8Start)
        if let stmt = staticStatementCache[key] {
            if api.pointee.stmt_busy(stmt.handle) == 0 { return stmt }
            return try prepare(sql.description)
        }
        let stmt = try prepare(sql.description)
        staticStatementCache.insert(stmt, for: key)
        return stmt
    }

    /// Drops every cached statement (needed before DDL that changes the schema in ways the cache must not see).
    package func clearStatementCache() {
        statementCache.removeAll()
        staticStatementCache.removeAll()
    }

    /// Executes one or more SQL statements with no results.
    package func execute(_ sql: String) throws {
        var errmsg: UnsafeMutablePointer<CChar>?
        let rc = api.pointee.exec(handle, sql, nil, nil, &errmsg)
        if rc != SQLITE_OK {
            let message = errmsg.map { String(cString: $0) } ?? String(cString: api.pointee.errstr(rc))
            api.pointee.free(errmsg)
            throw SQLiteError(code: rc, extendedCode: api.pointee.extended_errcode(handle), message: message, sql: sql,
                              systemErrno: api.pointee.system_errno(handle))
        }
    }

    /// Runs a statement with bindings to completion.
    package func run(_ sql: String, _ values: [SQLiteValue] = []) throws {
        try cached(sql).run(values)
    }

    /// Returns the first column of the first row, or nil when there is no row.
    package func scalar(_ sql: String, _ values: [SQLiteValue] = []) throws -> SQLiteValue? {
        let stmt = try cached(sql)
        defer { stmt.reset() }
        try stmt.bind(values)
        return try stmt.step() ? stmt.value(0) : nil
    }

    package func scalarInt(_ sql: String, _ values: [SQLiteValue] = []) throws -> Int64? {
        if case .integer(let i)? = try scalar(sql, values) { return i }
        return nil
    }

    package func scalarString(_ sql: String, _ values: [SQLiteValue] = []) throws -> String? {
        switch try scalar(sql, values) {
        case .text(let s)?: return s
        case .integer(let i)?: return String(i)
        default: return nil
        }
    }

    // MARK: State

    package var lastInsertRowID: Int64 { api.pointee.last_insert_rowid(handle) }
    /// Rows changed by the most recent INSERT/UPDATE/DELETE.
    package var changes: Int { Int(api.pointee.changes(handle)) }
    /// True while a transaction is open.
    package var isInTransaction: Bool { api.pointee.get_autocommit(handle) == 0 }

    package var userVersion: Int {
        get { (try? scalarInt("PRAGMA user_version")).flatMap { $0 }.map(Int.init) ?? 0 }
    }

    package func setUserVersion(_ version: Int) throws {
        try execute("PRAGMA user_version = \(version)")
    }

    /// The names of a table's columns.
    package func columns(of table: String) throws -> [String] {
        let stmt = try prepare("PRAGMA table_info(\(quoteIdentifier(table)))")
        var names: [String] = []
        try stmt.forEachRow { names.append($0.string(1) ?? "") }
        return names
    }

    package func tableExists(_ name: String) throws -> Bool {
        try scalarInt("SELECT count(*) FROM sqlite_master WHERE type='table' AND name=?", [.text(name)]) ?? 0 > 0
    }

    /// `PRAGMA integrity_check`'s result ("ok" when healthy).
    package func integrityCheck() throws -> String {
        let stmt = try prepare("PRAGMA integrity_check")
        var lines: [String] = []
        try stmt.forEachRow { lines.append($0.string(0) ?? "") }
        return lines.joined(separator: "\n")
    }

    // MARK: Collations and functions

    /// Registers a C collation function under `name`.
    package func createCollation(_ name: String, _ function: SQLiteCollationFunction) throws {
        let rc = api.pointee.create_collation_v2(handle, name, SQLITE_UTF8, nil, function, nil)
        if rc != SQLITE_OK { throw error(rc, sql: nil) }
    }

    /// Registers an FTS3/FTS4 tokenizer (`module` is a `sqlite3_tokenizer_module` pointer) under
    /// `name` on this connection, through `fts3_tokenizer(name, pointer)`; the two-argument form
    /// is allowed first with `SQLITE_DBCONFIG_ENABLE_FTS3_TOKENIZER`.
    package func registerFTS3Tokenizer(named name: String, module: UnsafeRawPointer) throws {
        let rc = api.pointee.enable_fts3_tokenizer(handle)
        if rc != SQLITE_OK { throw error(rc, sql: nil) }
        let pointerBytes = withUnsafeBytes(of: UInt(bitPattern: module)) { Array($0) }
        let stmt = try prepare("SELECT fts3_tokenizer(?, ?)")
        try stmt.bind([.text(name), .blob(pointerBytes)])
        _ = try stmt.step()
    }

    // MARK: Transactions

    /// Runs `body` inside a transaction (a savepoint when nested). Commits when it returns,
    /// rolls back when it throws.
    package func transaction<R>(_ body: () throws -> R) throws -> R {
        try begin()
        do {
            let result = try body()
            try commit()
            return result
        } catch {
            try? rollback()
            throw error
        }
    }

    /// Opens a transaction, or a nested savepoint inside the current one.
    package func begin() throws {
        // Prepared once and reused: nested savepoints happen once per document write.
        if savepointDepth == 0 {
            try cached(static: "BEGIN IMMEDIATE").run()
        } else {
            try cached("SAVEPOINT sp\(savepointDepth)").run()
        }
        savepointDepth += 1
    }

    /// Commits the innermost open transaction level.
    package func commit() throws {
        guard savepointDepth > 0 else { throw SQLiteError(code: SQLITE_MISUSE, message: "commit without begin") }
        if savepointDepth == 1 {
            try cached(static: "COMMIT").run()
        } else {
            try cached("RELEASE SAVEPOINT sp\(savepointDepth - 1)").run()
        }
        savepointDepth -= 1
    }

    /// Rolls back the innermost open transaction level.
    package func rollback() throws {
        guard savepointDepth > 0 else { throw SQLiteError(code: SQLITE_MISUSE, message: "rollback without begin") }
        savepointDepth -= 1
        if savepointDepth == 0 {
            if isInTransaction { try cached("ROLLBACK").run() }
        } else {
            try cached("ROLLBACK TO SAVEPOINT sp\(savepointDepth)").run()
            try cached("RELEASE SAVEPOINT sp\(savepointDepth)").run()
        }
    }

    /// How deeply transactions are nested right now (0 = none).
    package var transactionDepth: Int { savepointDepth }
}

/// Statements by the address of their SQL text (linear probing; kept at most half full).
private struct StaticStatementTable {
    private var keys = [UnsafeRawPointer?](repeating: nil, count: 32)
    private var statements = [SQLiteStatement?](repeating: nil, count: 32)
    private var count = 0

    @inline(__always)
    private func slot(_ key: UnsafeRawPointer, mask: Int) -> Int {
        let bits = UInt(bitPattern: key)
        return Int(truncatingIfNeeded: (bits ^ (bits >> 7)) &* 0x9E37_79B9) & mask
    }

    subscript(key: UnsafeRawPointer) -> SQLiteStatement? {
        let mask = keys.count - 1
        var i = slot(key, mask: mask)
        while let k = keys[i] {
            if k == key { return statements[i] }
            i = (i + 1) & mask
        }
        return nil
    }

    mutating func insert(_ statement: SQLiteStatement, for key: UnsafeRawPointer) {
        if (count + 1) * 2 > keys.count {
            let oldKeys = keys, oldStatements = statements
            keys = [UnsafeRawPointer?](repeating: nil, count: oldKeys.count * 2)
            statements = [SQLiteStatement?](repeating: nil, count: oldKeys.count * 2)
            count = 0
            for (k, s) in zip(oldKeys, oldStatements) {
                if let k, let s { insert(s, for: k) }
            }
        }
        let mask = keys.count - 1
        var i = slot(key, mask: mask)
        while let k = keys[i], k != key { i = (i + 1) & mask }
        if keys[i] == nil { count += 1 }
        keys[i] = key
        statements[i] = statement
    }

    mutating func removeAll() {
        self = StaticStatementTable()
    }
}

/// Quotes an SQL identifier (table or index name) with single quotes, as the 1.x schema does for `maps_N`.
package func quoteIdentifier(_ name: String) -> String {
    // Without Foundation's replacingOccurrences: statements are built with it on hot paths.
    guard name.utf8.contains(UInt8(ascii: "'")) else { return "'" + name + "'" }
    return "'" + name.replacingOccurrences(of: "'", with: "''") + "'"
}
