import Foundation

/// An Erlang term, of the kinds a `password_regexp` setting can hold. A string is a list of
/// character codes, as in Erlang.
enum ErlangTerm: Sendable, Equatable {
    case list([ErlangTerm])
    /// `[H | T]` whose tail `T` is not a list: still a list to `is_list`, but not text.
    indirect case improperList([ErlangTerm], tail: ErlangTerm)
    case tuple([ErlangTerm])
    case integer(Int)
    case float(Double)
    case atom(String)

    /// The bytes of a list read as Erlang `iolist`: character codes 0…255 and nested lists; nil
    /// when it holds anything else.
    var textBytes: [UInt8]? {
        var bytes: [UInt8] = []
        func append(_ term: ErlangTerm) -> Bool {
            switch term {
            case .integer(let code) where (0...255).contains(code): bytes.append(UInt8(code)); return true
            case .list(let elements): return elements.allSatisfy(append)
            default: return false
            }
        }
        guard case .list = self, append(self) else { return nil }
        return bytes
    }
}

/// Reads one Erlang term from bytes, as `erl_scan:string` and `erl_parse:parse_term` read it:
/// strings (adjacent ones joined, with Erlang's backslash escapes), lists (with a `|` tail),
/// tuples, integers (with `Base#digits` and `_` separators), floats, `$c` characters, atoms and
/// `%` comments. Binaries, maps and variables are not terms this reader accepts; nor does CouchDB
/// accept them as requirements.
enum ErlangTermReader {
    /// The term the bytes hold, or nil when they are not exactly one term.
    static func term(of bytes: [UInt8]) -> ErlangTerm? {
        guard let scanned = tokens(of: bytes) else { return nil }
        var tokens = scanned.tokens
        // CouchDB appends a full stop to the text. It ends the term unless a comment on the last
        // line swallows it; then only a full stop of the text's own can end it.
        let fullStop = Token.punctuation(UInt8(ascii: "."))
        if scanned.endsInComment {
            guard tokens.last == fullStop else { return nil }
            tokens.removeLast()
        }
        guard !tokens.contains(fullStop) else { return nil }
        var position = 0
        guard let term = parseTerm(tokens, &position), position == tokens.count else { return nil }
        return term
    }

    private enum Token: Equatable {
        case punctuation(UInt8)
        case string([Int])
        case atom(String)
        case integer(Int)
        case float(Double)
    }

    /// Erlang's reserved words, which are not atoms.
    private static let reservedWords: Set<String> = [
        "after", "and", "andalso", "band", "begin", "bnot", "bor", "bsl", "bsr", "bxor", "case", "catch",
        "cond", "div", "end", "fun", "if", "let", "not", "of", "or", "orelse", "receive", "rem", "try",
        "when", "xor",
    ]

    private static func isWhitespace(_ byte: UInt8) -> Bool { byte <= 0x20 || (0x80...0xA0).contains(byte) }
    private static func isDigit(_ byte: UInt8) -> Bool { (0x30...0x39).contains(byte) }
    private static func isNameCharacter(_ byte: UInt8) -> Bool {
        isDigit(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == 0x5F || byte == 0x40
    }

    /// The tokens, and whether the text ends inside a `%` comment.
    private static func tokens(of bytes: [UInt8]) -> (tokens: [Token], endsInComment: Bool)? {
        var tokens: [Token] = []
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if isWhitespace(byte) { index += 1; continue }
            switch byte {
            case UInt8(ascii: "%"):
                while index < bytes.count && bytes[index] != 0x0A { index += 1 }
                if index == bytes.count { return (tokens, true) }
            case UInt8(ascii: "."):
                // A full stop only before white space, a comment or the end.
                guard index + 1 == bytes.count || isWhitespace(bytes[index + 1]) || bytes[index + 1] == UInt8(ascii: "%") else { return nil }
                tokens.append(.punctuation(byte)); index += 1
            case UInt8(ascii: "["), UInt8(ascii: "]"), UInt8(ascii: "{"), UInt8(ascii: "}"), UInt8(ascii: ","),
                 UInt8(ascii: "-"), UInt8(ascii: "+"):
                tokens.append(.punctuation(byte)); index += 1
            case UInt8(ascii: "|"):
                // `||` is a list-comprehension token, never part of a term.
                if index + 1 < bytes.count && bytes[index + 1] == UInt8(ascii: "|") { return nil }
                tokens.append(.punctuation(byte)); index += 1
            case UInt8(ascii: "\""), UInt8(ascii: "'"):
                index += 1
                var codes: [Int] = []
                while true {
                    guard index < bytes.count else { return nil }
                    if bytes[index] == byte { index += 1; break }
                    if bytes[index] == UInt8(ascii: "\\") {
                        guard let code = escape(bytes, &index) else { return nil }
                        codes.append(code)
                    } else {
                        codes.append(Int(bytes[index])); index += 1
                    }
                }
                if byte == UInt8(ascii: "\"") {
                    tokens.append(.string(codes))
                } else {
                    guard let name = atomName(codes) else { return nil }
                    tokens.append(.atom(name))
                }
            case UInt8(ascii: "$"):
                index += 1
                guard index < bytes.count else { return nil }
                if bytes[index] == UInt8(ascii: "\\") {
                    guard let code = escape(bytes, &index) else { return nil }
                    tokens.append(.integer(code))
                } else {
                    tokens.append(.integer(Int(bytes[index]))); index += 1
                }
            case _ where isDigit(byte):
                guard let number = number(bytes, &index) else { return nil }
                tokens.append(number)
            case _ where (0x61...0x7A).contains(byte):
                let start = index
                while index < bytes.count && isNameCharacter(bytes[index]) { index += 1 }
                let name = String(decoding: bytes[start..<index], as: UTF8.self)
                if reservedWords.contains(name) { return nil }
                tokens.append(.atom(name))
            default:
                // Variables, binaries, maps, a full stop: nothing a term setting holds.
                return nil
            }
        }
        return (tokens, false)
    }

