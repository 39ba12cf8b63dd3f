import Foundation
import JSONCore

/// Translates LiteCore's JSON query tree (spec 9.1) into one SQLite SELECT over the key-store
/// tables of the collections it names, the way LiteCore's `QueryTranslator` does (spec 9.3):
/// properties become `fl_value(<alias>.body, 'path')`, result columns `fl_result(…)`, deleted
/// documents are excluded unless the query mentions `_deleted`.
struct QueryTranslator {
    /// The tables of the collection a FROM item names (spec 2.3).
    struct CollectionTables {
        var keyStore: KeyStore
        var table: String
        /// Its 3.1+ deleted-documents table, read too when the query mentions `_deleted`.
        var deletedTable: String?
        /// The columns both tables have, in one order, for the `UNION ALL` of the two.
        var unionColumns: [String] = []
    }

    /// Finds the tables of `collection` in `scope` (nil: none given; both nil: the FROM item
    /// names no collection), or throws naming what does not exist.
    typealias CollectionResolver = (_ scope: String?, _ collection: String?) throws -> CollectionTables

    /// The SQL, the result column titles, and the names of the `$parameters` it binds.
    struct Output {
        var sql: String
        var columnTitles: [String]
        var parameters: Set<String>
        /// The `LCUnicode_…` collations the SQL uses (registered before it is compiled).
        var collations: Set<String> = []
        /// Whether the SQL reads the `expiration` column (which 2.x adds only when needed).
        var usesExpiration = false
        /// The key-stores (collections) the query reads: commits to them can change its results.
        var keyStores: Set<KeyStore> = []
        /// The FTS tables MATCH() searches (which must exist: LiteCore's `NoSuchIndex` otherwise).
        var fullTextTables: [String] = []
    }

    struct Source {
        enum Kind { case collection, unnest }
        var kind: Kind
        /// The alias as the query names it (nil: the unnamed main source).
        var alias: String?
        /// The SQL alias.
        var sqlAlias: String
        /// What qualifies its columns: `alias.`, or nothing in an index expression.
        var prefix: String { sqlAlias.isEmpty ? "" : sqlAlias + "." }
        /// A collection's tables.
        var tables: CollectionTables?
        /// The collection's name when the alias was derived from `scope.collection` (no AS): a
        /// path may then start with the bare collection name, and `*` is titled with it.
        var scopedCollectionName: String?
    }

    /// The main collection's table and 3.1+ deleted-documents table.
    var table: String
    var sources: [Source] = []
    var parameters: Set<String> = []
    var usesDeleted = false
    var usesExpiration = false
    /// Folding flags set while translating the operand of a `COLLATE` (see ``LikeMatcher``).
    var collationFlags = 0
    /// The SQLite collation comparisons use inside a `COLLATE` (nil: the default, BINARY).
    var collation: String?
    var collations: Set<String> = []
    /// ANY/EVERY variables in scope → the SQL alias of their `fl_each`.
    var variables: [String: String] = [:]
    var nextAlias = 1
    /// The collections subqueries read (their commits change this query's results too).
    var subqueryKeyStores: Set<KeyStore> = []
    /// The WHAT items' `AS` names and their expressions: a property path starting with one of
    /// them (outside the WHAT list) means that result column, as in LiteCore (`ORDER BY key`).
    var resultAliases: [String: QueryTree] = [:]
    /// The full-text indexes the WHERE clause's MATCH() calls search (see `QueryTranslator+FullText`).
    var fullTextSearches: [FullTextSearch] = []
    /// True while the WHERE clause is translated, the only place MATCH() may be.
    var translatingWhere = false

    /// The table 3.1+ moves deleted documents to (spec 2.3), read too when `_deleted` is used.
    var deletedTable: String?
    let resolver: CollectionResolver?

    /// A translator for queries on the default collection only (`table`), or, with `resolver`,
    /// on the collections their FROM items name.
    init(table: String = "kv_default", deletedTable: String? = nil, resolver: CollectionResolver? = nil) {
        self.table = table
        self.deletedTable = deletedTable
        self.resolver = resolver
    }

