import JSONCore

/// The source a `QueryBuilder` query reads (2.x `DataSourceProtocol`).
public protocol DataSourceProtocol {}

/// A data source that can be given an alias (`.as(alias)`).
public protocol DataSourceAs: DataSourceProtocol {
    /// The source, named `alias` for `.from(alias)` in expressions and joins.
    func `as`(_ alias: String?) -> DataSourceProtocol
}

final class DatabaseSource: DataSourceAs {
    let database: Database
    /// The collection read (3.x `DataSource.collection`); nil: the default collection (2.x).
    let collection: Collection?
    let alias: String?
    init(_ database: Database, collection: Collection? = nil, alias: String? = nil) {
        self.database = database
        self.collection = collection
        self.alias = alias
    }
    func `as`(_ alias: String?) -> DataSourceProtocol { DatabaseSource(database, collection: collection, alias: alias) }
    /// The `FROM` item (spec 9.1). A collection is named with its scope; without an alias the
    /// source is then called `scope.name` and whole documents are keyed by the collection's name.
    /// A database source is the default collection named after the database, so
    /// `SelectResult.all()` is keyed by the database name, as in 2.x.
    var fromItem: JSONObject {
        guard let collection else { return ["AS": .string(alias ?? database.name)] }
        var item: JSONObject = ["COLLECTION": .string(collection.name), "SCOPE": .string(collection.scope.name)]
        if let alias { item["AS"] = .string(alias) }
        return item
    }
}

/// Data source factories (2.x/3.x `DataSource`).
public final class DataSource {
    private init() {}
    /// The database's documents (its default collection).
    public static func database(_ database: Database) -> DataSourceAs { DatabaseSource(database) }
    /// The documents of `collection` (3.x).
    public static func collection(_ collection: Collection) -> DataSourceAs {
        DatabaseSource(collection.database, collection: collection)
    }
}

/// A join of a `QueryBuilder` query (2.x `JoinProtocol`).
public protocol JoinProtocol {}

/// A join that still needs its `ON` condition.
public protocol JoinOnProtocol: JoinProtocol {
    /// The join condition.
    func on(_ expression: ExpressionProtocol) -> JoinProtocol
}

final class JoinItem: JoinOnProtocol {
    let type: String
    let source: DataSourceProtocol
    let condition: ExpressionProtocol?
    init(_ type: String, _ source: DataSourceProtocol, on condition: ExpressionProtocol? = nil) {
        self.type = type
        self.source = source
        self.condition = condition
    }
    func on(_ expression: ExpressionProtocol) -> JoinProtocol { JoinItem(type, source, on: expression) }
    /// The `FROM` item (spec 9.1): `{"AS": alias, "JOIN": type, "ON": condition}`.
    var fromItem: Swift.Result<JSONObject, CouchbaseLiteError> {
        var d = (source as? DatabaseSource)?.fromItem ?? [:]
        d["JOIN"] = .string(type)
        if let condition {
            switch condition.node {
            case .success(let on): d["ON"] = on
            case .failure(let error): return .failure(error)
            }
        }
        return .success(d)
    }
}

/// Join factories (2.x `Join`).
public final class Join {
    private init() {}
    /// An inner join.
    public static func join(_ dataSource: DataSourceProtocol) -> JoinOnProtocol { JoinItem("INNER", dataSource) }
    /// An inner join.
    public static func innerJoin(_ dataSource: DataSourceProtocol) -> JoinOnProtocol { JoinItem("INNER", dataSource) }
    /// A left outer join (unmatched left rows kept, right side MISSING).
    public static func leftJoin(_ dataSource: DataSourceProtocol) -> JoinOnProtocol { JoinItem("LEFT OUTER", dataSource) }
    /// A left outer join.
    public static func leftOuterJoin(_ dataSource: DataSourceProtocol) -> JoinOnProtocol { JoinItem("LEFT OUTER", dataSource) }
    /// A cross join (every pair of rows; no `ON`).
    public static func crossJoin(_ dataSource: DataSourceProtocol) -> JoinProtocol { JoinItem("CROSS", dataSource) }
}

/// An `ORDER BY` item (2.x `OrderingProtocol`).
public protocol OrderingProtocol {}

/// An ordering whose direction can be chosen (ascending by default).
public protocol SortOrder: OrderingProtocol {
    /// Smallest first.
    func ascending() -> OrderingProtocol
    /// Largest first.
    func descending() -> OrderingProtocol
}

final class OrderingItem: SortOrder {
    let expression: ExpressionProtocol
    let descendingOrder: Bool?
    init(_ expression: ExpressionProtocol, descending: Bool? = nil) { self.expression = expression; descendingOrder = descending }
    func ascending() -> OrderingProtocol { OrderingItem(expression, descending: false) }
    func descending() -> OrderingProtocol { OrderingItem(expression, descending: true) }
    /// The `ORDER_BY` item (spec 9.1): the expression, or `["ASC"|"DESC", expression]`.
    var node: BuilderNode {
        guard let d = descendingOrder else { return expression.node }
        return .operation(d ? "DESC" : "ASC", [expression.node])
    }
}

/// Ordering factories (2.x `Ordering`).
public final class Ordering {
    private init() {}
    /// Order by the document property at `property`.
    public static func property(_ property: String) -> SortOrder { OrderingItem(Expression.property(property)) }
    /// Order by the value of `expression`.
    public static func expression(_ expression: ExpressionProtocol) -> SortOrder { OrderingItem(expression) }
}
