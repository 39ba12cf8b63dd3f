import CCollation
import Foundation
import JSONCore

/// CouchDB's view collation over parsed JSON values (`couch_ejson_compare`), which Mango's
/// comparison operators use: null < false < true < numbers < strings (ICU, as 1.x views
/// collate them) < arrays (element by element, shorter first) < objects (member by member).
enum MangoCollation {
    /// The JSON kind of a parsed value, in collation order.
    enum Kind: Int, Comparable {
        case null = 0, boolean, number, string, array, object
        static func < (a: Kind, b: Kind) -> Bool { a.rawValue < b.rawValue }

        /// The `$type` operator's name for the kind.
        var name: String {
            switch self {
            case .null: return "null"
            case .boolean: return "boolean"
            case .number: return "number"
            case .string: return "string"
            case .array: return "array"
            case .object: return "object"
            }
        }
    }

    /// The kind of a value.
    static func kind(_ value: JSONValue) -> Kind {
        switch value {
        case .null: return .null
        case .bool: return .boolean
        case .int, .uint, .double: return .number
        case .string: return .string
        case .array: return .array
        case .object: return .object
        }
    }

    /// -1, 0 or 1 as `a` sorts before, with or after `b`.
    static func compare(_ a: JSONValue, _ b: JSONValue) -> Int {
        switch (a, b) {
        case (.null, .null):
            return 0
        case (.bool(let x), .bool(let y)):
            return x == y ? 0 : (!x ? -1 : 1)
        case (.int(let x), .int(let y)):
            return x == y ? 0 : (x < y ? -1 : 1)
        case (.string(let x), .string(let y)):
            return compareStrings(x, y)
        case (.array(let x), .array(let y)):
            for (ex, ey) in zip(x, y) {
                let c = compare(ex, ey)
                if c != 0 { return c }
            }
            return x.count == y.count ? 0 : (x.count < y.count ? -1 : 1)
        case (.object(let x), .object(let y)):
            // Member by member in the order the objects list them, as CouchDB compares them.
            for (mx, my) in zip(x, y) {
                let c = compareStrings(mx.key, my.key)
                if c != 0 { return c }
                let v = compare(mx.value, my.value)
                if v != 0 { return v }
            }
            return x.count == y.count ? 0 : (x.count < y.count ? -1 : 1)
        default:
            let ka = kind(a), kb = kind(b)
            if ka != kb { return ka < kb ? -1 : 1 }
            // Two numbers of different cases.
            let x = a.doubleValue ?? 0, y = b.doubleValue ?? 0
            return x == y ? 0 : (x < y ? -1 : 1)
        }
    }

    /// Byte order, as CouchDB compares `_id` values in selectors (`mango_json:cmp_raw`).
    static func compareRaw(_ a: JSONValue, _ b: JSONValue) -> Int {
        if case .string(let x) = a, case .string(let y) = b {
            return x.utf8.lexicographicallyPrecedes(y.utf8) ? -1 : (x == y ? 0 : 1)
        }
        return compare(a, b)
    }

    static func compareStrings(_ a: String, _ b: String) -> Int {
        if a == b { return 0 }
        if a.isEmpty || b.isEmpty { return a.isEmpty ? -1 : 1 }
        var x = a, y = b
        return x.withUTF8 { px in
            y.withUTF8 { py in
                Int(cbl_collate_unicode_strings(
                    UnsafeRawPointer(px.baseAddress!).assumingMemoryBound(to: CChar.self), px.count,
                    UnsafeRawPointer(py.baseAddress!).assumingMemoryBound(to: CChar.self), py.count))
            }
        }
    }
}