    /// The tables of the collection FROM item `f` names, as the resolver finds them; without one,
    /// only the default collection (`_`, `_default`, none) exists.
    func collectionTables(_ f: JSONObject) throws -> CollectionTables {
        let scope = f["SCOPE"]?.stringValue
        let collection = f["COLLECTION"]?.stringValue
        if f["SCOPE"] != nil && scope == nil || f["COLLECTION"] != nil && collection == nil {
            throw Self.invalid("COLLECTION and SCOPE in a FROM item must be strings")
        }
        if scope != nil && collection == nil { throw Self.invalid("SCOPE in a FROM item requires a COLLECTION too") }
        if let resolver { return try resolver(scope, collection) }
        if let collection, scope != nil || !["_", "_default"].contains(collection) {
            let name = scope.map { "\($0).\(collection)" } ?? collection
            throw CouchbaseLiteError(.invalidQuery, "No such collection \"\(name)\"")
        }
        return CollectionTables(keyStore: .default, table: table, deletedTable: deletedTable)
    }

    /// A FROM item's alias: its AS (with LiteCore's `\.` escapes undone), else the collection
    /// path it names (`tasks`, `store.customers`).
    static func alias(of f: JSONObject) -> (alias: String?, scopedName: String?) {
        if let alias = f["AS"]?.stringValue { return (alias.replacingOccurrences(of: "\\.", with: "."), nil) }
        guard let collection = f["COLLECTION"]?.stringValue else { return (nil, nil) }
        if let scope = f["SCOPE"]?.stringValue { return ("\(scope).\(collection)", collection) }
        return (collection, nil)
    }

    static func invalid(_ message: String) -> CouchbaseLiteError {
        CouchbaseLiteError(.invalidQuery, message)
    }

