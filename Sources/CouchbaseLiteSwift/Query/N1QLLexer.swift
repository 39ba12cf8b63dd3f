import Foundation

/// One token of a N1QL text; offsets are UTF-8 byte offsets into it.
struct N1QLToken: Sendable {
    enum Kind: Sendable, Equatable {
        /// A plain identifier or keyword (`[A-Za-z_][A-Za-z0-9_$]*`); keywords are told apart by the parser.
        case word
        /// A back-quoted identifier: never a keyword. `text` has the doubled back-quotes undone.
        case quotedWord
        /// A '…' or "…" literal; `text` has the doubled quotes undone.
        case string
        /// Digits only: the parser decides between Int64 and Double (a negated 2^63 is Int64.min).
        case integer
        /// Digits with a fraction or an exponent.
        case float
        /// `$name`; `text` is the name without the `$`.
        case parameter
        /// Punctuation and operators; `text` is the symbol (`<>`, `||`, `(`…).
        case symbol
        case end
    }

    let kind: Kind
    let text: String
    let start: Int
    let end: Int

    /// How an error message shows this token.
    var display: String {
        switch kind {
        case .word: return "'\(text)'"
        case .quotedWord: return "`\(text)`"
        case .string: return "string literal"
        case .integer, .float: return "number \(text)"
        case .parameter: return "parameter $\(text)"
        case .symbol: return "'\(text)'"
        case .end: return "end of query"
        }
    }

    func isWord(_ keyword: String) -> Bool {
        kind == .word && text.count == keyword.count && text.uppercased() == keyword
    }

    func isSymbol(_ s: String) -> Bool { kind == .symbol && text == s }
}

/// Splits a N1QL text into tokens (spec 9.2 "Details"); a malformed literal is a `N1QLSyntaxError`.
struct N1QLLexer {
    let bytes: [UInt8]

    init(_ text: String) { bytes = Array(text.utf8) }

    func tokenize() throws -> [N1QLToken] {
        var tokens: [N1QLToken] = []
        var i = 0
        let n = bytes.count
        while true {
            while i < n, Self.isSpace(bytes[i]) { i += 1 }
            guard i < n else {
                tokens.append(N1QLToken(kind: .end, text: "", start: n, end: n))
                return tokens
            }
            let c = bytes[i]
            let start = i
            if Self.isIdentStart(c) {
                while i < n, Self.isIdentPart(bytes[i]) { i += 1 }
                tokens.append(N1QLToken(kind: .word, text: string(start, i), start: start, end: i))
            } else if Self.isDigit(c) || (c == UInt8(ascii: ".") && i + 1 < n && Self.isDigit(bytes[i + 1])
                                          && !followsOperand(i)) {
                tokens.append(try number(&i))
            } else if c == UInt8(ascii: "'") || c == UInt8(ascii: "\"") || c == UInt8(ascii: "`") {
                let text = try quoted(&i, quote: c)
                let kind: N1QLToken.Kind = c == UInt8(ascii: "`") ? .quotedWord : .string
                tokens.append(N1QLToken(kind: kind, text: text, start: start, end: i))
            } else if c == UInt8(ascii: "$") {
                i += 1
                while i < n, Self.isIdentPart(bytes[i]) { i += 1 }
                guard i > start + 1 else { throw error(at: start, expected: "parameter name after '$'") }
                tokens.append(N1QLToken(kind: .parameter, text: string(start + 1, i), start: start, end: i))
            } else if let symbol = symbol(at: i) {
                i += symbol.utf8.count
                tokens.append(N1QLToken(kind: .symbol, text: symbol, start: start, end: i))
            } else {
                throw error(at: start, expected: "a token")
            }
        }
    }

    // MARK: - Pieces

    private static let symbols2 = ["||", "==", "!=", "<>", "<=", ">=", "<<", ">>"]
    private static let symbols1: Set<UInt8> = Set("()[]{},.:;*+-/%|&=<>".utf8)

    private func symbol(at i: Int) -> String? {
        if i + 1 < bytes.count {
            let pair = string(i, i + 2)
            if Self.symbols2.contains(pair) { return pair }
        }
        return Self.symbols1.contains(bytes[i]) ? string(i, i + 1) : nil
    }

