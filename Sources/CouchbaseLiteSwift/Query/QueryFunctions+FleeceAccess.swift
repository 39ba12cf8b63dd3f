import CFleeceSQL
import Fleece
import SQLiteKit

/// Fleece access: `fl_value`, `fl_nested_value`, `fl_exists`, `fl_count`, `fl_result`, `fl_bool`
/// and the table-valued `fl_each` run in C (CFleeceSQL: the body read in place, the path and its
/// shared keys resolved once per statement); the Swift closures here answer the calls they hand
/// back (collections as results, malformed bodies, paths only the Swift parser reads), so the
/// results are the same as before. `fl_root`, `fl_null`, `fl_is_valued`, `fl_version` are Swift.
extension QueryFunctions {
    static func registerFleeceAccess(on connection: SQLiteConnection, sharedKeys: @escaping () -> SharedKeys,
                                     lookup: FleecePathLookup) throws {
        let decoder = lookup.decoder
        // The fallbacks run in a call the C function received: its auxdata is the C path, so
        // they look paths up without the call site (`nil` result for `lookup`).
        // fl_value(body, path) / fl_nested_value(value, path): the property, MISSING if absent.
        let value: SQLiteScalarFunction = { a, r in
            if let v = lookup.lookup(a, nil) { return QueryValue.setResult(v, r) }
            // A scalar with an empty path is itself (a variable bound to a scalar).
            if a.string(1)?.isEmpty == true { return QueryValue.argument(a, 0, decoder).set(r) }
            r.setNull()
        }
        let exists: SQLiteScalarFunction = { a, r in QueryValue.bool(lookup.lookup(a, nil) != nil).set(r) }
        let count: SQLiteScalarFunction = { a, r in
            guard let v = lookup.lookup(a, nil) else { return r.setNull() }
            if let n = v.arrayValue?.count ?? v.dictValue?.count { r.set(Int64(n)) } else { QueryValue.null.set(r) }
        }
        // fl_result(value): a result column in a form that survives sorting and storage
        // (subtypes do not): booleans and data as Fleece, JSON null as an empty blob.
        let result: SQLiteScalarFunction = { a, r in
            // Numbers and strings (no subtype) are returned as they are.
            switch a.storageClass(0) {
            case .real, .text: return r.set(argument: 0, of: a)
            case .integer where a.subtype(0) != QueryValue.boolSubtype: return r.set(argument: 0, of: a)
            default: break
            }
            let v = QueryValue.argument(a, 0, decoder)
            switch v {
            case .bool, .data:
                var enc = FleeceEncoder()
                v.write(to: &enc)
                r.setBlob((try? enc.finish()) ?? [])
            case .null: r.setBlob([])
            case .fleece:
                // Already a self-contained blob (or a body): pass the bytes through.
                a.withBlob(0) { r.setBlob($0) }
            default: v.set(r)
            }
        }
        try connection.withNativeHandle { db, api in
            let host = NativeFleeceHost(api: api, sharedKeys: sharedKeys, lookup: lookup,
                                        fallbacks: [value, exists, count, result])
            var c = host.cHost()
            let rc = cfl_register_functions(UnsafeMutableRawPointer(db), api, &c)
            if rc != 0 { throw CouchbaseLiteError(.invalidQuery, "Cannot register the Fleece query functions (SQLite error \(rc))") }
        }

        // fl_root(body): the whole document (the current revision's Fleece body).
        try connection.createFunction("fl_root", argumentCount: 1) { a, r in
            guard a.storageClass(0) == .blob else { return r.setNull() }
            a.withBlob(0) { bytes in
                if let body = FleeceBodyDecoder.currentBody(bytes), decoder.root(of: bytes) != nil { r.setBlob(body) } else { r.setNull() }
            }
        }
        try connection.createFunction("fl_null", argumentCount: 0) { _, r in QueryValue.null.set(r) }
        try connection.createFunction("fl_is_valued", argumentCount: 1, readsSubtypes: true) { a, r in
            QueryValue.bool(!QueryValue.argument(a, 0, decoder).isMissingOrNull).set(r)
        }
        try connection.createFunction("fl_version", argumentCount: 1) { a, r in
            guard let id = a.withBlob(0, { BinaryRevisionID.decode($0) }) else { return r.setNull() }
            r.set(id)
        }
    }
}