    /// A quoted atom's name from its character codes (any Unicode character since OTP 20).
    private static func atomName(_ codes: [Int]) -> String? {
        var scalars = String.UnicodeScalarView()
        for code in codes {
            guard let scalar = Unicode.Scalar(UInt32(clamping: code)) else { return nil }
            scalars.append(scalar)
        }
        return String(scalars)
    }

    /// One backslash escape in a string, quoted atom or `$` character, `index` at the backslash:
    /// `\b \d \e \f \n \r \s \t \v`, octal `\OOO`, `\xHH`, `\x{H…}`, `\^C`, and any other
    /// character as itself (so `\.` is `.` and `\\` is `\`).
    private static func escape(_ bytes: [UInt8], _ index: inout Int) -> Int? {
        index += 1
        guard index < bytes.count else { return nil }
        let byte = bytes[index]
        func isOctal(_ byte: UInt8) -> Bool { (0x30...0x37).contains(byte) }
        if isOctal(byte) {
            var value = 0, length = 0
            while length < 3 && index < bytes.count && isOctal(bytes[index]) {
                value = value * 8 + Int(bytes[index] - 0x30); index += 1; length += 1
            }
            return value
        }
        index += 1
        switch byte {
        case UInt8(ascii: "b"): return 8
        case UInt8(ascii: "d"): return 127
        case UInt8(ascii: "e"): return 27
        case UInt8(ascii: "f"): return 12
        case UInt8(ascii: "n"): return 10
        case UInt8(ascii: "r"): return 13
        case UInt8(ascii: "s"): return 32
        case UInt8(ascii: "t"): return 9
        case UInt8(ascii: "v"): return 11
        case UInt8(ascii: "x"):
            if index < bytes.count && bytes[index] == UInt8(ascii: "{") {
                index += 1
                var value = 0, length = 0
                while index < bytes.count, let digit = Character(Unicode.Scalar(bytes[index])).hexDigitValue {
                    value = value * 16 + digit; index += 1; length += 1
                    if value > 0x10FFFF { return nil }
                }
                guard length > 0, index < bytes.count, bytes[index] == UInt8(ascii: "}") else { return nil }
                index += 1
                return value
            }
            guard index + 1 < bytes.count,
                  let high = Character(Unicode.Scalar(bytes[index])).hexDigitValue,
                  let low = Character(Unicode.Scalar(bytes[index + 1])).hexDigitValue
            else { return nil }
            index += 2
            return high * 16 + low
        case UInt8(ascii: "^"):
            guard index < bytes.count else { return nil }
            let control = bytes[index]
            index += 1
            switch control {
            case UInt8(ascii: "?"): return 127
            case 0x40...0x5F: return Int(control) - 0x40
            case 0x61...0x7A: return Int(control) - 0x60
            default: return nil
            }
        default:
            return Int(byte)
        }
    }

