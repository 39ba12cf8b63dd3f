import Fleece
import Foundation
import SQLiteKit

/// One column value of a result row as `fl_result` left it (spec 9.3): SQL NULL = MISSING,
/// an empty blob = JSON null, other blobs Fleece (collections, booleans, data).
enum ResultValue {
    case missing
    case null
    case int(Int)
    case double(Double)
    case string(String)
    case fleece(DocumentContext)

    /// `blobStore`: where the blobs in the row's dictionaries keep their content.
    init(_ stmt: SQLiteStatement, column c: Int32, sharedKeys: SharedKeys, blobStore: BlobStore? = nil) {
        switch stmt.value(c) {
        case .null: self = .missing
        case .integer(let i): self = .int(Int(i))
        case .real(let d): self = .double(d)
        case .text(let s): self = .string(s)
        case .blob(let bytes):
            if bytes.isEmpty { self = .null; return }
            // Document bodies carry the database's shared keys; fl_result's own blobs have none.
            if let doc = try? FleeceDocument(bytes: bytes, sharedKeys: sharedKeys) {
                self = .fleece(DocumentContext(fleece: doc, blobStore: blobStore))
            } else {
                self = .null
            }
        }
    }

    /// A scalar as the API returns it (nil for MISSING and collections).
    private var scalarValue: Any? {
        switch self {
        case .missing, .fleece: return nil
        case .null: return NSNull()
        case .int(let i): return i
        case .double(let d): return d
        case .string(let s): return s
        }
    }

    /// The API value (`DictionaryObject`/`ArrayObject` for collections), nil when MISSING.
    var apiValue: Any? {
        if case .fleece(let ctx) = self { return ctx.apiValue(ctx.fleece.root, inAttachments: false) }
        return scalarValue
    }

    /// Plain Swift values (`[String: Any]`, `[Any]`, …), nil when MISSING.
    var plainValue: Any? {
        if case .fleece(let ctx) = self { return ctx.foundationValue(ctx.fleece.root, inAttachments: false) }
        return scalarValue
    }

    var fleeceValue: FleeceValue? {
        if case .fleece(let ctx) = self { return ctx.fleece.root }
        return nil
    }
}

/// The column names of a result set, shared by its rows.
final class ResultKeys: Sendable {
    let names: [String]
    let index: [String: Int]
    init(_ names: [String]) {
        self.names = names
        var index: [String: Int] = [:]
        for (i, n) in names.enumerated() where index[n] == nil { index[n] = i }
        self.index = index
    }
}

/// One row of a query result (2.x `Result`): values by column index or by column name.
// @unchecked because its fields are lets; `ResultValue`s hold immutable decoded values and Fleece data.
public final class Result: @unchecked Sendable {
    let keys: ResultKeys
    let values: [ResultValue]

    init(keys: ResultKeys, values: [ResultValue]) {
        self.keys = keys
        self.values = values
    }

    /// The number of columns.
    public var count: Int { values.count }
    /// The column names, in order.
    public var keyNames: [String] { keys.names }

    private func column(_ i: Int) -> ResultValue? { i >= 0 && i < values.count ? values[i] : nil }
    private func column(_ key: String) -> ResultValue? { keys.index[key].flatMap(column) }

    /// The value at `index` (`String`, number, `Bool`, `NSNull`, `DictionaryObject`,
    /// `ArrayObject`); nil if MISSING or out of range.
    public func value(at index: Int) -> Any? { column(index)?.apiValue }
    /// The string at `index`, or nil.
    public func string(at index: Int) -> String? { Self.string(column(index)) }
    /// The number at `index` as an `Int` (0 if not a number; `true` is 1).
    public func int(at index: Int) -> Int { Int(truncatingIfNeeded: Self.int64(column(index))) }
    /// The number at `index` as an `Int64`.
    public func int64(at index: Int) -> Int64 { Self.int64(column(index)) }
    /// The number at `index` as a `Double`.
    public func double(at index: Int) -> Double { Self.double(column(index)) }
    /// The value at `index` as a boolean (numbers non-zero, other values present and not null).
    public func boolean(at index: Int) -> Bool { Self.boolean(column(index)) }
    /// The dictionary at `index`, or nil.
    public func dictionary(at index: Int) -> DictionaryObject? { value(at: index) as? DictionaryObject }
    /// The array at `index`, or nil.
    public func array(at index: Int) -> ArrayObject? { value(at: index) as? ArrayObject }

