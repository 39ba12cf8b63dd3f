import Foundation
import JSONCore

/// Turns N1QL (SQL++) text into LiteCore's JSON query tree (spec 9.1), the form every query is run from.
///
/// A hand-written recursive-descent parser of the spec 9.2 subset; binary operators are parsed by
/// precedence climbing, each level left-associative (`3 - 4 - 5` is `["-", ["-", 3, 4], 5]`, as LiteCore).
/// The tree is built as `JSONValue` nodes, the form the translator reads.
public enum N1QLParser {
    /// Parses a `SELECT` statement into the query dictionary (`WHAT`, `FROM`, `WHERE`, …), as
    /// Foundation values (`[String: Any]`, `[Any]`, `Int`, `Double`, `Bool`, `NSNull`).
    public static func parse(_ text: String) throws -> [String: Any] {
        try parseTree(text).foundation
    }

    /// Parses a single expression (as index definitions and `ValueIndexConfiguration` give them),
    /// as Foundation values.
    public static func parseExpression(_ text: String) throws -> Any {
        try parseExpressionTree(text).foundation
    }

    /// Parses a `SELECT` statement into the query object (`WHAT`, `FROM`, `WHERE`, …).
    package static func parseTree(_ text: String) throws -> JSONObject {
        var parser = try N1QLParserState(text)
        let query = try parser.selectStatement(terminator: nil)
        _ = parser.acceptSymbol(";")
        try parser.expectEnd("end of query")
        return query
    }

    /// Parses a single expression into its tree.
    package static func parseExpressionTree(_ text: String) throws -> JSONValue {
        var parser = try N1QLParserState(text)
        let expression = try parser.expression()
        try parser.expectEnd("an operator or end of expression")
        return expression
    }

    /// How deeply expressions may nest (parentheses, prefix operators, literals) before the text is
    /// refused: deeper input would only exhaust the stack.
    public static let maximumNesting = 64
}

/// The parse in progress: the tokens, the cursor, and the ANY/EVERY variables in scope.
struct N1QLParserState {
    private let lexer: N1QLLexer
    private let tokens: [N1QLToken]
    private var position = 0
    private var depth = 0
    /// Names bound by enclosing `ANY v IN … SATISFIES`: a path starting with one becomes `?v.path`.
    private var variables: [String] = []

    /// Words that are never identifiers unless back-quoted (`SELECT from` is an error, `` `from` `` a property).
    /// The collation names are among them, which is why `COLLATE UNICODE NOCASE` is rejected
    /// (NOCASE cannot be an alias) while `COLLATE NOCASE FRED` aliases the result as FRED.
    static let reserved: Set<String> = [
        "ALL", "AND", "ANY", "AS", "ASC", "BETWEEN", "BY", "CASE", "COLLATE", "CROSS", "DESC", "DISTINCT",
        "ELSE", "END", "EVERY", "EXISTS", "FALSE", "FROM", "GROUP", "HAVING", "IN", "INNER", "IS", "JOIN",
        "LEFT", "LIKE", "LIMIT", "MISSING", "NATURAL", "NOT", "NULL", "OFFSET", "ON", "OR", "ORDER", "OUTER",
        "RIGHT", "SATISFIES", "SELECT", "SOME", "THEN", "TRUE", "UNNEST", "USING", "WHEN", "WHERE",
        "UNICODE", "NOUNICODE", "NOCASE", "DIAC", "NODIAC",
    ]

    init(_ text: String) throws {
        lexer = N1QLLexer(text)
        tokens = try lexer.tokenize()
    }

    // MARK: - Statement

