import CCollation
import Foundation

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

    /// The kind of a value as JSONCore parses it (Foundation values are recognised too).
    static func kind(_ value: Any) -> Kind {
        switch value {
        case is Bool: return .boolean
        case is Int, is Double, is Int64, is UInt64, is Float: return .number
        case is String: return .string
        case is [Any]: return .array
        case is [String: Any]: return .object
        case let n as NSNumber:
            return ObjectIdentifier(type(of: n)) == booleanClass ? .boolean : .number
        default: return .null
        }
    }

    private static let booleanClass = ObjectIdentifier(type(of: NSNumber(value: true)))

    /// -1, 0 or 1 as `a` sorts before, with or after `b`.
    static func compare(_ a: Any, _ b: Any) -> Int {
        let ka = kind(a), kb = kind(b)
        if ka != kb { return ka < kb ? -1 : 1 }
        switch ka {
        case .null:
            return 0
        case .boolean:
            let x = boolValue(a), y = boolValue(b)
            return x == y ? 0 : (!x ? -1 : 1)
        case .number:
            return compareNumbers(a, b)
        case .string:
            return compareStrings(a as? String ?? "", b as? String ?? "")
        case .array:
            let x = a as? [Any] ?? [], y = b as? [Any] ?? []
            for (ex, ey) in zip(x, y) {
                let c = compare(ex, ey)
                if c != 0 { return c }
            }
            return x.count == y.count ? 0 : (x.count < y.count ? -1 : 1)
        case .object:
            // Parsed objects keep no member order, so members are compared in key order.
            let x = a as? [String: Any] ?? [:], y = b as? [String: Any] ?? [:]
            let kx = x.keys.sorted(), ky = y.keys.sorted()
            for (keyX, keyY) in zip(kx, ky) {
                let c = compareStrings(keyX, keyY)
                if c != 0 { return c }
                let v = compare(x[keyX]!, y[keyY]!)
                if v != 0 { return v }
            }
            return kx.count == ky.count ? 0 : (kx.count < ky.count ? -1 : 1)
        }
    }

    /// Byte order, as CouchDB compares `_id` values in selectors (`mango_json:cmp_raw`).
    static func compareRaw(_ a: Any, _ b: Any) -> Int {
        if let x = a as? String, let y = b as? String {
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

    private static func boolValue(_ v: Any) -> Bool {
        if let b = v as? Bool { return b }
        return (v as? NSNumber)?.boolValue ?? false
    }

    private static func compareNumbers(_ a: Any, _ b: Any) -> Int {
        if let x = a as? Int, let y = b as? Int { return x == y ? 0 : (x < y ? -1 : 1) }
        let x = doubleValue(a), y = doubleValue(b)
        return x == y ? 0 : (x < y ? -1 : 1)
    }

    static func doubleValue(_ v: Any) -> Double {
        switch v {
        case let i as Int: return Double(i)
        case let d as Double: return d
        case let i as Int64: return Double(i)
        case let u as UInt64: return Double(u)
        case let f as Float: return Double(f)
        case let n as NSNumber: return n.doubleValue
        default: return 0
        }
    }
}
