import Foundation

/// Decodes `Decodable` values straight from the JSON values documents hold, with 1.x
/// `CBLModel`'s mappings: `Date` from an ISO-8601 string, `Data` from base64, `URL` and `Decimal`
/// from strings. Numbers convert as 1.x's did (an integral `Double` reads as `Int`, `0`/`1` as
/// `Bool`); `NSNull` and a missing key read as `nil`.
struct JSONValueDecoder {
    func decode<T: Decodable>(_ type: T.Type, from value: Any) throws -> T {
        try ValueDecoder(value: value, codingPath: []).unbox(type)
    }
}

private struct ValueDecoder: Decoder {
    let value: Any
    let codingPath: [CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard let object = value as? [String: Any] else {
            throw mismatch([String: Any].self, "an object")
        }
        return KeyedDecodingContainer(KeyedValueContainer<Key>(object: object, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> UnkeyedDecodingContainer {
        guard let array = value as? [Any] else { throw mismatch([Any].self, "an array") }
        return UnkeyedValueContainer(array: array, codingPath: codingPath)
    }

    func singleValueContainer() throws -> SingleValueDecodingContainer { SingleValueContainer(decoder: self) }

    func mismatch(_ type: Any.Type, _ what: String) -> DecodingError {
        DecodingError.typeMismatch(type, .init(codingPath: codingPath,
                                               debugDescription: "Expected \(what), found \(Swift.type(of: value)): \(value)"))
    }

    var isNull: Bool { value is NSNull }

    /// Each `as! T` follows a `T.self ==` match: it cannot fail.
    func unbox<T: Decodable>(_ type: T.Type) throws -> T {
        if T.self == Date.self {
            guard let date = (value as? String).flatMap(ISO8601Date.date(from:)) else {
                throw mismatch(Date.self, "an ISO-8601 date string")
            }
            return date as! T
        }
        if T.self == Data.self {
            guard let data = (value as? String).flatMap(Base64.decode) else { throw mismatch(Data.self, "a base64 string") }
            return data as! T
        }
        if T.self == URL.self {
            guard let url = (value as? String).flatMap(URL.init(string:)) else { throw mismatch(URL.self, "a URL string") }
            return url as! T
        }
        if T.self == Decimal.self {
            if let s = value as? String, let d = Decimal(string: s, locale: Locale(identifier: "en_US_POSIX")) { return d as! T }
            if let n = JSONScalar.double(value) { return Decimal(n) as! T }
            throw mismatch(Decimal.self, "a decimal string or number")
        }
        if T.self == String.self {
            guard let s = value as? String else { throw mismatch(String.self, "a string") }
            return s as! T
        }
        if T.self == Bool.self {
            guard let b = JSONScalar.bool(value) else { throw mismatch(Bool.self, "a boolean") }
            return b as! T
        }
        if T.self == Int.self {
            guard let i = JSONScalar.int(value) else { throw mismatch(Int.self, "an integer") }
            return i as! T
        }
        if T.self == Double.self {
            guard let d = JSONScalar.double(value) else { throw mismatch(Double.self, "a number") }
            return d as! T
        }
        return try T(from: self)
    }

    func integer<T: FixedWidthInteger>(_ type: T.Type) throws -> T {
        if let i = JSONScalar.int(value), let v = T(exactly: i) { return v }
        if let d = value as? Double, let v = T(exactly: d) { return v }
        throw mismatch(T.self, "an integer that fits \(T.self)")
    }

    func floating<T: BinaryFloatingPoint>(_ type: T.Type) throws -> T {
        guard let d = JSONScalar.double(value) else { throw mismatch(T.self, "a number") }
        return T(d)
    }
}

/// Scalar conversions shared by the decoder and the model property mappings.
enum JSONScalar {
    static func bool(_ value: Any) -> Bool? {
        switch value {
        case let b as Bool: return b
        case let i as Int: return i != 0
        case let d as Double: return d != 0
        case let n as NSNumber: return n.boolValue
        default: return nil
        }
    }

    static func int(_ value: Any) -> Int? {
        switch value {
        case let i as Int: return i
        case let d as Double: return Int(exactly: d)
        case let b as Bool: return b ? 1 : 0
        case let n as NSNumber: return Int(exactly: n.doubleValue) ?? n.intValue
        default: return nil
        }
    }

    static func double(_ value: Any) -> Double? {
        switch value {
        case let d as Double: return d
        case let i as Int: return Double(i)
        case let n as NSNumber: return n.doubleValue
        default: return nil
        }
    }
}

private struct KeyedValueContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let object: [String: Any]
    let codingPath: [CodingKey]

    var allKeys: [Key] { object.keys.compactMap(Key.init(stringValue:)) }
    func contains(_ key: Key) -> Bool { object[key.stringValue] != nil }

    private func decoder(for key: Key) throws -> ValueDecoder {
        guard let value = object[key.stringValue] else {
            throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "No value for \"\(key.stringValue)\""))
        }
        return ValueDecoder(value: value, codingPath: codingPath + [key])
    }