    /// `SELECT [DISTINCT|ALL] results [FROM …] [WHERE e] [GROUP BY …[HAVING e]] [ORDER BY …] [LIMIT/OFFSET]`.
    mutating func selectStatement(terminator: String?) throws -> JSONObject {
        try expectWord("SELECT")
        var query = JSONObject()
        if acceptWord("DISTINCT") {
            query["DISTINCT"] = true
        } else {
            _ = acceptWord("ALL")
        }
        query["WHAT"] = .array(try commaList { try $0.resultItem() })
        var next = ["FROM", "WHERE", "GROUP BY", "ORDER BY", "LIMIT", "OFFSET"]
        func passed(_ clause: String) {
            if let i = next.firstIndex(of: clause) { next.removeFirst(i + 1) }
        }

        if acceptWord("FROM") {
            query["FROM"] = .array(try fromClause())
            passed("FROM")
        }
        if acceptWord("WHERE") {
            query["WHERE"] = try expression()
            passed("WHERE")
        }
        if acceptWord("GROUP") {
            try expectWord("BY")
            query["GROUP_BY"] = .array(try commaList { try $0.expression() })
            if acceptWord("HAVING") { query["HAVING"] = try expression() }
            passed("GROUP BY")
        }
        if acceptWord("ORDER") {
            try expectWord("BY")
            query["ORDER_BY"] = .array(try commaList { try $0.orderingItem() })
            passed("ORDER BY")
        }
        if acceptWord("LIMIT") {
            query["LIMIT"] = try expression()
            if acceptWord("OFFSET") { query["OFFSET"] = try expression() }
            next = []
        } else if acceptWord("OFFSET") {
            query["OFFSET"] = try expression()
            if acceptWord("LIMIT") { query["LIMIT"] = try expression() }
            next = []
        }
        let atEnd = terminator.map { peek.isSymbol($0) } ?? (peek.kind == .end || peek.isSymbol(";"))
        guard atEnd else {
            // Say what could still have come here: the remaining clauses, then the end.
            let end = terminator.map { "'\($0)'" } ?? "end of query"
            throw failure((["','"] + next + [end]).joined(separator: ", "))
        }
        return query
    }

    private mutating func resultItem() throws -> JSONValue {
        // `*` is an expression like any other in LiteCore's grammar, so it takes an alias too
        // (`SELECT meta().id AS id, * AS data`, the 3.2.3 Codable documentation's query).
        let value: JSONValue = acceptSymbol("*") ? .operationNode(".") : try expression()
        if let alias = try optionalAlias() { return .operationNode("AS", [value, .string(alias)]) }
        return value
    }

    private mutating func orderingItem() throws -> JSONValue {
        let value = try expression()
        if acceptWord("ASC") { return .operationNode("ASC", [value]) }
        if acceptWord("DESC") { return .operationNode("DESC", [value]) }
        return value
    }

    /// `[AS] alias` after a result or a source; without AS, any non-reserved word is taken as the alias.
    private mutating func optionalAlias() throws -> String? {
        if acceptWord("AS") { return try identifier("an alias") }
        if isIdentifier(peek) { return try identifier("an alias") }
        return nil
    }

    // MARK: - FROM

    private mutating func fromClause() throws -> [JSONValue] {
        var sources: [JSONValue] = [.object(try dataSource())]
        while true {
            if acceptWord("UNNEST") {
                var item: JSONObject = ["UNNEST": try expression()]
                if let alias = try optionalAlias() { item["AS"] = .string(Self.escapePathComponent(alias)) }
                sources.append(.object(item))
                continue
            }
            let joinStart = peek
            let kind: String
            if acceptWord("JOIN") {
                kind = "INNER"
            } else if acceptWord("INNER") {
                try expectWord("JOIN")
                kind = "INNER"
            } else if acceptWord("LEFT") {
                kind = acceptWord("OUTER") ? "LEFT OUTER" : "LEFT"
                try expectWord("JOIN")
            } else if acceptWord("CROSS") {
                try expectWord("JOIN")
                kind = "CROSS"
            } else if peek.isWord("RIGHT") || peek.isWord("NATURAL") || peek.isWord("USING") {
                throw failure("JOIN, LEFT JOIN, INNER JOIN, CROSS JOIN or UNNEST",
                              detail: "\(joinStart.text.uppercased()) is not supported (only INNER, LEFT [OUTER] and CROSS joins)")
            } else {
                return sources
            }
            var source = try dataSource()
            source["JOIN"] = .string(kind)
            if acceptWord("ON") { source["ON"] = try expression() }
            sources.append(.object(source))
        }
    }

