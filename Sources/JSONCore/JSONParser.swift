import Foundation

/// Hand-written strict JSON (RFC 8259) reader over a byte buffer, producing
/// Foundation-compatible values: `[String: Any]`, `[Any]`, `String`, `Int`, `Double`, `Bool`,
/// `NSNull`. Never reads outside the buffer.
internal struct JSONParser {
    static let maxDepth = 512

    /// Shared NSNull instance returned for every `null`.
    static let null = NSNull()

    private static let pow10: [Double] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
        1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
    ]

    private let p: UnsafePointer<UInt8>
    private let end: Int
    private var pos = 0
    private var depth = 0
    /// Extra room reserved in the top-level object's dictionary.
    private var topLevelExtraCapacity = 0
    /// Pending object keys / container values of all containers being parsed (one stack
    /// each; a container owns the region above the height it started at).
    private var keys: ValueStack<String>
    private var values: ValueStack<Any>
    /// Decoding buffer for strings that contain escapes.
    private var scratch: [UInt8] = []

    private init(_ p: UnsafePointer<UInt8>, _ count: Int,
                 keys: ValueStack<String>, values: ValueStack<Any>) {
        self.p = p
        self.end = count
        self.keys = keys
        self.values = values
    }

    /// Runs `body` with a parser whose value stacks start in stack-allocated memory.
    private static func withParser<R>(_ bytes: UnsafeRawBufferPointer,
                                      _ body: (inout JSONParser) throws -> R) throws -> R {
        guard let base = bytes.baseAddress, bytes.count > 0 else {
            throw JSONError("empty input", offset: 0)
        }
        return try withUnsafeTemporaryAllocation(of: String.self, capacity: 32) { keyBuf in
            try withUnsafeTemporaryAllocation(of: Any.self, capacity: 32) { valueBuf in
                var parser = JSONParser(base.assumingMemoryBound(to: UInt8.self), bytes.count,
                                        keys: ValueStack(initial: keyBuf),
                                        values: ValueStack(initial: valueBuf))
                defer {
                    parser.keys.destroy()
                    parser.values.destroy()
                }
                return try body(&parser)
            }
        }
    }

    // MARK: - Entry points

    static func parse(_ bytes: UnsafeRawBufferPointer) throws -> Any {
        try withParser(bytes) { parser in
            let v = try parser.parseValue()
            try parser.expectEnd()
            return v
        }
    }

    static func parseObject(_ bytes: UnsafeRawBufferPointer, extraCapacity: Int = 0) throws -> [String: Any] {
        try withParser(bytes) { parser in
            parser.topLevelExtraCapacity = extraCapacity
            return try parser.parseTopLevelObject()
        }
    }

    private mutating func parseTopLevelObject() throws -> [String: Any] {
        skipWhitespace()
        guard pos < end else {
            throw error("empty input")
        }
        guard p[pos] == UInt8(ascii: "{") else {
            throw error("top-level value is not an object")
        }
        let d = try parseObject()
        try expectEnd()
        return d
    }

    // MARK: - Helpers

    @inline(__always)
    private func error(_ message: String, at offset: Int? = nil) -> JSONError {
        JSONError(message, offset: offset ?? pos)
    }

    @inline(__always)
    private mutating func skipWhitespace() {
        while pos < end {
            let c = p[pos]
            if c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 {
                pos &+= 1
            } else {
                return
            }
        }
    }

    private mutating func expectEnd() throws {
        skipWhitespace()
        if pos != end {
            throw error("unexpected data after the JSON value")
        }
    }

    @inline(__always)
    private static func isDigit(_ c: UInt8) -> Bool { c &- 0x30 < 10 }

    // MARK: - Values

    private mutating func parseValue() throws -> Any {
        skipWhitespace()
        guard pos < end else { throw error("unexpected end of input") }
        switch p[pos] {
        case UInt8(ascii: "\""):
            return try parseString()
        case UInt8(ascii: "{"):
            return try parseObject()
        case UInt8(ascii: "["):
            return try parseArray()
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return try parseNumber()
        case UInt8(ascii: "t"):
            try expectLiteral(0x7472_7565, length: 4)   // "true"
            return true
        case UInt8(ascii: "f"):
            try expectLiteral(0x66_616c_7365, length: 5) // "false"
            return false
        case UInt8(ascii: "n"):
            try expectLiteral(0x6e75_6c6c, length: 4)   // "null"
            return JSONParser.null
        default:
            throw error("unexpected character")
        }
    }

    /// Matches a literal given as big-endian packed ASCII.
    @inline(__always)
    private mutating func expectLiteral(_ packed: UInt64, length: Int) throws {
        guard end &- pos >= length else { throw error("invalid literal") }
        var v: UInt64 = 0
        for k in 0..<length { v = v << 8 | UInt64(p[pos &+ k]) }
        guard v == packed else { throw error("invalid literal") }
        pos &+= length
    }

    private mutating func parseObject() throws -> [String: Any] {
        depth &+= 1
        guard depth <= JSONParser.maxDepth else {
            throw error("nesting deeper than \(JSONParser.maxDepth) levels")
        }
        pos &+= 1  // '{'
        skipWhitespace()
        if pos < end && p[pos] == UInt8(ascii: "}") {
            pos &+= 1
            depth &-= 1
            return [:]
        }
        let keyBase = keys.count
        let valueBase = values.count
        while true {
            skipWhitespace()
            guard pos < end else { throw error("unexpected end of input in object") }
            guard p[pos] == UInt8(ascii: "\"") else { throw error("expected a string key") }
            let key = try parseString()
            skipWhitespace()
            guard pos < end else { throw error("unexpected end of input in object") }
            guard p[pos] == UInt8(ascii: ":") else { throw error("expected ':'") }
            pos &+= 1
            keys.push(key)
            values.push(try parseValue())
            skipWhitespace()
            guard pos < end else { throw error("unexpected end of input in object") }
            let c = p[pos]
            pos &+= 1
            if c == UInt8(ascii: ",") { continue }
            if c == UInt8(ascii: "}") { break }
            throw error("expected ',' or '}'", at: pos &- 1)
        }
        let n = keys.count &- keyBase
        // The top-level object gets room for the keys its caller adds (`_id`, `_rev`, …).
        var dict = [String: Any](minimumCapacity: depth == 1 ? n &+ topLevelExtraCapacity : n)
        for k in 0..<n {
            // Duplicate keys: the last one wins.
            dict[keys.take(keyBase &+ k)] = values.take(valueBase &+ k)
        }
        keys.forgetAbove(keyBase)
        values.forgetAbove(valueBase)
        depth &-= 1
        return dict
    }

    private mutating func parseArray() throws -> [Any] {
        depth &+= 1
        guard depth <= JSONParser.maxDepth else {
            throw error("nesting deeper than \(JSONParser.maxDepth) levels")
        }
        pos &+= 1  // '['
        skipWhitespace()
        if pos < end && p[pos] == UInt8(ascii: "]") {
            pos &+= 1
            depth &-= 1
            return []
        }
        let base = values.count
        while true {
            values.push(try parseValue())
            skipWhitespace()
            guard pos < end else { throw error("unexpected end of input in array") }
            let c = p[pos]
            pos &+= 1
            if c == UInt8(ascii: ",") { continue }
            if c == UInt8(ascii: "]") { break }
            throw error("expected ',' or ']'", at: pos &- 1)
        }
        let array = values.moveOut(from: base)
        depth &-= 1
        return array
    }

    // MARK: - Strings

    /// Parses a string starting at the opening quote.
    private mutating func parseString() throws -> String {
        let start = pos &+ 1
        var i = start
        var nonASCII: UInt64 = 0
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        // 8 bytes at a time: find the first '"', '\\' or control character (SWAR; the lowest
        // flagged byte is always a true match), noting whether any byte before it is non-ASCII.
        while i &+ 8 <= end {
            let x = UInt64(littleEndian: UnsafeRawPointer(p + i).loadUnaligned(as: UInt64.self))
            let q = x ^ (ones &* 0x22)
            let b = x ^ (ones &* 0x5C)
            let special = (((x &- ones &* 0x20) & ~x) | ((q &- ones) & ~q) | ((b &- ones) & ~b)) & highs
            if special != 0 {
                let lowest = special & (0 &- special)
                nonASCII |= x & (lowest &- 1) & highs
                i &+= special.trailingZeroBitCount &>> 3
                return try finishString(start: start, at: i, nonASCII: nonASCII != 0)
            }
            nonASCII |= x & highs
            i &+= 8
        }
        while i < end {
            let c = p[i]
            if c == UInt8(ascii: "\"") || c == UInt8(ascii: "\\") || c < 0x20 {
                return try finishString(start: start, at: i, nonASCII: nonASCII != 0)
            }
            nonASCII |= UInt64(c & 0x80)
            i &+= 1
        }
        throw error("unterminated string", at: start &- 1)
    }

    /// `i` is the first '"', '\\' or control character of the string starting at `start`.
    @inline(__always)
    private mutating func finishString(start: Int, at i: Int, nonASCII: Bool) throws -> String {
        let c = p[i]
        if c == UInt8(ascii: "\"") {
            let buf = UnsafeBufferPointer(start: p + start, count: i &- start)
            if nonASCII && !isValidUTF8(buf) {
                throw error("invalid UTF-8 in string", at: start)
            }
            pos = i &+ 1
            return String(decoding: buf, as: UTF8.self)
        }
        if c == UInt8(ascii: "\\") {
            return try parseEscapedString(start: start, firstEscape: i)
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

    /// Reads the 4 hex digits after "\u" at `at` (which points to the backslash).
    private func readHex4(_ at: Int) throws -> UInt32 {
        guard end &- at >= 6 else { throw error("truncated \\u escape", at: at) }
        var v: UInt32 = 0
        for k in 2..<6 {
            guard let h = hexValue(p[at &+ k]) else { throw error("invalid \\u escape", at: at) }
            v = v << 4 | h
        }
        return v
    }

    private mutating func parseEscapedString(start: Int, firstEscape: Int) throws -> String {
        scratch.removeAll(keepingCapacity: true)
        scratch.append(contentsOf: UnsafeBufferPointer(start: p + start, count: firstEscape &- start))
        var i = firstEscape
        while i < end {
            let c = p[i]
            if c == UInt8(ascii: "\"") {
                pos = i &+ 1
                return try scratch.withUnsafeBufferPointer { buf in
                    guard isValidUTF8(buf) else {
                        throw error("invalid UTF-8 in string", at: start)
                    }
                    return String(decoding: buf, as: UTF8.self)
                }
            }
            if c < 0x20 {
                throw error("unescaped control character in string", at: i)
            }
            if c != UInt8(ascii: "\\") {
                scratch.append(c)
                i &+= 1
                continue
            }
            guard i &+ 1 < end else { break }
            let e = p[i &+ 1]
            switch e {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"):
                scratch.append(e)
            case UInt8(ascii: "b"): scratch.append(0x08)
            case UInt8(ascii: "f"): scratch.append(0x0C)
            case UInt8(ascii: "n"): scratch.append(0x0A)
            case UInt8(ascii: "r"): scratch.append(0x0D)
            case UInt8(ascii: "t"): scratch.append(0x09)
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
                appendUTF8(cp)
                i &+= 6
                continue
            default:
                throw error("invalid escape sequence", at: i)
            }
            i &+= 2
        }
        throw error("unterminated string", at: start &- 1)
    }

    @inline(__always)
    private mutating func appendUTF8(_ cp: UInt32) {
        if cp < 0x80 {
            scratch.append(UInt8(cp))
        } else if cp < 0x800 {
            scratch.append(UInt8(0xC0 | (cp >> 6)))
            scratch.append(UInt8(0x80 | (cp & 0x3F)))
        } else if cp < 0x10000 {
            scratch.append(UInt8(0xE0 | (cp >> 12)))
            scratch.append(UInt8(0x80 | ((cp >> 6) & 0x3F)))
            scratch.append(UInt8(0x80 | (cp & 0x3F)))
        } else {
            scratch.append(UInt8(0xF0 | (cp >> 18)))
            scratch.append(UInt8(0x80 | ((cp >> 12) & 0x3F)))
            scratch.append(UInt8(0x80 | ((cp >> 6) & 0x3F)))
            scratch.append(UInt8(0x80 | (cp & 0x3F)))
        }
    }

    // MARK: - Numbers

    /// Integer literals (no fraction, no exponent) that fit in Int become Int; every other
    /// number becomes Double (correctly rounded; out-of-range magnitudes are an error).
    private mutating func parseNumber() throws -> Any {
        let start = pos
        var i = pos
        let negative = p[i] == UInt8(ascii: "-")
        if negative { i &+= 1 }
        guard i < end, JSONParser.isDigit(p[i]) else {
            throw error("invalid number", at: start)
        }
        var mantissa: UInt64 = 0
        var sigDigits = 0        // significant digits accumulated in mantissa
        var truncated = false    // more significant digits than fit in mantissa
        var exp10 = 0            // decimal exponent adjustment for mantissa
        if p[i] == UInt8(ascii: "0") {
            i &+= 1
            if i < end && JSONParser.isDigit(p[i]) {
                throw error("leading zeros are not allowed", at: start)
            }
        } else {
            while i < end {
                let d = p[i] &- 0x30
                if d >= 10 { break }
                if sigDigits < 19 {
                    mantissa = mantissa &* 10 &+ UInt64(d)
                    sigDigits &+= 1
                } else {
                    truncated = true
                    exp10 &+= 1
                }
                i &+= 1
            }
        }
        var isInteger = true
        if i < end && p[i] == UInt8(ascii: ".") {
            isInteger = false
            i &+= 1
            guard i < end, JSONParser.isDigit(p[i]) else {
                throw error("invalid number: digit expected after '.'", at: start)
            }
            while i < end {
                let d = p[i] &- 0x30
                if d >= 10 { break }
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
            isInteger = false
            i &+= 1
            var expNegative = false
            if i < end && (p[i] == UInt8(ascii: "+") || p[i] == UInt8(ascii: "-")) {
                expNegative = p[i] == UInt8(ascii: "-")
                i &+= 1
            }
            guard i < end, JSONParser.isDigit(p[i]) else {
                throw error("invalid number: digit expected in exponent", at: start)
            }
            var e = 0
            while i < end {
                let d = p[i] &- 0x30
                if d >= 10 { break }
                if e < 100_000 { e = e &* 10 &+ Int(d) }
                i &+= 1
            }
            exp10 &+= expNegative ? -e : e
        }
        pos = i

        if isInteger && !truncated {
            if negative {
                if mantissa <= UInt64(Int64.max) &+ 1 {
                    return Int(truncatingIfNeeded: 0 &- mantissa)
                }
            } else if mantissa <= UInt64(Int64.max) {
                return Int(mantissa)
            }
        }
        // Exact fast path (Clinger): mantissa and 10^|e| are exact doubles, so a single
        // multiplication or division is correctly rounded.
        if !truncated && mantissa <= (1 << 53) && exp10 >= -22 && exp10 <= 22 {
            var d = Double(mantissa)
            if exp10 >= 0 { d *= JSONParser.pow10[exp10] } else { d /= JSONParser.pow10[-exp10] }
            return negative ? -d : d
        }
        // General case: Swift's Double(String) is correctly rounded and locale-independent
        // (strtod in the C locale) and only sees this bounded copy of the number's bytes.
        let text = String(decoding: UnsafeBufferPointer(start: p + start, count: i &- start), as: UTF8.self)
        guard let d = Double(text), d.isFinite else {
            throw error("number out of range", at: start)
        }
        return d
    }
}

/// A manually managed stack of values that starts in caller-provided (stack) memory and
/// moves to the heap when it outgrows it. Values are moved, never copied.
internal struct ValueStack<T> {
    private var base: UnsafeMutablePointer<T>
    private var capacity: Int
    private var onHeap = false
    private(set) var count = 0

    init(initial: UnsafeMutableBufferPointer<T>) {
        base = initial.baseAddress!
        capacity = initial.count
    }

    @inline(__always)
    mutating func push(_ value: consuming T) {
        if count == capacity { grow() }
        (base + count).initialize(to: consume value)
        count &+= 1
    }

    private mutating func grow() {
        let newCapacity = capacity * 2
        let newBase = UnsafeMutablePointer<T>.allocate(capacity: newCapacity)
        newBase.moveInitialize(from: base, count: count)
        if onHeap { base.deallocate() }
        base = newBase
        capacity = newCapacity
        onHeap = true
    }

    /// Moves out the element at `i`; the caller must then `forgetAbove` a height <= i.
    @inline(__always)
    func take(_ i: Int) -> T {
        (base + i).move()
    }

    /// Drops elements at `height` and above, which must all have been taken already.
    @inline(__always)
    mutating func forgetAbove(_ height: Int) {
        count = height
    }

    /// Moves the elements at `height` and above into a new array.
    mutating func moveOut(from height: Int) -> [T] {
        let n = count &- height
        let src = base + height
        count = height
        return [T](unsafeUninitializedCapacity: n) { buf, initialized in
            buf.baseAddress!.moveInitialize(from: src, count: n)
            initialized = n
        }
    }

    /// Destroys the remaining elements and frees heap storage.
    mutating func destroy() {
        base.deinitialize(count: count)
        count = 0
        if onHeap { base.deallocate() }
        onHeap = false
    }
}

/// Strict UTF-8 validation (RFC 3629): no overlong forms, no surrogates (U+D800-U+DFFF), nothing
/// above U+10FFFF, no truncated sequences.
internal func isValidUTF8(_ b: UnsafeBufferPointer<UInt8>) -> Bool {
    let n = b.count
    guard n > 0, let p = b.baseAddress else { return true }
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
