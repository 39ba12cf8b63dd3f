import Foundation
@_exported import enum JSONCore.JSONValue
@_exported import struct JSONCore.JSONObject
import JSONCore

/// A key or value of a compared row: a JSON value (JSONCore's `JSONValue`, re-exported by this
/// module), or MISSING — no value at all (an absent N1QL column), which is not JSON's `null`.
///
/// The comparison sees numbers by value (`1` equals `1.0`, as both 1.x views and N1QL compare
/// them) and objects by their members in any order: `JSONValue`'s own equality.
///
/// MISSING is a case of its own rather than a `nil` `JSONValue?`: `row?.key` would then mix "no
/// row" with "no key", and `nil` (which is also `JSONValue`'s literal for JSON null) would mean
/// MISSING or null depending on where it is written.
public enum ComparedValue: Hashable, Sendable, CustomStringConvertible {
    /// No value: a N1QL column that is MISSING.
    case missing
    /// A JSON value (`null` included).
    case value(JSONValue)

    /// `value`, or MISSING when nil.
    public init(_ value: JSONValue?) {
        self = value.map(ComparedValue.value) ?? .missing
    }

    /// The JSON value, nil when MISSING.
    public var jsonValue: JSONValue? {
        if case .value(let v) = self { return v }
        return nil
    }

    /// Compact JSON with sorted keys; MISSING prints as `MISSING`.
    public var json: String {
        switch self {
        case .missing: return "MISSING"
        case .value(let v):
            var out = ""
            Self.write(v, to: &out)
            return out
        }
    }

    public var description: String { json }

    /// The N1QL type name (`missing`, `null`, `boolean`, `number`, `string`, `array`, `object`).
    public var typeName: String { jsonValue?.typeName ?? "missing" }

    /// The number as a double, when this is one.
    public var doubleValue: Double? { jsonValue?.doubleValue }

    /// The typed form of a Foundation value a 1.x view row or a 2.x result holds (nil: MISSING).
    /// Anything JSON has no place for (a blob, a date) becomes its description, a non-finite number
    /// null, as the comparison always showed them.
    init(foundation value: Any?) {
        guard let value else { self = .missing; return }
        self = .value(Self.lenient(value))
    }

    static func lenient(_ value: Any) -> JSONValue {
        if let v = try? JSONValue(foundation: value) { return v }
        switch value {
        case let a as [Any]: return .array(a.map(lenient))
        case let d as [String: Any]: return .object(JSONObject(d.lazy.map { (key: $0.key, value: lenient($0.value)) }))
        case let d as Double where !d.isFinite: return .null
        case let f as Float where !f.isFinite: return .null
        default: return .string(String(describing: value))
        }
    }

    /// The 1.x comparison's text: integral numbers below 9e15 as integers, other numbers in
    /// Swift's shortest form, members sorted.
    private static func write(_ value: JSONValue, to out: inout String) {
        switch value {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .int(let i): out += String(i)
        case .uint(let u): out += String(u)
        case .double(let d):
            if d == d.rounded(), abs(d) < 9.0e15 { out += String(Int64(d)) } else if d.isFinite { out += String(d) } else { out += "null" }
        case .string(let s): writeString(s, to: &out)
        case .array(let a):
            out += "["
            for (i, v) in a.enumerated() {
                if i > 0 { out += "," }
                write(v, to: &out)
            }
            out += "]"
        case .object(let o):
            out += "{"
            for (i, k) in o.keys.sorted().enumerated() {
                if i > 0 { out += "," }
                writeString(k, to: &out)
                out += ":"
                write(o[k]!, to: &out)
            }
            out += "}"
        }
    }

    /// A JSON string literal, escaped by the package's JSON writer.
    static func writeString(_ s: String, to out: inout String) {
        out += (try? JSON.string(JSONValue.string(s), sortedKeys: true)) ?? "\"\""
    }
}

/// The JSON form reports carry (`ComparedRow`, `MapDescription.Filter`): numbers as the 1.x
/// comparison wrote them (integral doubles below 9e15 as integers). MISSING encodes as null, with
/// a flag beside it (see `ComparedRow`).
extension ComparedValue: Codable {
    public init(from decoder: Decoder) throws {
        self = .value(try CodableJSON(from: decoder).value)
    }

    public func encode(to encoder: Encoder) throws {
        try CodableJSON(jsonValue ?? .null).encode(to: encoder)
    }
}

/// A `JSONValue` through `Codable` (JSONCore's type has no `Codable` conformance of its own).
struct CodableJSON: Codable {
    var value: JSONValue

    init(_ value: JSONValue) { self.value = value }

    init(from decoder: Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() { value = .null }
        else if let b = try? c.decode(Bool.self) { value = .bool(b) }
        else if let i = try? c.decode(Int64.self) { value = .int(i) }
        else if let d = try? c.decode(Double.self) { value = .double(d) }
        else if let s = try? c.decode(String.self) { value = .string(s) }
        else if let a = try? c.decode([CodableJSON].self) { value = .array(a.map(\.value)) }
        else {
            let members = try c.decode([String: CodableJSON].self)
            value = .object(JSONObject(members.lazy.map { (key: $0.key, value: $0.value.value) }))
        }
    }

    func encode(to encoder: Encoder) throws {
        var c = encoder.singleValueContainer()
        switch value {
        case .null: try c.encodeNil()
        case .bool(let b): try c.encode(b)
        case .int(let i): try c.encode(i)
        case .uint(let u): try c.encode(u)
        case .double(let d):
            if d == d.rounded(), abs(d) < 9.0e15 { try c.encode(Int64(d)) } else if d.isFinite { try c.encode(d) } else { try c.encodeNil() }
        case .string(let s): try c.encode(s)
        case .array(let a): try c.encode(a.map(CodableJSON.init))
        case .object(let o):
            var members: [String: CodableJSON] = [:]
            for (k, v) in o { members[k] = CodableJSON(v) }
            try c.encode(members)
        }
    }
}
