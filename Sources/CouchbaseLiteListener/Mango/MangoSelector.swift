import Foundation
import JSONCore

/// A Mango selector (CouchDB's `_find` and `_changes?filter=_selector` language), validated
/// and normalized as CouchDB's `mango_selector` does, so that it matches documents with
/// CouchDB's semantics: implicit `$and` and `$eq`, nested field paths (`a.b`, `a.0`,
/// `a\.b` for a dotted name), negations pushed down to the fields (so `{"$not": {"a":
/// {"$gt": 1}}}` is `{"a": {"$lte": 1}}` and, as in CouchDB, never matches a document
/// without `a`), comparisons in CouchDB's view collation.
///
/// ```swift
/// let selector = try MangoSelector(JSON.value(#"{"type": "post", "tags": {"$all": ["a"]}}"#))
/// selector.matches(document)
/// ```
struct MangoSelector: Sendable {
    /// A node of the normalized selector.
    indirect enum Node: Sendable {
        case and([Node])
        case or([Node])
        /// Logical negation, kept as such where CouchDB keeps `$not` (inside `$elemMatch`…).
        case not(Node)
        case nor([Node])
        /// A condition on the value at `path` (empty: the value itself).
        case field([String], Condition)
        /// Matches anything (the empty selector `{}`, and `$text`, which needs a text index).
        case always
    }

    /// A condition on one value.
    indirect enum Condition: Sendable {
        case eq(JSONValue), ne(JSONValue), lt(JSONValue), lte(JSONValue), gt(JSONValue), gte(JSONValue)
        case `in`([JSONValue]), nin([JSONValue])
        case exists(Bool)
        case type(String)
        case regex(MangoRegex)
        case all([JSONValue])
        case elemMatch(Node), allMatch(Node), keyMapMatch(Node)
        case size(Int)
        case mod(Int64, Int64)
        case beginsWith(String)
        case not(Condition)
    }

    /// The normalized selector.
    let root: Node

    /// Parses and normalizes a selector given as parsed JSON; throws ``MangoError`` with
    /// CouchDB's error name and reason when it is malformed.
    init(_ json: JSONValue?) throws {
        guard case .object(let object)? = json else {
            throw MangoError("invalid_selector_json", "Selector error: expected a JSON object")
        }
        if object.isEmpty {
            root = .always
            return
        }
        let node = Self.normalizeNegations(try Self.parse(.object(object), path: []))
        // CouchDB checks the top level only: `{"$gt": 1}` names no field.
        if case .field(let path, _) = node, path.isEmpty {
            throw MangoError("invalid_selector", "One or more conditions is missing a field name.")
        }
        root = node
    }

    // MARK: Parsing (CouchDB's norm_ops and norm_fields)

    private static let unsupported: Set<String> = ["$where", "$geoWithin", "$geoIntersects", "$near", "$nearSphere"]

    private static func parse(_ value: JSONValue, path: [String]) throws -> Node {
        guard case .object(let object) = value, !object.isEmpty else {
            // A bare value is an equality condition.
            return .field(path, .eq(value))
        }
        if object.count > 1 {
            // Several members are an implicit `$and` (in key order, for stable errors).
            return .and(try object.keys.sorted().map { try parse(.object([$0: object[$0]!]), path: path) })
        }
        let (key, argument) = object.first { _ in true }!
        guard key.hasPrefix("$") else {
            return try parse(argument, path: path + parseFieldName(key))
        }
        func badArgument() -> MangoError {
            MangoError("bad_arg", "Bad argument for operator \(key): \((try? JSON.string(argument, sortedKeys: false)) ?? "")")
        }
        func list() throws -> [JSONValue] {
            guard case .array(let array) = argument else { throw badArgument() }
            return array
        }
        func subselector() throws -> JSONObject {
            guard case .object(let object) = argument else { throw badArgument() }
            return object
        }
        switch key {
        case "$and": return .and(try list().map { try parse($0, path: path) })
        case "$or": return .or(try list().map { try parse($0, path: path) })
        case "$nor": return .nor(try list().map { try parse($0, path: path) })
        case "$not": return .not(try parse(.object(try subselector()), path: path))
        case "$elemMatch": return .field(path, .elemMatch(try parseNested(try subselector())))
        case "$allMatch": return .field(path, .allMatch(try parseNested(try subselector())))
        case "$keyMapMatch": return .field(path, .keyMapMatch(try parseNested(try subselector())))
        case "$eq": return .field(path, .eq(argument))
        case "$ne": return .field(path, .ne(argument))
        case "$lt": return .field(path, .lt(argument))
        case "$lte": return .field(path, .lte(argument))
        case "$gt": return .field(path, .gt(argument))
        case "$gte": return .field(path, .gte(argument))
        case "$in": return .field(path, .in(try list()))
        case "$nin": return .field(path, .nin(try list()))
        case "$all": return .field(path, .all(try list()))
        case "$exists":
            guard let flag = argument.boolValue else { throw badArgument() }
            return .field(path, .exists(flag))
        case "$type":
            guard let name = argument.stringValue else { throw badArgument() }
            return .field(path, .type(name))
        case "$regex":
            guard let pattern = argument.stringValue, let regex = MangoRegex(pattern) else { throw badArgument() }
            return .field(path, .regex(regex))
        case "$size":
            guard case .int(let n) = argument, n >= 0 else { throw badArgument() }
            return .field(path, .size(Int(n)))
        case "$mod":
            guard case .array(let pair) = argument, pair.count == 2, case .int(let d) = pair[0], case .int(let r) = pair[1],
                  d != 0 else { throw badArgument() }
            return .field(path, .mod(d, r))
        case "$beginsWith":
            guard let prefix = argument.stringValue else { throw badArgument() }
            return .field(path, .beginsWith(prefix))
        case "$text":
            // Only a text index can answer it; CouchDB's matcher trusts the index and passes.
            guard path.isEmpty, [.string, .number, .boolean].contains(MangoCollation.kind(argument)) else { throw badArgument() }
            return .always
        default:
            if unsupported.contains(key) { throw MangoError("not_supported", "Unsupported operator: \(key)") }
            throw MangoError("invalid_operator", "Invalid operator: \(key)")
        }
    }

