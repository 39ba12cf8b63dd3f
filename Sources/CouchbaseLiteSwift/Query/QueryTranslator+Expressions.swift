import Foundation
import JSONCore

/// Expressions (spec 9.1's operators, functions, literals) and property paths → SQL.
extension QueryTranslator {
    /// SQL operators whose 0/1 result N1QL reports as a boolean (LiteCore's `fl_boolean_result`).
    static let booleanOperators: Set<String> = [
        "=", "==", "!=", "<>", "<", "<=", ">", ">=", "IS", "IS NOT", "AND", "OR", "NOT", "BETWEEN", "IN", "NOT IN",
        "EXISTS", "ANY", "EVERY", "ANY AND EVERY",
    ]

    /// `e` where a value is reported (result columns, literal collections): SQL comparisons
    /// give plain 0/1, so they are tagged as booleans here (not in WHERE, where it would cost).
    mutating func valueExpr(_ e: QueryTree) throws -> String {
        let sql = try expr(e)
        if let op = e.upperOperator, Self.booleanOperators.contains(op) { return "fl_bool(\(sql))" }
        return sql
    }

    mutating func expr(_ e: QueryTree) throws -> String {
        switch e {
        case .null: return "fl_null()"
        case .bool(let b): return b ? "fl_bool(1)" : "fl_bool(0)"
        case .int(let i): return String(i)
        // Above Int64.max: a double, as LiteCore reads such a literal.
        case .uint(let u): return "\(Double(u))"
        case .double(let d): return d.isFinite ? "\(d)" : "NULL"
        case .string(let s): return Self.stringLiteral(s)
        case .object(let d):
            var args: [String] = []
            for k in d.keys.sorted() { args.append(Self.stringLiteral(k)); args.append(try valueExpr(d[k]!)) }
            return "fl_dict(\(args.joined(separator: ", ")))"
        case .array(let items):
            if case .string(let op)? = items.first { return try operation(op, Array(items.dropFirst()), e) }
            if items.isEmpty { throw Self.invalid("Empty array in query") }
            throw Self.invalid("An operation must start with an operator string")
        }
    }

    static func stringLiteral(_ s: String) -> String {
        "'" + s.replacingOccurrences(of: "'", with: "''") + "'"
    }

    func argCount(_ args: [QueryTree], _ range: ClosedRange<Int>, _ op: String) throws {
        guard range.contains(args.count) else {
            throw Self.invalid("Wrong number of arguments to \(op): \(args.count)")
        }
    }

    /// `["op", args…]` (the node `e`): a property, parameter, variable, function call or operator.
    mutating func operation(_ rawOp: String, _ args: [QueryTree], _ e: QueryTree) throws -> String {
        if rawOp.hasPrefix(".") { return try property(e) }
        if rawOp.hasPrefix("$") {
            let name = rawOp.count > 1 ? String(rawOp.dropFirst()) : (args.first?.stringValue ?? "")
            guard !name.isEmpty else { throw Self.invalid("Parameter without a name") }
            parameters.insert(name)
            return ":" + Self.parameterName(name)
        }
        if rawOp.hasPrefix("?") { return try variable(e) }
        let op = rawOp.uppercased()
        if op == "MATCH()" { return try matchSQL(args) }
        if op == "RANK()" { return try rankSQL(args) }
        if rawOp.hasSuffix("()") { return try function(String(rawOp.dropLast(2)).lowercased(), args) }
        return try writeOperator(rawOp, args)
    }

    var collateSuffix: String { collation.map { " COLLATE \($0)" } ?? "" }

    static func parameterName(_ name: String) -> String {
        "p_" + name.unicodeScalars.map { CharacterSet.alphanumerics.contains($0) && $0.isASCII ? String($0) : "_\($0.value)_" }.joined()
    }

    /// A function call, through its row in ``N1QLFunctions`` (arity, aggregate, SQL writer).
    mutating func function(_ name: String, _ args: [QueryTree]) throws -> String {
        guard let row = N1QLFunctions.row(name) else { throw Self.invalid("Unknown function '\(name)()'") }
        if case .unsupported = row.writer {
            throw CouchbaseLiteError(.unimplemented, "The function \(name)() is not supported yet")
        }
        guard row.arity.accepts(args.count) else {
            throw Self.invalid("Wrong number of arguments to \(name)(): \(args.count) (expected \(row.arity.text))")
        }
        switch row.writer {
        case .aggregate(let sql):
            if args.isEmpty { return "count(*)" }
            // count(*) counts rows: no need to read (and decode) every body as count(fl_root(body)) would.
            if name == "count", args[0] == .operationNode(".") { return "count(*)" }
            return "\(sql)(\(try expr(args[0])))"
        case .library, .unsupported:
            // Array functions on a property read it in place instead of copying the array out.
            if name == "array_count" || name == "array_length",
               case (let head, let rest)? = args[0].operation, head.hasPrefix("."), head != "." || !rest.isEmpty {
                let (base, path) = try propertyBase(args[0])
                return "fl_count(\(base), \(Self.stringLiteral(path)))"
            }
            var sqlArgs = try args.map { try expr($0) }
            if name == "contains", collationFlags != 0 { sqlArgs.append(String(collationFlags)) }
            return "n1ql_\(name)(\(sqlArgs.joined(separator: ", ")))"
        }
    }

    // MARK: Properties

