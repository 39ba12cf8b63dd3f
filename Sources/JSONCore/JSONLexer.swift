/// The token-level rules of strict JSON (RFC 8259) over raw bytes, shared by every reader of JSON
/// text in the package: JSONCore's `[String: Any]` parser and Fleece's JSON → Fleece converter.
///
/// Strings: no raw control characters, valid escapes, paired UTF-16 surrogates in `\u`
/// escapes, strictly valid UTF-8. Numbers: no leading zeros, a digit after `.` and in the
/// exponent. All functions work on `p[0..<end]` and never read past `end`.
package enum JSONLexer {
    // MARK: Whitespace

    /// True for JSON's four whitespace bytes (space, tab, line feed, carriage return).
    @inline(__always)
    package static func isWhitespace(_ c: UInt8) -> Bool { c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 }

    /// The index of the first byte at or after `from` that is not JSON whitespace (`end` if none).
    @inline(__always)
    package static func skipWhitespace(_ p: UnsafePointer<UInt8>, from: Int, end: Int) -> Int {
        var i = from
        while i < end && isWhitespace(p[i]) { i &+= 1 }
        return i
    }

    // MARK: Strings

    /// Finds the first `"`, `\` or control character at or after `start` (just past a string's
    /// opening quote), 8 bytes at a time. Returns its index and whether any byte before it is
    /// non-ASCII, or nil when the input ends first.
    @inline(__always)
    package static func scanString(_ p: UnsafePointer<UInt8>, from start: Int, end: Int) -> (stop: Int, nonASCII: Bool)? {
        var i = start
        var nonASCII: UInt64 = 0
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        // SWAR: flag bytes that are '"', '\\' or < 0x20; the lowest flagged byte is always a
        // true match (higher ones may be false positives from borrows).
        while i &+ 8 <= end {
            let x = UInt64(littleEndian: UnsafeRawPointer(p + i).loadUnaligned(as: UInt64.self))
            let q = x ^ (ones &* 0x22)
            let b = x ^ (ones &* 0x5C)
            let special = (((x &- ones &* 0x20) & ~x) | ((q &- ones) & ~q) | ((b &- ones) & ~b)) & highs
            if special != 0 {
                let lowest = special & (0 &- special)
                nonASCII |= x & (lowest &- 1) & highs
                return (i &+ special.trailingZeroBitCount &>> 3, nonASCII != 0)
            }
            nonASCII |= x & highs
            i &+= 8
        }
        while i < end {
            let c = p[i]
            if c == UInt8(ascii: "\"") || c == UInt8(ascii: "\\") || c < 0x20 {
                return (i, nonASCII != 0)
            }
            nonASCII |= UInt64(c & 0x80)
            i &+= 1
        }
        return nil
    }

    /// The number of bytes `decodeEscapedString` may write for the string starting at `start`
    /// whose first escape is at `firstEscape` (unescaped text is never longer than its source).
    package static func decodedLengthBound(_ p: UnsafePointer<UInt8>, start: Int, firstEscape: Int, end: Int) -> Int {
        var closing = firstEscape
        while closing < end {
            let c = p[closing]
            if c == UInt8(ascii: "\"") { break }
            closing &+= c == UInt8(ascii: "\\") ? 2 : 1
        }
        return Swift.min(closing, end) &- start &+ 4
    }

    /// Decodes the string starting at `start` (just past its opening quote), whose first
    /// escape is at `firstEscape`, into `out` (room for `decodedLengthBound` bytes). Returns the
    /// decoded length and the index just past the closing quote. The result is valid UTF-8.
    package static func decodeEscapedString(_ p: UnsafePointer<UInt8>, start: Int, firstEscape: Int, end: Int,
                                           into out: UnsafeMutablePointer<UInt8>) throws -> (count: Int, next: Int) {
        var n = firstEscape &- start
        out.update(from: p + start, count: n)
        var i = firstEscape
        while i < end {
            let c = p[i]
            if c == UInt8(ascii: "\"") {
                guard isValidUTF8(UnsafePointer(out), n) else {
                    throw JSONError("invalid UTF-8 in string", offset: start)
                }
                return (n, i &+ 1)
            }
            if c < 0x20 { throw JSONError("unescaped control character in string", offset: i) }
            if c != UInt8(ascii: "\\") {
                out[n] = c
                n &+= 1
                i &+= 1
                continue
            }
            guard i &+ 1 < end else { break }
            let e = p[i &+ 1]
            switch e {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out[n] = e
            case UInt8(ascii: "b"): out[n] = 0x08
            case UInt8(ascii: "f"): out[n] = 0x0C
            case UInt8(ascii: "n"): out[n] = 0x0A
            case UInt8(ascii: "r"): out[n] = 0x0D
            case UInt8(ascii: "t"): out[n] = 0x09
            case UInt8(ascii: "u"):
                var cp = try readHex4(p, at: i, end: end)
                if cp >= 0xD800 && cp <= 0xDBFF {
                    let next = i &+ 6
                    guard end &- next >= 6, p[next] == UInt8(ascii: "\\"), p[next &+ 1] == UInt8(ascii: "u") else {
                        throw JSONError("unpaired UTF-16 surrogate in \\u escape", offset: i)
                    }
                    let lo = try readHex4(p, at: next, end: end)
                    guard lo >= 0xDC00 && lo <= 0xDFFF else {
                        throw JSONError("unpaired UTF-16 surrogate in \\u escape", offset: i)
                    }
                    cp = 0x10000 &+ ((cp &- 0xD800) << 10) &+ (lo &- 0xDC00)
                    i &+= 6
                } else if cp >= 0xDC00 && cp <= 0xDFFF {
                    throw JSONError("unpaired UTF-16 surrogate in \\u escape", offset: i)
                }
                // 6 (or 12) source bytes always cover the ≤ 4 UTF-8 bytes.
                n &+= putUTF8(cp, out + n)
                i &+= 6
                continue
            default:
                throw JSONError("invalid escape sequence", offset: i)
            }
            n &+= 1
            i &+= 2
        }
        throw JSONError("unterminated string", offset: start &- 1)
    }

    /// The 4 hex digits after the `\u` whose backslash is at `at`.
    private static func readHex4(_ p: UnsafePointer<UInt8>, at: Int, end: Int) throws -> UInt32 {
        guard end &- at >= 6 else { throw JSONError("truncated \\u escape", offset: at) }
        var v: UInt32 = 0
        for k in 2..<6 {
            let c = p[at &+ k]
            let h: UInt32
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): h = UInt32(c &- 0x30)
            case UInt8(ascii: "a")...UInt8(ascii: "f"): h = UInt32(c &- 0x57)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): h = UInt32(c &- 0x37)
            default: throw JSONError("invalid \\u escape", offset: at)
            }
            v = v << 4 | h
        }
        return v
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

    /// Strict UTF-8 validation (RFC 3629): no overlong forms, no surrogates (U+D800-U+DFFF),
    /// nothing above U+10FFFF, no truncated sequences.
    package static func isValidUTF8(_ p: UnsafePointer<UInt8>, _ n: Int) -> Bool {
        var i = 0
        while i < n {
            // Skip ASCII 8 bytes at a time.
            while i &+ 8 <= n {
                let x = UnsafeRawPointer(p + i).loadUnaligned(as: UInt64.self)
                if x & 0x8080_8080_8080_8080 != 0 { break }
                i &+= 8
            }
            if i >= n { break }
            let c0 = p[i]
            if c0 < 0x80 {
                i &+= 1
                continue
            }
            if c0 < 0xC2 { return false }                      // continuation or overlong 2-byte lead
            if c0 < 0xE0 {
                guard i &+ 1 < n, p[i &+ 1] & 0xC0 == 0x80 else { return false }
                i &+= 2
                continue
            }
            if c0 < 0xF0 {
                guard i &+ 2 < n else { return false }
                let c1 = p[i &+ 1], c2 = p[i &+ 2]
                guard c1 & 0xC0 == 0x80, c2 & 0xC0 == 0x80 else { return false }
                if c0 == 0xE0 && c1 < 0xA0 { return false }      // overlong
                if c0 == 0xED && c1 >= 0xA0 { return false }     // surrogates
                i &+= 3
                continue
            }
            if c0 < 0xF5 {
                guard i &+ 3 < n else { return false }
                let c1 = p[i &+ 1], c2 = p[i &+ 2], c3 = p[i &+ 3]
                guard c1 & 0xC0 == 0x80, c2 & 0xC0 == 0x80, c3 & 0xC0 == 0x80 else { return false }
                if c0 == 0xF0 && c1 < 0x90 { return false }      // overlong
                if c0 == 0xF4 && c1 >= 0x90 { return false }     // > U+10FFFF
                i &+= 4
                continue
            }
            return false
        }
        return true
    }

    /// Reads the string whose opening quote is at `quote`: its value and the index just past its
    /// closing quote. `scratch` is the caller's buffer for strings with escapes (reused across calls).
    @inline(__always)
    package static func readString(_ p: UnsafePointer<UInt8>, quote: Int, end: Int,
                                   scratch: inout [UInt8]) throws -> (value: String, next: Int) {
        let start = quote &+ 1
        guard let (stop, nonASCII) = scanString(p, from: start, end: end) else {
            throw JSONError("unterminated string", offset: quote)
        }
        switch p[stop] {
        case UInt8(ascii: "\""):
            let buf = UnsafeBufferPointer(start: p + start, count: stop &- start)
            if nonASCII && !isValidUTF8(p + start, buf.count) { throw JSONError("invalid UTF-8 in string", offset: start) }
            return (String(decoding: buf, as: UTF8.self), stop &+ 1)
        case UInt8(ascii: "\\"):
            let bound = decodedLengthBound(p, start: start, firstEscape: stop, end: end)
            if scratch.count < bound { scratch = [UInt8](repeating: 0, count: Swift.max(bound, 2 &* scratch.count)) }
            let (count, next) = try scratch.withUnsafeMutableBufferPointer { out in
                try decodeEscapedString(p, start: start, firstEscape: stop, end: end, into: out.baseAddress!)
            }
            let value = scratch.withUnsafeBufferPointer { String(decoding: UnsafeBufferPointer(rebasing: $0[..<count]), as: UTF8.self) }
            return (value, next)
        default:
            throw JSONError("unescaped control character in string", offset: stop)
        }
    }

    // MARK: Numbers

    /// A number literal's value as the readers give it: an integer literal (no fraction, no
    /// exponent) that fits in 64 bits as `Int64`, every other number as a correctly rounded
    /// `Double` (an out-of-range magnitude is an error).
    package enum NumberValue {
        case integer(Int64)
        case double(Double)
    }

    /// Reads the number literal starting at `at`: its value and the index just past it.
    @inline(__always)
    package static func readNumber(_ p: UnsafePointer<UInt8>, at start: Int, end: Int) throws -> (value: NumberValue, next: Int) {
        let number = try scanNumber(p, at: start, end: end)
        if number.isInteger, let magnitude = integerMagnitude(p, number) {
            if number.negative {
                if magnitude <= UInt64(Int64.max) &+ 1 { return (.integer(Int64(truncatingIfNeeded: 0 &- magnitude)), number.end) }
            } else if magnitude <= UInt64(Int64.max) {
                return (.integer(Int64(magnitude)), number.end)
            }
        }
        let d = doubleValue(p, number)
        guard d.isFinite else { throw JSONError("number out of range", offset: number.start) }
        return (.double(d), number.end)
    }

    /// A validated number literal `p[start..<end]`.
    package struct Number: Sendable {
        package let start: Int
        package let end: Int
        package let negative: Bool
        /// The integer part's digits: `p[digitsStart..<integerEnd]`.
        package let digitsStart: Int
        package let integerEnd: Int
        /// No fraction and no exponent.
        package let isInteger: Bool
    }

    /// Validates the number literal starting at `at` (a `-` or a digit).
    @inline(__always)
    package static func scanNumber(_ p: UnsafePointer<UInt8>, at start: Int, end: Int) throws -> Number {
        var i = start
        let negative = p[i] == UInt8(ascii: "-")
        if negative { i &+= 1 }
        guard i < end, isDigit(p[i]) else { throw JSONError("invalid number", offset: start) }
        let digitsStart = i
        if p[i] == UInt8(ascii: "0") {
            i &+= 1
            if i < end && isDigit(p[i]) { throw JSONError("leading zeros are not allowed", offset: start) }
        } else {
            while i < end && isDigit(p[i]) { i &+= 1 }
        }
        let integerEnd = i
        var isInteger = true
        if i < end && p[i] == UInt8(ascii: ".") {
            isInteger = false
            i &+= 1
            guard i < end, isDigit(p[i]) else {
                throw JSONError("invalid number: digit expected after '.'", offset: start)
            }
            while i < end && isDigit(p[i]) { i &+= 1 }
        }
        if i < end && (p[i] == UInt8(ascii: "e") || p[i] == UInt8(ascii: "E")) {
            isInteger = false
            i &+= 1
            if i < end && (p[i] == UInt8(ascii: "+") || p[i] == UInt8(ascii: "-")) { i &+= 1 }
            guard i < end, isDigit(p[i]) else {
                throw JSONError("invalid number: digit expected in exponent", offset: start)
            }
            while i < end && isDigit(p[i]) { i &+= 1 }
        }
        return Number(start: start, end: i, negative: negative, digitsStart: digitsStart,
                      integerEnd: integerEnd, isInteger: isInteger)
    }

    /// The magnitude of an integer literal, or nil when it does not fit in 64 bits.
    @inline(__always)
    package static func integerMagnitude(_ p: UnsafePointer<UInt8>, _ number: Number) -> UInt64? {
        guard number.integerEnd &- number.digitsStart <= 20 else { return nil }
        var v: UInt64 = 0
        for k in number.digitsStart..<number.integerEnd {
            let (m, o1) = v.multipliedReportingOverflow(by: 10)
            let (s, o2) = m.addingReportingOverflow(UInt64(p[k] &- 0x30))
            if o1 || o2 { return nil }
            v = s
        }
        return v
    }

    private static let pow10: [Double] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
        1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
    ]

    /// The number's value as a correctly rounded double (infinite when out of range).
    package static func doubleValue(_ p: UnsafePointer<UInt8>, _ number: Number) -> Double {
        let end = number.end
        var i = number.digitsStart
        var mantissa: UInt64 = 0
        var sigDigits = 0        // significant digits accumulated in mantissa
        var truncated = false    // more significant digits than fit in mantissa
        var exp10 = 0            // decimal exponent adjustment for mantissa
        while i < number.integerEnd {
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
            while i < end && isDigit(p[i]) {
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
            while i < end && isDigit(p[i]) {
                if e < 100_000 { e = e &* 10 &+ Int(p[i] &- 0x30) }
                i &+= 1
            }
            exp10 &+= expNegative ? -e : e
        }
        // Exact fast path (Clinger): mantissa and 10^|e| are exact doubles, so a single
        // multiplication or division is correctly rounded.
        if !truncated && mantissa <= (1 << 53) && exp10 >= -22 && exp10 <= 22 {
            var d = Double(mantissa)
            if exp10 >= 0 { d *= pow10[exp10] } else { d /= pow10[-exp10] }
            return number.negative ? -d : d
        }
        // General case: Swift's Double(String) is correctly rounded and locale-independent
        // (strtod in the C locale) and only sees this bounded copy of the number's bytes.
        let text = String(decoding: UnsafeBufferPointer(start: p + number.start, count: end &- number.start), as: UTF8.self)
        return Double(text) ?? .infinity
    }

    @inline(__always)
    static func isDigit(_ c: UInt8) -> Bool { c &- 0x30 < 10 }
}
