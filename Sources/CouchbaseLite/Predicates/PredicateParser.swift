import Foundation

/// A parsed predicate (the subset of the `NSPredicate` format language listed on
/// `NSPredicate(format:_:)`), with its arguments already substituted.
indirect enum PredicateNode {
    case constant(Bool)
    case not(PredicateNode)
    case and(PredicateNode, PredicateNode)
    case or(PredicateNode, PredicateNode)
    case comparison(PredicateComparison)
}

/// `[ANY|ALL|NONE] lhs op[options] rhs`.
struct PredicateComparison {
    enum Quantifier { case direct, any, all, none }
    enum Operator: String {
        case equal = "==", notEqual = "!=", less = "<", lessOrEqual = "<=", greater = ">", greaterOrEqual = ">="
        case beginsWith = "BEGINSWITH", endsWith = "ENDSWITH", contains = "CONTAINS", like = "LIKE"
        case matches = "MATCHES", isIn = "IN", between = "BETWEEN"
    }

    var quantifier: Quantifier
    var lhs: PredicateExpression
    var op: Operator
    var caseInsensitive: Bool
    var diacriticInsensitive: Bool
    var rhs: PredicateExpression
    /// The compiled regular expression when `op` is `MATCHES` and the pattern is a constant.
    var regex: NSRegularExpression?
}

/// An operand: a key path into the evaluated object, or a constant.
enum PredicateExpression {
    /// `SELF` is the empty path.
    case keyPath([String])
    case constant(Any?)
    case list([PredicateExpression])
}

/// Turns a format string and its arguments into a ``PredicateNode``.
struct PredicateParser {
    enum Token: Equatable {
        case identifier(String)      // key path component or keyword (case kept)
        case string(String)
        case number(Double, isInteger: Bool)
        case symbol(String)          // == != <= ( ) { } , . etc.
        case options(String)         // [cd]
        case format(String)          // %@ %K %d …
        case end
    }

    let format: String
    var tokens: [(token: Token, offset: Int)] = []
    private var index = 0
    private var arguments: [Any]
    private var argumentIndex = 0

    static func parse(_ format: String, arguments: [Any]) throws -> PredicateNode {
        var parser = PredicateParser(format: format, arguments: arguments)
        try parser.tokenize()
        let node = try parser.parseOr()
        guard case .end = parser.current else { throw parser.error("unexpected \(parser.describeCurrent) after the predicate") }
        return node
    }

    private init(format: String, arguments: [Any]) {
        self.format = format
        self.arguments = arguments
    }

    // MARK: Errors

    func error(_ message: String, at offset: Int? = nil) -> CBLPredicateError {
        CBLPredicateError(message: message, format: format, offset: offset ?? tokens[min(index, tokens.count - 1)].offset)
    }

    private var describeCurrent: String {
        switch current {
        case .identifier(let s): return "'\(s)'"
        case .string(let s): return "string '\(s)'"
        case .number(let d, _): return "number \(d)"
        case .symbol(let s): return "'\(s)'"
        case .options(let s): return "'[\(s)]'"
        case .format(let s): return "'\(s)'"
        case .end: return "end of format"
        }
    }

    // MARK: Grammar

    private var current: Token { tokens[index].token }

    private mutating func advance() { if index < tokens.count - 1 { index += 1 } }

    private func isKeyword(_ word: String) -> Bool {
        if case .identifier(let s) = current { return s.uppercased() == word }
        return false
    }

    private mutating func accept(keyword word: String) -> Bool {
        guard isKeyword(word) else { return false }
        advance()
        return true
    }

    private mutating func accept(symbol: String) -> Bool {
        guard current == .symbol(symbol) else { return false }
        advance()
        return true
    }

    private mutating func parseOr() throws -> PredicateNode {
        var node = try parseAnd()
        while accept(keyword: "OR") || accept(symbol: "||") {
            node = .or(node, try parseAnd())
        }
        return node
    }