    mutating func translate(_ tree: QueryTree) throws -> Output {
        var root = tree
        if case .array(let items) = tree, items.count == 2, tree.upperOperator == "SELECT" { root = items[1] }
        guard let query = root.objectValue else { throw Self.invalid("A query must be a JSON object or [\"SELECT\", {…}]") }
        var q: [String: QueryTree] = [:]
        for (k, v) in query { q[k.uppercased()] = v }
        for key in q.keys where !["WHAT", "FROM", "WHERE", "GROUP_BY", "HAVING", "ORDER_BY", "LIMIT", "OFFSET", "DISTINCT"].contains(key) {
            throw Self.invalid("Unknown query key '\(key)'")
        }

        // FROM: the main collection, then joins and unnests in order.
        var fromSQL = ""
        let fromItems = q["FROM"]?.items ?? []
        if q["FROM"] != nil && q["FROM"]?.items == nil { throw Self.invalid("FROM must be an array") }
        var joinClauses: [(Int, QueryTree)] = []
        for (i, raw) in fromItems.enumerated() {
            guard let item = raw.objectValue else { throw Self.invalid("A FROM item must be an object") }
            var f = JSONObject(minimumCapacity: item.count)
            for (k, v) in item { f[k.uppercased()] = v }
            let (alias, scopedName) = Self.alias(of: f)
            if let alias, sources.contains(where: { $0.alias == alias }) {
                throw Self.invalid("Duplicate collection alias '\(alias)'")
            }
            if i == 0 {
                if f["UNNEST"] != nil || f["JOIN"] != nil { throw Self.invalid("The first FROM item must be a collection") }
                let tables = try collectionTables(f)
                table = tables.table
                deletedTable = tables.deletedTable
                sources.append(Source(kind: .collection, alias: alias, sqlAlias: "_doc", tables: tables,
                                      scopedCollectionName: scopedName))
            } else if let unnest = f["UNNEST"] {
                guard let alias else { throw Self.invalid("UNNEST needs an alias") }
                sources.append(Source(kind: .unnest, alias: alias, sqlAlias: "_u\(i)"))
                joinClauses.append((i, unnest))
            } else {
                guard let alias else { throw Self.invalid("A joined collection needs an alias") }
                sources.append(Source(kind: .collection, alias: alias, sqlAlias: "_j\(i)", tables: try collectionTables(f),
                                      scopedCollectionName: scopedName))
                joinClauses.append((i, .object(f)))
            }
        }
        if sources.isEmpty {
            let tables = try collectionTables([:])
            table = tables.table
            deletedTable = tables.deletedTable
            sources.append(Source(kind: .collection, alias: nil, sqlAlias: "_doc", tables: tables))
        }
        // MATCH() calls decide which FTS tables are joined; RANK() anywhere refers to them.
        try collectFullTextSearches(in: q["WHERE"])
        fromSQL = "\(KeyStore.quoted(table)) AS _doc"
        var deletedFilters = ["(_doc.flags & 1 = 0)"]
        for (i, clause) in joinClauses {
            let s = sources[i]
            if s.kind == .unnest {
                fromSQL += " JOIN fl_each(\(try unnestSource(clause))) AS \(s.sqlAlias)"
            } else {
                var u: [String: QueryTree] = [:]
                for (k, v) in clause.objectValue ?? [:] { u[k.uppercased()] = v }
                let type = u["JOIN"]?.stringValue?.uppercased() ?? "INNER"
                guard ["INNER", "LEFT", "LEFT OUTER", "CROSS"].contains(type) else { throw Self.invalid("Unknown JOIN type '\(type)'") }
                fromSQL += " \(type == "INNER" ? "" : type + " ")JOIN \(KeyStore.quoted(s.tables?.table ?? table)) AS \(s.sqlAlias)"
                var on = "(\(s.sqlAlias).flags & 1 = 0)"
                if let cond = u["ON"] { on = "(\(try expr(cond))) AND " + on }
                if type == "CROSS" { deletedFilters.append(on) } else { fromSQL += " ON " + on }
            }
        }

        // WHAT
        var columns: [String] = []
        var titles: [String] = []
        let what: [QueryTree] = q["WHAT"]?.items ?? [.operationNode(".")]
        if q["WHAT"] != nil && q["WHAT"]?.items == nil { throw Self.invalid("WHAT must be an array") }
        if what.isEmpty { throw Self.invalid("WHAT must not be empty") }
        for (i, item) in what.enumerated() {
            var e = Self.shorthand(item)
            var title: String?
            if case (let op, let args)? = e.operation, op.uppercased() == "AS" {
                guard args.count == 2, let name = args[1].stringValue else { throw Self.invalid("AS needs an expression and a name") }
                e = Self.shorthand(args[0])
                title = name
            }
            columns.append("fl_result(\(try valueExpr(e)))")
            var t = title ?? defaultTitle(e) ?? "$\(i + 1)"
            if titles.contains(t) {
                var n = 2
                while titles.contains("\(t) #\(n)") { n += 1 }
                t = "\(t) #\(n)"
            }
            titles.append(t)
            if let title { resultAliases[title] = e }
        }

        // Every clause is translated before the SQL is assembled: any of them may mention
        // `_deleted`, which changes the table read and the filter (spec 9.1).
        translatingWhere = true
        let whereSQL = try q["WHERE"].map { try expr($0) }
        translatingWhere = false
        var groupSQL = ""
        if let g = q["GROUP_BY"] {
            guard let items = g.items else { throw Self.invalid("GROUP_BY must be an array") }
            groupSQL = " GROUP BY " + (try items.map { Self.notColumnNumber(try expr(Self.shorthand($0))) }.joined(separator: ", "))
            if let h = q["HAVING"] { groupSQL += " HAVING " + (try expr(h)) }
        } else if q["HAVING"] != nil {
            throw Self.invalid("HAVING needs GROUP_BY")
        }
        var orderSQL = ""
        if let o = q["ORDER_BY"] {
            guard let items = o.items else { throw Self.invalid("ORDER_BY must be an array") }
            let parts: [String] = try items.map { item in
                if case (let op, let args)? = item.operation, args.count == 1, ["ASC", "DESC"].contains(op.uppercased()) {
                    return "\(Self.notColumnNumber(try expr(Self.shorthand(args[0])))) \(op.uppercased())"
                }
                return Self.notColumnNumber(try expr(Self.shorthand(item)))
            }
            orderSQL = " ORDER BY " + parts.joined(separator: ", ")
        }
        var limitSQL = ""
        if let l = q["LIMIT"] {
            limitSQL = " LIMIT \(try limitExpr(l))"
        } else if q["OFFSET"] != nil {
            limitSQL = " LIMIT -1"
        }
        if let o = q["OFFSET"] { limitSQL += " OFFSET \(try limitExpr(o))" }

        if usesDeleted, deletedTable != nil, !fullTextSearches.isEmpty {
            // FTS rows point at the live table's rowids; the deleted table's rowids would collide with them.
            throw CouchbaseLiteError(.unimplemented, "MATCH() cannot be combined with meta().deleted in a file that keeps deleted documents apart (3.1+)")
        }
        if usesDeleted, let deletedTable, let columns = sources[0].tables?.unionColumns, !columns.isEmpty {
            let list = columns.joined(separator: ", ")
            let both = "(SELECT \(list) FROM \(KeyStore.quoted(table)) UNION ALL SELECT \(list) FROM \(KeyStore.quoted(deletedTable))) AS _doc"
            fromSQL = both + fromSQL.dropFirst("\(KeyStore.quoted(table)) AS _doc".count)
        }
        fromSQL += fullTextJoinsSQL
        var wheres = usesDeleted ? Array(deletedFilters.dropFirst()) : deletedFilters
        if let whereSQL { wheres.append(whereSQL) }
        var sql = "SELECT " + (q["DISTINCT"] == QueryTree.bool(true) ? "DISTINCT " : "") + columns.joined(separator: ", ")
        sql += " FROM " + fromSQL
        if !wheres.isEmpty { sql += " WHERE " + wheres.map { "(\($0))" }.joined(separator: " AND ") }
        sql += groupSQL + orderSQL + limitSQL
        return Output(sql: sql, columnTitles: titles, parameters: parameters, collations: collations,
                      usesExpiration: usesExpiration,
                      keyStores: Set(sources.compactMap { $0.tables?.keyStore }).union(subqueryKeyStores),
                      fullTextTables: fullTextSearches.map(\.table))
    }

