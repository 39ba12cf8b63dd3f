import Foundation
import JSONCore

/// An expression of a `QueryBuilder` query (2.x `ExpressionProtocol`): it builds a node of
/// LiteCore's JSON query tree (spec 9.1).
public protocol ExpressionProtocol {}

/// A builder node of the JSON query tree, or why there is none: a literal JSON has no place for
/// (building never throws in 2.x, so the error is reported when the query is first used).
typealias BuilderNode = Swift.Result<JSONValue, CouchbaseLiteError>

extension Swift.Result where Success == JSONValue, Failure == CouchbaseLiteError {
    /// `["op", operands…]`, or the first operand's error.
    static func operation(_ op: String, _ operands: [BuilderNode]) -> BuilderNode {
        var items: [JSONValue] = [.string(op)]
        items.reserveCapacity(operands.count + 1)
        for operand in operands {
            switch operand {
            case .success(let node): items.append(node)
            case .failure: return operand
            }
        }
        return .success(.array(items))
    }
}

/// What every builder expression is: a node of the JSON query tree.
protocol TreeExpression: ExpressionProtocol {
    var node: BuilderNode { get }
}

/// A builder expression that is just its node (operators, functions, literals, parameters).
final class QueryExpression: TreeExpression, Sendable {
    let node: BuilderNode
    init(_ node: BuilderNode) { self.node = node }
    init(_ tree: JSONValue) { self.node = .success(tree) }
    /// `["op", operands…]`.
    convenience init(_ op: String, _ operands: ExpressionProtocol...) {
        self.init(.operation(op, operands.map(\.node)))
    }
}

extension ExpressionProtocol {
    /// This expression's JSON query tree node (spec 9.1); `["MISSING"]` for an expression the
    /// builder did not make.
    var node: BuilderNode { (self as? TreeExpression)?.node ?? .success(.operationNode("MISSING")) }

    private func binary(_ op: String, _ other: ExpressionProtocol) -> ExpressionProtocol {
        QueryExpression(op, self, other)
    }

    /// `self * other`.
    public func multiply(_ expression: ExpressionProtocol) -> ExpressionProtocol { binary("*", expression) }
    /// `self / other`.
    public func divide(_ expression: ExpressionProtocol) -> ExpressionProtocol { binary("/", expression) }
    /// `self % other`.
    public func modulo(_ expression: ExpressionProtocol) -> ExpressionProtocol { binary("%", expression) }
    /// `self + other`.
    public func add(_ expression: ExpressionProtocol) -> ExpressionProtocol { binary("+", expression) }
    /// `self - other`.
    public func subtract(_ expression: ExpressionProtocol) -> ExpressionProtocol { binary("-", expression) }
    /// `self < other`.
    public func lessThan(_ expression: ExpressionProtocol) -> ExpressionProtocol { binary("<", expression) }
    /// `self <= other`.
    public func lessThanOrEqualTo(_ expression: ExpressionProtocol) -> ExpressionProtocol { binary("<=", expression) }
    /// `self > other`.
    public func greaterThan(_ expression: ExpressionProtocol) -> ExpressionProtocol { binary(">", expression) }
    /// `self >= other`.
    public func greaterThanOrEqualTo(_ expression: ExpressionProtocol) -> ExpressionProtocol { binary(">=", expression) }
    /// `self = other`.
    public func equalTo(_ expression: ExpressionProtocol) -> ExpressionProtocol { binary("=", expression) }
    /// `self != other`.
    public func notEqualTo(_ expression: ExpressionProtocol) -> ExpressionProtocol { binary("!=", expression) }
    /// `self LIKE pattern` (case-sensitive unless collated).
    public func like(_ expression: ExpressionProtocol) -> ExpressionProtocol { binary("LIKE", expression) }
    /// `REGEXP_LIKE(self, pattern)`.
    public func regex(_ expression: ExpressionProtocol) -> ExpressionProtocol { binary("REGEXP_LIKE()", expression) }
    /// `self IS other` (null and MISSING compare as values).
    public func `is`(_ expression: ExpressionProtocol) -> ExpressionProtocol { binary("IS", expression) }
    /// `self IS NOT other`.
    public func isNot(_ expression: ExpressionProtocol) -> ExpressionProtocol { binary("IS NOT", expression) }
    /// `self BETWEEN a AND b`.
    public func between(_ expression1: ExpressionProtocol, and expression2: ExpressionProtocol) -> ExpressionProtocol {
        QueryExpression("BETWEEN", self, expression1, expression2)
    }
    /// `self AND other`.
    public func and(_ expression: ExpressionProtocol) -> ExpressionProtocol { binary("AND", expression) }
    /// `self OR other`.
    public func or(_ expression: ExpressionProtocol) -> ExpressionProtocol { binary("OR", expression) }
    /// `self COLLATE collation` (applies to comparisons, `like` and ordering inside `self`).
    public func collate(_ collation: CollationProtocol) -> ExpressionProtocol {
        QueryExpression(.operation("COLLATE", [.success(.object(collation.options)), node]))
    }
    /// `self IN (e1, e2, …)`.
    public func `in`(_ expressions: [ExpressionProtocol]) -> ExpressionProtocol {
        QueryExpression(.operation("IN", [node, .operation("[]", expressions.map(\.node))]))
    }
    /// `self IS VALUED`: neither null nor MISSING.
    public func isValued() -> ExpressionProtocol { QueryExpression("IS VALUED", self) }
    /// `NOT (self IS VALUED)`: null or MISSING.
    public func isNotValued() -> ExpressionProtocol { QueryExpression("NOT", isValued()) }
    /// Deprecated 2.x name of `isValued()`.
    public func notNullOrMissing() -> ExpressionProtocol { isValued() }
    /// Deprecated 2.x name of `isNotValued()`.
    public func isNullOrMissing() -> ExpressionProtocol { isNotValued() }
}

