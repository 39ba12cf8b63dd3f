import Foundation
import JSONCore

/// 1.x `CBLJSONWritingOptions` (an `NSUInteger` in the header): a bit set of the constants below.
public typealias CBLJSONWritingOptions = UInt
/// 1.x `CBLJSONReadingOptions` (an `NSUInteger` in the header).
public typealias CBLJSONReadingOptions = UInt

/// Pretty-prints the output (the same bit as `JSONSerialization.WritingOptions.prettyPrinted`).
public let CBLJSONWritingPrettyPrinted: Int = 1 << 0
/// Allows a top-level value that is not an array or object (a 1.x addition to the NSJSON flags).
public let CBLJSONWritingAllowFragments: Int = 1 << 23
/// Accepted for compatibility; values read are Swift values, mutable when stored in a `var`.
public let CBLJSONReadingMutableContainers: Int = 1 << 0
/// Accepted for compatibility.
public let CBLJSONReadingMutableLeaves: Int = 1 << 1
/// Allows a top-level value that is not an array or object.
public let CBLJSONReadingAllowFragments: Int = 1 << 2

/// The 1.x JSON helper class: JSON data and strings from and to Swift values, plus the date,
/// base64 and JSON-pointer helpers 1.x models and apps use.
///
/// Reads and writes with the package's JSON engine (the one documents are stored with), not
/// `JSONSerialization`. Values read are `[String: Any]`, `[Any]`, `String`, `Int` (integers),
/// `Double` (other numbers), `Bool` and `NSNull`. Like `NSJSONSerialization`, writing escapes `/`
/// as `\/` unless `.withoutEscapingSlashes` is given, and refuses a top-level value that is not an
/// array or object unless fragments are allowed.
public final class CBLJSON: NSObject {
    private override init() {}

    // MARK: Data and strings

    /// Encodes `obj` as JSON data (1.x `dataWithJSONObject:options:error:`).
    public class func data(withJSONObject obj: Any, options: JSONSerialization.WritingOptions = []) throws -> Data {
        Data(try encode(obj, pretty: options.contains(.prettyPrinted),
                        fragments: options.contains(.fragmentsAllowed) || options.rawValue & UInt(CBLJSONWritingAllowFragments) != 0,
                        sortedKeys: options.contains(.sortedKeys), escapeSlashes: !options.contains(.withoutEscapingSlashes)))
    }

    /// Encodes `obj` as JSON data with 1.x `CBLJSONWritingOptions` bits (`CBLJSONWritingPrettyPrinted`,
    /// `CBLJSONWritingAllowFragments`).
    public class func data(withJSONObject obj: Any, options: CBLJSONWritingOptions) throws -> Data {
        Data(try encode(obj, options: options))
    }

    /// Encodes `obj` as a JSON string (1.x `stringWithJSONObject:options:error:`).
    public class func string(withJSONObject obj: Any, options: CBLJSONWritingOptions = 0) throws -> String {
        String(decoding: try encode(obj, options: options), as: UTF8.self)
    }

    /// Parses JSON data (1.x `JSONObjectWithData:options:error:`).
    public class func jsonObject(with data: Data, options: JSONSerialization.ReadingOptions = []) throws -> Any {
        try decode(data, allowFragments: options.contains(.fragmentsAllowed))
    }

    /// Parses JSON data with 1.x `CBLJSONReadingOptions` bits.
    public class func jsonObject(with data: Data, options: CBLJSONReadingOptions) throws -> Any {
        try decode(data, allowFragments: options & UInt(CBLJSONReadingAllowFragments) != 0)
    }

    /// True if `obj` can be written as JSON (top level an array or object, as `NSJSONSerialization` requires).
    public class func isValidJSONObject(_ obj: Any) -> Bool {
        isContainer(obj) && JSON.isValid(obj)
    }