    /// The argument of `$elemMatch` and its kin: a selector of its own, over each element, whose
    /// negations CouchDB leaves as they are.
    private static func parseNested(_ object: JSONObject) throws -> Node {
        object.isEmpty ? .always : try parse(.object(object), path: [])
    }

    /// Splits `a.b.c` into its components; `\.` escapes a dot (`mango_util:parse_field`).
    static func parseFieldName(_ name: String) throws -> [String] {
        var parts: [String] = []
        var current = ""
        var escaped = false
        for ch in name {
            if escaped {
                current.append(ch)
                escaped = false
            } else if ch == "\\" {
                escaped = true
            } else if ch == "." {
                parts.append(current)
                current = ""
            } else {
                current.append(ch)
            }
        }
        if escaped { current.append("\\") }
        parts.append(current)
        if parts.contains(where: \.isEmpty) {
            throw MangoError("invalid_field_name", "Invalid field name: \(name)")
        }
        return parts
    }

    // MARK: Negations (CouchDB's norm_negations)

    private static func normalizeNegations(_ node: Node) -> Node {
        switch node {
        case .not(let inner): return negate(inner)
        case .nor(let nodes): return .and(nodes.map(negate))
        case .and(let nodes): return .and(nodes.map(normalizeNegations))
        case .or(let nodes): return .or(nodes.map(normalizeNegations))
        case .field, .always: return node
        }
    }

    /// De Morgan down to the fields; comparisons flip, other conditions get a `$not`.
    private static func negate(_ node: Node) -> Node {
        switch node {
        case .not(let inner): return normalizeNegations(inner)
        case .nor(let nodes): return .or(nodes.map(normalizeNegations))
        case .and(let nodes): return .or(nodes.map(negate))
        case .or(let nodes): return .and(nodes.map(negate))
        case .always: return .not(.always)
        case .field(let path, let condition): return .field(path, negate(condition))
        }
    }

    private static func negate(_ condition: Condition) -> Condition {
        switch condition {
        case .lt(let v): return .gte(v)
        case .lte(let v): return .gt(v)
        case .gt(let v): return .lte(v)
        case .gte(let v): return .lt(v)
        case .eq(let v): return .ne(v)
        case .ne(let v): return .eq(v)
        case .in(let v): return .nin(v)
        case .nin(let v): return .in(v)
        case .exists(let flag): return .exists(!flag)
        default: return .not(condition)
        }
    }
}

/// A compiled `$regex` pattern. `NSRegularExpression` is immutable and documented as safe to
/// use from any thread, but is not `Sendable` in type; this box is the one place that says so.
struct MangoRegex: @unchecked Sendable {
    let expression: NSRegularExpression

    init?(_ pattern: String) {
        guard let expression = try? NSRegularExpression(pattern: pattern) else { return nil }
        self.expression = expression
    }

    func matches(_ string: String) -> Bool {
        expression.firstMatch(in: string, range: NSRange(string.startIndex..., in: string)) != nil
    }
}

/// A malformed selector, with CouchDB's error name (`bad_arg`, `invalid_operator`…) and reason.
struct MangoError: Error, Sendable, CustomStringConvertible {
    let error: String
    let reason: String

    init(_ error: String, _ reason: String) {
        self.error = error
        self.reason = reason
    }

    var description: String { "\(error): \(reason)" }
}