/// What the C functions call back into: shared keys, the Swift fallbacks, `fl_each` items that
/// are collections. Retained by the connection's functions until it closes (`release`).
private final class NativeFleeceHost {
    let api: UnsafeRawPointer
    let sharedKeys: () -> SharedKeys
    let lookup: FleecePathLookup
    /// Indexed by `CFL_FN_…`.
    let fallbacks: [SQLiteScalarFunction]

    init(api: UnsafeRawPointer, sharedKeys: @escaping () -> SharedKeys, lookup: FleecePathLookup,
         fallbacks: [SQLiteScalarFunction]) {
        self.api = api
        self.sharedKeys = sharedKeys
        self.lookup = lookup
        self.fallbacks = fallbacks
    }

    static func from(_ context: UnsafeMutableRawPointer?) -> NativeFleeceHost {
        Unmanaged<NativeFleeceHost>.fromOpaque(context!).takeUnretainedValue()
    }

    /// The C description of this host, holding one reference to it.
    func cHost() -> cfl_host {
        cfl_host(
            context: Unmanaged.passRetained(self).toOpaque(),
            key_code: { context, key, length, tableCount in
                let keys = NativeFleeceHost.from(context).sharedKeys()
                let string = String(decoding: UnsafeBufferPointer(start: key, count: key == nil ? 0 : length), as: UTF8.self)
                tableCount.pointee = Int32(keys.count)
                return Int32(keys.code(for: string) ?? -1)
            },
            key_string: { context, sqliteContext, code in
                let host = NativeFleeceHost.from(context)
                let r = SQLiteFunctionResult(nativeAPI: host.api, context: OpaquePointer(sqliteContext))
                if let s = host.sharedKeys().string(forCode: Int(code)) { r.set(s) } else { r.setNull() }
            },
            fallback: { context, function, sqliteContext, argc, argv in
                let host = NativeFleeceHost.from(context)
                let a = SQLiteArguments(nativeAPI: host.api,
                                        argv: argv.map { UnsafeMutableRawPointer($0).assumingMemoryBound(to: OpaquePointer?.self) },
                                        count: Int(argc))
                host.fallbacks[Int(function)](a, SQLiteFunctionResult(nativeAPI: host.api, context: OpaquePointer(sqliteContext)))
            },
            each_item: { context, sqliteContext, blob, blobLength, path, pathLength, index in
                let host = NativeFleeceHost.from(context)
                let r = SQLiteFunctionResult(nativeAPI: host.api, context: OpaquePointer(sqliteContext))
                let pathText = pathLength == 0 ? "" : String(decoding: UnsafeBufferPointer(start: path, count: pathLength), as: UTF8.self)
                let bytes = UnsafeRawBufferPointer(start: blob, count: blob == nil ? 0 : blobLength)
                guard var v = host.lookup.decoder.root(of: bytes) else { return r.setNull() }
                if !pathText.isEmpty {
                    guard let p = host.lookup.path(pathText), let found = p.evaluate(v) else { return r.setNull() }
                    v = found
                }
                let i = Int(index)
                if let array = v.arrayValue, i < array.count {
                    QueryValue(array[i]).set(r)
                } else if let dict = v.dictValue, let pair = dict.dropFirst(i).first(where: { _ in true }) {
                    QueryValue(pair.value).set(r)
                } else {
                    r.setNull()
                }
            },
            release: { context in
                Unmanaged<NativeFleeceHost>.fromOpaque(context!).release()
            })
    }
}
