import CSQLite
import CSQLiteAPI

extension SQLiteConnection {
    /// Calls `body` with the raw `sqlite3 *` and the `const csqlite_api *` of this connection's
    /// library, for C code that registers its own SQL functions (valid only inside `body`).
    package func withNativeHandle<R>(_ body: (OpaquePointer, UnsafeRawPointer) throws -> R) rethrows -> R {
        try body(handle, UnsafeRawPointer(api))
    }

    /// Runs `body` once per connection for `key` (e.g. registering a family of SQL functions), so
    /// callers need not ask SQLite what is registered on every compile. Not thread-safe, like the
    /// connection.
    package func once(_ key: String, _ body: () throws -> Void) rethrows {
        if onceKeys.contains(key) { return }
        try body()
        onceKeys.insert(key)
    }
}

extension SQLiteArguments {
    /// The arguments C code received for a call (`api`: the `const csqlite_api *` given by
    /// ``SQLiteConnection/withNativeHandle(_:)``), to hand the call to a Swift implementation.
    package init(nativeAPI api: UnsafeRawPointer, argv: UnsafeMutablePointer<OpaquePointer?>?, count: Int) {
        self.init(api: api.assumingMemoryBound(to: csqlite_api.self), argv: argv, count: count)
    }
}

extension SQLiteFunctionResult {
    /// The result of a call C code received (see ``SQLiteArguments/init(nativeAPI:argv:count:)``).
    package init(nativeAPI api: UnsafeRawPointer, context: OpaquePointer?) {
        self.init(api: api.assumingMemoryBound(to: csqlite_api.self), context: context)
    }
}
