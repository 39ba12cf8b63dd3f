import Foundation
import JSONCore

/// The operators of LiteCore's JSON query language (spec 9.1), one table row each: how many
/// operands it takes and the SQL it is written as (LiteCore's `QueryParserTables.hh` +
/// `QueryParser.cc`). Functions (`name()`) have their own rows in ``N1QLFunctions``.
extension QueryTranslator {
    /// One operator occurrence: the operator as written, upper-cased, and its operands.
    struct OperatorCall {
        let op: String
        let raw: String
        let args: [QueryTree]
    }

    /// An operator's row: operand counts (`max` nil: any number) and its SQL writer.
    struct Operator: Sendable {
        let min: Int
        let max: Int?
        let write: @Sendable (inout QueryTranslator, OperatorCall) throws -> String
    }

    /// Every operator, by its upper-cased name.
    static let operators: [String: Operator] = {
        var t: [String: Operator] = [:]
        func add(_ names: String, _ min: Int, _ max: Int?,
                 _ write: @escaping @Sendable (inout QueryTranslator, OperatorCall) throws -> String) {
            for name in names.split(separator: ",") { t[String(name)] = Operator(min: min, max: max, write: write) }
        }
        add("=,==,!=,<>,<,<=,>,>=,IS,IS NOT", 2, 2) { try $0.comparison($1) }
        add("+,*,/,%,||", 2, 2) { t, c in "(\(try t.expr(c.args[0])) \(c.op) \(try t.expr(c.args[1])))" }
        add("-", 1, 2) { t, c in
            c.args.count == 1 ? "(- \(try t.expr(c.args[0])))" : "(\(try t.expr(c.args[0])) - \(try t.expr(c.args[1])))"
        }
        add("AND,OR", 1, nil) { t, c in "(" + (try c.args.map { try t.expr($0) }).joined(separator: " \(c.op) ") + ")" }
        add("NOT", 1, 1) { t, c in "(NOT \(try t.expr(c.args[0])))" }
        add("MISSING", 0, nil) { _, _ in "NULL" }
        add("IS VALUED", 1, 1) { t, c in "fl_is_valued(\(try t.expr(c.args[0])))" }
        add("EXISTS", 1, 1) { try $0.exists($1) }
        add("BETWEEN", 3, 3) { t, c in
            "(\(try t.expr(c.args[0]))\(t.collateSuffix) BETWEEN \(try t.expr(c.args[1])) AND \(try t.expr(c.args[2])))"
        }
        add("IN,NOT IN", 2, 2) { try $0.membership($1) }
        add("LIKE,NOT LIKE", 2, 3) { try $0.like($1) }
        add("[]", 0, nil) { t, c in "fl_array(\(try c.args.map { try t.valueExpr($0) }.joined(separator: ", ")))" }
        add("CASE", 3, nil) { try $0.caseExpression($1) }
        add("COLLATE", 2, 2) { try $0.collate($1) }
        add("_.", 2, 2) { try $0.nestedProperty($1) }
        add("SELECT", 0, nil) { t, c in try t.subquery(c.args) }
        add("ANY,EVERY,ANY AND EVERY", 3, 3) { try $0.quantified($1) }
        add("BLOB", 0, nil) { _, c in throw CouchbaseLiteError(.unimplemented, "\(c.op) is not supported yet") }
        return t
    }()

    /// `["op", operands…]` as SQL, through the operator's row (arity checked first).
    mutating func writeOperator(_ rawOp: String, _ args: [QueryTree]) throws -> String {
        let op = rawOp.uppercased()
        guard let row = Self.operators[op] else { throw Self.invalid("Unknown operator '\(rawOp)'") }
        guard args.count >= row.min, row.max.map({ args.count <= $0 }) ?? true else {
            if op == "CASE" { throw Self.invalid("CASE needs a value, WHEN and THEN") }
            if op == "AND" || op == "OR" { throw Self.invalid("\(op) needs operands") }
            throw Self.invalid("Wrong number of arguments to \(rawOp): \(args.count)")
        }
        return try row.write(&self, OperatorCall(op: op, raw: rawOp, args: args))
    }

    // MARK: Writers

