/// JSON text → Fleece in one pass, straight into a `FleeceWriter` (no intermediate objects,
/// no `String` per key or value): the role of LiteCore's `JSONConverter`.
///
/// Strict RFC 8259: no comments, no trailing commas, no leading zeros, no raw control
/// characters in strings, valid UTF-8, paired surrogates in `\u` escapes. Numbers follow
/// `JSONConverter` (§6.2): an integer literal that fits becomes an (unsigned if ≥ 0) integer;
/// anything with a fraction or exponent, or too large for 64 bits, is a double.
struct JSONToFleece {
    static let maxDepth = 512

    private static let pow10: [Double] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
        1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
    ]

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
        while pos < end {
            let c = p[pos]
            if c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 { pos &+= 1 } else { return }
        }
    }

    @inline(__always)
    private static func isDigit(_ c: UInt8) -> Bool { c &- 0x30 < 10 }

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
        var i = start
        var nonASCII: UInt64 = 0
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        // 8 bytes at a time: find the first '"', '\\' or control character (SWAR; the lowest
        // flagged byte is always a true match), noting non-ASCII bytes before it.
        while i &+ 8 <= end {
            let x = UInt64(littleEndian: UnsafeRawPointer(p + i).loadUnaligned(as: UInt64.self))
            let q = x ^ (ones &* 0x22)
            let b = x ^ (ones &* 0x5C)
            let special = (((x &- ones &* 0x20) & ~x) | ((q &- ones) & ~q) | ((b &- ones) & ~b)) & highs
            if special != 0 {
                let lowest = special & (0 &- special)
                nonASCII |= x & (lowest &- 1) & highs
                i &+= special.trailingZeroBitCount &>> 3
                return try finishString(&w, start: start, at: i, nonASCII: nonASCII != 0)
            }
            nonASCII |= x & highs
            i &+= 8
        }
        while i < end {
            let c = p[i]
            if c == UInt8(ascii: "\"") || c == UInt8(ascii: "\\") || c < 0x20 {
                return try finishString(&w, start: start, at: i, nonASCII: nonASCII != 0)
            }
            nonASCII |= UInt64(c & 0x80)
            i &+= 1
        }
        throw error("unterminated string", at: start &- 1)
    }

    @inline(__always)
    private mutating func finishString(_ w: inout FleeceWriter, start: Int, at i: Int,
                                       nonASCII: Bool) throws -> (UnsafePointer<UInt8>?, Int) {
        let c = p[i]
        if c == UInt8(ascii: "\"") {
            let n = i &- start
            if nonASCII && !fleeceIsValidUTF8(p + start, n) {
                throw error("invalid UTF-8 in string", at: start)
            }
            pos = i &+ 1
            return (p + start, n)
        }
        if c == UInt8(ascii: "\\") {
            return try parseEscapedString(&w, start: start, firstEscape: i)
        }
        throw error("unescaped control character in string", at: i)
    }

    @inline(__always)
    private func hexValue(_ c: UInt8) -> UInt32? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return UInt32(c &- 0x30)
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return UInt32(c &- 0x57)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return UInt32(c &- 0x37)
        default: return nil
        }
    }

    /// The 4 hex digits after the "\u" whose backslash is at `at`.
    private func readHex4(_ at: Int) throws -> UInt32 {
        guard end &- at >= 6 else { throw error("truncated \\u escape", at: at) }
        var v: UInt32 = 0
        for k in 2..<6 {
            guard let h = hexValue(p[at &+ k]) else { throw error("invalid \\u escape", at: at) }
            v = v << 4 | h
        }
        return v
    }

    private mutating func parseEscapedString(_ w: inout FleeceWriter, start: Int,
                                             firstEscape: Int) throws -> (UnsafePointer<UInt8>?, Int) {
        // Unescaped text is never longer than the escaped source.
        var closing = firstEscape
        while closing < end {
            let c = p[closing]
            if c == UInt8(ascii: "\"") { break }
            closing &+= c == UInt8(ascii: "\\") ? 2 : 1
        }
        w.reserveScratch(Swift.min(closing, end) &- start &+ 4)
        let s = w.scratch
        var n = firstEscape &- start
        s.update(from: p + start, count: n)
        var i = firstEscape
        while i < end {
            let c = p[i]
            if c == UInt8(ascii: "\"") {
                guard fleeceIsValidUTF8(UnsafePointer(s), n) else {
                    throw error("invalid UTF-8 in string", at: start)
                }
                pos = i &+ 1
                return (UnsafePointer(s), n)
            }
            if c < 0x20 { throw error("unescaped control character in string", at: i) }
            if c != UInt8(ascii: "\\") {
                s[n] = c
                n &+= 1
                i &+= 1
                continue
            }
            guard i &+ 1 < end else { break }
            let e = p[i &+ 1]
            switch e {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): s[n] = e
            case UInt8(ascii: "b"): s[n] = 0x08
            case UInt8(ascii: "f"): s[n] = 0x0C
            case UInt8(ascii: "n"): s[n] = 0x0A
            case UInt8(ascii: "r"): s[n] = 0x0D
            case UInt8(ascii: "t"): s[n] = 0x09
            case UInt8(ascii: "u"):
                var cp = try readHex4(i)
                if cp >= 0xD800 && cp <= 0xDBFF {
                    let next = i &+ 6
                    guard end &- next >= 6, p[next] == UInt8(ascii: "\\"),
                          p[next &+ 1] == UInt8(ascii: "u") else {
                        throw error("unpaired UTF-16 surrogate in \\u escape", at: i)
                    }
                    let lo = try readHex4(next)
                    guard lo >= 0xDC00 && lo <= 0xDFFF else {
                        throw error("unpaired UTF-16 surrogate in \\u escape", at: i)
                    }
                    cp = 0x10000 &+ ((cp &- 0xD800) << 10) &+ (lo &- 0xDC00)
                    i &+= 6
                } else if cp >= 0xDC00 && cp <= 0xDFFF {
                    throw error("unpaired UTF-16 surrogate in \\u escape", at: i)
                }
                // 6 (or 12) source bytes always cover the ≤ 4 UTF-8 bytes.
                n &+= JSONToFleece.putUTF8(cp, s + n)
                i &+= 6
                continue
            default:
                throw error("invalid escape sequence", at: i)
            }
            n &+= 1
            i &+= 2
        }
        throw error("unterminated string", at: start &- 1)
    }

    @inline(__always)
    private static func putUTF8(_ cp: UInt32, _ d: UnsafeMutablePointer<UInt8>) -> Int {
        if cp < 0x80 {
            d[0] = UInt8(cp)
            return 1
        } else if cp < 0x800 {
            d[0] = UInt8(0xC0 | (cp >> 6))
            d[1] = UInt8(0x80 | (cp & 0x3F))
            return 2
        } else if cp < 0x10000 {
            d[0] = UInt8(0xE0 | (cp >> 12))
            d[1] = UInt8(0x80 | ((cp >> 6) & 0x3F))
            d[2] = UInt8(0x80 | (cp & 0x3F))
            return 3
        }
        d[0] = UInt8(0xF0 | (cp >> 18))
        d[1] = UInt8(0x80 | ((cp >> 12) & 0x3F))
        d[2] = UInt8(0x80 | ((cp >> 6) & 0x3F))
        d[3] = UInt8(0x80 | (cp & 0x3F))
        return 4
    }

    // MARK: - Numbers

    private mutating func parseNumber(_ w: inout FleeceWriter) throws {
        let start = pos
        var i = pos
        let negative = p[i] == UInt8(ascii: "-")
        if negative { i &+= 1 }
        guard i < end, JSONToFleece.isDigit(p[i]) else { throw error("invalid number", at: start) }
        let digitsStart = i
        if p[i] == UInt8(ascii: "0") {
            i &+= 1
            if i < end && JSONToFleece.isDigit(p[i]) {
                throw error("leading zeros are not allowed", at: start)
            }
        } else {
            while i < end && JSONToFleece.isDigit(p[i]) { i &+= 1 }
        }
        let intEnd = i
        var isInteger = true
        if i < end && p[i] == UInt8(ascii: ".") {
            isInteger = false
            i &+= 1
            guard i < end, JSONToFleece.isDigit(p[i]) else {
                throw error("invalid number: digit expected after '.'", at: start)
            }
            while i < end && JSONToFleece.isDigit(p[i]) { i &+= 1 }
        }
        if i < end && (p[i] == UInt8(ascii: "e") || p[i] == UInt8(ascii: "E")) {
            isInteger = false
            i &+= 1
            if i < end && (p[i] == UInt8(ascii: "+") || p[i] == UInt8(ascii: "-")) { i &+= 1 }
            guard i < end, JSONToFleece.isDigit(p[i]) else {
                throw error("invalid number: digit expected in exponent", at: start)
            }
            while i < end && JSONToFleece.isDigit(p[i]) { i &+= 1 }
        }
        pos = i
        if isInteger {
            let digits = intEnd &- digitsStart
            if digits <= 20 {
                var v: UInt64 = 0
                var overflow = false
                for k in digitsStart..<intEnd {
                    let (m, o1) = v.multipliedReportingOverflow(by: 10)
                    let (s, o2) = m.addingReportingOverflow(UInt64(p[k] &- 0x30))
                    v = s
                    if o1 || o2 { overflow = true; break }
                }
                if !overflow {
                    if !negative {
                        w.writeUInt(v)
                        return
                    }
                    if v <= UInt64(Int64.max) &+ 1 {
                        w.writeInt(Int64(truncatingIfNeeded: 0 &- v))
                        return
                    }
                }
            }
            // Too large for 64 bits: a double, as JSONConverter does.
        }
        let d = parseDouble(start: start, end: i, negative: negative)
        guard d.isFinite else { throw error("number out of range", at: start) }
        w.writeDouble(d)
    }

    /// Correctly rounded decimal → double for the validated literal `p[start..<end]`.
    private func parseDouble(start: Int, end: Int, negative: Bool) -> Double {
        var i = negative ? start &+ 1 : start
        var mantissa: UInt64 = 0
        var sigDigits = 0
        var truncated = false
        var exp10 = 0
        while i < end && JSONToFleece.isDigit(p[i]) {
            let d = p[i] &- 0x30
            if sigDigits < 19 {
                mantissa = mantissa &* 10 &+ UInt64(d)
                if mantissa != 0 { sigDigits &+= 1 }
            } else {
                truncated = true
                exp10 &+= 1
            }
            i &+= 1
        }
        if i < end && p[i] == UInt8(ascii: ".") {
            i &+= 1
            while i < end && JSONToFleece.isDigit(p[i]) {
                let d = p[i] &- 0x30
                if sigDigits < 19 {
                    mantissa = mantissa &* 10 &+ UInt64(d)
                    if mantissa != 0 { sigDigits &+= 1 }
                    exp10 &-= 1
                } else {
                    truncated = true
                }
                i &+= 1
            }
        }
        if i < end && (p[i] == UInt8(ascii: "e") || p[i] == UInt8(ascii: "E")) {
            i &+= 1
            var expNegative = false
            if p[i] == UInt8(ascii: "+") || p[i] == UInt8(ascii: "-") {
                expNegative = p[i] == UInt8(ascii: "-")
                i &+= 1
            }
            var e = 0
            while i < end && JSONToFleece.isDigit(p[i]) {
                if e < 100_000 { e = e &* 10 &+ Int(p[i] &- 0x30) }
                i &+= 1
            }
            exp10 &+= expNegative ? -e : e
        }
        // Exact fast path (Clinger): mantissa and 10^|e| are exact doubles, so one
        // multiplication or division is correctly rounded.
        if !truncated && mantissa <= (1 << 53) && exp10 >= -22 && exp10 <= 22 {
            var d = Double(mantissa)
            if exp10 >= 0 { d *= JSONToFleece.pow10[exp10] } else { d /= JSONToFleece.pow10[-exp10] }
            return negative ? -d : d
        }
        // General case: Swift's Double(String) is correctly rounded and locale-independent.
        let text = String(decoding: UnsafeBufferPointer(start: p + start, count: end &- start),
                          as: UTF8.self)
        return Double(text) ?? .nan
    }
}
