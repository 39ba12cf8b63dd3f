import Fleece
import Foundation
import SQLiteKit

/// A N1QL value as LiteCore represents it inside SQLite (spec 9.3): MISSING is SQL NULL,
/// JSON null a zero-length blob with subtype 0x67, booleans integers with subtype 0x68,
/// numbers and strings native, arrays and dicts Fleece blobs, binary data blobs with 0x66.
enum QueryValue {
    case missing, null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case data([UInt8])
    /// An array or dict, read in place.
    case fleece(FleeceValue)

    static let nullSubtype: UInt32 = 0x67
    static let boolSubtype: UInt32 = 0x68
    static let dataSubtype: UInt32 = 0x66

    /// The value of a Fleece value; collections stay in place.
    init(_ v: FleeceValue) {
        switch v.type {
        case .null, .undefined: self = .null
        case .boolean: self = .bool(v.boolValue)
        case .number: self = v.isInteger && !v.isUnsigned ? .int(v.intValue) : .double(v.doubleValue)
        case .string: self = .string(v.stringValue ?? "")
        case .data: self = .data(v.dataValue ?? [])
        case .array, .dict: self = .fleece(v)
        }
    }

    var isMissing: Bool { if case .missing = self { return true } else { return false } }
    var isMissingOrNull: Bool {
        switch self { case .missing, .null: return true; default: return false }
    }

    var number: Double? {
        switch self {
        case .int(let i): return Double(i)
        case .double(let d): return d
        case .bool(let b): return b ? 1 : 0
        default: return nil
        }
    }

    /// Argument `i`, with blobs decoded through `decoder` (which knows the database's shared keys).
    static func argument(_ a: SQLiteArguments, _ i: Int, _ decoder: FleeceBodyDecoder) -> QueryValue {
        switch a.storageClass(i) {
        case .null: return .missing
        case .integer: return a.subtype(i) == boolSubtype ? .bool(a.int64(i) != 0) : .int(a.int64(i))
        case .real: return .double(a.double(i))
        case .text: return .string(a.string(i) ?? "")
        case .blob:
            let subtype = a.subtype(i)
            if subtype == dataSubtype { return a.withBlob(i) { .data([UInt8]($0)) } }
            return a.withBlob(i) { bytes in
                if bytes.isEmpty || subtype == nullSubtype { return .null }
                guard let root = decoder.root(of: bytes) else { return .null }
                return QueryValue(root)
            }
        }
    }

    /// Sets `r` to the value of `v` (as `QueryValue(v).set(r)`), strings straight from the Fleece bytes.
    static func setResult(_ v: FleeceValue, _ r: SQLiteFunctionResult) {
        switch v.type {
        case .string: _ = v.withUTF8 { r.setText(UnsafeRawBufferPointer($0)) }
        case .number: v.isInteger && !v.isUnsigned ? r.set(v.intValue) : r.set(v.doubleValue)
        default: QueryValue(v).set(r)
        }
    }

    /// Sets `r` to this value, as the SQL functions return values.
    func set(_ r: SQLiteFunctionResult) {
        switch self {
        case .missing: r.setNull()
        case .null: r.setBlob([]); r.setSubtype(Self.nullSubtype)
        case .bool(let b): r.set(Int64(b ? 1 : 0)); r.setSubtype(Self.boolSubtype)
        case .int(let i): r.set(i)
        case .double(let d): r.set(d)
        case .string(let s): r.set(s)
        case .data(let d): r.setBlob(d); r.setSubtype(Self.dataSubtype)
        case .fleece(let v): r.setBlob(Self.encodeStandalone(v))
        }
    }

    /// A collection re-encoded as a Fleece document of its own, without shared keys (the
    /// encoder must not add keys to the database's table while a query runs).
    static func encodeStandalone(_ v: FleeceValue) -> [UInt8] {
        (try? FleeceCoding.encodeJSON(v.toJSONBytes(), sharedKeys: nil)) ?? []
    }

    /// Fleece encoding of any value (for `fl_result` and literals built at run time).
    func write(to encoder: inout FleeceEncoder) {
        switch self {
        case .missing, .null: encoder.writeNull()
        case .bool(let b): encoder.writeBool(b)
        case .int(let i): encoder.writeInt(i)
        case .double(let d): d.isFinite ? encoder.writeDouble(d) : encoder.writeNull()
        case .string(let s): encoder.writeString(s)
        case .data(let d): encoder.writeData(d)
        case .fleece(let v): try? encoder.writeJSON(v.toJSONBytes())
        }
    }

    /// N1QL equality used by `array_contains`, `missingif`, `nullif`: same type and value
    /// (numbers by value, booleans as numbers as SQLite would compare them).
    func sqlEquals(_ other: QueryValue) -> Bool {
        switch (self, other) {
        case (.missing, _), (_, .missing): return false
        case (.null, .null): return true
        case (.string(let a), .string(let b)): return a.utf8.elementsEqual(b.utf8)
        case (.data(let a), .data(let b)): return a == b
        case (.fleece(let a), .fleece(let b)): return a.toJSONBytes() == b.toJSONBytes()
        default:
            if let x = number, let y = other.number { return x == y }
            return false
        }
    }
}

/// Decodes Fleece blobs handed to the query functions: document bodies (the current revision
/// of a 2.x rev-tree row, or a 3.x Fleece body) and collections other functions returned.
/// Remembers the last body, since one row's body is read by every `fl_value` of the row.
// @unchecked because one decoder belongs to one connection's SQL functions, which SQLite runs on the thread using that connection.
final class FleeceBodyDecoder: @unchecked Sendable {
    private let sharedKeys: () -> SharedKeys
    /// The last valid body decoded (its bytes are compared with the next blob's body).
    private var last: FleeceDocument?

    init(sharedKeys: @escaping () -> SharedKeys) {
        self.sharedKeys = sharedKeys
    }

    /// The root value of `bytes`, or nil if they are neither a rev tree with a current body nor
    /// valid Fleece (a query never fails on a malformed body; the value is MISSING).
    func root(of bytes: UnsafeRawBufferPointer) -> FleeceValue? {
        guard let body = Self.currentBody(bytes) else { return nil }
        if let last, last.withUnsafeBytes({ $0.count == body.count && (body.count == 0 || memcmp($0.baseAddress!, body.baseAddress!, body.count) == 0) }) {
            return last.root
        }
        guard let doc = try? FleeceDocument(bytes: body, sharedKeys: sharedKeys()) else { return nil }
        last = doc
        return doc.root
    }

    /// The Fleece body inside `bytes`: for a 2.x row the body of revision 0 (spec 3.3), else
    /// the bytes themselves (spec 3.4).
    static func currentBody(_ bytes: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer? {
        guard LiteCoreRevTree.looksLikeRevisionTree(bytes) else { return bytes }
        let size = Int(bytes[0]) << 24 | Int(bytes[1]) << 16 | Int(bytes[2]) << 8 | Int(bytes[3])
        let flags = bytes[6]
        guard flags & 0x80 != 0 else { return nil }
        var cursor = 8 + Int(bytes[7])
        guard cursor < size else { return nil }
        while cursor < size, bytes[cursor] & 0x80 != 0 { cursor += 1 }   // skip the sequence varint
        cursor += 1
        guard cursor <= size else { return nil }
        return UnsafeRawBufferPointer(rebasing: bytes[cursor..<size])
    }
}
