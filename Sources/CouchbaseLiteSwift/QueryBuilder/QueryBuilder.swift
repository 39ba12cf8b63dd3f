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

    var tree: [String: Any] {
        var q: [String: Any] = [:]
        if !results.isEmpty { q["WHAT"] = results.map(\.jsonTree) }
        if distinct { q["DISTINCT"] = true }
        let from = [source?.jsonTree ?? [:]] + joins.map { ($0 as? JoinItem)?.jsonTree ?? [:] }
        if from.count > 1 || !from[0].isEmpty { q["FROM"] = from }
        if let condition { q["WHERE"] = condition.jsonTree }
        if !grouping.isEmpty { q["GROUP_BY"] = grouping.map(\.jsonTree) }
        if let having { q["HAVING"] = having.jsonTree }
        if !orderings.isEmpty { q["ORDER_BY"] = orderings.map { ($0 as? OrderingItem)?.jsonTree ?? ["MISSING"] } }
        if let limit { q["LIMIT"] = limit.jsonTree }
        if let offset { q["OFFSET"] = offset.jsonTree }
        return q
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
        var c = clauses
        c.source = dataSource as? DatabaseSource
        return From(c)
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

/// A `QueryBuilder` step: a `Query` (runnable at every step, as in 2.x) holding its clauses.
protocol BuilderStep {
    var clauses: BuilderClauses { get }
}

extension BuilderStep {
    private func with(_ change: (inout BuilderClauses) -> Void) -> BuilderClauses {
        var c = clauses
        change(&c)
        return c
    }
    func makeJoins(_ joins: [JoinProtocol]) -> Joins { Joins(with { $0.joins += joins }) }
    func makeWhere(_ e: ExpressionProtocol) -> Where { Where(with { $0.condition = e }) }
    func makeGroupBy(_ e: [ExpressionProtocol]) -> GroupBy { GroupBy(with { $0.grouping = e }) }
    func makeHaving(_ e: ExpressionProtocol) -> Having { Having(with { $0.having = e }) }
    func makeOrderBy(_ o: [OrderingProtocol]) -> OrderBy { OrderBy(with { $0.orderings = o }) }
    func makeLimit(_ l: ExpressionProtocol, _ o: ExpressionProtocol?) -> Limit { Limit(with { $0.limit = l; $0.offset = o }) }
}

extension BuilderClauses {
    /// The database of the `from(_:)` source; nil for a `DataSourceProtocol` that `DataSource`
    /// did not make (running the query then throws `invalidQuery`, see `Query.noDataSource`).
    var database: Database? { source?.database }
}

/// The `FROM` step.
// @unchecked because a `Query` (see its comment) plus its immutable `clauses`.
public final class From: Query, JoinRouter, WhereRouter, GroupByRouter, OrderByRouter, LimitRouter, BuilderStep, @unchecked Sendable {
    let clauses: BuilderClauses
    init(_ clauses: BuilderClauses) {
        self.clauses = clauses
        super.init(database: clauses.database, builtTree: clauses.tree)
    }
    public func join(_ joins: JoinProtocol...) -> Joins { makeJoins(joins) }
    /// Adds joins.
    public func join(_ joins: [JoinProtocol]) -> Joins { makeJoins(joins) }
    public func `where`(_ expression: ExpressionProtocol) -> Where { makeWhere(expression) }
    public func groupBy(_ expressions: ExpressionProtocol...) -> GroupBy { makeGroupBy(expressions) }
    /// Groups rows with equal values of `expressions`.
    public func groupBy(_ expressions: [ExpressionProtocol]) -> GroupBy { makeGroupBy(expressions) }
    public func orderBy(_ orderings: OrderingProtocol...) -> OrderBy { makeOrderBy(orderings) }
    /// Sorts the rows.
    public func orderBy(_ orderings: [OrderingProtocol]) -> OrderBy { makeOrderBy(orderings) }
    public func limit(_ limit: ExpressionProtocol) -> Limit { makeLimit(limit, nil) }
    public func limit(_ limit: ExpressionProtocol, offset: ExpressionProtocol?) -> Limit { makeLimit(limit, offset) }
}

/// The `JOIN` step.
// @unchecked because a `Query` (see its comment) plus its immutable `clauses`.
public final class Joins: Query, WhereRouter, OrderByRouter, LimitRouter, BuilderStep, @unchecked Sendable {
    let clauses: BuilderClauses
    init(_ clauses: BuilderClauses) {
        self.clauses = clauses
        super.init(database: clauses.database, builtTree: clauses.tree)
    }
    public func `where`(_ expression: ExpressionProtocol) -> Where { makeWhere(expression) }
    public func orderBy(_ orderings: OrderingProtocol...) -> OrderBy { makeOrderBy(orderings) }
    /// Sorts the rows.
    public func orderBy(_ orderings: [OrderingProtocol]) -> OrderBy { makeOrderBy(orderings) }
    public func limit(_ limit: ExpressionProtocol) -> Limit { makeLimit(limit, nil) }
    public func limit(_ limit: ExpressionProtocol, offset: ExpressionProtocol?) -> Limit { makeLimit(limit, offset) }
}

/// The `WHERE` step.
// @unchecked because a `Query` (see its comment) plus its immutable `clauses`.
public final class Where: Query, GroupByRouter, OrderByRouter, LimitRouter, BuilderStep, @unchecked Sendable {
    let clauses: BuilderClauses
    init(_ clauses: BuilderClauses) {
        self.clauses = clauses
        super.init(database: clauses.database, builtTree: clauses.tree)
    }
    public func groupBy(_ expressions: ExpressionProtocol...) -> GroupBy { makeGroupBy(expressions) }
    /// Groups rows with equal values of `expressions`.
    public func groupBy(_ expressions: [ExpressionProtocol]) -> GroupBy { makeGroupBy(expressions) }
    public func orderBy(_ orderings: OrderingProtocol...) -> OrderBy { makeOrderBy(orderings) }
    /// Sorts the rows.
    public func orderBy(_ orderings: [OrderingProtocol]) -> OrderBy { makeOrderBy(orderings) }
    public func limit(_ limit: ExpressionProtocol) -> Limit { makeLimit(limit, nil) }
    public func limit(_ limit: ExpressionProtocol, offset: ExpressionProtocol?) -> Limit { makeLimit(limit, offset) }
}

/// The `GROUP BY` step.
// @unchecked because a `Query` (see its comment) plus its immutable `clauses`.
public final class GroupBy: Query, HavingRouter, OrderByRouter, LimitRouter, BuilderStep, @unchecked Sendable {
    let clauses: BuilderClauses
    init(_ clauses: BuilderClauses) {
        self.clauses = clauses
        super.init(database: clauses.database, builtTree: clauses.tree)
    }
    public func having(_ expression: ExpressionProtocol) -> Having { makeHaving(expression) }
    public func orderBy(_ orderings: OrderingProtocol...) -> OrderBy { makeOrderBy(orderings) }
    /// Sorts the rows.
    public func orderBy(_ orderings: [OrderingProtocol]) -> OrderBy { makeOrderBy(orderings) }
    public func limit(_ limit: ExpressionProtocol) -> Limit { makeLimit(limit, nil) }
    public func limit(_ limit: ExpressionProtocol, offset: ExpressionProtocol?) -> Limit { makeLimit(limit, offset) }
}

/// The `HAVING` step.
// @unchecked because a `Query` (see its comment) plus its immutable `clauses`.
public final class Having: Query, OrderByRouter, LimitRouter, BuilderStep, @unchecked Sendable {
    let clauses: BuilderClauses
    init(_ clauses: BuilderClauses) {
        self.clauses = clauses
        super.init(database: clauses.database, builtTree: clauses.tree)
    }
    public func orderBy(_ orderings: OrderingProtocol...) -> OrderBy { makeOrderBy(orderings) }
    /// Sorts the rows.
    public func orderBy(_ orderings: [OrderingProtocol]) -> OrderBy { makeOrderBy(orderings) }
    public func limit(_ limit: ExpressionProtocol) -> Limit { makeLimit(limit, nil) }
    public func limit(_ limit: ExpressionProtocol, offset: ExpressionProtocol?) -> Limit { makeLimit(limit, offset) }
}

/// The `ORDER BY` step.
// @unchecked because a `Query` (see its comment) plus its immutable `clauses`.
public final class OrderBy: Query, LimitRouter, BuilderStep, @unchecked Sendable {
    let clauses: BuilderClauses
    init(_ clauses: BuilderClauses) {
        self.clauses = clauses
        super.init(database: clauses.database, builtTree: clauses.tree)
    }
    public func limit(_ limit: ExpressionProtocol) -> Limit { makeLimit(limit, nil) }
    public func limit(_ limit: ExpressionProtocol, offset: ExpressionProtocol?) -> Limit { makeLimit(limit, offset) }
}

/// The `LIMIT` step (the last one).
// @unchecked because a `Query` (see its comment).
public final class Limit: Query, @unchecked Sendable {
    init(_ clauses: BuilderClauses) { super.init(database: clauses.database, builtTree: clauses.tree) }
}