    static let metaKeys: [String: (column: String, title: String)] = [
        "_id": ("key", "id"), "_sequence": ("sequence", "sequence"), "_deleted": ("deleted", "deleted"),
        "_revisionID": ("revisionID", "revisionID"), "_expiration": ("expiration", "expiration"),
        "_rowid": ("rowid", "rowid"),
    ]

    mutating func metaSQL(_ column: String, _ source: Source) -> String {
        let t = source.prefix
        switch column {
        case "deleted":
            usesDeleted = true
            return "fl_bool(\(t)flags & 1 != 0)"
        case "revisionID": return "fl_version(\(t)version)"
        case "expiration":
            usesExpiration = true
            return "\(t)expiration"
        default: return "\(t)\(column)"
        }
    }

    func source(named alias: String?) throws -> Source {
        guard let alias else { return sources[0] }
        guard let s = sources.first(where: { $0.alias == alias }) ?? sourceByCollectionName(alias) else {
            throw Self.invalid("Unknown alias '\(alias)'")
        }
        return s
    }

    /// The one source named `scope.name` without an AS, found by its bare collection `name`
    /// (LiteCore lets `customers.x` mean `store.customers.x` when that is unambiguous).
    func sourceByCollectionName(_ name: String) -> Source? {
        let matches = sources.filter { $0.scopedCollectionName == name }
        return matches.count == 1 ? matches[0] : nil
    }

    /// The components of `[".a.b"]`, `[".", "a", "b", [0]]` or `[".a", "b"]`.
    func propertyComponents(_ e: QueryTree) throws -> [PropertyPath.Component] {
        guard case (let head, let rest)? = e.operation, head.hasPrefix(".") else { throw Self.invalid("Not a property") }
        var comps = try PropertyPath(parsing: head).components
        for item in rest {
            if case .string(let s) = item {
                comps.append(.key(s))
            } else if case .array(let idx) = item, idx.count == 1, case .int(let n) = idx[0] {
                comps.append(.index(Int(n)))
            } else {
                throw Self.invalid("Invalid property path component \(item.jsonText)")
            }
        }
        return comps
    }

    /// The source a path starts with (`.alias.rest`): a first component naming a source's
    /// alias refers to that source, as in LiteCore.
    /// The path may also start with a `scope.collection` alias spelled out (`.store.customers.x`)
    /// or with just its collection name (`.customers.x`), as LiteCore's `verifyDbAlias` allows.
    func splitSource(_ comps: [PropertyPath.Component]) -> (Source, [PropertyPath.Component])? {
        guard case .key(let first)? = comps.first else { return nil }
        if let s = sources.first(where: { $0.alias == first }) ?? sourceByCollectionName(first) {
            return (s, Array(comps.dropFirst()))
        }
        if comps.count >= 2, case .key(let second) = comps[1],
           let s = sources.first(where: { $0.scopedCollectionName != nil && $0.alias == first + "." + second }) {
            return (s, Array(comps.dropFirst(2)))
        }
        return nil
    }

    /// The SQL value a path is looked up in, and the rest of the path as a string.
    mutating func propertyBase(_ a: QueryTree) throws -> (String, String) {
        let comps = try propertyComponents(a)
        if let (s, rest) = splitSource(comps) {
            return (s.kind == .collection ? "\(s.prefix)body" : "\(s.prefix)value", PropertyPath(rest).string)
        }
        return ("\(sources[0].prefix)body", PropertyPath(comps).string)
    }

    mutating func property(_ a: QueryTree) throws -> String {
        let comps = try propertyComponents(a)
        // A result column's alias, unless the path starts with a source's alias (LiteCore's rule).
        if case .key(let first)? = comps.first, let aliased = resultAliases[first], splitSource(comps) == nil {
            resultAliases[first] = nil   // `SELECT x.y AS x … ORDER BY x` must not recurse
            defer { resultAliases[first] = aliased }
            let value = try expr(aliased)
            if comps.count == 1 { return value }
            return "fl_nested_value(\(value), \(Self.stringLiteral(PropertyPath(Array(comps.dropFirst())).string)))"
        }
        var source = sources[0]
        var rest = comps
        if let (s, r) = splitSource(comps) { source = s; rest = r }
        if source.kind == .unnest {
            if rest.isEmpty { return "\(source.prefix)value" }
            return "fl_nested_value(\(source.prefix)value, \(Self.stringLiteral(PropertyPath(rest).string)))"
        }
        if rest.isEmpty { return "fl_root(\(source.prefix)body)" }
        if rest.count == 1, case .key(let k) = rest[0], let meta = Self.metaKeys[k] {
            return metaSQL(meta.column, source)
        }
        return "fl_value(\(source.prefix)body, \(Self.stringLiteral(PropertyPath(rest).string)))"
    }
}

extension QueryTranslator {
    /// A nested `["SELECT", {…}]` as LiteCore writes it: translated by a fresh translator over the
    /// same collections (not correlated with the outer query's aliases), in parentheses; its
    /// parameters, collations and collections count as the outer query's.
    mutating func subquery(_ args: [QueryTree]) throws -> String {
        guard args.count == 1, case .object = args[0] else { throw Self.invalid("SELECT needs a query object") }
        var nested = QueryTranslator(table: table, deletedTable: deletedTable, resolver: resolver)
        let out = try nested.translate(args[0])
        parameters.formUnion(out.parameters)
        collations.formUnion(out.collations)
        usesExpiration = usesExpiration || out.usesExpiration
        subqueryKeyStores.formUnion(out.keyStores)
        return "(\(out.sql))"
    }
}
