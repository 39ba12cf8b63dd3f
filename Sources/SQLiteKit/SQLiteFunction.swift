import CSQLite
import Foundation

/// The arguments of one call of an application-defined SQL function, read in place.
public struct SQLiteArguments {
    let argv: UnsafeMutablePointer<OpaquePointer?>?
    /// The number of arguments.
    public let count: Int

    /// The storage classes SQLite hands a function.
    public enum StorageClass: Sendable, Equatable { case integer, real, text, blob, null }

    @inline(__always)
    func value(_ i: Int) -> OpaquePointer? { argv![i] }

    /// The storage class of argument `i`.
    public func storageClass(_ i: Int) -> StorageClass {
        switch sqlite3_value_type(value(i)) {
        case SQLITE_INTEGER: return .integer
        case SQLITE_FLOAT: return .real
        case SQLITE_TEXT: return .text
        case SQLITE_BLOB: return .blob
        default: return .null
        }
    }

    /// True if argument `i` is SQL NULL.
    public func isNull(_ i: Int) -> Bool { sqlite3_value_type(value(i)) == SQLITE_NULL }
    /// Argument `i` as an integer (SQLite's conversion).
    public func int64(_ i: Int) -> Int64 { sqlite3_value_int64(value(i)) }
    /// Argument `i` as a double (SQLite's conversion).
    public func double(_ i: Int) -> Double { sqlite3_value_double(value(i)) }
    /// The subtype SQLite carries with a value returned by another function (0 when none).
    public func subtype(_ i: Int) -> UInt32 { sqlite3_value_subtype(value(i)) }

    /// Argument `i` as text (numbers are converted by SQLite), nil for NULL.
    public func string(_ i: Int) -> String? {
        guard let p = sqlite3_value_text(value(i)) else { return nil }
        let n = Int(sqlite3_value_bytes(value(i)))
        return String(decoding: UnsafeBufferPointer(start: p, count: n), as: UTF8.self)
    }

    /// Calls `body` with the bytes of argument `i` as a blob (no copy; valid only inside `body`).
    public func withBlob<R>(_ i: Int, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        let p = sqlite3_value_blob(value(i))
        let n = Int(sqlite3_value_bytes(value(i)))
        return try body(UnsafeRawBufferPointer(start: n == 0 ? nil : p, count: n))
    }

    /// Calls `body` with the UTF-8 bytes of argument `i` as text (no copy).
    public func withText<R>(_ i: Int, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        let p = sqlite3_value_text(value(i))
        let n = Int(sqlite3_value_bytes(value(i)))
        return try body(UnsafeRawBufferPointer(start: n == 0 ? nil : UnsafeRawPointer(p), count: n))
    }
}

/// Where an application-defined SQL function puts its result.
public struct SQLiteFunctionResult {
    let context: OpaquePointer?

    /// Returns SQL NULL.
    public func setNull() { sqlite3_result_null(context) }
    /// Returns an integer.
    public func set(_ value: Int64) { sqlite3_result_int64(context, value) }
    /// Returns a double.
    public func set(_ value: Double) { sqlite3_result_double(context, value) }
    /// Returns text.
    public func set(_ value: String) {
        var s = value
        s.withUTF8 { setText(UnsafeRawBufferPointer($0)) }
    }
    /// Returns text from UTF-8 bytes (copied).
    public func setText(_ bytes: UnsafeRawBufferPointer) {
        // A zero-length text still needs a non-NULL pointer, or SQLite returns NULL.
        let p = bytes.baseAddress ?? UnsafeRawPointer(emptyText)
        sqlite3_result_text(context, p.assumingMemoryBound(to: CChar.self), Int32(bytes.count), SQLITE_TRANSIENT_FN)
    }
    /// Returns a blob (copied).
    public func setBlob(_ bytes: UnsafeRawBufferPointer) {
        sqlite3_result_blob(context, bytes.baseAddress ?? UnsafeRawPointer(emptyText), Int32(bytes.count), SQLITE_TRANSIENT_FN)
    }
    /// Returns a blob.
    public func setBlob(_ bytes: [UInt8]) { bytes.withUnsafeBytes { setBlob($0) } }
    /// Tags the result with a subtype another function can read back (SQLite drops it once
    /// the value is stored or sorted).
    public func setSubtype(_ subtype: UInt32) { sqlite3_result_subtype(context, subtype) }
    /// Makes the statement fail with `message`.
    public func setError(_ message: String) { sqlite3_result_error(context, message, -1) }
    /// Returns argument `i` of `arguments` unchanged (a copy of SQLite's value, subtype included).
    public func set(argument i: Int, of arguments: SQLiteArguments) { sqlite3_result_value(context, arguments.value(i)) }