    /// Inserts `dict`'s entries into the JSON object `json` without parsing it (1.x
    /// `appendDictionary:toJSONDictionaryData:`). Like 1.x, it assumes `json` starts with `{`, ends
    /// with `}` and has none of `dict`'s keys. Nil if `dict` cannot be encoded.
    public class func appendDictionary(_ dict: [String: Any], toJSONDictionaryData json: Data) -> Data? {
        if dict.isEmpty { return json }
        guard let extra = try? JSON.data(dict, sortedKeys: true) else { return nil }
        guard json.count > 2 else { return Data(extra) }
        var out = Data(json.dropLast())
        out.append(UInt8(ascii: ","))
        out.append(contentsOf: extra.dropFirst())
        return out
    }

    // MARK: Dates

    /// The ISO-8601 string 1.x stores for a date, in UTC with milliseconds: `2016-01-15T23:08:40.803Z`.
    public class func jsonObject(with date: Date) -> String {
        ISO8601Date.string(from: date)
    }

    /// The ISO-8601 string for a date in a time zone (`2016-01-16T00:08:40.803+01:00`).
    public class func jsonObject(with date: Date, timeZone: TimeZone) -> String {
        ISO8601Date.string(from: date, secondsFromGMT: timeZone.secondsFromGMT(for: date))
    }

    /// The date an ISO-8601 string holds; nil if `jsonObject` is not such a string.
    public class func date(withJSONObject jsonObject: Any?) -> Date? {
        (jsonObject as? String).flatMap(ISO8601Date.date(from:))
    }

    /// The date an ISO-8601 string holds, as seconds since the reference date (2001-01-01); NaN
    /// if `jsonObject` is not such a string (1.x `absoluteTimeWithJSONObject:`).
    public class func absoluteTime(withJSONObject jsonObject: Any?) -> TimeInterval {
        date(withJSONObject: jsonObject)?.timeIntervalSinceReferenceDate ?? .nan
    }

    // MARK: Base64

    /// Standard base64 with padding, the form 1.x stores `Data` model properties in.
    public class func base64String(with data: Data) -> String {
        data.base64EncodedString()
    }

    /// The bytes of a base64 string (padding optional, whitespace ignored); nil if `jsonObject`
    /// is not a valid base64 string.
    public class func data(withBase64String jsonObject: Any?) -> Data? {
        guard let string = jsonObject as? String else { return nil }
        return Base64.decode(string)
    }

    // MARK: JSON pointers

    /// The value a JSON pointer (`/a/0/b`, `~1` for `/`, `~0` for `~`) designates in `object`; nil if none.
    public class func value(atPointer pointer: String, inObject object: Any) -> Any? {
        var current: Any = object
        for token in pointer.split(separator: "/", omittingEmptySubsequences: true) {
            let key = token.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
            if let dict = current as? [String: Any] {
                guard let next = dict[key] else { return nil }
                current = next
            } else if let array = current as? [Any] {
                guard let index = Int(key), index >= 0, index < array.count else { return nil }
                current = array[index]
            } else {
                return nil
            }
        }
        return current
    }

    /// A rough count of the bytes `object` occupies in memory (1.x `estimateMemorySize:`).
    public class func estimateMemorySize(_ object: Any) -> Int {
        let overhead = 20
        switch object {
        case let s as String: return overhead + 2 * s.utf16.count
        case let d as [String: Any]:
            return d.reduce(overhead + 8) { $0 + overhead + 2 * $1.key.utf16.count + estimateMemorySize($1.value) }
        case let a as [Any]: return a.reduce(overhead + 8) { $0 + estimateMemorySize($1) }
        case is NSNull: return overhead
        default: return overhead + 8
        }
    }

    // MARK: Swift 2 spellings

    /// Swift 2 spelling of ``string(withJSONObject:options:)``.
    public class func stringWithJSONObject(_ obj: Any, options: CBLJSONWritingOptions = 0) throws -> String {
        try string(withJSONObject: obj, options: options)
    }

    /// Swift 2 spelling of `jsonObject(with:)` for a date.
    public class func JSONObjectWithDate(_ date: Date) -> String { jsonObject(with: date) }

    /// Swift 2 spelling of ``date(withJSONObject:)``.
    public class func dateWithJSONObject(_ jsonObject: Any?) -> Date? { date(withJSONObject: jsonObject) }