    mutating func comparison(_ c: OperatorCall) throws -> String {
        let sqlOp = ["==": "=", "<>": "!="][c.op] ?? c.op
        if c.op == "IS" || c.op == "IS NOT", c.args[1].upperOperator == "MISSING" {
            return "(\(try expr(c.args[0])) \(c.op == "IS" ? "IS NULL" : "IS NOT NULL"))"
        }
        // `x IS NOT null` is false for MISSING too (LiteCore; QueryTest "COUNT with IS NOT null").
        if c.op == "IS NOT", c.args[1] == .null {
            return "fl_is_valued(\(try expr(c.args[0])))"
        }
        return "(\(try expr(c.args[0]))\(collateSuffix) \(sqlOp) \(try expr(c.args[1])))"
    }

    mutating func exists(_ c: OperatorCall) throws -> String {
        if c.args[0].isOperation(prefixed: ".") {
            let (base, path) = try propertyBase(c.args[0])
            return "fl_exists(\(base), \(Self.stringLiteral(path)))"
        }
        if case (let op, let sub)? = c.args[0].operation, op.uppercased() == "SELECT" {
            return "EXISTS \(try subquery(sub))"
        }
        throw Self.invalid("EXISTS needs a property or a subquery")
    }

    /// `x IN [list]` is SQL's IN; `x IN property` reads the array in place (`fl_contains`).
    mutating func membership(_ c: OperatorCall) throws -> String {
        let lhs = try expr(c.args[0])
        if case ("[]", let list)? = c.args[1].operation {
            let items = try list.map { try expr($0) }
            return "(\(lhs)\(collateSuffix) \(c.op) (\(items.joined(separator: ", "))))"
        }
        if c.args[1].upperOperator == "SELECT" {
            throw CouchbaseLiteError(.unimplemented, "\(c.op) over a subquery is not supported")
        }
        let contains: String
        if c.args[1].isOperation(prefixed: ".") {
            let (base, path) = try propertyBase(c.args[1])
            contains = "fl_contains(\(base), \(Self.stringLiteral(path)), \(lhs))"
        } else {
            contains = "n1ql_array_contains(\(try expr(c.args[1])), \(lhs))"
        }
        return c.op == "IN" ? contains : "(NOT \(contains))"
    }

    mutating func like(_ c: OperatorCall) throws -> String {
        let like: String
        if c.args.count == 2, collation == nil || collation == "BINARY" {
            // LiteCore (CBL-890): SQLite's own LIKE under `PRAGMA case_sensitive_like` (set when
            // the file opens), so a literal prefix is searched in an index on the left side.
            like = "(\(try expr(c.args[0]))\(collateSuffix) LIKE \(try expr(c.args[1])) ESCAPE '\\')"
        } else {
            like = "fl_like(\(try expr(c.args[0])), \(try expr(c.args[1])), \(collationFlags))"
        }
        return c.op == "LIKE" ? like : "(NOT \(like))"
    }

    mutating func caseExpression(_ c: OperatorCall) throws -> String {
        let args = c.args
        var sql = "CASE"
        if args[0] != .null { sql += " " + (try expr(args[0])) }
        var i = 1
        while i + 1 < args.count {
            sql += " WHEN \(try expr(args[i])) THEN \(try expr(args[i + 1]))"
            i += 2
        }
        if i < args.count { sql += " ELSE \(try expr(args[i]))" }
        return sql + " END"
    }

