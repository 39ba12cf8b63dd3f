import CSQLite
import CSQLiteAPI
import Foundation

/// The arguments of one call of an application-defined SQL function, read in place.
package struct SQLiteArguments {
    /// The library whose values these are (see `SQLiteLibrary`).
    let api: UnsafePointer<csqlite_api>
    let argv: UnsafeMutablePointer<OpaquePointer?>?
    /// The number of arguments.
    package let count: Int

    /// The storage classes SQLite hands a function.
    package enum StorageClass: Sendable, Equatable { case integer, real, text, blob, null }

    @inline(__always)
    func value(_ i: Int) -> OpaquePointer? { argv![i] }

    /// The storage class of argument `i`.
    package func storageClass(_ i: Int) -> StorageClass {
        switch api.pointee.value_type(value(i)) {
        case SQLITE_INTEGER: return .integer
        case SQLITE_FLOAT: return .real
        case SQLITE_TEXT: return .text
        case SQLITE_BLOB: return .blob
        default: return .null
        }
    }

    /// True if argument `i` is SQL NULL.
    package func isNull(_ i: Int) -> Bool { api.pointee.value_type(value(i)) == SQLITE_NULL }
    /// Argument `i` as an integer (SQLite's conversion).
    package func int64(_ i: Int) -> Int64 { api.pointee.value_int64(value(i)) }
    /// Argument `i` as a double (SQLite's conversion).
    package func double(_ i: Int) -> Double { api.pointee.value_double(value(i)) }
    /// The subtype SQLite carries with a value returned by another function (0 when none).
    package func subtype(_ i: Int) -> UInt32 { api.pointee.value_subtype(value(i)) }

    /// Argument `i` as text (numbers are converted by SQLite), nil for NULL.
    package func string(_ i: Int) -> String? {
        guard let p = api.pointee.value_text(value(i)) else { return nil }
        let n = Int(api.pointee.value_bytes(value(i)))
        return String(decoding: UnsafeBufferPointer(start: p, count: n), as: UTF8.self)
    }

    /// Calls `body` with the bytes of argument `i` as a blob (no copy; valid only inside `body`).
    package func withBlob<R>(_ i: Int, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        let p = api.pointee.value_blob(value(i))
        let n = Int(api.pointee.value_bytes(value(i)))
        return try body(UnsafeRawBufferPointer(start: n == 0 ? nil : p, count: n))
    }

    /// Calls `body` with the UTF-8 bytes of argument `i` as text (no copy).
    package func withText<R>(_ i: Int, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        let p = api.pointee.value_text(value(i))
        let n = Int(api.pointee.value_bytes(value(i)))
        return try body(UnsafeRawBufferPointer(start: n == 0 ? nil : UnsafeRawPointer(p), count: n))
    }
}

/// Where an application-defined SQL function puts its result.
package struct SQLiteFunctionResult {
    /// The library whose context this is (see `SQLiteLibrary`).
    let api: UnsafePointer<csqlite_api>
    let context: OpaquePointer?

    /// Returns SQL NULL.
    package func setNull() { api.pointee.result_null(context) }
    /// Returns an integer.
    package func set(_ value: Int64) { api.pointee.result_int64(context, value) }
    /// Returns a double.
    package func set(_ value: Double) { api.pointee.result_double(context, value) }
    /// Returns text.
    package func set(_ value: String) {
        var s = value
        s.withUTF8 { setText(UnsafeRawBufferPointer($0)) }
    }
    /// Returns text from UTF-8 bytes (copied).
    package func setText(_ bytes: UnsafeRawBufferPointer) {
        // A zero-length text still needs a non-NULL pointer, or SQLite returns NULL.
        let p = bytes.baseAddress ?? UnsafeRawPointer(emptyText)
        api.pointee.result_text(context, p.assumingMemoryBound(to: CChar.self), Int32(bytes.count), SQLITE_TRANSIENT_FN)
    }
    /// Returns a blob (copied).
    package func setBlob(_ bytes: UnsafeRawBufferPointer) {
        api.pointee.result_blob(context, bytes.baseAddress ?? UnsafeRawPointer(emptyText), Int32(bytes.count), SQLITE_TRANSIENT_FN)
    }
    /// Returns a blob.
    package func setBlob(_ bytes: [UInt8]) { bytes.withUnsafeBytes { setBlob($0) } }
    /// Tags the result with a subtype another function can read back (SQLite drops it once
    /// the value is stored or sorted).
    package func setSubtype(_ subtype: UInt32) { api.pointee.result_subtype(context, subtype) }
    /// Makes the statement fail with `message`.
    package func setError(_ message: String) { api.pointee.result_error(context, message, -1) }
    /// Returns argument `i` of `arguments` unchanged (a copy of SQLite's value, subtype included).
    package func set(argument i: Int, of arguments: SQLiteArguments) { api.pointee.result_value(context, arguments.value(i)) }

    /// The object this call site stored with argument `i` (`sqlite3_get_auxdata`): SQLite keeps it
    /// while the argument stays the same constant during one run of the statement.
    package func auxiliaryObject(forArgument i: Int32) -> AnyObject? {
        guard let p = api.pointee.get_auxdata(context, i) else { return nil }
        return Unmanaged<AnyObject>.fromOpaque(p).takeUnretainedValue()
    }

    /// Stores `object` with argument `i` for later calls (see ``auxiliaryObject(forArgument:)``).
    package func setAuxiliaryObject(_ object: AnyObject, forArgument i: Int32) {
        api.pointee.set_auxdata(context, i, Unmanaged.passRetained(object).toOpaque()) { p in
            if let p { Unmanaged<AnyObject>.fromOpaque(p).release() }
        }
    }
}

