/// A range variable of `ArrayExpression.any/every/anyAndEvery` (2.x `VariableExpressionProtocol`).
public protocol VariableExpressionProtocol: ExpressionProtocol {}

import JSONCore

/// `["?name.path"]`: a variable or a property of it.
final class VariableExpression: TreeExpression, VariableExpressionProtocol, Sendable {
    let name: String
    let node: BuilderNode
    init(_ name: String) {
        self.name = String(name.prefix { $0 != "." && $0 != "[" })
        node = .success(.operationNode("?" + name))
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
        ArrayExpressionSatisfies(op: op, variable: variable, array: expression.node)
    }
}

/// The `SATISFIES predicate` step of an array predicate.
public final class ArrayExpressionSatisfies {
    let op: String, variable: String, array: BuilderNode
    init(op: String, variable: String, array: BuilderNode) { self.op = op; self.variable = variable; self.array = array }
    /// The predicate each item is tested with.
    public func satisfies(_ expression: ExpressionProtocol) -> ExpressionProtocol {
        QueryExpression(.operation(op, [.success(.string(variable)), array, expression.node]))
    }
}

/// Array functions (2.x `ArrayFunction`).
public final class ArrayFunction {
    private init() {}
    /// Whether the array contains `value`.
    public static func contains(_ expression: ExpressionProtocol, value: ExpressionProtocol) -> ExpressionProtocol {
        QueryExpression("ARRAY_CONTAINS()", expression, value)
    }
    /// The array's length.
    public static func length(_ expression: ExpressionProtocol) -> ExpressionProtocol {
        QueryExpression("ARRAY_LENGTH()", expression)
    }
}