    mutating func collate(_ c: OperatorCall) throws -> String {
        guard let spec = c.args[0].objectValue else { throw Self.invalid("COLLATE needs an options object") }
        var opts: [String: QueryTree] = [:]
        for (k, v) in spec { opts[k.uppercased()] = v }
        func flag(_ key: String, _ absent: Bool) -> Bool {
            if case .bool(let b)? = opts[key] { return b }
            return absent
        }
        let unicode = flag("UNICODE", false)
        let caseSensitive = flag("CASE", true)
        let diacSensitive = flag("DIAC", true)
        var flags = 0
        if !caseSensitive { flags |= LikeMatcher.caseInsensitive }
        if unicode, !diacSensitive { flags |= LikeMatcher.diacriticInsensitive }
        // Spec 9.3: non-Unicode = SQLite BINARY/NOCASE; Unicode = LiteCore's
        // LCUnicode_<C|_><D|_>_<locale> (here over Foundation's ICU-backed compare).
        let name: String
        if unicode {
            let locale = opts["LOCALE"]?.stringValue ?? ""
            guard locale.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" }) else {
                throw Self.invalid("Invalid collation locale '\(locale)'")
            }
            name = "LCUnicode_\(caseSensitive ? "C" : "_")\(diacSensitive ? "D" : "_")_\(locale)"
            collations.insert(name)
        } else {
            name = caseSensitive ? "BINARY" : "NOCASE"
        }
        let saved = (collationFlags, collation)
        collationFlags = flags
        collation = name
        defer { (collationFlags, collation) = saved }
        let inner = try expr(c.args[1])
        // Attached to the value too, so `ORDER BY x COLLATE …`, min() and max() use it.
        return "(\(inner) COLLATE \(name))"
    }

    /// `["_.", value, path]`: a path into a computed value, or `meta().key`.
    mutating func nestedProperty(_ c: OperatorCall) throws -> String {
        guard let path = c.args[1].stringValue else { throw Self.invalid("'_.' needs a path string") }
        if case (let m, let metaArgs)? = c.args[0].operation, m.lowercased() == "meta()" {
            let alias = metaArgs.first?.stringValue
            let source = try source(named: alias)
            let key = path.hasPrefix(".") ? String(path.dropFirst()) : path
            guard let meta = Self.metaKeys["_" + key] ?? Self.metaKeys[key] else { throw Self.invalid("Unknown meta() property '\(key)'") }
            return metaSQL(meta.column, source)
        }
        let p = try PropertyPath(parsing: path)
        return "fl_nested_value(\(try expr(c.args[0])), \(Self.stringLiteral(p.string)))"
    }

    /// ANY / EVERY / ANY AND EVERY over `fl_each`, as LiteCore's `anyEveryOp` writes them.
    mutating func quantified(_ c: OperatorCall) throws -> String {
        let args = c.args
        guard let name = args[0].stringValue, !name.isEmpty else { throw Self.invalid("\(c.op) needs a variable name") }
        let each = try eachArguments(args[1])
        let alias = "_v\(variables.count + 1)_\(nextAlias)"
        nextAlias += 1
        let saved = variables[name]
        variables[name] = alias
        defer { variables[name] = saved }
        let predicate = try expr(args[2])
        let anyMatch = "EXISTS (SELECT 1 FROM fl_each(\(each)) AS \(alias) WHERE \(predicate))"
        // LiteCore: `ANY v IN a SATISFIES v = value` is `fl_contains(a, value)`, no subquery. Ours
        // answers 1/0 for an array only (LiteCore's also looks in a dict's values): anything else
        // (a dict, JSON null) falls back to the subquery, which MISSING makes false.
        if c.op == "ANY", collation == nil, case ("=", let p)? = args[2].operation, p.count == 2,
           !p[1].mentionsVariable, p[0].isOperation(prefixed: "?"),
           (try? variableComponents(p[0])).map({ $0.0 == name && $0.1.isEmpty }) == true {
            return "CASE fl_contains(\(each), \(try expr(p[1]))) WHEN 1 THEN 1 WHEN 0 THEN 0 ELSE \(anyMatch) END"
        }
        let everyMatch = "(NOT EXISTS (SELECT 1 FROM fl_each(\(each)) AS \(alias) WHERE NOT (\(predicate))))"
        switch c.op {
        case "ANY": return anyMatch
        case "EVERY": return everyMatch
        default:
            // LiteCore: `fl_count(a) > 0` for a property (read in place), else a non-empty fl_each.
            var nonEmpty = "EXISTS (SELECT 1 FROM fl_each(\(each)))"
            if case (let head, let rest)? = args[1].operation, head.hasPrefix("."), head != "." || !rest.isEmpty {
                nonEmpty = "fl_count(\(each)) > 0"
            }
            return "(\(nonEmpty) AND \(everyMatch))"
        }
    }
}

extension QueryTree {
    /// Whether the expression reads an ANY/EVERY variable (`["?v", …]`) anywhere.
    var mentionsVariable: Bool {
        switch self {
        case .array(let items):
            if case .string(let op)? = items.first, op.hasPrefix("?") { return true }
            return items.contains(where: \.mentionsVariable)
        case .object(let d): return d.contains { $0.value.mentionsVariable }
        default: return false
        }
    }
}
