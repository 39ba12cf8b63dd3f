/// A range variable of `ArrayExpression.any/every/anyAndEvery` (2.x `VariableExpressionProtocol`).
public protocol VariableExpressionProtocol: ExpressionProtocol {}

/// `["?name.path"]`: a variable or a property of it.
// @unchecked because `QueryExpression`'s JSON tree is immutable; `name` is a let.
final class VariableExpression: QueryExpression, VariableExpressionProtocol, @unchecked Sendable {
    let name: String
    init(_ name: String) {
        self.name = String(name.prefix { $0 != "." && $0 != "[" })
        super.init(["?" + name])
    }
}

/// Quantified array predicates (2.x `ArrayExpression`): `ANY v IN array SATISFIES predicate END`.
public final class ArrayExpression {
    private init() {}
    /// True if some item of the array satisfies the predicate.
    public static func any(_ variable: VariableExpressionProtocol) -> ArrayExpressionIn { ArrayExpressionIn("ANY", variable) }
    /// True if every item satisfies the predicate (also for an empty array).
    public static func every(_ variable: VariableExpressionProtocol) -> ArrayExpressionIn { ArrayExpressionIn("EVERY", variable) }
    /// True if the array is not empty and every item satisfies the predicate.
    public static func anyAndEvery(_ variable: VariableExpressionProtocol) -> ArrayExpressionIn { ArrayExpressionIn("ANY AND EVERY", variable) }
    /// The range variable `name` (or a property of it: `"v.city"`), for the predicate.
    public static func variable(_ name: String) -> VariableExpressionProtocol { VariableExpression(name) }
}

/// The `IN array` step of an array predicate.
public final class ArrayExpressionIn {
    let op: String
    let variable: String
    init(_ op: String, _ variable: VariableExpressionProtocol) {
        self.op = op
        self.variable = (variable as? VariableExpression)?.name ?? ""
    }
    /// The array the variable ranges over.
    public func `in`(_ expression: ExpressionProtocol) -> ArrayExpressionSatisfies {
        ArrayExpressionSatisfies(op: op, variable: variable, array: expression.jsonTree)
    }
}

/// The `SATISFIES predicate` step of an array predicate.
public final class ArrayExpressionSatisfies {
    let op: String, variable: String, array: Any
    init(op: String, variable: String, array: Any) { self.op = op; self.variable = variable; self.array = array }
    /// The predicate each item is tested with.
    public func satisfies(_ expression: ExpressionProtocol) -> ExpressionProtocol {
        QueryExpression([op, variable, array, expression.jsonTree])
    }
}

/// Array functions (2.x `ArrayFunction`).
public final class ArrayFunction {
    private init() {}
    /// Whether the array contains `value`.
    public static func contains(_ expression: ExpressionProtocol, value: ExpressionProtocol) -> ExpressionProtocol {
        QueryExpression(["ARRAY_CONTAINS()", expression.jsonTree, value.jsonTree])
    }
    /// The array's length.
    public static func length(_ expression: ExpressionProtocol) -> ExpressionProtocol {
        QueryExpression(["ARRAY_LENGTH()", expression.jsonTree])
    }
}
