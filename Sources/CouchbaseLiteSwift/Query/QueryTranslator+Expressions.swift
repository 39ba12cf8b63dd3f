import Foundation

/// Expressions (spec 9.1's operators, functions, literals) and property paths → SQL.
extension QueryTranslator {
    /// SQL operators whose 0/1 result N1QL reports as a boolean (LiteCore's `fl_boolean_result`).
    static let booleanOperators: Set<String> = [
        "=", "==", "!=", "<>", "<", "<=", ">", ">=", "IS", "IS NOT", "AND", "OR", "NOT", "BETWEEN", "IN", "NOT IN",
        "EXISTS", "ANY", "EVERY", "ANY AND EVERY",
    ]

    /// `e` where a value is reported (result columns, literal collections): SQL comparisons
    /// give plain 0/1, so they are tagged as booleans here (not in WHERE, where it would cost).
    mutating func valueExpr(_ e: Any) throws -> String {
        let sql = try expr(e)
        if let a = e as? [Any], let op = (a.first as? String)?.uppercased(), Self.booleanOperators.contains(op) {
            return "fl_bool(\(sql))"
        }
        return sql
    }

    mutating func expr(_ e: Any) throws -> String {
        switch e {
        case is NSNull: return "fl_null()"
        case let b as Bool where type(of: e) == Bool.self: return b ? "fl_bool(1)" : "fl_bool(0)"
        case let n as NSNumber:
            if Self.isBoolean(n) { return n.boolValue ? "fl_bool(1)" : "fl_bool(0)" }
            return Self.numberLiteral(n)
        case let i as Int: return String(i)
        case let i as Int64: return String(i)
        case let d as Double: return d.isFinite ? "\(d)" : "NULL"
        case let s as String: return Self.stringLiteral(s)
        case let d as [String: Any]:
            var args: [String] = []
            for k in d.keys.sorted() { args.append(Self.stringLiteral(k)); args.append(try valueExpr(d[k]!)) }
            return "fl_dict(\(args.joined(separator: ", ")))"
        case let a as [Any]:
            return try operation(a)
        default:
            throw Self.invalid("Unsupported value in query: \(e)")
        }
    }

    /// JSONSerialization's booleans are NSNumbers of type `c` (on Darwin and Linux alike).
    static func isBoolean(_ n: NSNumber) -> Bool {
        String(cString: n.objCType) == "c"
    }

    static func numberLiteral(_ n: NSNumber) -> String {
        let t = String(cString: n.objCType)
        if t == "d" || t == "f" {
            let d = n.doubleValue
            return d.isFinite ? "\(d)" : "NULL"
        }
        return n.stringValue
    }

    static func stringLiteral(_ s: String) -> String {
        "'" + s.replacingOccurrences(of: "'", with: "''") + "'"
    }

    func argCount(_ a: [Any], _ range: ClosedRange<Int>, _ op: String) throws {
        guard range.contains(a.count - 1) else {
            throw Self.invalid("Wrong number of arguments to \(op): \(a.count - 1)")
        }
    }

