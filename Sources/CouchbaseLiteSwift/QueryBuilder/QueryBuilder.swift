import JSONCore

/// The clauses of a `QueryBuilder` query, turned into LiteCore's JSON query tree (spec 9.1) that
/// the N1QL and JSON queries run through too.
struct BuilderClauses {
    var distinct = false
    var results: [SelectResultProtocol] = []
    var source: DatabaseSource?
    var joins: [JoinProtocol] = []
    var condition: ExpressionProtocol?
    var grouping: [ExpressionProtocol] = []
    var having: ExpressionProtocol?
    var orderings: [OrderingProtocol] = []
    var limit: ExpressionProtocol?
    var offset: ExpressionProtocol?

    /// The query object, or the error of a literal JSON has no place for.
    var tree: BuilderNode {
        var q = JSONObject()
        do {
            if !results.isEmpty { q["WHAT"] = .array(try results.map { try $0.resultNode.get() }) }
            if distinct { q["DISTINCT"] = true }
            var from = [source?.fromItem ?? [:]]
            for join in joins { from.append(try (join as? JoinItem)?.fromItem.get() ?? [:]) }
            if from.count > 1 || !from[0].isEmpty { q["FROM"] = .array(from.map(JSONValue.object)) }
            if let condition { q["WHERE"] = try condition.node.get() }
            if !grouping.isEmpty { q["GROUP_BY"] = .array(try grouping.map { try $0.node.get() }) }
            if let having { q["HAVING"] = try having.node.get() }
            if !orderings.isEmpty {
                q["ORDER_BY"] = .array(try orderings.map { try ($0 as? OrderingItem)?.node.get() ?? .operationNode("MISSING") })
            }
            if let limit { q["LIMIT"] = try limit.node.get() }
            if let offset { q["OFFSET"] = try offset.node.get() }
        } catch {
            return .failure(error as? CouchbaseLiteError ?? CouchbaseLiteError(.invalidQuery, "\(error)"))
        }
        return .success(.object(q))
    }
}

/// Entry point of the fluent query API (2.x `QueryBuilder`):
/// `QueryBuilder.select(…).from(…).where(…).orderBy(…).limit(…)`.
public final class QueryBuilder {
    private init() {}
    /// A query returning `results` (none = whole documents).
    public static func select(_ results: SelectResultProtocol...) -> Select { select(results) }
    /// A query returning `results`.
    public static func select(_ results: [SelectResultProtocol]) -> Select { Select(results, distinct: false) }
    /// A query returning the distinct rows of `results`.
    public static func selectDistinct(_ results: SelectResultProtocol...) -> Select { selectDistinct(results) }
    /// A query returning the distinct rows of `results`.
    public static func selectDistinct(_ results: [SelectResultProtocol]) -> Select { Select(results, distinct: true) }
}

/// The `SELECT` step; `from(_:)` names the database.
public final class Select {
    let clauses: BuilderClauses
    init(_ results: [SelectResultProtocol], distinct: Bool) {
        var c = BuilderClauses()
        c.results = results
        c.distinct = distinct
        clauses = c
    }
    /// The data source the query reads.
    public func from(_ dataSource: DataSourceProtocol) -> From {
        From(clauses: clauses.with { $0.source = dataSource as? DatabaseSource })
    }
}

/// A query step that can be followed by joins.
public protocol JoinRouter {
    /// Adds joins.
    func join(_ joins: JoinProtocol...) -> Joins
}
/// A query step that can be followed by `WHERE`.
public protocol WhereRouter {
    /// Keeps the rows for which `expression` is true.
    func `where`(_ expression: ExpressionProtocol) -> Where
}
/// A query step that can be followed by `GROUP BY`.
public protocol GroupByRouter {
    /// Groups rows with equal values of `expressions`.
    func groupBy(_ expressions: ExpressionProtocol...) -> GroupBy
}
/// A query step that can be followed by `HAVING`.
public protocol HavingRouter {
    /// Keeps the groups for which `expression` is true.
    func having(_ expression: ExpressionProtocol) -> Having
}
/// A query step that can be followed by `ORDER BY`.
public protocol OrderByRouter {
    /// Sorts the rows.
    func orderBy(_ orderings: OrderingProtocol...) -> OrderBy
}
/// A query step that can be followed by `LIMIT`.
public protocol LimitRouter {
    /// At most `limit` rows.
    func limit(_ limit: ExpressionProtocol) -> Limit
    /// At most `limit` rows, after skipping `offset`.
    func limit(_ limit: ExpressionProtocol, offset: ExpressionProtocol?) -> Limit
}

