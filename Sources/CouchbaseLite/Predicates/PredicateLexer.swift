import Foundation

/// The predicate format lexer: strings, numbers, names, operators, `[cd]` options, `%@` arguments.
extension PredicateParser {
    /// Splits the format into tokens, each with its UTF-8 offset (for error messages).
    mutating func tokenize() throws {
        let bytes = Array(format.utf8)
        var i = 0
        func isIdentStart(_ c: UInt8) -> Bool {
            (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == UInt8(ascii: "_") || c >= 0x80
        }
        func isIdentPart(_ c: UInt8) -> Bool { isIdentStart(c) || (c >= 0x30 && c <= 0x39) }
        while i < bytes.count {
            let c = bytes[i]
            let start = i
            switch c {
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"):
                i += 1
            case UInt8(ascii: "'"), UInt8(ascii: "\""):
                let (s, next) = try lexString(bytes, from: i)
                tokens.append((.string(s), start))
                i = next
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                let (value, isInteger, next) = try lexNumber(bytes, from: i)
                tokens.append((.number(value, isInteger: isInteger), start))
                i = next
            case UInt8(ascii: "%"):
                var j = i + 1
                while j < bytes.count, "lhqz".utf8.contains(bytes[j]) { j += 1 }
                guard j < bytes.count else { throw error("incomplete format specifier", at: start) }
                let spec = String(decoding: bytes[i...j], as: UTF8.self)
                guard "@KdiufgeEGsS".utf8.contains(bytes[j]) else {
                    throw error("format specifier \(spec) is not supported (use %@, %K, %d, %f or %s)", at: start)
                }
                tokens.append((.format(spec), start))
                i = j + 1
            case UInt8(ascii: "["):
                var j = i + 1
                while j < bytes.count, bytes[j] != UInt8(ascii: "]") { j += 1 }
                let inner = String(decoding: bytes[(i + 1)..<min(j, bytes.count)], as: UTF8.self)
                guard j < bytes.count, !inner.isEmpty, inner.allSatisfy({ "cdnlCDNL".contains($0) }) else {
                    throw error("'[' starts an array index or unknown options; only the options [c], [d], [cd] (and [n]) are supported", at: start)
                }
                tokens.append((.options(inner.lowercased()), start))
                i = j + 1
            case UInt8(ascii: "$"):
                throw error("substitution variables ($NAME) are not supported; pass the value as a %@ argument", at: start)
            case UInt8(ascii: "@"), UInt8(ascii: "#"):
                var j = i + 1
                while j < bytes.count, isIdentPart(bytes[j]) { j += 1 }
                guard j > i + 1 else { throw error("'\(Character(Unicode.Scalar(c)))' must start a name", at: start) }
                // `#name` escapes a reserved word used as a key; `@count` is a collection operator.
                let name = String(decoding: bytes[(c == UInt8(ascii: "#") ? i + 1 : i)..<j], as: UTF8.self)
                tokens.append((.identifier(c == UInt8(ascii: "#") ? "#" + name : name), start))
                i = j
            default:
                if isIdentStart(c) {
                    var j = i + 1
                    while j < bytes.count, isIdentPart(bytes[j]) { j += 1 }
                    tokens.append((.identifier(String(decoding: bytes[i..<j], as: UTF8.self)), start))
                    i = j
                    continue
                }
                let two = i + 1 < bytes.count ? String(decoding: bytes[i...(i + 1)], as: UTF8.self) : ""
                if ["==", "!=", "<>", "<=", "=<", ">=", "=>", "&&", "||"].contains(two) {
                    tokens.append((.symbol(two), start))
                    i += 2
                } else if "=<>!(){},.-+*/".utf8.contains(c) {
                    tokens.append((.symbol(String(Unicode.Scalar(c))), start))
                    i += 1
                } else {
                    throw error("unexpected character '\(Character(Unicode.Scalar(c)))'", at: start)
                }
            }
        }
        tokens.append((.end, bytes.count))
    }

    private func lexString(_ b: [UInt8], from start: Int) throws -> (String, Int) {
        let quote = b[start]
        var out: [UInt8] = []
        var i = start + 1
        while i < b.count {
            let c = b[i]
            if c == quote { return (String(decoding: out, as: UTF8.self), i + 1) }
            if c == UInt8(ascii: "\\"), i + 1 < b.count {
                i += 1
                switch b[i] {
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "0"): out.append(0)
                case UInt8(ascii: "u") where i + 4 < b.count:
                    let hex = String(decoding: b[(i + 1)...(i + 4)], as: UTF8.self)
                    guard let v = UInt32(hex, radix: 16), let scalar = Unicode.Scalar(v) else {
                        throw error("invalid \\u escape", at: i - 1)
                    }
                    out.append(contentsOf: Array(String(scalar).utf8))
                    i += 4
                default: out.append(b[i])
                }
            } else {
                out.append(c)
            }
            i += 1
        }
        throw error("unterminated string", at: start)
    }

    private func lexNumber(_ b: [UInt8], from start: Int) throws -> (Double, Bool, Int) {
        var i = start
        if b[i] == UInt8(ascii: "0"), i + 1 < b.count, b[i + 1] == UInt8(ascii: "x") || b[i + 1] == UInt8(ascii: "X") {
            i += 2
            let digitsStart = i
            while i < b.count, (b[i] >= 0x30 && b[i] <= 0x39) || (b[i] | 0x20 >= 0x61 && b[i] | 0x20 <= 0x66) { i += 1 }
            guard let v = UInt64(String(decoding: b[digitsStart..<i], as: UTF8.self), radix: 16) else {
                throw error("invalid hexadecimal number", at: start)
            }
            return (Double(v), true, i)
        }
        var isInteger = true
        while i < b.count, b[i] >= 0x30 && b[i] <= 0x39 { i += 1 }
        if i < b.count, b[i] == UInt8(ascii: "."), i + 1 < b.count, b[i + 1] >= 0x30 && b[i + 1] <= 0x39 {
            isInteger = false
            i += 1
            while i < b.count, b[i] >= 0x30 && b[i] <= 0x39 { i += 1 }
        }
        if i < b.count, b[i] == UInt8(ascii: "e") || b[i] == UInt8(ascii: "E") {
            var j = i + 1
            if j < b.count, b[j] == UInt8(ascii: "-") || b[j] == UInt8(ascii: "+") { j += 1 }
            if j < b.count, b[j] >= 0x30 && b[j] <= 0x39 {
                isInteger = false
                i = j
                while i < b.count, b[i] >= 0x30 && b[i] <= 0x39 { i += 1 }
            }
        }
        guard let v = Double(String(decoding: b[start..<i], as: UTF8.self)) else { throw error("invalid number", at: start) }
        return (v, isInteger, i)
    }
}