    private func number(_ i: inout Int) throws -> N1QLToken {
        let start = i
        let n = bytes.count
        var isFloat = false
        while i < n, Self.isDigit(bytes[i]) { i += 1 }
        if i < n, bytes[i] == UInt8(ascii: "."), i + 1 < n, Self.isDigit(bytes[i + 1]) {
            isFloat = true
            i += 1
            while i < n, Self.isDigit(bytes[i]) { i += 1 }
        }
        if i < n, bytes[i] | 0x20 == UInt8(ascii: "e") {
            var j = i + 1
            if j < n, bytes[j] == UInt8(ascii: "+") || bytes[j] == UInt8(ascii: "-") { j += 1 }
            if j < n, Self.isDigit(bytes[j]) {
                isFloat = true
                i = j
                while i < n, Self.isDigit(bytes[i]) { i += 1 }
            }
        }
        if i < n, Self.isIdentStart(bytes[i]) {
            throw error(at: i, expected: "a digit or a separator after the number")
        }
        return N1QLToken(kind: isFloat ? .float : .integer, text: string(start, i), start: start, end: i)
    }

    /// A quoted run; the quote character is escaped by doubling it (`'it''s'`, "a ""b""", `` `a``b` ``).
    private func quoted(_ i: inout Int, quote: UInt8) throws -> String {
        let start = i
        i += 1
        var out: [UInt8] = []
        while true {
            guard i < bytes.count else {
                let what = quote == UInt8(ascii: "`") ? "closing back-quote" : "closing quote"
                throw error(at: start, expected: what, found: "unterminated literal")
            }
            let b = bytes[i]
            i += 1
            if b == quote {
                if i < bytes.count, bytes[i] == quote {
                    out.append(b)
                    i += 1
                } else {
                    break
                }
            } else {
                out.append(b)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    private func string(_ from: Int, _ to: Int) -> String {
        String(decoding: bytes[from..<to], as: UTF8.self)
    }

    /// Right after an operand (`foo.5`, `x].5`) a dot is a path dot; elsewhere `.25` is the
    /// number 0.25 (a fixture case), including after a keyword (`SELECT .25`).
    private func followsOperand(_ i: Int) -> Bool {
        guard i > 0 else { return false }
        let b = bytes[i - 1]
        return Self.isIdentPart(b) || b == UInt8(ascii: ")") || b == UInt8(ascii: "]") || b == UInt8(ascii: "}")
            || b == UInt8(ascii: "`") || b == UInt8(ascii: "'") || b == UInt8(ascii: "\"")
    }

    func error(at offset: Int, expected: String, found: String? = nil) -> N1QLSyntaxError {
        let (line, column) = location(of: offset)
        let shown = found ?? (offset < bytes.count ? "'\(String(decoding: bytes[offset..<min(bytes.count, offset + 1)], as: UTF8.self))'" : "end of query")
        return N1QLSyntaxError(offset: offset, line: line, column: column, expected: expected, found: shown, detail: nil)
    }

    /// 1-based line and column (in Unicode scalars) of a byte offset.
    func location(of offset: Int) -> (line: Int, column: Int) {
        var line = 1
        var column = 1
        var i = 0
        let end = min(offset, bytes.count)
        while i < end {
            let b = bytes[i]
            if b == UInt8(ascii: "\n") {
                line += 1
                column = 1
            } else if b & 0xC0 != 0x80 {
                column += 1
            }
            i += 1
        }
        return (line, column)
    }

    static func isSpace(_ c: UInt8) -> Bool { c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D || c == 0x0C }
    static func isDigit(_ c: UInt8) -> Bool { c >= 0x30 && c <= 0x39 }
    static func isIdentStart(_ c: UInt8) -> Bool {
        (c >= UInt8(ascii: "a") && c <= UInt8(ascii: "z")) || (c >= UInt8(ascii: "A") && c <= UInt8(ascii: "Z")) || c == UInt8(ascii: "_")
    }
    static func isIdentPart(_ c: UInt8) -> Bool { isIdentStart(c) || isDigit(c) || c == UInt8(ascii: "$") }
}