    /// `[scope.]collection [[AS] alias]` → `{"COLLECTION": c, "SCOPE": s, "AS": alias}`.
    private mutating func dataSource() throws -> JSONObject {
        var name = try identifier("a collection name")
        var source = JSONObject()
        if acceptSymbol(".") {
            source["SCOPE"] = .string(name)
            name = try identifier("a collection name")
        }
        source["COLLECTION"] = .string(name)
        // LiteCore stores the alias as a property-path component, so a dot in it is escaped.
        if let alias = try optionalAlias() { source["AS"] = .string(Self.escapePathComponent(alias)) }
        return source
    }

    // MARK: - Expressions, lowest precedence first

    /// An expression, optionally followed by `COLLATE …`, which wraps everything before it (spec 9.2).
    mutating func expression() throws -> JSONValue {
        var value = try binaryExpression()
        while acceptWord("COLLATE") {
            value = .operationNode("COLLATE", [.object(try collation()), value])
        }
        return value
    }

    /// Binary precedence levels, lowest first (spec 9.2). Each is left-associative.
    private enum Level: Int {
        case or = 1, and, comparison, relational, bitwise, additive, multiplicative, concatenation
    }

    private static let symbolLevels: [String: Level] = [
        "=": .comparison, "==": .comparison, "!=": .comparison, "<>": .comparison,
        "<": .relational, "<=": .relational, ">": .relational, ">=": .relational,
        "<<": .bitwise, ">>": .bitwise, "&": .bitwise, "|": .bitwise,
        "+": .additive, "-": .additive,
        "*": .multiplicative, "/": .multiplicative, "%": .multiplicative,
        "||": .concatenation,
    ]

    private static let wordLevels: [String: Level] = [
        "OR": .or, "AND": .and, "IS": .comparison, "NOT": .comparison, "IN": .comparison,
        "LIKE": .comparison, "BETWEEN": .comparison,
    ]

    private func binaryLevel(of token: N1QLToken) -> Level? {
        switch token.kind {
        case .symbol: return Self.symbolLevels[token.text]
        case .word: return Self.wordLevels[token.text.uppercased()]
        default: return nil
        }
    }

    /// Precedence climbing: one loop per call instead of one function per level keeps the stack
    /// shallow per nesting level (see `N1QLParser.maximumNesting`).
    private mutating func binaryExpression(atLeast minimum: Level = .or) throws -> JSONValue {
        var left = try unary()
        while let level = binaryLevel(of: peek), level.rawValue >= minimum.rawValue {
            let token = peek
            advance()
            if token.kind == .word, level == .comparison {
                left = try comparisonWord(token.text.uppercased(), left)
                continue
            }
            // Operands bind tighter than the operator; concatenation's are unary expressions.
            let right = try Level(rawValue: level.rawValue + 1).map { try binaryExpression(atLeast: $0) } ?? unary()
            switch token.text.uppercased() {
            case "==": left = .operationNode("=", [left, right])
            case "<>": left = .operationNode("!=", [left, right])
            case let op: left = .operationNode(op, [left, right])
            }
        }
        return left
    }

    /// An operand of a comparison: anything binding tighter than `=`.
    private mutating func comparisonOperand() throws -> JSONValue { try binaryExpression(atLeast: .relational) }

    /// `IS [NOT] …`, `NOT NULL`, `[NOT] IN`, `[NOT] LIKE`, `[NOT] BETWEEN a AND b` (the word is consumed).
    private mutating func comparisonWord(_ word: String, _ left: JSONValue) throws -> JSONValue {
        switch word {
        case "IS":
            if acceptWord("NOT") {
                // LiteCore has no IS NOT VALUED operator: it negates IS VALUED.
                return acceptWord("VALUED") ? .operationNode("NOT", [.operationNode("IS VALUED", [left])])
                    : .operationNode("IS NOT", [left, try comparisonOperand()])
            }
            return acceptWord("VALUED") ? .operationNode("IS VALUED", [left]) : .operationNode("IS", [left, try comparisonOperand()])
        case "NOT":
            if acceptWord("NULL") { return .operationNode("IS NOT", [left, .null]) }
            if acceptWord("MISSING") { return .operationNode("IS NOT", [left, .operationNode("MISSING")]) }
            if acceptWord("VALUED") { return .operationNode("IS VALUED", [left]) }
            if acceptWord("IN") { return .operationNode("NOT IN", [left, try inOperand()]) }
            if acceptWord("LIKE") { return .operationNode("NOT", [.operationNode("LIKE", [left, try comparisonOperand()])]) }
            if acceptWord("BETWEEN") { return .operationNode("NOT", [try between(left)]) }
            throw failure("NULL, MISSING, VALUED, IN, LIKE or BETWEEN after NOT")
        case "IN": return .operationNode("IN", [left, try inOperand()])
        case "LIKE": return .operationNode("LIKE", [left, try comparisonOperand()])
        default: return try between(left)
        }
    }