    /// The SQL of one index key, exactly as `expr` writes it in a WHERE clause but with the
    /// table's columns unqualified (`fl_value(body, 'a')`), as LiteCore's `CREATE INDEX` has it
    /// (spec 2.1): SQLite then matches the query's `fl_value(_doc.body, 'a')` with the index.
    /// With `rowAlias` (`new`, `old`), the columns are those of that row, as in a trigger.
    mutating func indexExpression(_ e: QueryTree, rowAlias: String = "") throws -> String {
        sources = [Source(kind: .collection, alias: nil, sqlAlias: rowAlias)]
        let sql = try expr(Self.shorthand(e))
        if !parameters.isEmpty { throw Self.invalid("An index expression cannot use parameters") }
        if usesDeleted { throw Self.invalid("An index expression cannot use meta().deleted") }
        return sql
    }

    /// A LIMIT/OFFSET value: LiteCore's `MAX(0, n)`, but a literal integer as a plain number, which
    /// SQLite's planner reads as a fixed limit (it may then walk an index in ORDER BY order and
    /// stop after `n` rows instead of sorting every match).
    mutating func limitExpr(_ e: QueryTree) throws -> String {
        if case .int(let n) = e { return String(max(0, n)) }
        return "max(0, \(try expr(e)))"
    }

    /// SQLite reads a bare integer in ORDER BY/GROUP BY as a column number; N1QL means the value.
    static func notColumnNumber(_ sql: String) -> String {
        Int64(sql) != nil ? "(\(sql) + 0)" : sql
    }

    /// A bare string in WHAT/ORDER_BY/GROUP_BY written as `.a.b` is a property (spec 9.1).
    static func shorthand(_ item: QueryTree) -> QueryTree {
        if case .string(let s) = item, s.hasPrefix(".") { return .operationNode(s) }
        return item
    }

