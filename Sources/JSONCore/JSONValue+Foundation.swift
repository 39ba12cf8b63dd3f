import Foundation

// The public 1.x/2.x APIs spell JSON as Foundation values (`[String: Any]`, `[Any]`, `NSNull`…);
// these two conversions are where such a value enters or leaves the typed form.
extension JSONValue {
    /// The typed form of a Foundation/Swift value, by the writer's rules (`ValueClassifier`): exact
    /// numbers (a boolean `NSNumber` is a bool, never 1), `nil`/`NSNull` null; throws `JSONError` for
    /// what JSON cannot hold (`Date`, `Data`, NaN, non-string keys…).
    package init(foundation value: Any) throws {
        try self.init(foundation: value, depth: 0)
    }

    private init(foundation value: Any, depth: Int) throws {
        guard depth < JSONWriter.maxDepth else { throw JSONError("nesting deeper than \(JSONWriter.maxDepth) levels") }
        let t = type(of: value)
        if t == String.self { self = .string(value as! String); return }
        if t == Int.self { self = .int(Int64(value as! Int)); return }
        if t == Bool.self { self = .bool(value as! Bool); return }
        if t == Double.self { self = try Self.finite(value as! Double); return }
        switch ValueClassifier.classify(value) {
        case .string(let s): self = .string(s)
        case .int(let i): self = .int(i)
        case .uint(let u): self = Int64(exactly: u).map(JSONValue.int) ?? .uint(u)
        case .double(let d): self = try Self.finite(d)
        case .float(let f):
            // 1.x writes a Float with 6 significant digits: keep the value its text names.
            guard f.isFinite else { throw JSONError("\(f) is not a JSON number") }
            self = .double(Double(String(describing: f)) ?? Double(f))
        case .bool(let b): self = .bool(b)
        case .null: self = .null
        case .object(let d):
            var o = JSONObject(minimumCapacity: d.count)
            for (k, v) in d { o[k] = try JSONValue(foundation: v, depth: depth + 1) }
            self = .object(o)
        case .objectOfOptionals(let d):
            var o = JSONObject(minimumCapacity: d.count)
            for (k, v) in d { o[k] = try v.map { try JSONValue(foundation: $0, depth: depth + 1) } ?? .null }
            self = .object(o)
        case .array(let a): self = .array(try a.map { try JSONValue(foundation: $0, depth: depth + 1) })
        case .arrayOfOptionals(let a):
            self = .array(try a.map { try $0.map { try JSONValue(foundation: $0, depth: depth + 1) } ?? .null })
        case .invalid(let why): throw JSONError(why)
        }
    }

    private static func finite(_ d: Double) throws -> JSONValue {
        guard d.isFinite else { throw JSONError("\(d) is not a JSON number") }
        return .double(d)
    }

    /// The value as the public APIs spell JSON: `[String: Any]`, `[Any]`, `String`, `Int` (an
    /// integer that fits), `Double`, `Bool`, `NSNull`. Objects lose their member order.
    package var foundation: Any {
        switch self {
        case .null: return JSONParser.null
        case .bool(let b): return b
        case .int(let i): return Int(i)
        case .uint(let u): return Double(u)
        case .double(let d): return d
        case .string(let s): return s
        case .array(let items): return items.map(\.foundation)
        case .object(let o): return o.foundation
        }
    }
}

extension JSONObject {
    /// The members as a dictionary (``JSONValue/foundation``).
    package var foundation: [String: Any] {
        var d = [String: Any](minimumCapacity: count)
        for (k, v) in self { d[k] = v.foundation }
        return d
    }

    /// The typed form of a dictionary (``JSONValue/init(foundation:)``).
    package init(foundation dictionary: [String: Any]) throws {
        self.init(minimumCapacity: dictionary.count)
        for (k, v) in dictionary { self[k] = try JSONValue(foundation: v) }
    }
}