    private mutating func between(_ value: JSONValue) throws -> JSONValue {
        let low = try comparisonOperand()
        try expectWord("AND")
        return .operationNode("BETWEEN", [value, low, try comparisonOperand()])
    }

    /// The right side of IN: `(a, b, …)` is a list like `[a, b, …]`; `(SELECT …)` a subquery.
    private mutating func inOperand() throws -> JSONValue {
        guard peek.isSymbol("(") else { return try comparisonOperand() }
        if peekNext.isWord("SELECT") {
            advance()
            let query = try selectStatement(terminator: ")")
            try expectSymbol(")")
            return .operationNode("SELECT", [.object(query)])
        }
        advance()
        var list: [JSONValue] = ["[]"]
        if !acceptSymbol(")") {
            list += try commaList { try $0.expression() }
            try expectSymbol(")", orList: true)
        }
        return .array(list)
    }

    /// Prefix `-`, `+` and `NOT` bind to the operand right after them (spec 9.2); a minus before a
    /// number literal is part of the literal (`-17` is 17 negated, not `["-", 17]`).
    private mutating func unary() throws -> JSONValue {
        try enterNesting()
        defer { depth -= 1 }
        if peek.isSymbol("-") {
            let next = peekNext
            if next.kind == .integer || next.kind == .float {
                advance()
                advance()
                return try postfix(number(next, negated: true))
            }
            advance()
            return .operationNode("-", [try unary()])
        }
        if acceptSymbol("+") { return try unary() }
        if acceptWord("NOT") { return .operationNode("NOT", [try unary()]) }
        return try primary()
    }

    // MARK: - Primaries

    private mutating func primary() throws -> JSONValue {
        let token = peek
        switch token.kind {
        case .integer, .float:
            advance()
            return try postfix(number(token, negated: false))
        case .string:
            advance()
            return try postfix(.string(token.text))
        case .parameter:
            advance()
            return try postfix(.operationNode("$" + token.text))
        case .quotedWord:
            return try propertyPath()
        case .symbol:
            switch token.text {
            case "(":
                advance()
                let inner = try expression()
                try expectSymbol(")")
                return try postfix(inner)
            case "[":
                advance()
                var array: [JSONValue] = ["[]"]
                if !acceptSymbol("]") {
                    array += try commaList { try $0.expression() }
                    try expectSymbol("]", orList: true)
                }
                return try postfix(.array(array))
            case "{":
                return try postfix(objectLiteral())
            default:
                throw failure("an expression")
            }
        case .word:
            return try wordPrimary(token)
        case .end:
            throw failure("an expression")
        }
    }

