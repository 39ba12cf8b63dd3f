/// Strict JSON (RFC 8259) reader producing ``JSONValue`` straight from bytes: the same rules as
/// the Foundation-value reader (`JSONParser`) — UTF-8 checked, unpaired surrogates refused, nesting
/// limited to 512, trailing garbage refused — with objects in their member order.
internal struct JSONValueReader {
    private let p: UnsafePointer<UInt8>
    private let end: Int
    private var pos = 0
    private var depth = 0
    /// Decoding buffer for strings that contain escapes.
    private var scratch: [UInt8] = []

    private init(_ p: UnsafePointer<UInt8>, _ count: Int) {
        self.p = p
        self.end = count
    }

    static func read(_ bytes: UnsafeRawBufferPointer) throws -> JSONValue {
        guard let base = bytes.baseAddress, bytes.count > 0 else { throw JSONError("empty input", offset: 0) }
        var reader = JSONValueReader(base.assumingMemoryBound(to: UInt8.self), bytes.count)
        let value = try reader.readValue()
        reader.skipWhitespace()
        guard reader.pos == reader.end else { throw reader.error("unexpected data after the JSON value") }
        return value
    }

    @inline(__always)
    private func error(_ message: String, at offset: Int? = nil) -> JSONError {
        JSONError(message, offset: offset ?? pos)
    }

    @inline(__always)
    private mutating func skipWhitespace() {
        pos = JSONLexer.skipWhitespace(p, from: pos, end: end)
    }

    private mutating func readValue() throws -> JSONValue {
        skipWhitespace()
        guard pos < end else { throw error("unexpected end of input") }
        switch p[pos] {
        case UInt8(ascii: "\""): return .string(try readString())
        case UInt8(ascii: "{"): return .object(try readObject())
        case UInt8(ascii: "["): return .array(try readArray())
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try readNumber()
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        default: throw error("unexpected character")
        }
    }

    private mutating func expectLiteral(_ literal: StaticString) throws {
        let n = literal.utf8CodeUnitCount
        guard end &- pos >= n else { throw error("invalid literal") }
        let l = literal.utf8Start
        for k in 0..<n where p[pos &+ k] != l[k] { throw error("invalid literal") }
        pos &+= n
    }

    private mutating func enter() throws {
        depth &+= 1
        guard depth <= JSONParser.maxDepth else { throw error("nesting deeper than \(JSONParser.maxDepth) levels") }
        pos &+= 1
        skipWhitespace()
    }

    private mutating func readObject() throws -> JSONObject {
        try enter()
        var object = JSONObject()
        if pos < end && p[pos] == UInt8(ascii: "}") {
            pos &+= 1
            depth &-= 1
            return object
        }
        while true {
            skipWhitespace()
            guard pos < end else { throw error("unexpected end of input in object") }
            guard p[pos] == UInt8(ascii: "\"") else { throw error("expected a string key") }
            let key = try readString()
            skipWhitespace()
            guard pos < end else { throw error("unexpected end of input in object") }
            guard p[pos] == UInt8(ascii: ":") else { throw error("expected ':'") }
            pos &+= 1
            // A repeated name keeps its first place and its last value.
            object[key] = try readValue()
            skipWhitespace()
            guard pos < end else { throw error("unexpected end of input in object") }
            let c = p[pos]
            pos &+= 1
            if c == UInt8(ascii: ",") { continue }
            if c == UInt8(ascii: "}") { break }
            throw error("expected ',' or '}'", at: pos &- 1)
        }
        depth &-= 1
        return object
    }

    private mutating func readArray() throws -> [JSONValue] {
        try enter()
        var items: [JSONValue] = []
        if pos < end && p[pos] == UInt8(ascii: "]") {
            pos &+= 1
            depth &-= 1
            return items
        }
        while true {
            items.append(try readValue())
            skipWhitespace()
            guard pos < end else { throw error("unexpected end of input in array") }
            let c = p[pos]
            pos &+= 1
            if c == UInt8(ascii: ",") { continue }
            if c == UInt8(ascii: "]") { break }
            throw error("expected ',' or ']'", at: pos &- 1)
        }
        depth &-= 1
        return items
    }

    private mutating func readString() throws -> String {
        let (value, next) = try JSONLexer.readString(p, quote: pos, end: end, scratch: &scratch)
        pos = next
        return value
    }

    private mutating func readNumber() throws -> JSONValue {
        let (value, next) = try JSONLexer.readNumber(p, at: pos, end: end)
        pos = next
        switch value {
        case .integer(let i): return .int(i)
        case .double(let d): return .double(d)
        }
    }
}

extension JSON {
    /// Reads UTF-8 JSON into a ``JSONValue`` (objects in their member order). Throws `JSONError`
    /// as ``parse(_:)-(UnsafeRawBufferPointer)`` does.
    package static func value(_ bytes: UnsafeRawBufferPointer) throws -> JSONValue {
        try JSONValueReader.read(bytes)
    }

    package static func value(_ bytes: [UInt8]) throws -> JSONValue {
        try bytes.withUnsafeBytes { try JSONValueReader.read($0) }
    }

    package static func value(_ bytes: ArraySlice<UInt8>) throws -> JSONValue {
        try bytes.withUnsafeBytes { try JSONValueReader.read($0) }
    }

    package static func value(_ string: String) throws -> JSONValue {
        var s = string
        return try s.withUTF8 { try JSONValueReader.read(UnsafeRawBufferPointer($0)) }
    }

    /// Reads a JSON object; `JSONError` when the text is another kind of value.
    package static func object(_ bytes: [UInt8]) throws -> JSONObject {
        guard case .object(let o) = try value(bytes) else { throw JSONError("top-level value is not an object", offset: 0) }
        return o
    }
}