    // MARK: Engine

    private static func isContainer(_ obj: Any) -> Bool {
        obj is [String: Any] || obj is [Any] || obj is NSDictionary || obj is NSArray
    }

    private static func encode(_ obj: Any, options: CBLJSONWritingOptions) throws -> [UInt8] {
        try encode(obj, pretty: options & UInt(CBLJSONWritingPrettyPrinted) != 0,
                   fragments: options & UInt(CBLJSONWritingAllowFragments) != 0, sortedKeys: false, escapeSlashes: true)
    }

    private static func encode(_ obj: Any, pretty: Bool, fragments: Bool, sortedKeys: Bool, escapeSlashes: Bool) throws -> [UInt8] {
        guard fragments || isContainer(obj) else {
            throw CBLError.badJSON("top-level value is not an array or object (allow fragments to write one)")
        }
        let compact: [UInt8]
        do {
            compact = try JSON.data(obj, sortedKeys: sortedKeys)
        } catch let error as JSONError {
            throw CBLError.badJSON(error.message)
        }
        guard pretty || (escapeSlashes && compact.contains(UInt8(ascii: "/"))) else { return compact }
        return reformat(compact, pretty: pretty, escapeSlashes: escapeSlashes)
    }

    private static func decode(_ data: Data, allowFragments: Bool) throws -> Any {
        let value: Any
        do {
            value = try JSON.parse(data)
        } catch let error as JSONError {
            throw CBLError.badJSON(error.description)
        }
        guard allowFragments || isContainer(value) else {
            throw CBLError.badJSON("top-level value is not an array or object (allow fragments to read one)")
        }
        return value
    }

    /// Re-spaces compact JSON the way `JSONSerialization` pretty-prints (two-space indent, `" : "`)
    /// and/or escapes `/`, walking the bytes once (strings are copied as they are).
    private static func reformat(_ bytes: [UInt8], pretty: Bool, escapeSlashes: Bool) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count + bytes.count / 2)
        var depth = 0
        var inString = false
        var escaped = false
        func newline() {
            out.append(UInt8(ascii: "\n"))
            out.append(contentsOf: repeatElement(UInt8(ascii: " "), count: depth * 2))
        }
        var i = 0
        while i < bytes.count {
            let c = bytes[i]
            defer { i += 1 }
            if inString {
                if escaped {
                    escaped = false
                } else if c == UInt8(ascii: "\\") {
                    escaped = true
                } else if c == UInt8(ascii: "\"") {
                    inString = false
                } else if c == UInt8(ascii: "/") && escapeSlashes {
                    out.append(UInt8(ascii: "\\"))
                }
                out.append(c)
                continue
            }
            switch c {
            case UInt8(ascii: "\""):
                inString = true
                out.append(c)
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                out.append(c)
                let close = c == UInt8(ascii: "{") ? UInt8(ascii: "}") : UInt8(ascii: "]")
                if pretty, i + 1 < bytes.count, bytes[i + 1] != close {
                    depth += 1
                    newline()
                }
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                if pretty, i > 0, bytes[i - 1] != (c == UInt8(ascii: "}") ? UInt8(ascii: "{") : UInt8(ascii: "[")) {
                    depth -= 1
                    newline()
                }
                out.append(c)
            case UInt8(ascii: ","):
                out.append(c)
                if pretty { newline() }
            case UInt8(ascii: ":"):
                if pretty { out.append(contentsOf: [UInt8(ascii: " "), c, UInt8(ascii: " ")]) } else { out.append(c) }
            default:
                out.append(c)
            }
        }
        return out
    }
}

/// Base64 as 1.x's `CBLBase64` decoded it: whitespace and missing padding tolerated.
enum Base64 {
    static func decode(_ string: String) -> Data? {
        if let data = Data(base64Encoded: string) { return data }
        var cleaned = string.filter { !$0.isWhitespace }
        let remainder = cleaned.utf8.count % 4
        if remainder == 1 { return nil }
        if remainder > 0 { cleaned += String(repeating: "=", count: 4 - remainder) }
        return Data(base64Encoded: cleaned)
    }
}