    func decodeNil(forKey key: Key) throws -> Bool { (object[key.stringValue] ?? NSNull()) is NSNull }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try decoder(for: key).unbox(type) }

    // A null value reads as nil (the default `decodeIfPresent` would try to decode it).
    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        guard let value = object[key.stringValue], !(value is NSNull) else { return nil }
        return try ValueDecoder(value: value, codingPath: codingPath + [key]).unbox(type)
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try decoder(for: key).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> UnkeyedDecodingContainer {
        try decoder(for: key).unkeyedContainer()
    }

    func superDecoder() throws -> Decoder {
        ValueDecoder(value: object["super"] ?? NSNull(), codingPath: codingPath)
    }

    func superDecoder(forKey key: Key) throws -> Decoder {
        ValueDecoder(value: object[key.stringValue] ?? NSNull(), codingPath: codingPath + [key])
    }
}

private struct UnkeyedValueContainer: UnkeyedDecodingContainer {
    let array: [Any]
    let codingPath: [CodingKey]
    private(set) var currentIndex = 0

    init(array: [Any], codingPath: [CodingKey]) {
        self.array = array
        self.codingPath = codingPath
    }

    var count: Int? { array.count }
    var isAtEnd: Bool { currentIndex >= array.count }

    private mutating func next() throws -> ValueDecoder {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(Any.self, .init(codingPath: codingPath + [IndexKey(currentIndex)],
                                                               debugDescription: "Unkeyed container is at end"))
        }
        defer { currentIndex += 1 }
        return ValueDecoder(value: array[currentIndex], codingPath: codingPath + [IndexKey(currentIndex)])
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, array[currentIndex] is NSNull else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try next().unbox(type) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        try next().container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> UnkeyedDecodingContainer { try next().unkeyedContainer() }

    mutating func superDecoder() throws -> Decoder { try next() }
}

private struct SingleValueContainer: SingleValueDecodingContainer {
    let decoder: ValueDecoder
    var codingPath: [CodingKey] { decoder.codingPath }

    func decodeNil() -> Bool { decoder.isNull }
    func decode(_ type: Bool.Type) throws -> Bool { try decoder.unbox(type) }
    func decode(_ type: String.Type) throws -> String { try decoder.unbox(type) }
    func decode(_ type: Double.Type) throws -> Double { try decoder.unbox(type) }
    func decode(_ type: Float.Type) throws -> Float { try decoder.floating(type) }
    func decode(_ type: Int.Type) throws -> Int { try decoder.unbox(type) }
    func decode(_ type: Int8.Type) throws -> Int8 { try decoder.integer(type) }
    func decode(_ type: Int16.Type) throws -> Int16 { try decoder.integer(type) }
    func decode(_ type: Int32.Type) throws -> Int32 { try decoder.integer(type) }
    func decode(_ type: Int64.Type) throws -> Int64 { try decoder.integer(type) }
    func decode(_ type: UInt.Type) throws -> UInt { try decoder.integer(type) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try decoder.integer(type) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try decoder.integer(type) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try decoder.integer(type) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try decoder.integer(type) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try decoder.unbox(type) }
}
