import JSONCore

/// JSON text → Fleece in one pass, straight into a `FleeceWriter` (no intermediate objects,
/// no `String` per key or value): the role of LiteCore's `JSONConverter`.
///
/// Strict RFC 8259: no comments, no trailing commas, no leading zeros, no raw control
/// characters in strings, valid UTF-8, paired surrogates in `\u` escapes. Numbers follow
/// `JSONConverter` (§6.2): an integer literal that fits becomes an (unsigned if ≥ 0) integer;
/// anything with a fraction or exponent, or too large for 64 bits, is a double.
struct JSONToFleece {
    static let maxDepth = 512

    private let p: UnsafePointer<UInt8>
    private let end: Int
    private var pos = 0

    private init(_ p: UnsafePointer<UInt8>, _ end: Int) {
        self.p = p
        self.end = end
    }

    static func convert(_ json: UnsafeRawBufferPointer, into w: inout FleeceWriter) throws {
        guard let base = json.baseAddress, json.count > 0 else {
            throw FleeceError.invalidJSON("empty input", offset: 0)
        }
        var parser = JSONToFleece(base.assumingMemoryBound(to: UInt8.self), json.count)
        try parser.parseValue(&w, depth: 0)
        parser.skipWhitespace()
        if parser.pos < parser.end {
            throw FleeceError.invalidJSON("unexpected data after the JSON value", offset: parser.pos)
        }
        if w.failed { throw w.error ?? .encodingMisuse("encoding failed") }
    }

    private func error(_ message: String, at offset: Int? = nil) -> FleeceError {
        .invalidJSON(message, offset: offset ?? pos)
    }

    @inline(__always)
    private mutating func skipWhitespace() {
        pos = JSONLexer.skipWhitespace(p, from: pos, end: end)
    }

    private mutating func parseValue(_ w: inout FleeceWriter, depth: Int) throws {
        skipWhitespace()
        guard pos < end else { throw error("unexpected end of input") }
        switch p[pos] {
        case UInt8(ascii: "{"):
            try parseObject(&w, depth: depth)
        case UInt8(ascii: "["):
            try parseArray(&w, depth: depth)
        case UInt8(ascii: "\""):
            let (s, n) = try parseString(&w)
            w.writeString(s, n)
        case UInt8(ascii: "t"):
            try expectLiteral("true")
            w.writeBool(true)
        case UInt8(ascii: "f"):
            try expectLiteral("false")
            w.writeBool(false)
        case UInt8(ascii: "n"):
            try expectLiteral("null")
            w.writeNull()
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            try parseNumber(&w)
        default:
            throw error("unexpected character")
        }
    }

    private mutating func expectLiteral(_ literal: StaticString) throws {
        let n = literal.utf8CodeUnitCount
        guard end &- pos >= n else { throw error("invalid literal") }
        let lit = literal.utf8Start
        for k in 0..<n where p[pos &+ k] != lit[k] {
            throw error("invalid literal")
        }
        pos &+= n
    }

    private mutating func parseObject(_ w: inout FleeceWriter, depth: Int) throws {
        guard depth < JSONToFleece.maxDepth else { throw error("nesting too deep") }
        pos &+= 1
        w.beginCollection(isDict: true, reserve: 0)
        skipWhitespace()
        if pos < end && p[pos] == UInt8(ascii: "}") {
            pos &+= 1
            w.endDict()
            return
        }
        while true {
            skipWhitespace()
            guard pos < end, p[pos] == UInt8(ascii: "\"") else {
                throw error("expected a string key")
            }
            let (k, n) = try parseString(&w)
            w.writeKey(k, n)
            skipWhitespace()
            guard pos < end, p[pos] == UInt8(ascii: ":") else { throw error("expected ':'") }
            pos &+= 1
            try parseValue(&w, depth: depth &+ 1)
            skipWhitespace()
            guard pos < end else { throw error("unterminated object") }
            let c = p[pos]
            pos &+= 1
            if c == UInt8(ascii: ",") { continue }
            if c == UInt8(ascii: "}") { break }
            throw error("expected ',' or '}'", at: pos &- 1)
        }
        w.endDict()
    }

    private mutating func parseArray(_ w: inout FleeceWriter, depth: Int) throws {
        guard depth < JSONToFleece.maxDepth else { throw error("nesting too deep") }
        pos &+= 1
        w.beginCollection(isDict: false, reserve: 0)
        skipWhitespace()
        if pos < end && p[pos] == UInt8(ascii: "]") {
            pos &+= 1
            w.endArray()
            return
        }
        while true {
            try parseValue(&w, depth: depth &+ 1)
            skipWhitespace()
            guard pos < end else { throw error("unterminated array") }
            let c = p[pos]
            pos &+= 1
            if c == UInt8(ascii: ",") { continue }
            if c == UInt8(ascii: "]") { break }
            throw error("expected ',' or ']'", at: pos &- 1)
        }
        w.endArray()
    }

    // MARK: - Strings

    /// Parses the string whose opening quote is at `pos`. Returns its UTF-8 bytes: a range of
    /// the input when it has no escapes, else the writer's scratch buffer (valid until the
    /// next string is parsed).
    private mutating func parseString(_ w: inout FleeceWriter) throws -> (UnsafePointer<UInt8>?, Int) {
        let start = pos &+ 1
        guard let (stop, nonASCII) = JSONLexer.scanString(p, from: start, end: end) else {
            throw error("unterminated string", at: start &- 1)
        }
        let c = p[stop]
        if c == UInt8(ascii: "\"") {
            let n = stop &- start
            if nonASCII && !JSONLexer.isValidUTF8(p + start, n) {
                throw error("invalid UTF-8 in string", at: start)
            }
            pos = stop &+ 1
            return (p + start, n)
        }
        guard c == UInt8(ascii: "\\") else { throw error("unescaped control character in string", at: stop) }
        w.reserveScratch(JSONLexer.decodedLengthBound(p, start: start, firstEscape: stop, end: end))
        let (n, next) = try lexing {
            try JSONLexer.decodeEscapedString(p, start: start, firstEscape: stop, end: end, into: w.scratch)
        }
        pos = next
        return (UnsafePointer(w.scratch), n)
    }

    /// Runs a `JSONLexer` step, reporting its errors as Fleece's.
    @inline(__always)
    private func lexing<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let e as JSONError {
            throw FleeceError.invalidJSON(e.message, offset: e.offset ?? pos)
        }
    }

    // MARK: - Numbers

    /// An integer literal that fits in 64 bits becomes an (unsigned if ≥ 0) integer; anything
    /// else is a double, as `JSONConverter` does.
    private mutating func parseNumber(_ w: inout FleeceWriter) throws {
        let start = pos
        let number = try lexing { try JSONLexer.scanNumber(p, at: start, end: end) }
        pos = number.end
        if number.isInteger, let v = JSONLexer.integerMagnitude(p, number) {
            if !number.negative {
                w.writeUInt(v)
                return
            }
            if v <= UInt64(Int64.max) &+ 1 {
                w.writeInt(Int64(truncatingIfNeeded: 0 &- v))
                return
            }
        }
        let d = JSONLexer.doubleValue(p, number)
        guard d.isFinite else { throw error("number out of range", at: start) }
        w.writeDouble(d)
    }
}