    private mutating func parseAnd() throws -> PredicateNode {
        var node = try parseNot()
        while accept(keyword: "AND") || accept(symbol: "&&") {
            node = .and(node, try parseNot())
        }
        return node
    }

    private mutating func parseNot() throws -> PredicateNode {
        if accept(keyword: "NOT") || accept(symbol: "!") { return .not(try parseNot()) }
        return try parsePrimary()
    }

    private mutating func parsePrimary() throws -> PredicateNode {
        if accept(keyword: "TRUEPREDICATE") { return .constant(true) }
        if accept(keyword: "FALSEPREDICATE") { return .constant(false) }
        if current == .symbol("(") {
            // A parenthesised predicate (an operand never starts with '(' in this subset).
            advance()
            let node = try parseOr()
            guard accept(symbol: ")") else { throw error("expected ')'") }
            return node
        }
        return try parseComparison()
    }

    private mutating func parseComparison() throws -> PredicateNode {
        var quantifier = PredicateComparison.Quantifier.direct
        if accept(keyword: "ANY") || accept(keyword: "SOME") {
            quantifier = .any
        } else if accept(keyword: "ALL") {
            quantifier = .all
        } else if accept(keyword: "NONE") {
            quantifier = .none
        }
        let lhs = try parseExpression()
        let opOffset = tokens[index].offset
        var negate = false
        let op: PredicateComparison.Operator
        switch current {
        case .symbol("=="), .symbol("="): op = .equal
        case .symbol("!="), .symbol("<>"): op = .notEqual
        case .symbol("<"): op = .less
        case .symbol("<="), .symbol("=<"): op = .lessOrEqual
        case .symbol(">"): op = .greater
        case .symbol(">="), .symbol("=>"): op = .greaterOrEqual
        case .identifier(let word):
            switch word.uppercased() {
            case "BEGINSWITH": op = .beginsWith
            case "ENDSWITH": op = .endsWith
            case "CONTAINS": op = .contains
            case "LIKE": op = .like
            case "MATCHES": op = .matches
            case "IN": op = .isIn
            case "BETWEEN": op = .between
            case "NOT":
                // `a NOT IN b`, `a NOT CONTAINS b`, …
                advance()
                guard case .identifier(let next) = current,
                      let negated = PredicateComparison.Operator(rawValue: next.uppercased()),
                      ![.equal, .notEqual, .less, .lessOrEqual, .greater, .greaterOrEqual].contains(negated) else {
                    throw error("expected an operator after NOT")
                }
                negate = true
                op = negated
            default:
                throw error("'\(word)' is not a supported operator (use ==, !=, <, <=, >, >=, BEGINSWITH, ENDSWITH, CONTAINS, LIKE, MATCHES, IN, BETWEEN)")
            }
        case .symbol(let s) where "+-*/".contains(s):
            throw error("arithmetic is not supported in predicates")
        default:
            throw error("expected a comparison operator, found \(describeCurrent)")
        }
        advance()
        var caseInsensitive = false, diacriticInsensitive = false
        if case .options(let options) = current {
            caseInsensitive = options.contains("c")
            diacriticInsensitive = options.contains("d")
            advance()
        }
        let rhs = try parseExpression()
        var comparison = PredicateComparison(quantifier: quantifier, lhs: lhs, op: op, caseInsensitive: caseInsensitive,
                                             diacriticInsensitive: diacriticInsensitive, rhs: rhs)
        if op == .between {
            guard case .list(let bounds) = rhs, bounds.count == 2 else {
                guard case .constant(let value) = rhs, let array = value as? [Any], array.count == 2 else {
                    throw error("BETWEEN needs two bounds: {low, high} or an array argument", at: opOffset)
                }
                comparison.rhs = .list(array.map { .constant($0) })
                return negate ? .not(.comparison(comparison)) : .comparison(comparison)
            }
        }
        if op == .matches, case .constant(let pattern as String) = rhs {
            do {
                comparison.regex = try NSRegularExpression(pattern: pattern, options: caseInsensitive ? [.caseInsensitive] : [])
            } catch {
                throw self.error("invalid regular expression '\(pattern)'", at: opOffset)
            }
        }
        return negate ? .not(.comparison(comparison)) : .comparison(comparison)
    }

