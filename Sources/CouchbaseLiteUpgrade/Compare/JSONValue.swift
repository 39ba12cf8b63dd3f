import Foundation
import JSONCore

/// A JSON value as the comparison sees it: numbers compared by value (`1` equals `1.0`, as both
/// 1.x views and N1QL compare them), objects by their key/value pairs, and MISSING (no value at
/// all: an absent N1QL column) kept apart from `null`.
public indirect enum JSONValue: Hashable, Sendable, CustomStringConvertible {
    case missing
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// Converts a Foundation/Swift value (`nil` → MISSING, `NSNull` → null).
    public init(_ value: Any?) {
        switch value {
        case nil: self = .missing
        case is NSNull: self = .null
        case let b as Bool: self = .bool(b)
        case let i as Int: self = .number(Double(i))
        case let i as Int64: self = .number(Double(i))
        case let u as UInt64: self = .number(Double(u))
        case let d as Double: self = .number(d)
        case let f as Float: self = .number(Double(f))
        case let n as NSNumber: self = .number(n.doubleValue)
        case let s as String: self = .string(s)
        case let a as [Any]: self = .array(a.map { JSONValue($0) })
        case let d as [String: Any]: self = .object(d.mapValues { JSONValue($0) })
        default: self = .string(String(describing: value!))
        }
    }

    /// The value as plain Swift (`NSNull` for null, nil for MISSING).
    public var plain: Any? {
        switch self {
        case .missing: return nil
        case .null: return NSNull()
        case .bool(let b): return b
        case .number(let d): return d == d.rounded() && abs(d) < 9.0e15 ? Int(d) : d
        case .string(let s): return s
        case .array(let a): return a.map { $0.plain ?? NSNull() }
        case .object(let o): return o.mapValues { $0.plain ?? NSNull() }
        }
    }

    /// Compact JSON with sorted keys; MISSING prints as `MISSING`.
    public var json: String {
        var out = ""
        write(to: &out)
        return out
    }

    public var description: String { json }

    /// The N1QL type name (`missing`, `null`, `boolean`, `number`, `string`, `array`, `object`).
    public var typeName: String {
        switch self {
        case .missing: return "missing"
        case .null: return "null"
        case .bool: return "boolean"
        case .number: return "number"
        case .string: return "string"
        case .array: return "array"
        case .object: return "object"
        }
    }

    private func write(to out: inout String) {
        switch self {
        case .missing: out += "MISSING"
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .number(let d):
            if d == d.rounded(), abs(d) < 9.0e15 { out += String(Int64(d)) } else if d.isFinite { out += String(d) } else { out += "null" }
        case .string(let s): Self.writeString(s, to: &out)
        case .array(let a):
            out += "["
            for (i, v) in a.enumerated() {
                if i > 0 { out += "," }
                v.write(to: &out)
            }
            out += "]"
        case .object(let o):
            out += "{"
            for (i, k) in o.keys.sorted().enumerated() {
                if i > 0 { out += "," }
                Self.writeString(k, to: &out)
                out += ":"
                o[k]!.write(to: &out)
            }
            out += "}"
        }
    }

    /// A JSON string literal, escaped by the package's JSON writer.
    static func writeString(_ s: String, to out: inout String) {
        out += (try? JSON.string(s)) ?? "\"\""
    }
}

extension JSONValue: Codable {
    public init(from decoder: Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() { self = .null }
        else if let b = try? c.decode(Bool.self) { self = .bool(b) }
        else if let d = try? c.decode(Double.self) { self = .number(d) }
        else if let s = try? c.decode(String.self) { self = .string(s) }
        else if let a = try? c.decode([JSONValue].self) { self = .array(a) }
        else { self = .object(try c.decode([String: JSONValue].self)) }
    }

    /// MISSING encodes as the string `"MISSING"`'s absence is not expressible inside arrays, so
    /// reports carry it as null plus a `missing` flag on the row (see `ComparedRow`).
    public func encode(to encoder: Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .missing, .null: try c.encodeNil()
        case .bool(let b): try c.encode(b)
        case .number(let d):
            if d == d.rounded(), abs(d) < 9.0e15 { try c.encode(Int64(d)) } else if d.isFinite { try c.encode(d) } else { try c.encodeNil() }
        case .string(let s): try c.encode(s)
        case .array(let a): try c.encode(a)
        case .object(let o): try c.encode(o)
        }
    }
}
