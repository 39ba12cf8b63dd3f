import CJSONCollation
import Fleece
import Foundation
import SQLiteKit

/// The SQL functions queries are translated to (spec 9.3), registered on a DataFile's
/// connection. They read Fleece bodies in place; nothing builds `[String: Any]` per row.
enum QueryFunctions {
    /// Registers `LCUnicode_<C|_><D|_>_<locale>` (spec 9.3) unless the connection has it.
    static func registerCollation(_ name: String, on file: DataFile) throws {
        let connection = file.connection
        if try connection.hasCollation(name) { return }
        let chars = Array(name)
        let prefix = Array("LCUnicode_")
        guard chars.count >= prefix.count + 3, Array(chars[..<prefix.count]) == prefix, chars[prefix.count + 2] == "_" else { return }
        let caseSensitive = chars[prefix.count] != "_"
        let diacriticSensitive = chars[prefix.count + 1] != "_"
        let localeID = String(chars[(prefix.count + 3)...])
        guard let collator = UnicodeCollator(locale: localeID, caseSensitive: caseSensitive,
                                             diacriticSensitive: diacriticSensitive) else {
            throw CouchbaseLiteError(.invalidQuery, "Cannot open a Unicode collator for locale '\(localeID)'")
        }
        try connection.createCollation(name) { a, b in
            collator.compare(a, b)
        }
    }

    /// Registers the functions once per connection.
    static func register(on file: DataFile) throws {
        let connection = file.connection
        if try connection.scalarInt("SELECT count(*) FROM pragma_function_list WHERE name='fl_value'") ?? 0 > 0 { return }
        let decoder = FleeceBodyDecoder { [unowned file] in file.sharedKeys }
        var paths: [String: CompiledPropertyPath] = [:]
        /// Argument `i` as a compiled path: kept by SQLite with the call site while the argument
        /// is a constant (the usual case: one parse per query run), else from `paths`.
        func path(_ a: SQLiteArguments, _ i: Int, _ r: SQLiteFunctionResult?) -> CompiledPropertyPath? {
            // Only `path` stores objects with these functions' arguments: no dynamic cast needed.
            if let r, let p = r.auxiliaryObject(forArgument: Int32(i)) { return unsafeDowncast(p, to: CompiledPropertyPath.self) }
            guard let s = a.string(i) else { return nil }
            let compiled: CompiledPropertyPath
            if let p = paths[s] {
                compiled = p
            } else {
                guard let parsed = try? PropertyPath(parsing: s) else { return nil }
                compiled = CompiledPropertyPath(parsed)
                paths[s] = compiled
            }
            r?.setAuxiliaryObject(compiled, forArgument: Int32(i))
            return compiled
        }
        /// The Fleece value at argument 1's path under argument 0 (a body or a collection).
        func lookup(_ a: SQLiteArguments, _ r: SQLiteFunctionResult?) -> FleeceValue? {
            guard a.storageClass(0) == .blob, a.subtype(0) != QueryValue.nullSubtype,
                  let p = path(a, 1, r) else { return nil }
            return a.withBlob(0) { decoder.root(of: $0) }.flatMap { p.evaluate($0) }
        }

        // fl_value(body, path) / fl_nested_value(value, path): the property, MISSING if absent.
        let value: SQLiteScalarFunction = { a, r in
            if let v = lookup(a, r) { return QueryValue.setResult(v, r) }
            // A scalar with an empty path is itself (a variable bound to a scalar).
            if a.string(1)?.isEmpty == true { return QueryValue.argument(a, 0, decoder).set(r) }
            r.setNull()
        }
        try connection.createFunction("fl_value", argumentCount: 2, readsSubtypes: true, value)
        try connection.createFunction("fl_nested_value", argumentCount: 2, readsSubtypes: true, value)
        try connection.createFunction("fl_exists", argumentCount: 2, readsSubtypes: true) { a, r in
            QueryValue.bool(lookup(a, r) != nil).set(r)
        }
        try connection.createFunction("fl_count", argumentCount: 2, readsSubtypes: true) { a, r in
            guard let v = lookup(a, r) else { return r.setNull() }
            if let n = v.arrayValue?.count ?? v.dictValue?.count { r.set(Int64(n)) } else { QueryValue.null.set(r) }
        }
        try connection.createFunction("fl_contains", argumentCount: 3, readsSubtypes: true) { a, r in
            guard let v = lookup(a, r) else { return r.setNull() }
            guard let arr = v.arrayValue else { return QueryValue.null.set(r) }
            let needle = QueryValue.argument(a, 2, decoder)
            QueryValue.bool(arr.contains { QueryValue($0).sqlEquals(needle) }).set(r)
        }
        // fl_root(body): the whole document (the current revision's Fleece body).
        try connection.createFunction("fl_root", argumentCount: 1) { a, r in
            guard a.storageClass(0) == .blob else { return r.setNull() }
            a.withBlob(0) { bytes in
                if let body = FleeceBodyDecoder.currentBody(bytes), decoder.root(of: bytes) != nil { r.setBlob(body) } else { r.setNull() }
            }
        }
        try registerFullText(on: connection, lookup: lookup)
        try connection.createFunction("fl_null", argumentCount: 0) { _, r in QueryValue.null.set(r) }
        try connection.createFunction("fl_bool", argumentCount: 1, readsSubtypes: true) { a, r in
            a.isNull(0) ? r.setNull() : QueryValue.bool(a.int64(0) != 0).set(r)
        }
        try connection.createFunction("fl_is_valued", argumentCount: 1, readsSubtypes: true) { a, r in
            QueryValue.bool(!QueryValue.argument(a, 0, decoder).isMissingOrNull).set(r)
        }
        try connection.createFunction("fl_version", argumentCount: 1) { a, r in
            guard let id = a.withBlob(0, { BinaryRevisionID.decode($0) }) else { return r.setNull() }
            r.set(id)
        }
        // fl_like(string, pattern, collation flags)
        try connection.createFunction("fl_like", argumentCount: 3, readsSubtypes: true) { a, r in
            let s = QueryValue.argument(a, 0, decoder), p = QueryValue.argument(a, 1, decoder)
            if s.isMissing || p.isMissing { return r.setNull() }
            guard case .string(let str) = s, case .string(let pat) = p else { return QueryValue.null.set(r) }
            QueryValue.bool(LikeMatcher.matches(str, pattern: pat, flags: Int(a.int64(2)))).set(r)
        }
        // fl_result(value): a result column in a form that survives sorting and storage
        // (subtypes do not): booleans and data as Fleece, JSON null as an empty blob.
        try connection.createFunction("fl_result", argumentCount: 1, readsSubtypes: true) { a, r in
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
        // Literal collections: fl_dict(key, value, …) omits MISSING values; fl_array(items…).
        try connection.createFunction("fl_dict", argumentCount: -1, readsSubtypes: true) { a, r in
            var enc = FleeceEncoder()
            enc.beginDict(reserve: a.count / 2)
            var i = 0
            while i + 1 < a.count {
                let v = QueryValue.argument(a, i + 1, decoder)
                if !v.isMissing, let k = a.string(i) { enc.writeKey(k); v.write(to: &enc) }
                i += 2
            }
            enc.endDict()
            r.setBlob((try? enc.finish()) ?? [])
        }
        try connection.createFunction("fl_array", argumentCount: -1, readsSubtypes: true) { a, r in
            var enc = FleeceEncoder()
            enc.beginArray(reserve: a.count)
            for i in 0..<a.count { QueryValue.argument(a, i, decoder).write(to: &enc) }
            enc.endArray()
            r.setBlob((try? enc.finish()) ?? [])
        }
        // fl_each(value, path): one row per array item or dict value (`value`, `key`, `idx`);
        // a scalar yields one row with itself (LiteCore's UNNEST quirk, spec 9.3); MISSING none.
        try connection.createTableFunction("fl_each", columns: ["value", "key", "idx"], argumentCount: 2) { a in
            let rows = EachRows()
            var target: QueryValue = .missing
            if a.count > 1, a.storageClass(0) == .blob, !(a.string(1) ?? "").isEmpty {
                target = lookup(a, nil).map(QueryValue.init) ?? .missing
            } else if a.count > 0 {
                target = QueryValue.argument(a, 0, decoder)
            }
            switch target {
            case .missing, .null: break
            case .fleece(let v):
                if let arr = v.arrayValue {
                    rows.values = arr.map(QueryValue.init)
                } else if let dict = v.dictValue {
                    for (k, item) in dict { rows.keys.append(k); rows.values.append(QueryValue(item)) }
                }
            default: rows.values = [target]
            }
            return rows
        }
        // The N1QL function library, as n1ql_<name>.
        for (name, f) in N1QLFunctionTable.functions {
            try connection.createFunction("n1ql_" + name, argumentCount: -1, readsSubtypes: true) { a, r in
                var args: [QueryValue] = []
                args.reserveCapacity(a.count)
                for i in 0..<a.count { args.append(QueryValue.argument(a, i, decoder)) }
                f.body(args).set(r)
            }
        }
        // array_agg(x): the group's values as an array (MISSING skipped, as LiteCore does).
        try connection.createAggregate("n1ql_array_agg", argumentCount: 1, readsSubtypes: true) {
            ArrayAggregate(decoder: decoder)
        }
    }
}

/// The state of one group of `array_agg`.
private final class ArrayAggregate: SQLiteAggregateState {
    let decoder: FleeceBodyDecoder
    var values: [QueryValue] = []