    mutating func operation(_ a: [Any]) throws -> String {
        guard let rawOp = a.first as? String else {
            if a.isEmpty { throw Self.invalid("Empty array in query") }
            throw Self.invalid("An operation must start with an operator string")
        }
        let op = rawOp.uppercased()
        let args = Array(a.dropFirst())
        if rawOp.hasPrefix(".") { return try property(a) }
        if rawOp.hasPrefix("$") {
            let name = rawOp.count > 1 ? String(rawOp.dropFirst()) : (args.first as? String ?? "")
            guard !name.isEmpty else { throw Self.invalid("Parameter without a name") }
            parameters.insert(name)
            return ":" + Self.parameterName(name)
        }
        if rawOp.hasPrefix("?") { return try variable(a) }
        if op == "MATCH()" { return try matchSQL(a) }
        if op == "RANK()" { return try rankSQL(a) }
        if rawOp.hasSuffix("()") { return try function(String(rawOp.dropLast(2)).lowercased(), args) }
        switch op {
        case "=", "==", "!=", "<>", "<", "<=", ">", ">=", "IS", "IS NOT":
            try argCount(a, 2...2, rawOp)
            let sqlOp = ["==": "=", "<>": "!=", "IS": "IS", "IS NOT": "IS NOT"][op] ?? op
            if op == "IS" || op == "IS NOT", let m = args[1] as? [Any], (m.first as? String)?.uppercased() == "MISSING" {
                return "(\(try expr(args[0])) \(op == "IS" ? "IS NULL" : "IS NOT NULL"))"
            }
            // `x IS NOT null` is false for MISSING too (LiteCore; QueryTest "COUNT with IS NOT null").
            if op == "IS NOT", args[1] is NSNull {
                return "fl_is_valued(\(try expr(args[0])))"
            }
            return "(\(try expr(args[0]))\(collateSuffix) \(sqlOp) \(try expr(args[1])))"
        case "+", "*", "/", "%", "||":
            try argCount(a, 2...2, rawOp)
            return "(\(try expr(args[0])) \(op) \(try expr(args[1])))"
        case "-":
            try argCount(a, 1...2, rawOp)
            if args.count == 1 { return "(- \(try expr(args[0])))" }
            return "(\(try expr(args[0])) - \(try expr(args[1])))"
        case "AND", "OR":
            guard !args.isEmpty else { throw Self.invalid("\(op) needs operands") }
            return "(" + (try args.map { try expr($0) }).joined(separator: " \(op) ") + ")"
        case "NOT":
            try argCount(a, 1...1, rawOp)
            return "(NOT \(try expr(args[0])))"
        case "MISSING":
            return "NULL"
        case "IS VALUED":
            try argCount(a, 1...1, rawOp)
            return "fl_is_valued(\(try expr(args[0])))"
        case "EXISTS":
            try argCount(a, 1...1, rawOp)
            if let p = args[0] as? [Any], let head = p.first as? String, head.hasPrefix(".") {
                let (base, path) = try propertyBase(p)
                return "fl_exists(\(base), \(Self.stringLiteral(path)))"
            }
            if let sub = args[0] as? [Any], (sub.first as? String)?.uppercased() == "SELECT" {
                return "EXISTS \(try subquery(sub))"
            }
            throw Self.invalid("EXISTS needs a property or a subquery")
        case "BETWEEN":
            try argCount(a, 3...3, rawOp)
            return "(\(try expr(args[0]))\(collateSuffix) BETWEEN \(try expr(args[1])) AND \(try expr(args[2])))"
        case "IN", "NOT IN":
            try argCount(a, 2...2, rawOp)
            let lhs = try expr(args[0])
            if let list = args[1] as? [Any], (list.first as? String) == "[]" {
                let items = try list.dropFirst().map { try expr($0) }
                return "(\(lhs)\(collateSuffix) \(op) (\(items.joined(separator: ", "))))"
            }
            let contains: String
            if let sub = args[1] as? [Any], (sub.first as? String)?.uppercased() == "SELECT" {
                throw CouchbaseLiteError(.unimplemented, "\(op) over a subquery is not supported")
            }
            if let p = args[1] as? [Any], let head = p.first as? String, head.hasPrefix(".") {
                let (base, path) = try propertyBase(p)
                contains = "fl_contains(\(base), \(Self.stringLiteral(path)), \(lhs))"
            } else {
                contains = "n1ql_array_contains(\(try expr(args[1])), \(lhs))"
            }
            return op == "IN" ? contains : "(NOT \(contains))"
        case "LIKE", "NOT LIKE":
            try argCount(a, 2...3, rawOp)
            let like = "fl_like(\(try expr(args[0])), \(try expr(args[1])), \(collationFlags))"
            return op == "LIKE" ? like : "(NOT \(like))"
        case "[]":
            return "fl_array(\(try args.map { try valueExpr($0) }.joined(separator: ", ")))"
        case "CASE":
            guard args.count >= 3 else { throw Self.invalid("CASE needs a value, WHEN and THEN") }
            var sql = "CASE"
            if !(args[0] is NSNull) { sql += " " + (try expr(args[0])) }
            var i = 1
            while i + 1 < args.count {
                sql += " WHEN \(try expr(args[i])) THEN \(try expr(args[i + 1]))"
                i += 2
            }
            if i < args.count { sql += " ELSE \(try expr(args[i]))" }
            return sql + " END"
        case "COLLATE":
            try argCount(a, 2...2, rawOp)
            guard let spec = args[0] as? [String: Any] else { throw Self.invalid("COLLATE needs an options object") }
            var opts: [String: Any] = [:]
            for (k, v) in spec { opts[k.uppercased()] = v }
            let unicode = (opts["UNICODE"] as? Bool) ?? false
            let caseSensitive = (opts["CASE"] as? Bool) ?? true
            let diacSensitive = (opts["DIAC"] as? Bool) ?? true
            var flags = 0
            if !caseSensitive { flags |= LikeMatcher.caseInsensitive }
            if unicode, !diacSensitive { flags |= LikeMatcher.diacriticInsensitive }
            // Spec 9.3: non-Unicode = SQLite BINARY/NOCASE; Unicode = LiteCore's
            // LCUnicode_<C|_><D|_>_<locale> (here over Foundation's ICU-backed compare).
            let name: String
            if unicode {
                let locale = (opts["LOCALE"] as? String) ?? ""
                guard locale.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" }) else { throw Self.invalid("Invalid collation locale '\(locale)'") }
                name = "LCUnicode_\(caseSensitive ? "C" : "_")\(diacSensitive ? "D" : "_")_\(locale)"
                collations.insert(name)
            } else {
                name = caseSensitive ? "BINARY" : "NOCASE"
            }
            let saved = (collationFlags, collation)
            collationFlags = flags
            collation = name
            defer { (collationFlags, collation) = saved }
            let inner = try expr(args[1])
            // Attached to the value too, so `ORDER BY x COLLATE …`, min() and max() use it.
            return "(\(inner) COLLATE \(name))"
        case "_.":
            try argCount(a, 2...2, rawOp)
            guard let path = args[1] as? String else { throw Self.invalid("'_.' needs a path string") }
            if let m = args[0] as? [Any], (m.first as? String)?.lowercased() == "meta()" {
                let alias = m.count > 1 ? m[1] as? String : nil
                let source = try source(named: alias)
                let key = path.hasPrefix(".") ? String(path.dropFirst()) : path
                guard let meta = Self.metaKeys["_" + key] ?? Self.metaKeys[key] else { throw Self.invalid("Unknown meta() property '\(key)'") }
                return metaSQL(meta.column, source)
            }
            let p = try PropertyPath(parsing: path)
            return "fl_nested_value(\(try expr(args[0])), \(Self.stringLiteral(p.string)))"
        case "SELECT":
            return try subquery(a)
        case "ANY", "EVERY", "ANY AND EVERY":
            try argCount(a, 3...3, rawOp)
            guard let name = args[0] as? String, !name.isEmpty else { throw Self.invalid("\(op) needs a variable name") }
            let each = try eachArguments(args[1])
            let alias = "_v\(variables.count + 1)_\(nextAlias)"
            nextAlias += 1
            let saved = variables[name]
            variables[name] = alias
            defer { variables[name] = saved }
            let predicate = try expr(args[2])
            let anyMatch = "EXISTS (SELECT 1 FROM fl_each(\(each)) AS \(alias) WHERE \(predicate))"
            let everyMatch = "(NOT EXISTS (SELECT 1 FROM fl_each(\(each)) AS \(alias) WHERE NOT (\(predicate))))"
            switch op {
            case "ANY": return anyMatch
            case "EVERY": return everyMatch
            default: return "(EXISTS (SELECT 1 FROM fl_each(\(each))) AND \(everyMatch))"
            }
        case "BLOB":
            throw CouchbaseLiteError(.unimplemented, "\(op) is not supported yet")
        default:
            throw Self.invalid("Unknown operator '\(rawOp)'")
        }
    }