    private mutating func parseExpression() throws -> PredicateExpression {
        let offset = tokens[index].offset
        switch current {
        case .string(let s):
            advance()
            return .constant(s)
        case .number(let d, let isInteger):
            advance()
            return .constant(isInteger && abs(d) < 9.0e15 ? Int(d) as Any : d as Any)
        case .symbol("-"):
            advance()
            guard case .number(let d, let isInteger) = current else { throw error("expected a number after '-'") }
            advance()
            return .constant(isInteger && abs(d) < 9.0e15 ? -Int(d) as Any : -d as Any)
        case .symbol("{"):
            advance()
            var items: [PredicateExpression] = []
            if !accept(symbol: "}") {
                repeat { items.append(try parseExpression()) } while accept(symbol: ",")
                guard accept(symbol: "}") else { throw error("expected '}'") }
            }
            return .list(items)
        case .format(let spec):
            advance()
            let argument = try nextArgument(for: spec, at: offset)
            if spec == "%K" {
                guard let path = argument as? String else { throw error("the %K argument must be a key path string", at: offset) }
                return try continueKeyPath(path.split(separator: ".").map(String.init))
            }
            return .constant(argument)
        case .identifier(let word):
            switch word.uppercased() {
            case "TRUE", "YES": advance(); return .constant(true)
            case "FALSE", "NO": advance(); return .constant(false)
            case "NULL", "NIL": advance(); return .constant(nil)
            case "SELF": advance(); return try continueKeyPath([])
            case "SUBQUERY", "FUNCTION", "CAST", "FIRST", "LAST", "SIZE", "TERNARY":
                throw error("\(word.uppercased()) is not supported in predicates")
            case "AND", "OR", "NOT", "ANY", "SOME", "ALL", "NONE", "IN", "LIKE", "MATCHES", "CONTAINS",
                 "BEGINSWITH", "ENDSWITH", "BETWEEN", "TRUEPREDICATE", "FALSEPREDICATE":
                throw error("reserved word \(word) where a key path or value was expected (escape a key named so as #\(word))")
            default:
                advance()
                let name = word.hasPrefix("#") ? String(word.dropFirst()) : word
                return try continueKeyPath([name])
            }
        case .symbol("("):
            throw error("parenthesised expressions are not supported; parentheses group predicates only")
        default:
            throw error("expected a key path or value, found \(describeCurrent)")
        }
    }

    /// Reads `.component` suffixes; a trailing `(` means a function call, which is not supported.
    private mutating func continueKeyPath(_ start: [String]) throws -> PredicateExpression {
        var path = start
        while accept(symbol: ".") {
            guard case .identifier(let word) = current else { throw error("expected a key after '.'") }
            path.append(word.hasPrefix("#") ? String(word.dropFirst()) : word)
            advance()
        }
        if current == .symbol("(") { throw error("function calls are not supported in predicates") }
        return .keyPath(path)
    }

    private mutating func nextArgument(for spec: String, at offset: Int) throws -> Any? {
        guard argumentIndex < arguments.count else {
            throw error("\(spec) has no argument (\(arguments.count) given)", at: offset)
        }
        let argument = arguments[argumentIndex]
        argumentIndex += 1
        let value = PredicateValue.normalize(argument)
        switch spec.last ?? "@" {
        case "@", "K":
            return value
        case "d", "i", "u":
            guard let n = value.flatMap({ JSONScalar.int($0) ?? JSONScalar.double($0).map { Int($0) } }) else {
                throw error("\(spec) needs an integer argument, got \(argument)", at: offset)
            }
            return n
        case "f", "g", "e", "E", "G":
            guard let n = value.flatMap(JSONScalar.double) else {
                throw error("\(spec) needs a number argument, got \(argument)", at: offset)
            }
            return n
        default: // %s, %S
            return value.map { $0 as? String ?? "\($0)" }
        }
    }
}
