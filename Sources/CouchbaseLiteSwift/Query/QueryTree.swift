import Foundation
import JSONCore

/// A query, or one of its expressions, in LiteCore's JSON query language (spec 9.1): built once
/// from N1QL, JSON text or the QueryBuilder, then translated from there. A value type, so a
/// compiled query can be shared across threads.
indirect enum QueryTree: Sendable, Hashable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    /// `["op", operands…]`: an operator (`=`, `AND`, `ANY`…), a function call (`name()`), a
    /// property (`.a.b`), a parameter (`$x`) or an ANY/EVERY variable (`?v`), as written.
    case operation(String, [QueryTree])
    /// An array that does not start with a string (`[0]` in a path, a literal list).
    case array([QueryTree])
    /// An object: the query itself, a FROM item, COLLATE's options, a dictionary literal.
    case dictionary([String: QueryTree])

    /// The tree of a Foundation / JSONCore value (`[String: Any]`, `[Any]`, `String`, numbers,
    /// `Bool`, `NSNull`); throws `.invalidQuery` for anything JSON has no place for.
    init(_ value: Any) throws {
        // Exact Swift types first: on Linux an `NSNumber` also casts to `Int` and `Bool`.
        let type = Swift.type(of: value)
        if type == Bool.self, let b = value as? Bool { self = .bool(b); return }
        if type == Int.self, let i = value as? Int { self = .int(Int64(i)); return }
        if type == Int64.self, let i = value as? Int64 { self = .int(i); return }
        if type == Double.self, let d = value as? Double { self = .double(d); return }
        switch value {
        case is NSNull: self = .null
        case let s as String: self = .string(s)
        case let n as NSNumber:
            switch ValueClassifier.classify(number: n) {
            case .bool(let b): self = .bool(b)
            case .double(let d): self = .double(d)
            case .float(let f): self = .double(Double(f))
            case .uint(let u): self = u <= UInt64(Int64.max) ? .int(Int64(u)) : .double(Double(u))
            default: self = .int(n.int64Value)
            }
        case let a as [Any]:
            let items = try a.map { try QueryTree($0) }
            if case .string(let op)? = items.first {
                self = .operation(op, Array(items.dropFirst()))
            } else {
                self = .array(items)
            }
        case let d as [String: Any]:
            self = .dictionary(try d.mapValues { try QueryTree($0) })
        default:
            throw CouchbaseLiteError(.invalidQuery, "Unsupported value in query: \(value)")
        }
    }

    /// The tree of a JSON query's text, read by JSONCore.
    init(json: String) throws {
        let value: Any
        do {
            value = try JSON.parse(json)
        } catch {
            throw CouchbaseLiteError(.invalidQuery, "The JSON query is not valid JSON")
        }
        try self.init(value)
    }

    /// The items of an array, whichever way it was classified (`[".a", ".b"]` reads as the
    /// operation `.a` but is a list of two properties where a list is expected).
    var items: [QueryTree]? {
        switch self {
        case .array(let items): return items
        case .operation(let op, let args): return [.string(op)] + args
        default: return nil
        }
    }

    var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    var dictionaryValue: [String: QueryTree]? {
        if case .dictionary(let d) = self { return d }
        return nil
    }

    /// The operator of an operation, upper-cased.
    var upperOperator: String? {
        if case .operation(let op, _) = self { return op.uppercased() }
        return nil
    }

    /// `["op", …]` with the operator starting with `prefix` (`.` a property, `?` a variable).
    func isOperation(prefixed prefix: String) -> Bool {
        if case .operation(let op, _) = self { return op.hasPrefix(prefix) }
        return false
    }

    /// The Foundation form (for JSON output and the tests that compare trees).
    var jsonObject: Any {
        switch self {
        case .null: return NSNull()
        case .bool(let b): return b
        case .int(let i): return Int(i)
        case .double(let d): return d
        case .string(let s): return s
        case .operation(let op, let args): return [op as Any] + args.map(\.jsonObject)
        case .array(let items): return items.map(\.jsonObject)
        case .dictionary(let d): return d.mapValues(\.jsonObject)
        }
    }
}