    private mutating func wordPrimary(_ token: N1QLToken) throws -> JSONValue {
        let upper = token.text.uppercased()
        let callFollows = peekNext.isSymbol("(")
        switch upper {
        case "TRUE": advance(); return .bool(true)
        case "FALSE": advance(); return .bool(false)
        case "NULL": advance(); return .null
        case "MISSING": advance(); return .operationNode("MISSING")
        case "CASE": return try caseExpression()
        case "ANY", "SOME", "EVERY": return try quantified()
        case "EXISTS":
            advance()
            if peek.isSymbol("("), peekNext.isWord("SELECT") {
                advance()
                let query = try selectStatement(terminator: ")")
                try expectSymbol(")")
                return .operationNode("EXISTS", [.operationNode("SELECT", [.object(query)])])
            }
            return .operationNode("EXISTS", [try unary()])
        case "META" where callFollows:
            advance()
            advance()
            var meta: [JSONValue] = ["meta()"]
            if !peek.isSymbol(")") { meta.append(.string(try identifier("a collection alias or ')'"))) }
            try expectSymbol(")")
            return try postfix(.array(meta))
        case "MATCH" where callFollows:
            advance()
            advance()
            let index = try indexName()
            try expectSymbol(",")
            let text = try expression()
            try expectSymbol(")")
            return .operationNode("MATCH()", [.string(index), text])
        case "RANK" where callFollows:
            advance()
            advance()
            let index = try indexName()
            try expectSymbol(")")
            return try postfix(.operationNode("RANK()", [.string(index)]))
        case "PREDICTION" where callFollows:
            advance()
            advance()
            var call: [JSONValue] = ["PREDICTION()", .string(try identifier("a model name"))]
            while acceptSymbol(",") { call.append(try expression()) }
            try expectSymbol(")", orList: true)
            guard call.count == 3 || call.count == 4 else {
                throw failure("')'", at: token, detail: "PREDICTION() takes 2 or 3 arguments, got \(call.count - 1)")
            }
            return try postfix(.array(call))
        default:
            if callFollows { return try functionCall(token) }
            if Self.reserved.contains(upper) { throw failure("an expression") }
            return try propertyPath()
        }
    }

    private mutating func functionCall(_ name: N1QLToken) throws -> JSONValue {
        guard let arity = N1QLFunctions.arity(of: name.text.lowercased()) else {
            throw failure("a function name", detail: "unknown function '\(name.text)'")
        }
        advance()
        advance()
        // LiteCore keeps the name as written and marks it as a call with "()" (`COUNT()`, `pi()`).
        var call: [JSONValue] = [.string(name.text + "()")]
        if !acceptSymbol(")") {
            call += try commaList { parser in
                // `count(*)` and `count(db.*)` count rows: the argument is the whole document.
                if parser.acceptSymbol("*") { return .operationNode(".") }
                return try parser.expression()
            }
            try expectSymbol(")", orList: true)
        }
        guard arity.accepts(call.count - 1) else {
            throw failure("a call with \(arity.text) argument(s)", at: name,
                          detail: "function '\(name.text)' takes \(arity.text) argument(s), got \(call.count - 1)")
        }
        return try postfix(.array(call))
    }

    /// `CASE [value] WHEN w THEN t … [ELSE e] END` → `["CASE", value|null, w, t, …, e?]`.
    private mutating func caseExpression() throws -> JSONValue {
        advance()
        var result: [JSONValue] = ["CASE"]
        result.append(peek.isWord("WHEN") ? .null : try expression())
        guard peek.isWord("WHEN") else { throw failure("WHEN") }
        while acceptWord("WHEN") {
            result.append(try expression())
            try expectWord("THEN")
            result.append(try expression())
        }
        if acceptWord("ELSE") { result.append(try expression()) }
        try expectWord("END", alternatives: "WHEN, ELSE or END")
        return try postfix(.array(result))
    }

    /// `ANY|SOME|EVERY|ANY AND EVERY v IN array SATISFIES predicate END`.
    private mutating func quantified() throws -> JSONValue {
        var op = peek.text.uppercased() == "EVERY" ? "EVERY" : "ANY"
        advance()
        if op == "ANY", acceptWord("AND") {
            try expectWord("EVERY")
            op = "ANY AND EVERY"
        }
        let variable = try identifier("a variable name")
        try expectWord("IN")
        let array = try expression()
        try expectWord("SATISFIES")
        variables.append(variable)
        let predicate = try expression()
        variables.removeLast()
        try expectWord("END")
        return .operationNode(op, [.string(variable), array, predicate])
    }

