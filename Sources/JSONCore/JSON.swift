// TEMPORARY stand-in until the real JSONCore lands (helper in progress).
import Foundation
public struct JSONError: Error, CustomStringConvertible, Sendable { public let message: String; public let offset: Int?; public init(_ m: String, offset: Int? = nil) { message = m; self.offset = offset }; public var description: String { message } }
public enum JSON {
    public static func parse(_ bytes: UnsafeRawBufferPointer) throws -> Any { try parse(Data(bytes)) }
    public static func parse(_ data: Data) throws -> Any { do { return try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]) } catch { throw JSONError("bad json") } }
    public static func parse(_ bytes: [UInt8]) throws -> Any { try parse(Data(bytes)) }
    public static func parse(_ string: String) throws -> Any { try parse(Data(string.utf8)) }
    public static func parseObject(_ bytes: UnsafeRawBufferPointer) throws -> [String: Any] { guard let d = try parse(bytes) as? [String: Any] else { throw JSONError("not object") }; return d }
    public static func parseObject(_ data: Data) throws -> [String: Any] { guard let d = try parse(data) as? [String: Any] else { throw JSONError("not object") }; return d }
    public static func parseObject(_ bytes: [UInt8]) throws -> [String: Any] { guard let d = try parse(bytes) as? [String: Any] else { throw JSONError("not object") }; return d }
    public static func canonicalData(_ value: Any) throws -> [UInt8] { Array(try JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .fragmentsAllowed, .withoutEscapingSlashes])) }
    public static func data(_ value: Any, sortedKeys: Bool) throws -> [UInt8] { try canonicalData(value) }
    public static func string(_ value: Any, sortedKeys: Bool = true) throws -> String { String(decoding: try canonicalData(value), as: UTF8.self) }
    public static func isValid(_ value: Any) -> Bool { JSONSerialization.isValidJSONObject([value]) }
    public static func utf16Precedes(_ a: String, _ b: String) -> Bool { a.utf16.lexicographicallyPrecedes(b.utf16) }
}
public struct JSONWriter {
    public private(set) var bytes: [UInt8] = []
    public init(capacity: Int = 256) {}
    public mutating func write(_ value: Any, sortedKeys: Bool = true) throws { bytes += try JSON.canonicalData(value) }
    public mutating func writeObject(_ dict: [String: Any], sortedKeys: Bool = true, skippingKey skip: (String) -> Bool) throws { bytes += try JSON.canonicalData(dict.filter { !skip($0.key) }) }
    public mutating func writeString(_ s: String) { bytes += try! JSON.canonicalData(s) }
    public mutating func writeRaw(_ b: some Sequence<UInt8>) { bytes += b }
}
