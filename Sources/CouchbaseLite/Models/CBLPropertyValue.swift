import Foundation

/// Where a property value is being read: the model and the property name (model references are
/// looked up in `model.databaseForModelProperty(property)`).
public struct CBLPropertyContext {
    /// The model the property belongs to.
    public let model: CBLModel
    /// The property's name in the document.
    public let property: String
}

/// A type ``CBLProperty`` converts to and from the JSON a document stores, with 1.x `CBLModel`'s
/// mappings: strings, numbers and booleans as themselves, `Date` as an ISO-8601 string
/// (`"2016-01-15T23:08:40.803Z"`), `Data` as base64, `URL` and `Decimal` as strings, a
/// ``CBLModel`` as its document ID, arrays, sets and string-keyed dictionaries of these as JSON
/// arrays and objects. Conform your own types to store them another way; other `Codable` types
/// are stored as the JSON object they encode to, and anything else (`[String: Any]`, `[Any]`)
/// as it is.
public protocol CBLPropertyValue {
    /// The value for a stored JSON value (never `nil` or absent); nil if it does not convert
    /// (the property then reads as its default).
    static func cblDecode(_ json: Any, in context: CBLPropertyContext) -> Self?
    /// The JSON value to store; nil removes the property from the document.
    func cblEncode() -> Any?
}

/// A type with a natural value for an absent property (0, false, "", empty collections), so a
/// non-optional ``CBLProperty`` of it needs no initial value.
public protocol CBLPropertyDefaultValue {
    /// The value an absent property reads as.
    static var cblDefaultValue: Self { get }
}

// MARK: Scalars

extension String: CBLPropertyValue, CBLPropertyDefaultValue {
    public static func cblDecode(_ json: Any, in context: CBLPropertyContext) -> String? { json as? String }
    public func cblEncode() -> Any? { self }
    public static var cblDefaultValue: String { "" }
}

extension Bool: CBLPropertyValue, CBLPropertyDefaultValue {
    public static func cblDecode(_ json: Any, in context: CBLPropertyContext) -> Bool? { JSONScalar.bool(json) }
    public func cblEncode() -> Any? { self }
    public static var cblDefaultValue: Bool { false }
}

extension Double: CBLPropertyValue, CBLPropertyDefaultValue {
    public static func cblDecode(_ json: Any, in context: CBLPropertyContext) -> Double? { JSONScalar.double(json) }
    public func cblEncode() -> Any? { isFinite ? self : nil }
    public static var cblDefaultValue: Double { 0 }
}

extension Float: CBLPropertyValue, CBLPropertyDefaultValue {
    public static func cblDecode(_ json: Any, in context: CBLPropertyContext) -> Float? { JSONScalar.double(json).map(Float.init) }
    public func cblEncode() -> Any? { isFinite ? Double(self) : nil }
    public static var cblDefaultValue: Float { 0 }
}

/// Integers read from JSON integers, or from doubles with no fraction that fit.
private func decodeInteger<T: FixedWidthInteger>(_ json: Any) -> T? {
    if let i = json as? Int { return T(exactly: i) }
    return JSONScalar.double(json).flatMap { T(exactly: $0) }
}

private func encodeInteger<T: FixedWidthInteger>(_ value: T) -> Any { Int(exactly: value) ?? Double(value) }

extension Int: CBLPropertyValue, CBLPropertyDefaultValue {
    public static func cblDecode(_ json: Any, in context: CBLPropertyContext) -> Int? { decodeInteger(json) ?? (json as? Bool).map { $0 ? 1 : 0 } }
    public func cblEncode() -> Any? { self }
    public static var cblDefaultValue: Int { 0 }
}

extension Int8: CBLPropertyValue, CBLPropertyDefaultValue {
    public static func cblDecode(_ json: Any, in context: CBLPropertyContext) -> Int8? { decodeInteger(json) }
    public func cblEncode() -> Any? { encodeInteger(self) }
    public static var cblDefaultValue: Int8 { 0 }
}