    /// An integer (`123`, `1_000`, `16#ff`) or a float (`1.5`, `2.0e-3`), `index` at its first digit.
    private static func number(_ bytes: [UInt8], _ index: inout Int) -> Token? {
        func digits(radix: Int) -> (text: String, value: Int)? {
            var text = "", value = 0
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "_"), !text.isEmpty, index + 1 < bytes.count,
                   let next = digitValue(bytes[index + 1]), next < radix {
                    index += 1; continue
                }
                guard let digit = digitValue(byte), digit < radix else { break }
                let (product, overflowed) = value.multipliedReportingOverflow(by: radix)
                guard !overflowed else { return nil }
                value = product + digit
                text.append(Character(Unicode.Scalar(byte)))
                index += 1
            }
            return text.isEmpty ? nil : (text, value)
        }
        guard let whole = digits(radix: 10) else { return nil }
        if index < bytes.count && bytes[index] == UInt8(ascii: "#") {
            guard (2...36).contains(whole.value) else { return nil }
            index += 1
            guard let based = digits(radix: whole.value) else { return nil }
            return .integer(based.value)
        }
        guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "."), isDigit(bytes[index + 1]) else {
            return .integer(whole.value)
        }
        index += 1
        guard let fraction = digits(radix: 10) else { return nil }
        var text = whole.text + "." + fraction.text
        if index < bytes.count && (bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E")) {
            var exponent = "e"
            var lookahead = index + 1
            if lookahead < bytes.count && (bytes[lookahead] == UInt8(ascii: "-") || bytes[lookahead] == UInt8(ascii: "+")) {
                exponent.append(Character(Unicode.Scalar(bytes[lookahead]))); lookahead += 1
            }
            if lookahead < bytes.count && isDigit(bytes[lookahead]) {
                index = lookahead
                while index < bytes.count && isDigit(bytes[index]) { exponent.append(Character(Unicode.Scalar(bytes[index]))); index += 1 }
                text += exponent
            }
        }
        return Double(text).map(Token.float)
    }

    /// A digit's value in any base up to 36 (`a` and `A` are 10).
    private static func digitValue(_ byte: UInt8) -> Int? {
        switch byte {
        case 0x30...0x39: return Int(byte) - 0x30
        case 0x41...0x5A: return Int(byte) - 0x41 + 10
        case 0x61...0x7A: return Int(byte) - 0x61 + 10
        default: return nil
        }
    }

    private static func parseTerm(_ tokens: [Token], _ position: inout Int) -> ErlangTerm? {
        guard position < tokens.count else { return nil }
        let token = tokens[position]
        position += 1
        switch token {
        case .string(let codes):
            var joined = codes
            while position < tokens.count, case .string(let more) = tokens[position] { joined += more; position += 1 }
            return .list(joined.map(ErlangTerm.integer))
        case .atom(let name): return .atom(name)
        case .integer(let value): return .integer(value)
        case .float(let value): return .float(value)
        case .punctuation(let mark):
            switch mark {
            case UInt8(ascii: "-"), UInt8(ascii: "+"):
                guard position < tokens.count else { return nil }
                let negative = mark == UInt8(ascii: "-")
                defer { position += 1 }
                switch tokens[position] {
                case .integer(let value): return .integer(negative ? -value : value)
                case .float(let value): return .float(negative ? -value : value)
                default: return nil
                }
            case UInt8(ascii: "["):
                var elements: [ErlangTerm] = []
                if position < tokens.count && tokens[position] == .punctuation(UInt8(ascii: "]")) { position += 1; return .list([]) }
                while true {
                    guard let element = parseTerm(tokens, &position), position < tokens.count else { return nil }
                    elements.append(element)
                    let separator = tokens[position]
                    position += 1
                    if separator == .punctuation(UInt8(ascii: ",")) { continue }
                    if separator == .punctuation(UInt8(ascii: "]")) { return .list(elements) }
                    guard separator == .punctuation(UInt8(ascii: "|")),
                          let tail = parseTerm(tokens, &position),
                          position < tokens.count, tokens[position] == .punctuation(UInt8(ascii: "]"))
                    else { return nil }
                    position += 1
                    switch tail {
                    case .list(let rest): return .list(elements + rest)
                    case .improperList(let rest, let end): return .improperList(elements + rest, tail: end)
                    default: return .improperList(elements, tail: tail)
                    }
                }
            case UInt8(ascii: "{"):
                var members: [ErlangTerm] = []
                if position < tokens.count && tokens[position] == .punctuation(UInt8(ascii: "}")) { position += 1; return .tuple([]) }
                while true {
                    guard let member = parseTerm(tokens, &position), position < tokens.count else { return nil }
                    members.append(member)
                    let separator = tokens[position]
                    position += 1
                    if separator == .punctuation(UInt8(ascii: ",")) { continue }
                    return separator == .punctuation(UInt8(ascii: "}")) ? .tuple(members) : nil
                }
            default:
                return nil
            }
        }
    }
}