    /// The object this call site stored with argument `i` (`sqlite3_get_auxdata`): SQLite keeps it
    /// while the argument stays the same constant during one run of the statement.
    public func auxiliaryObject(forArgument i: Int32) -> AnyObject? {
        guard let p = sqlite3_get_auxdata(context, i) else { return nil }
        return Unmanaged<AnyObject>.fromOpaque(p).takeUnretainedValue()
    }

    /// Stores `object` with argument `i` for later calls (see ``auxiliaryObject(forArgument:)``).
    public func setAuxiliaryObject(_ object: AnyObject, forArgument i: Int32) {
        sqlite3_set_auxdata(context, i, Unmanaged.passRetained(object).toOpaque()) { p in
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
public typealias SQLiteScalarFunction = (SQLiteArguments, SQLiteFunctionResult) -> Void

private final class FunctionBox {
    let body: SQLiteScalarFunction
    init(_ body: @escaping SQLiteScalarFunction) { self.body = body }
}

extension SQLiteConnection {
    /// Registers (or replaces) the scalar SQL function `name` taking `argumentCount`
    /// arguments (-1: any number). `deterministic` lets SQLite use it in indexes and factor it
    /// out; functions reading argument subtypes must say so with `readsSubtypes`.
    public func createFunction(_ name: String, argumentCount: Int32, deterministic: Bool = true,
                               readsSubtypes: Bool = false, _ body: @escaping SQLiteScalarFunction) throws {
        var flags = SQLITE_UTF8
        if deterministic { flags |= SQLITE_DETERMINISTIC }
        if readsSubtypes { flags |= SQLITE_SUBTYPE }
        let box = Unmanaged.passRetained(FunctionBox(body)).toOpaque()
        let rc = sqlite3_create_function_v2(
            handle, name, argumentCount, flags, box,
            { context, argc, argv in
                let box = Unmanaged<FunctionBox>.fromOpaque(sqlite3_user_data(context)).takeUnretainedValue()
                box.body(SQLiteArguments(argv: argv, count: Int(argc)), SQLiteFunctionResult(context: context))
            },
            nil, nil,
            { p in if let p { Unmanaged<FunctionBox>.fromOpaque(p).release() } })
        if rc != SQLITE_OK { throw error(rc, sql: nil) }
    }
}

/// A Swift closure comparing two UTF-8 strings for a collation: negative, zero or positive.
public typealias SQLiteCollation = (UnsafeRawBufferPointer, UnsafeRawBufferPointer) -> Int32

private final class CollationBox {
    let compare: SQLiteCollation
    init(_ compare: @escaping SQLiteCollation) { self.compare = compare }
}

extension SQLiteConnection {
    /// Registers the collation `name` implemented by a Swift closure.
    public func createCollation(_ name: String, _ compare: @escaping SQLiteCollation) throws {
        let box = Unmanaged.passRetained(CollationBox(compare)).toOpaque()
        let rc = sqlite3_create_collation_v2(handle, name, SQLITE_UTF8, box, { ctx, n1, p1, n2, p2 in
            let box = Unmanaged<CollationBox>.fromOpaque(ctx!).takeUnretainedValue()
            return box.compare(UnsafeRawBufferPointer(start: p1, count: Int(n1)), UnsafeRawBufferPointer(start: p2, count: Int(n2)))
        }, { p in if let p { Unmanaged<CollationBox>.fromOpaque(p).release() } })
        if rc != SQLITE_OK { throw error(rc, sql: nil) }
    }

    /// Whether a collation named `name` is registered on this connection.
    public func hasCollation(_ name: String) throws -> Bool {
        try scalarInt("SELECT count(*) FROM pragma_collation_list WHERE name=?", [.text(name)]) ?? 0 > 0
    }
}