extension Int16: CBLPropertyValue, CBLPropertyDefaultValue {
    public static func cblDecode(_ json: Any, in context: CBLPropertyContext) -> Int16? { decodeInteger(json) }
    public func cblEncode() -> Any? { encodeInteger(self) }
    public static var cblDefaultValue: Int16 { 0 }
}

extension Int32: CBLPropertyValue, CBLPropertyDefaultValue {
    public static func cblDecode(_ json: Any, in context: CBLPropertyContext) -> Int32? { decodeInteger(json) }
    public func cblEncode() -> Any? { encodeInteger(self) }
    public static var cblDefaultValue: Int32 { 0 }
}

extension Int64: CBLPropertyValue, CBLPropertyDefaultValue {
    public static func cblDecode(_ json: Any, in context: CBLPropertyContext) -> Int64? { decodeInteger(json) }
    public func cblEncode() -> Any? { encodeInteger(self) }
    public static var cblDefaultValue: Int64 { 0 }
}

extension UInt: CBLPropertyValue, CBLPropertyDefaultValue {
    public static func cblDecode(_ json: Any, in context: CBLPropertyContext) -> UInt? { decodeInteger(json) }
    public func cblEncode() -> Any? { encodeInteger(self) }
    public static var cblDefaultValue: UInt { 0 }
}

extension UInt8: CBLPropertyValue, CBLPropertyDefaultValue {
    public static func cblDecode(_ json: Any, in context: CBLPropertyContext) -> UInt8? { decodeInteger(json) }
    public func cblEncode() -> Any? { encodeInteger(self) }
    public static var cblDefaultValue: UInt8 { 0 }
}

extension UInt16: CBLPropertyValue, CBLPropertyDefaultValue {
    public static func cblDecode(_ json: Any, in context: CBLPropertyContext) -> UInt16? { decodeInteger(json) }
    public func cblEncode() -> Any? { encodeInteger(self) }
    public static var cblDefaultValue: UInt16 { 0 }
}

extension UInt32: CBLPropertyValue, CBLPropertyDefaultValue {
    public static func cblDecode(_ json: Any, in context: CBLPropertyContext) -> UInt32? { decodeInteger(json) }
    public func cblEncode() -> Any? { encodeInteger(self) }
    public static var cblDefaultValue: UInt32 { 0 }
}

extension UInt64: CBLPropertyValue, CBLPropertyDefaultValue {
    public static func cblDecode(_ json: Any, in context: CBLPropertyContext) -> UInt64? { decodeInteger(json) }
    public func cblEncode() -> Any? { encodeInteger(self) }
    public static var cblDefaultValue: UInt64 { 0 }
}

// MARK: Types JSON lacks (1.x CBLModel's conversions)

extension Date: CBLPropertyValue {
    /// An ISO-8601 string (`CBLJSON.date(withJSONObject:)`).
    public static func cblDecode(_ json: Any, in context: CBLPropertyContext) -> Date? {
        if let date = json as? Date { return date }
        return (json as? String).flatMap(ISO8601Date.date(from:))
    }
    /// `"2016-01-15T23:08:40.803Z"` (`CBLJSON.jsonObject(with:)`).
    public func cblEncode() -> Any? { ISO8601Date.string(from: self) }
}

extension Data: CBLPropertyValue, CBLPropertyDefaultValue {
    /// A base64 string.
    public static func cblDecode(_ json: Any, in context: CBLPropertyContext) -> Data? {
        if let data = json as? Data { return data }
        return (json as? String).flatMap(Base64.decode)
    }
    public func cblEncode() -> Any? { base64EncodedString() }
    public static var cblDefaultValue: Data { Data() }
}

extension URL: CBLPropertyValue {
    /// The URL's absolute string.
    public static func cblDecode(_ json: Any, in context: CBLPropertyContext) -> URL? {
        if let url = json as? URL { return url }
        return (json as? String).flatMap(URL.init(string:))
    }
    public func cblEncode() -> Any? { absoluteString }
}