    private mutating func objectLiteral() throws -> JSONValue {
        advance()
        var object = JSONObject()
        if acceptSymbol("}") { return .object(object) }
        repeat {
            let key: String
            switch peek.kind {
            case .string, .quotedWord:
                key = peek.text
                advance()
            case .word where !Self.reserved.contains(peek.text.uppercased()):
                key = peek.text
                advance()
            default:
                throw failure("a property name (string) in the object literal")
            }
            try expectSymbol(":")
            object[key] = try expression()
        } while acceptSymbol(",")
        try expectSymbol("}", orList: true)
        return .object(object)
    }

    /// The name of an FTS index in MATCH()/RANK(): identifiers joined by dots, never a string.
    private mutating func indexName() throws -> String {
        var name = Self.escapePathComponent(try identifier("an index name (an identifier, not a string)"))
        while acceptSymbol(".") {
            name += "." + Self.escapePathComponent(try identifier("an index name component"))
        }
        return name
    }

    // MARK: - Paths

    /// `name(.name | [n])*` and `alias.*` → `[".a.b[0]"]`, or `["?v.b"]` when `name` is an ANY variable.
    private mutating func propertyPath() throws -> JSONValue {
        let first = try identifier("a property name")
        var rest = ""
        if try pathSuffix(into: &rest) {
            return .operationNode("." + Self.escapePathComponent(first) + rest + ".")       // `alias.*`
        }
        if variables.contains(first) { return .operationNode("?" + first + rest) }
        return .operationNode("." + Self.escapePathComponent(first) + rest)
    }

    /// `.path` / `[n]` after any other primary: `["_.", value, ".path"]` (meta().id, {…}.x, f(x)[0]).
    private mutating func postfix(_ value: JSONValue) throws -> JSONValue {
        guard peek.isSymbol("[") || (peek.isSymbol(".") && isPathComponent(peekNext)) else { return value }
        var path = ""
        if try pathSuffix(into: &path) { throw failure("a property name", at: tokens[position - 1]) }
        return .operationNode("_.", [value, .string(path)])
    }

    /// Appends `.name` and `[n]` components; returns true when the path ended in `.*`.
    private mutating func pathSuffix(into path: inout String) throws -> Bool {
        while true {
            if peek.isSymbol(".") {
                let next = peekNext
                if next.isSymbol("*") {
                    advance()
                    advance()
                    return true
                }
                guard isPathComponent(next) else { advance(); throw failure("a property name or '*' after '.'") }
                advance()
                advance()
                path += "." + Self.escapePathComponent(next.text)
            } else if peek.isSymbol("[") {
                advance()
                let negative = acceptSymbol("-")
                guard peek.kind == .integer, let index = Int(peek.text) else {
                    throw failure("an integer array index")
                }
                advance()
                try expectSymbol("]")
                path += "[\(negative ? -index : index)]"
            } else {
                return false
            }
        }
    }

    /// After a dot any word names a property, keywords included (`person.like` is unambiguous).
    private func isPathComponent(_ token: N1QLToken) -> Bool {
        token.kind == .word || token.kind == .quotedWord
    }

    /// A property-path component as LiteCore writes it: `.`, `$`, `[` and `\` escaped with `\`.
    static func escapePathComponent(_ name: String) -> String {
        var out = ""
        out.reserveCapacity(name.utf8.count)
        for scalar in name.unicodeScalars {
            if scalar == "." || scalar == "$" || scalar == "[" || scalar == "\\" { out.unicodeScalars.append("\\") }
            out.unicodeScalars.append(scalar)
        }
        return out
    }

    // MARK: - Collation

    /// `UNICODE[:locale] | NOUNICODE | CASE | NOCASE | DIAC | NODIAC`, or a parenthesised list of them.
    private mutating func collation() throws -> JSONObject {
        var options = JSONObject()
        if acceptSymbol("(") {
            try collationOption(into: &options)
            while !acceptSymbol(")") {
                guard Self.isCollationWord(peek) else { throw failure("a collation (UNICODE, NOUNICODE, CASE, NOCASE, DIAC, NODIAC) or ')'") }
                try collationOption(into: &options)
            }
        } else {
            try collationOption(into: &options)
        }
        return options
    }

