import Fleece
import SQLiteKit

/// Functions over collections written in Swift: `fl_contains` (IN over a property array) and the
/// literal constructors `fl_dict`, `fl_array`.
extension QueryFunctions {
    static func registerCollections(on connection: SQLiteConnection, lookup: FleecePathLookup) throws {
        let decoder = lookup.decoder
        try connection.createFunction("fl_contains", argumentCount: 3, readsSubtypes: true) { a, r in
            guard let v = lookup.lookup(a, r) else { return r.setNull() }
            guard let arr = v.arrayValue else { return QueryValue.null.set(r) }
            let needle = QueryValue.argument(a, 2, decoder)
            QueryValue.bool(arr.contains { QueryValue($0).sqlEquals(needle) }).set(r)
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
    }
}
