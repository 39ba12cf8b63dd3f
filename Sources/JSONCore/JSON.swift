import Foundation

/// Fast JSON reader and Couchbase Lite 1.x canonical JSON writer.
///
/// Reading produces Foundation-compatible values: `[String: Any]`, `[Any]`, `String`,
/// `Int` (integer literals without fraction/exponent that fit in Int), `Double` (every other
/// number), `Bool`, `NSNull`.
///
/// Writing accepts `String`, `Substring`, `NSString`, all integer types, `Double`, `Float`,
/// `CGFloat`, `Bool`, `NSNull`, `NSNumber` (booleans recognised by class; never confuses
/// the integer 1 with `true`), `[Any]`, `[Any?]`, `[String: Any]`, `[String: Any?]`,
/// `NSArray`, `NSDictionary` with string keys, other arrays/dictionaries convertible to
/// those, and `Optional.none` (written as `null`). Anything else -- `Date`, `Data`, NaN,
/// infinities, non-string keys, arbitrary objects -- throws `JSONError`.
package enum JSON {
    // MARK: Reading

    /// Parses UTF-8 JSON. Throws `JSONError` on any syntax error, trailing garbage
    /// (whitespace allowed), invalid UTF-8, unpaired surrogates, or nesting deeper than 512.
    package static func parse(_ bytes: UnsafeRawBufferPointer) throws -> Any {
        try JSONParser.parse(bytes)
    }

    package static func parse(_ data: Data) throws -> Any {
        try data.withUnsafeBytes { try JSONParser.parse($0) }
    }

    package static func parse(_ bytes: [UInt8]) throws -> Any {
        try bytes.withUnsafeBytes { try JSONParser.parse($0) }
    }

    package static func parse(_ string: String) throws -> Any {
        var s = string
        return try s.withUTF8 { try JSONParser.parse(UnsafeRawBufferPointer($0)) }
    }

    /// Same as `parse`, but requires a top-level object.
    package static func parseObject(_ bytes: UnsafeRawBufferPointer) throws -> [String: Any] {
        try JSONParser.parseObject(bytes)
    }

    /// `parseObject`, with the dictionary sized for `extraCapacity` more keys the caller will
    /// add (adding them then never rehashes it).
    package static func parseObject(_ bytes: [UInt8], extraCapacity: Int) throws -> [String: Any] {
        try bytes.withUnsafeBytes { try JSONParser.parseObject($0, extraCapacity: extraCapacity) }
    }

    package static func parseObject(_ data: Data) throws -> [String: Any] {
        try data.withUnsafeBytes { try JSONParser.parseObject($0) }
    }

    package static func parseObject(_ bytes: [UInt8]) throws -> [String: Any] {
        try bytes.withUnsafeBytes { try JSONParser.parseObject($0) }
    }

    // MARK: Writing

    /// Canonical CBL 1.x encoding (byte-exact with iOS `CBJSONEncoder canonicalEncoding:`):
    /// compact, object keys sorted by UTF-16 code units at every level, non-ASCII as raw
    /// UTF-8, iOS number formatting. See `JSONWriter` and NumberFormatting.swift.
    package static func canonicalData(_ value: Any) throws -> [UInt8] {
        var w = JSONWriter(capacity: 256)
        try w.write(value, sortedKeys: true)
        return w.bytes
    }

    /// Compact encoding; with `sortedKeys: false` keys are written in dictionary order.
    package static func data(_ value: Any, sortedKeys: Bool) throws -> [UInt8] {
        var w = JSONWriter(capacity: 256)
        try w.write(value, sortedKeys: sortedKeys)
        return w.bytes
    }

    package static func string(_ value: Any, sortedKeys: Bool = true) throws -> String {
        String(decoding: try data(value, sortedKeys: sortedKeys), as: UTF8.self)
    }

    /// True if `value` (recursively) is JSON-representable under the writer's rules.
    package static func isValid(_ value: Any) -> Bool {
        ValueClassifier.isValid(value, depth: 0)
    }

    /// UTF-16 code-unit order comparison (the key order of canonical JSON).
    package static func utf16Precedes(_ a: String, _ b: String) -> Bool {
        JSONCore.utf16Precedes(a, b)
    }
}