    init(decoder: FleeceBodyDecoder) { self.decoder = decoder }

    func step(_ a: SQLiteArguments) {
        let v = QueryValue.argument(a, 0, decoder)
        if !v.isMissing { values.append(v) }
    }

    func finish(_ r: SQLiteFunctionResult) {
        var enc = FleeceEncoder()
        enc.beginArray(reserve: values.count)
        for v in values { v.write(to: &enc) }
        enc.endArray()
        guard let bytes = try? enc.finish(), let doc = try? FleeceDocument(bytes: bytes) else { return r.setNull() }
        QueryValue.fleece(doc.root).set(r)
    }
}

/// The rows of one `fl_each` call.
private final class EachRows: SQLiteTableRows {
    var values: [QueryValue] = []
    var keys: [String] = []
    var count: Int { values.count }
    func column(_ column: Int, row: Int, into result: SQLiteFunctionResult) {
        switch column {
        case 0: values[row].set(result)
        case 1: row < keys.count ? result.set(keys[row]) : result.setNull()
        default: result.set(Int64(row))
        }
    }
}

/// An ICU collator as LiteCore sets one up for `LCUnicode_…` (spec 9.3), through the C target.
final class UnicodeCollator: @unchecked Sendable {
    private let handle: OpaquePointer

    init?(locale: String, caseSensitive: Bool, diacriticSensitive: Bool) {
        guard let h = cbl_unicode_collator_open(locale, caseSensitive ? 1 : 0, diacriticSensitive ? 1 : 0) else { return nil }
        handle = h
    }

    deinit { cbl_unicode_collator_close(handle) }

    /// -1, 0 or 1 for two UTF-8 strings (ICU's const compare: safe from any thread).
    func compare(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Int32 {
        Int32(cbl_unicode_collator_compare(handle, a.baseAddress, a.count, b.baseAddress, b.count))
    }
}
