import Foundation

/// Hand-written strict JSON (RFC 8259) reader over a byte buffer, producing
/// Foundation-compatible values: `[String: Any]`, `[Any]`, `String`, `Int`, `Double`, `Bool`,
/// `NSNull`. Never reads outside the buffer.
internal struct JSONParser {
    static let maxDepth = 512

    /// Shared NSNull instance returned for every `null`.
    static let null = NSNull()

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
        pos = JSONLexer.skipWhitespace(p, from: pos, end: end)
    }

    private mutating func expectEnd() throws {
        skipWhitespace()
        if pos != end {
            throw error("unexpected data after the JSON value")
        }
    }

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
    @inline(__always)
    private mutating func parseString() throws -> String {
        let (value, next) = try JSONLexer.readString(p, quote: pos, end: end, scratch: &scratch)
        pos = next
        return value
    }

    // MARK: - Numbers

    /// Integer literals (no fraction, no exponent) that fit in Int become Int; every other
    /// number becomes Double (correctly rounded; out-of-range magnitudes are an error).
    private mutating func parseNumber() throws -> Any {
        let (value, next) = try JSONLexer.readNumber(p, at: pos, end: end)
        pos = next
        switch value {
        case .integer(let i): return Int(i)
        case .double(let d): return d
        }
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