// The routers' methods are implemented once, for the builder steps (the `Query` subclasses
// below; `Query` is not `open`, so no other type meets `Self: Query`): each step adds its clause
// to a copy of the clauses so far.

extension JoinRouter where Self: Query {
    /// Adds joins.
    public func join(_ joins: JoinProtocol...) -> Joins { join(joins) }
    /// Adds joins.
    public func join(_ joins: [JoinProtocol]) -> Joins { Joins(clauses: clauses.with { $0.joins += joins }) }
}

extension WhereRouter where Self: Query {
    /// Keeps the rows for which `expression` is true.
    public func `where`(_ expression: ExpressionProtocol) -> Where { Where(clauses: clauses.with { $0.condition = expression }) }
}

extension GroupByRouter where Self: Query {
    /// Groups rows with equal values of `expressions`.
    public func groupBy(_ expressions: ExpressionProtocol...) -> GroupBy { groupBy(expressions) }
    /// Groups rows with equal values of `expressions`.
    public func groupBy(_ expressions: [ExpressionProtocol]) -> GroupBy {
        GroupBy(clauses: clauses.with { $0.grouping = expressions })
    }
}

extension HavingRouter where Self: Query {
    /// Keeps the groups for which `expression` is true.
    public func having(_ expression: ExpressionProtocol) -> Having { Having(clauses: clauses.with { $0.having = expression }) }
}

extension OrderByRouter where Self: Query {
    /// Sorts the rows.
    public func orderBy(_ orderings: OrderingProtocol...) -> OrderBy { orderBy(orderings) }
    /// Sorts the rows.
    public func orderBy(_ orderings: [OrderingProtocol]) -> OrderBy {
        OrderBy(clauses: clauses.with { $0.orderings = orderings })
    }
}

extension LimitRouter where Self: Query {
    /// At most `limit` rows.
    public func limit(_ limit: ExpressionProtocol) -> Limit { self.limit(limit, offset: nil) }
    /// At most `limit` rows, after skipping `offset`.
    public func limit(_ limit: ExpressionProtocol, offset: ExpressionProtocol?) -> Limit {
        Limit(clauses: clauses.with { $0.limit = limit; $0.offset = offset })
    }
}

extension BuilderClauses {
    /// The database of the `from(_:)` source; nil for a `DataSourceProtocol` that `DataSource`
    /// did not make (running the query then throws `invalidQuery`, see `Query.noDataSource`).
    var database: Database? { source?.database }

    /// A copy with `change` applied.
    func with(_ change: (inout BuilderClauses) -> Void) -> BuilderClauses {
        var c = self
        change(&c)
        return c
    }
}

// The steps: each a `Query` (runnable at every step, as in 2.x) holding its clauses, with the
// methods of its routers.

/// The `FROM` step.
// @unchecked because it adds no state to `Query`, whose clauses are behind its lock.
public final class From: Query, JoinRouter, WhereRouter, GroupByRouter, OrderByRouter, LimitRouter, @unchecked Sendable {}

/// The `JOIN` step.
// @unchecked because it adds no state to `Query`, whose clauses are behind its lock.
public final class Joins: Query, WhereRouter, OrderByRouter, LimitRouter, @unchecked Sendable {}

/// The `WHERE` step.
// @unchecked because it adds no state to `Query`, whose clauses are behind its lock.
public final class Where: Query, GroupByRouter, OrderByRouter, LimitRouter, @unchecked Sendable {}

/// The `GROUP BY` step.
// @unchecked because it adds no state to `Query`, whose clauses are behind its lock.
public final class GroupBy: Query, HavingRouter, OrderByRouter, LimitRouter, @unchecked Sendable {}

/// The `HAVING` step.
// @unchecked because it adds no state to `Query`, whose clauses are behind its lock.
public final class Having: Query, OrderByRouter, LimitRouter, @unchecked Sendable {}

/// The `ORDER BY` step.
// @unchecked because it adds no state to `Query`, whose clauses are behind its lock.
public final class OrderBy: Query, LimitRouter, @unchecked Sendable {}

/// The `LIMIT` step (the last one).
// @unchecked because it adds no state to `Query`, whose clauses are behind its lock.
public final class Limit: Query, @unchecked Sendable {}