    private mutating func collationOption(into options: inout JSONObject) throws {
        guard Self.isCollationWord(peek) else { throw failure("a collation (UNICODE, NOUNICODE, CASE, NOCASE, DIAC, NODIAC)") }
        let word = peek.text.uppercased()
        advance()
        switch word {
        case "UNICODE":
            options["UNICODE"] = true
            if acceptSymbol(":") {
                guard peek.kind == .word else { throw failure("a locale name after 'UNICODE:'") }
                options["LOCALE"] = .string(peek.text)
                advance()
            }
        case "NOUNICODE": options["UNICODE"] = false
        case "CASE": options["CASE"] = true
        case "NOCASE": options["CASE"] = false
        case "DIAC": options["DIAC"] = true
        default: options["DIAC"] = false
        }
    }

    private static func isCollationWord(_ token: N1QLToken) -> Bool {
        token.kind == .word && ["UNICODE", "NOUNICODE", "CASE", "NOCASE", "DIAC", "NODIAC"].contains(token.text.uppercased())
    }

    // MARK: - Literals

    private func number(_ token: N1QLToken, negated: Bool) throws -> JSONValue {
        if token.kind == .integer, let magnitude = UInt64(token.text) {
            if negated {
                if magnitude == UInt64(Int64.max) + 1 { return .int(Int64.min) }
                if magnitude <= UInt64(Int64.max) { return .int(-Int64(magnitude)) }
            } else if magnitude <= UInt64(Int64.max) {
                return .int(Int64(magnitude))
            }
        }
        // Fractions, exponents, and integers beyond Int64 are doubles.
        guard let value = Double(token.text) else { throw failure("a number", at: token) }
        return .double(negated ? -value : value)
    }

    // MARK: - Token helpers

    private var peek: N1QLToken { tokens[position] }
    private var peekNext: N1QLToken { tokens[min(position + 1, tokens.count - 1)] }

    private mutating func advance() {
        if position < tokens.count - 1 { position += 1 }
    }

    private mutating func enterNesting() throws {
        depth += 1
        if depth > N1QLParser.maximumNesting {
            throw failure("less deeply nested expression",
                          detail: "expression nested more than \(N1QLParser.maximumNesting) levels deep")
        }
    }

    mutating func acceptWord(_ keyword: String) -> Bool {
        guard peek.isWord(keyword) else { return false }
        advance()
        return true
    }

    mutating func acceptSymbol(_ symbol: String) -> Bool {
        guard peek.isSymbol(symbol) else { return false }
        advance()
        return true
    }

    private mutating func expectWord(_ keyword: String, alternatives: String? = nil) throws {
        guard acceptWord(keyword) else { throw failure(alternatives ?? keyword) }
    }

    private mutating func expectSymbol(_ symbol: String, orList: Bool = false) throws {
        guard acceptSymbol(symbol) else { throw failure(orList ? "',' or '\(symbol)'" : "'\(symbol)'") }
    }

    func expectEnd(_ expected: String) throws {
        guard peek.kind == .end else { throw failure(expected) }
    }

    private func isIdentifier(_ token: N1QLToken) -> Bool {
        token.kind == .quotedWord || (token.kind == .word && !Self.reserved.contains(token.text.uppercased()))
    }

    /// A name: a non-reserved word, or any back-quoted one.
    private mutating func identifier(_ what: String) throws -> String {
        guard isIdentifier(peek) else {
            let hint = peek.kind == .word ? " (back-quote a keyword to use it as a name)" : ""
            throw failure(what + hint)
        }
        let name = peek.text
        advance()
        return name
    }

    private mutating func commaList(_ item: (inout N1QLParserState) throws -> JSONValue) throws -> [JSONValue] {
        var items = [try item(&self)]
        while acceptSymbol(",") { items.append(try item(&self)) }
        return items
    }

    private func failure(_ expected: String, at token: N1QLToken? = nil, detail: String? = nil) -> N1QLSyntaxError {
        let token = token ?? peek
        let (line, column) = lexer.location(of: token.start)
        return N1QLSyntaxError(offset: token.start, line: line, column: column,
                               expected: expected, found: token.display, detail: detail)
    }
}