extension Decimal: CBLPropertyValue, CBLPropertyDefaultValue {
    /// A string, as 1.x stored `NSDecimalNumber` (a JSON number is read too).
    public static func cblDecode(_ json: Any, in context: CBLPropertyContext) -> Decimal? {
        if let d = json as? Decimal { return d }
        if let s = json as? String { return Decimal(string: s, locale: Locale(identifier: "en_US_POSIX")) }
        return JSONScalar.double(json).map { Decimal($0) }
    }
    public func cblEncode() -> Any? { description }
    public static var cblDefaultValue: Decimal { 0 }
}

// MARK: Containers

extension Optional: CBLPropertyValue where Wrapped: CBLPropertyValue {
    /// `null` reads as nil; so does a value that does not convert.
    public static func cblDecode(_ json: Any, in context: CBLPropertyContext) -> Wrapped?? {
        if json is NSNull { return .some(nil) }
        return .some(Wrapped.cblDecode(json, in: context))
    }
    /// nil removes the property.
    public func cblEncode() -> Any? { self?.cblEncode() ?? nil }
}

extension Array: CBLPropertyValue where Element: CBLPropertyValue {
    /// A JSON array; items that do not convert are left out (as 1.x did).
    public static func cblDecode(_ json: Any, in context: CBLPropertyContext) -> [Element]? {
        if let typed = json as? [Element], !(Element.self is CBLModel.Type) { return typed }
        guard let array = json as? [Any] else { return nil }
        return array.compactMap { $0 is NSNull ? nil : Element.cblDecode($0, in: context) }
    }
    public func cblEncode() -> Any? { map { $0.cblEncode() ?? NSNull() } }
}

extension Array: CBLPropertyDefaultValue {
    public static var cblDefaultValue: [Element] { [] }
}

extension Set: CBLPropertyValue where Element: CBLPropertyValue {
    /// A JSON array.
    public static func cblDecode(_ json: Any, in context: CBLPropertyContext) -> Set<Element>? {
        guard let array = [Element].cblDecode(json, in: context) else { return nil }
        return Set(array)
    }
    public func cblEncode() -> Any? { map { $0.cblEncode() ?? NSNull() } }
}

extension Set: CBLPropertyDefaultValue {
    public static var cblDefaultValue: Set<Element> { [] }
}

extension Dictionary: CBLPropertyValue where Key == String, Value: CBLPropertyValue {
    /// A JSON object; entries that do not convert are left out.
    public static func cblDecode(_ json: Any, in context: CBLPropertyContext) -> [String: Value]? {
        guard let object = json as? [String: Any] else { return nil }
        return object.compactMapValues { $0 is NSNull ? nil : Value.cblDecode($0, in: context) }
    }
    public func cblEncode() -> Any? { mapValues { $0.cblEncode() ?? NSNull() } }
}

extension Dictionary: CBLPropertyDefaultValue {
    public static var cblDefaultValue: [Key: Value] { [:] }
}

// MARK: Model references

extension CBLModel: CBLPropertyValue {
    /// A document ID, looked up in `context.model.databaseForModelProperty(context.property)`:
    /// the document's model (the factory's class for its `type`, else this class), loaded when
    /// the property is read. Nil if the document already has a model of another class.
    public static func cblDecode(_ json: Any, in context: CBLPropertyContext) -> Self? {
        if let model = json as? Self { return model }
        guard let docID = json as? String else {
            CBLLog.warning("Model", "Model-valued property \(context.property) of \(context.model) is not a document ID")
            return nil
        }
        guard let database = context.model.databaseForModelProperty(context.property),
              let document = database.document(withID: docID) else { return nil }
        if let model = database.modelFactory?.model(for: document) as? Self { return model }
        return modelForDocument(document)
    }

    /// The model's document ID (1.x stored references that way, never the object).
    public func cblEncode() -> Any? { document?.documentID }
}