    var collateSuffix: String { collation.map { " COLLATE \($0)" } ?? "" }

    static func parameterName(_ name: String) -> String {
        "p_" + name.unicodeScalars.map { CharacterSet.alphanumerics.contains($0) && $0.isASCII ? String($0) : "_\($0.value)_" }.joined()
    }

    mutating func function(_ name: String, _ args: [Any]) throws -> String {
        if let agg = N1QLFunctionTable.aggregates[name] {
            guard (agg.min...agg.max).contains(args.count) else { throw Self.invalid("Wrong number of arguments to \(name)(): \(args.count)") }
            if args.isEmpty { return "count(*)" }
            // count(*) counts rows: no need to read (and decode) every body as count(fl_root(body)) would.
            if name == "count", let star = args[0] as? [Any], star.count == 1, star[0] as? String == "." { return "count(*)" }
            return "\(agg.sql)(\(try expr(args[0])))"
        }
        if N1QLFunctionTable.notYetSupported.contains(name) {
            throw CouchbaseLiteError(.unimplemented, "The function \(name)() is not supported yet")
        }
        guard let f = N1QLFunctionTable.lookup(name) else {
            throw Self.invalid("Unknown function '\(name)()'")
        }
        guard (f.minArgs...f.maxArgs).contains(args.count) else {
            throw Self.invalid("Wrong number of arguments to \(name)(): \(args.count) (expected \(f.minArgs == f.maxArgs ? "\(f.minArgs)" : "\(f.minArgs)–\(f.maxArgs)"))")
        }
        // Array functions on a property read it in place instead of copying the array out.
        if name == "array_count" || name == "array_length",
           let p = args[0] as? [Any], let head = p.first as? String, head.hasPrefix("."), head != "." || p.count > 1 {
            let (base, path) = try propertyBase(p)
            return "fl_count(\(base), \(Self.stringLiteral(path)))"
        }
        var sqlArgs = try args.map { try expr($0) }
        if name == "contains", collationFlags != 0 { sqlArgs.append(String(collationFlags)) }
        return "n1ql_\(name)(\(sqlArgs.joined(separator: ", ")))"
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
    func propertyComponents(_ a: [Any]) throws -> [PropertyPath.Component] {
        guard let head = a.first as? String, head.hasPrefix(".") else { throw Self.invalid("Not a property") }
        var comps = try PropertyPath(parsing: head).components
        for item in a.dropFirst() {
            if let s = item as? String {
                comps.append(.key(s))
            } else if let idx = item as? [Any], idx.count == 1, let n = (idx[0] as? NSNumber)?.intValue {
                comps.append(.index(n))
            } else {
                throw Self.invalid("Invalid property path component \(item)")
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
    mutating func propertyBase(_ a: [Any]) throws -> (String, String) {
        let comps = try propertyComponents(a)
        if let (s, rest) = splitSource(comps) {
            return (s.kind == .collection ? "\(s.prefix)body" : "\(s.prefix)value", PropertyPath(rest).string)
        }
        return ("\(sources[0].prefix)body", PropertyPath(comps).string)
    }

    mutating func property(_ a: [Any]) throws -> String {
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
    mutating func subquery(_ a: [Any]) throws -> String {
        guard a.count == 2, let q = a[1] as? [String: Any] else { throw Self.invalid("SELECT needs a query object") }
        var nested = QueryTranslator(table: table, deletedTable: deletedTable, resolver: resolver)
        let out = try nested.translate(q)
        parameters.formUnion(out.parameters)
        collations.formUnion(out.collations)
        usesExpiration = usesExpiration || out.usesExpiration
        subqueryKeyStores.formUnion(out.keyStores)
        return "(\(out.sql))"
    }
}