    mutating func unnestSource(_ e: QueryTree) throws -> String {
        try eachArguments(e)
    }

    /// The arguments of `fl_each` iterating `e`: a property is read in place from its body.
    mutating func eachArguments(_ e: QueryTree) throws -> String {
        if case (let head, let rest)? = e.operation, head.hasPrefix("."), head != "." || !rest.isEmpty {
            let p = e
            let comps = try propertyComponents(p)
            if let (s, rest) = splitSource(comps), s.kind == .unnest {
                return "\(s.sqlAlias).value, \(Self.stringLiteral(PropertyPath(rest).string))"
            }
            let (base, path) = try propertyBase(p)
            return "\(base), \(Self.stringLiteral(path))"
        }
        if e.isOperation(prefixed: "?") {
            let (name, rest) = try variableComponents(e)
            guard let alias = variables[name] else { throw Self.invalid("Unknown variable '\(name)'") }
            return "\(alias).value, \(Self.stringLiteral(PropertyPath(rest).string))"
        }
        return "\(try expr(e)), ''"
    }

    /// `["?var", …]`, `["?", "var", …]`, `["?var.a.b"]`: the variable and the path under it.
    func variableComponents(_ e: QueryTree) throws -> (String, [PropertyPath.Component]) {
        guard case (let head, var rest)? = e.operation else { throw Self.invalid("Not a variable") }
        var comps: [PropertyPath.Component]
        if head == "?" {
            guard let name = rest.first?.stringValue else { throw Self.invalid("'?' needs a variable name") }
            rest.removeFirst()
            comps = [.key(name)]
        } else {
            comps = try PropertyPath(parsing: String(head.dropFirst())).components
        }
        guard case .key(let name)? = comps.first else { throw Self.invalid("Invalid variable reference") }
        comps.removeFirst()
        for item in rest {
            if case .string(let s) = item { comps.append(contentsOf: try PropertyPath(parsing: s).components) }
            else if case .array(let idx) = item, idx.count == 1, case .int(let n) = idx[0] { comps.append(.index(Int(n))) }
            else { throw Self.invalid("Invalid variable path component \(item.jsonText)") }
        }
        return (name, comps)
    }

    func variable(_ a: QueryTree) throws -> String {
        let (name, rest) = try variableComponents(a)
        guard let alias = variables[name] else { throw Self.invalid("Unknown variable '\(name)'") }
        if rest.isEmpty { return "\(alias).value" }
        return "fl_nested_value(\(alias).value, \(Self.stringLiteral(PropertyPath(rest).string)))"
    }

    // MARK: Column titles

    func defaultTitle(_ e: QueryTree) -> String? {
        guard case (let op, let args)? = e.operation else { return nil }
        if op == "_.", args.count == 2, args[0].upperOperator == "META()", let p = args[1].stringValue {
            return p.hasPrefix(".") ? String(p.dropFirst()) : p
        }
        guard let comps = try? propertyComponents(e) else { return nil }
        if comps.isEmpty { return wholeDocumentTitle(sources[0]) ?? "_doc" }
        if let (source, rest) = splitSource(comps) {
            if rest.isEmpty { return wholeDocumentTitle(source) }
            return titleOf(rest)
        }
        return titleOf(comps)
    }

    /// The title of a whole-document column: the source's alias, or the bare collection name when
    /// the alias is `scope.collection` and no joined collection has that name (as LiteCore does).
    func wholeDocumentTitle(_ source: Source) -> String? {
        guard let name = source.scopedCollectionName else { return source.alias }
        let clash = sources.contains { other in
            other.sqlAlias != source.sqlAlias && other.tables?.keyStore.collectionSpec?.collection == name
        }
        return clash ? source.alias : name
    }

    func titleOf(_ comps: [PropertyPath.Component]) -> String? {
        for c in comps.reversed() {
            if case .key(let k) = c {
                if comps.count == 1, let meta = Self.metaKeys[k] { return meta.title }
                return k
            }
        }
        return nil
    }
}