    /// The value of the column named `key`; nil if MISSING or no such column.
    public func value(forKey key: String) -> Any? { column(key)?.apiValue }
    /// The string in column `key`, or nil.
    public func string(forKey key: String) -> String? { Self.string(column(key)) }
    /// The number in column `key` as an `Int`.
    public func int(forKey key: String) -> Int { Int(truncatingIfNeeded: Self.int64(column(key))) }
    /// The number in column `key` as an `Int64`.
    public func int64(forKey key: String) -> Int64 { Self.int64(column(key)) }
    /// The number in column `key` as a `Double`.
    public func double(forKey key: String) -> Double { Self.double(column(key)) }
    /// The value in column `key` as a boolean.
    public func boolean(forKey key: String) -> Bool { Self.boolean(column(key)) }
    /// The dictionary in column `key`, or nil.
    public func dictionary(forKey key: String) -> DictionaryObject? { value(forKey: key) as? DictionaryObject }
    /// The array in column `key`, or nil.
    public func array(forKey key: String) -> ArrayObject? { value(forKey: key) as? ArrayObject }
    /// True if the row has a column `key` whose value is not MISSING.
    public func contains(key: String) -> Bool {
        if case .missing? = column(key) { return false }
        return column(key) != nil
    }

    /// The values as plain Swift values, MISSING columns as `nil`.
    public func toArray() -> [Any?] { values.map(\.plainValue) }

    /// Column name → plain Swift value; MISSING columns are left out.
    public func toDictionary() -> [String: Any] {
        var out: [String: Any] = [:]
        for (i, v) in values.enumerated() {
            if let p = v.plainValue, out[keys.names[i]] == nil { out[keys.names[i]] = p }
        }
        return out
    }

    /// The row as a JSON object (MISSING columns left out), keys in column order.
    public func toJSON() -> String {
        var out = "{"
        var first = true
        for (i, v) in values.enumerated() {
            guard let json = Self.json(v) else { continue }
            if !first { out += "," }
            first = false
            out += Self.jsonString(keys.names[i]) + ":" + json
        }
        return out + "}"
    }

    // MARK: Coercions (2.x rules: numbers convert, booleans are 0/1)

    @inline(__always)
    private static func string(_ v: ResultValue?) -> String? {
        if case .string(let s)? = v { return s }
        return v?.apiValue as? String
    }

    private static func int64(_ v: ResultValue?) -> Int64 {
        switch v {
        case .int(let i)?: return Int64(i)
        case .double(let d)?: return d.isFinite ? Int64(max(min(d, 9.2e18), -9.2e18)) : 0
        case .fleece(let ctx)?: return ctx.fleece.root.type == .number || ctx.fleece.root.type == .boolean ? ctx.fleece.root.intValue : 0
        default: return 0
        }
    }

    private static func double(_ v: ResultValue?) -> Double {
        switch v {
        case .int(let i)?: return Double(i)
        case .double(let d)?: return d
        case .fleece(let ctx)?: return ctx.fleece.root.type == .boolean ? ctx.fleece.root.doubleValue : 0
        default: return 0
        }
    }

    private static func boolean(_ v: ResultValue?) -> Bool {
        switch v {
        case .int(let i)?: return i != 0
        case .double(let d)?: return d != 0
        case .string?: return true
        case .null?, .missing?, nil: return false
        case .fleece(let ctx)?: return ctx.fleece.root.boolValue
        }
    }

    private static func json(_ v: ResultValue) -> String? {
        switch v {
        case .missing: return nil
        case .fleece(let ctx): return ctx.fleece.root.toJSON()
        case .null: return "null"
        case .int(let i): return String(i)
        case .double(let d): return d.isFinite ? (d == d.rounded() && abs(d) < 1e15 ? String(Int64(d)) : "\(d)") : "null"
        case .string(let s): return jsonString(s)
        }
    }

    private static func jsonString(_ s: String) -> String {
        var out = "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if u.value < 0x20 { out += String(format: "\\u%04x", u.value) } else { out.unicodeScalars.append(u) }
            }
        }
        return out + "\""
    }
}