nonisolated(unsafe) private let emptyText: UnsafeMutablePointer<UInt8> = {
    let p = UnsafeMutablePointer<UInt8>.allocate(capacity: 1)
    p.pointee = 0
    return p
}()
nonisolated(unsafe) private let SQLITE_TRANSIENT_FN = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// A Swift closure implementing a scalar SQL function.
package typealias SQLiteScalarFunction = (SQLiteArguments, SQLiteFunctionResult) -> Void

/// The C signature of a scalar function's (or an aggregate step's) callback.
typealias SQLiteFunctionCallback = @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Void

@inline(__always)
private func callScalar(_ api: UnsafePointer<csqlite_api>, _ context: OpaquePointer?, _ argc: Int32,
                        _ argv: UnsafeMutablePointer<OpaquePointer?>?) {
    let box = Unmanaged<FunctionBox>.fromOpaque(api.pointee.user_data(context)!).takeUnretainedValue()
    box.body(SQLiteArguments(api: api, argv: argv, count: Int(argc)), SQLiteFunctionResult(api: api, context: context))
}

private final class FunctionBox {
    let body: SQLiteScalarFunction
    init(_ body: @escaping SQLiteScalarFunction) { self.body = body }
}

extension SQLiteConnection {
    /// Registers (or replaces) the scalar SQL function `name` taking `argumentCount`
    /// arguments (-1: any number). `deterministic` lets SQLite use it in indexes and factor it
    /// out; functions reading argument subtypes must say so with `readsSubtypes`.
    package func createFunction(_ name: String, argumentCount: Int32, deterministic: Bool = true,
                               readsSubtypes: Bool = false, _ body: @escaping SQLiteScalarFunction) throws {
        var flags = SQLITE_UTF8
        if deterministic { flags |= SQLITE_DETERMINISTIC }
        if readsSubtypes { flags |= SQLITE_SUBTYPE }
        let box = Unmanaged.passRetained(FunctionBox(body)).toOpaque()
        // A C callback captures nothing, so the library is chosen by registering its own thunk.
        let call: SQLiteFunctionCallback = api.pointee.is_sqlcipher != 0
            ? { context, argc, argv in callScalar(SQLiteLibrary.callbackSQLCipherAPI, context, argc, argv) }
            : { context, argc, argv in callScalar(SQLiteLibrary.callbackSystemAPI, context, argc, argv) }
        let rc = api.pointee.create_function_v2(
            handle, name, argumentCount, flags, box, call, nil, nil,
            { p in if let p { Unmanaged<FunctionBox>.fromOpaque(p).release() } })
        if rc != SQLITE_OK { throw error(rc, sql: nil) }
    }
}

/// A Swift closure comparing two UTF-8 strings for a collation: negative, zero or positive.
package typealias SQLiteCollation = (UnsafeRawBufferPointer, UnsafeRawBufferPointer) -> Int32

private final class CollationBox {
    let compare: SQLiteCollation
    init(_ compare: @escaping SQLiteCollation) { self.compare = compare }
}

extension SQLiteConnection {
    /// Registers the collation `name` implemented by a Swift closure.
    package func createCollation(_ name: String, _ compare: @escaping SQLiteCollation) throws {
        let box = Unmanaged.passRetained(CollationBox(compare)).toOpaque()
        let rc = api.pointee.create_collation_v2(handle, name, SQLITE_UTF8, box, { ctx, n1, p1, n2, p2 in
            let box = Unmanaged<CollationBox>.fromOpaque(ctx!).takeUnretainedValue()
            return box.compare(UnsafeRawBufferPointer(start: p1, count: Int(n1)), UnsafeRawBufferPointer(start: p2, count: Int(n2)))
        }, { p in if let p { Unmanaged<CollationBox>.fromOpaque(p).release() } })
        if rc != SQLITE_OK { throw error(rc, sql: nil) }
    }

    /// Whether a collation named `name` is registered on this connection.
    package func hasCollation(_ name: String) throws -> Bool {
        // `PRAGMA collation_list` rather than the pragma_collation_list table (SQLite 3.16+): SQLCipher 3 is 3.15.
        var found = false
        try prepare("PRAGMA collation_list").forEachRow { if $0.string(1) == name { found = true } }
        return found
    }
}
