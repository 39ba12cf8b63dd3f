import JSONCore

/// A result column of a `QueryBuilder` query (2.x `SelectResultProtocol`).
public protocol SelectResultProtocol {}

extension SelectResultProtocol {
    /// The column's `WHAT` item (spec 9.1): the expression, or `["AS", expression, alias]`.
    var resultNode: BuilderNode {
        guard let r = self as? SelectResultItem else { return .success(.operationNode("MISSING")) }
        guard let alias = r.alias else { return r.expression.node }
        return .operation("AS", [r.expression.node, .success(.string(alias))])
    }
}

/// A result column that can be renamed (`.as(alias)`).
public protocol SelectResultAs: SelectResultProtocol {
    /// The column, named `alias` in the results.
    func `as`(_ alias: String?) -> SelectResultProtocol
}

/// The whole-document column, that can name its data source (`.from(alias)`).
public protocol SelectResultFrom: SelectResultProtocol {
    /// The whole document of the data source named `alias` (the column is named `alias`).
    func from(_ alias: String?) -> SelectResultProtocol
}

final class SelectResultItem: SelectResultAs, SelectResultFrom {
    let expression: ExpressionProtocol
    let alias: String?
    init(_ expression: ExpressionProtocol, alias: String? = nil) { self.expression = expression; self.alias = alias }
    func `as`(_ alias: String?) -> SelectResultProtocol { SelectResultItem(expression, alias: alias) }
    func from(_ alias: String?) -> SelectResultProtocol { SelectResultItem(Expression.all().from(alias)) }
}

/// Result column factories (2.x `SelectResult`).
public final class SelectResult {
    private init() {}
    /// The document property at `property` (column named by its last path component).
    public static func property(_ property: String) -> SelectResultAs { SelectResultItem(Expression.property(property)) }
    /// The value of `expression` (column named `$1`, `$2`, … unless given a name).
    public static func expression(_ expression: ExpressionProtocol) -> SelectResultAs { SelectResultItem(expression) }
    /// The whole document, as a dictionary (column named after the database or alias).
    public static func all() -> SelectResultFrom { SelectResultItem(Expression.all()) }
}