/// A property expression that can name the data source it reads (`.from(alias)`).
public protocol PropertyExpressionProtocol: ExpressionProtocol {
    /// The same property read from the data source named `alias`.
    func from(_ alias: String?) -> ExpressionProtocol
}

/// A document property (`a.b`) or the whole document (`*`), optionally of a named source.
final class PropertyExpression: TreeExpression, PropertyExpressionProtocol, Sendable {
    let path: String
    let node: BuilderNode
    init(path: String, alias: String? = nil) {
        self.path = path
        let prefix = alias.map { "." + $0 } ?? ""
        // `Expression.all()` is the whole document: `["."]`, or `[".alias."]` of a source.
        node = .success(.operationNode(path.isEmpty ? prefix + "." : prefix + "." + path))
    }
    func from(_ alias: String?) -> ExpressionProtocol { PropertyExpression(path: path, alias: alias) }
}

/// Factories of builder expressions (2.x `Expression`).
public final class Expression {
    private init() {}

    /// The document property at `property` (a key path: `a.b`, `a[0]`).
    public static func property(_ property: String) -> PropertyExpressionProtocol { PropertyExpression(path: property) }
    /// The whole document (`*`).
    public static func all() -> PropertyExpressionProtocol { PropertyExpression(path: "") }
    /// A literal value: nil (null), string, number, boolean, date, array or dictionary.
    public static func value(_ value: Any?) -> ExpressionProtocol { QueryExpression(literal(value)) }
    /// A string literal.
    public static func string(_ value: String?) -> ExpressionProtocol { self.value(value) }
    /// A number literal.
    public static func number(_ value: NSNumber?) -> ExpressionProtocol { self.value(value) }
    /// An integer literal.
    public static func int(_ value: Int) -> ExpressionProtocol { self.value(value) }
    /// A 64-bit integer literal.
    public static func int64(_ value: Int64) -> ExpressionProtocol { self.value(value) }
    /// A float literal.
    public static func float(_ value: Float) -> ExpressionProtocol { QueryExpression(.double(Double(value))) }
    /// A double literal.
    public static func double(_ value: Double) -> ExpressionProtocol { self.value(value) }
    /// A boolean literal.
    public static func boolean(_ value: Bool) -> ExpressionProtocol { self.value(value) }
    /// A date literal (an ISO-8601 string, as 2.x stores dates).
    public static func date(_ value: Date?) -> ExpressionProtocol { self.value(value) }
    /// A dictionary literal (values may be expressions).
    public static func dictionary(_ value: [String: Any]?) -> ExpressionProtocol { self.value(value) }
    /// An array literal (items may be expressions).
    public static func array(_ value: [Any]?) -> ExpressionProtocol { self.value(value) }
    /// The query parameter `$name`, set through `query.parameters`.
    public static func parameter(_ name: String) -> ExpressionProtocol { QueryExpression(.operationNode("$" + name)) }
    /// `-expression`.
    public static func negated(_ expression: ExpressionProtocol) -> ExpressionProtocol { QueryExpression("-", expression) }
    /// `NOT expression`.
    public static func not(_ expression: ExpressionProtocol) -> ExpressionProtocol { QueryExpression("NOT", expression) }

    /// The JSON query tree of a literal: arrays become `["[]", …]`, dates ISO-8601 strings, other
    /// values their JSON (the public API's edge: JSONCore classifies them once, here).
    static func literal(_ value: Any?) -> BuilderNode {
        switch value {
        case nil: return .success(.null)
        case let e as ExpressionProtocol: return e.node
        case let s as String: return .success(.string(s))
        case let d as Date: return .success(.string(ISO8601.string(from: d)))
        case let a as [Any]: return .operation("[]", a.map { literal($0) })
        case let d as [String: Any]:
            var object = JSONObject(minimumCapacity: d.count)
            for (k, v) in d {
                switch literal(v) {
                case .success(let node): object[k] = node
                case .failure(let error): return .failure(error)
                }
            }
            return .success(.object(object))
        case let a as ArrayObject: return literal(a.toArray())
        case let d as DictionaryObject: return literal(d.toDictionary())
        // The float's binary value, as 2.x passes it on (not the shortest text of the Float).
        // (Exact type: on Linux any `NSNumber` also casts to `Float`.)
        case let v? where type(of: v) == Float.self: return .success(.double(Double(v as! Float)))
        case let v?:
            // A nil inside a collection (`["x": nil]`) arrives as an Optional boxed in Any.
            let mirror = Mirror(reflecting: v)
            if mirror.displayStyle == .optional { return literal(mirror.children.first?.value) }
            do {
                return .success(try JSONValue(queryValue: v))
            } catch {
                return .failure(error as? CouchbaseLiteError ?? CouchbaseLiteError(.invalidQuery, "\(error)"))
            }
        }
    }
}
