import Foundation

/// Where a decoded model's `@DocumentID` comes from.
enum DocumentIdentity {
    /// A document: its ID and current revision.
    case document(id: String, revisionID: String?)
    /// A query row: the column named like the ID property (`SELECT meta().id AS id, …`); no
    /// revision, so saving the model later saves over the revision current then.
    case row(Result)
}

/// Decodes a model straight from document values (no JSON in between): a `Document`'s Fleece
/// properties, a `MutableDocument`'s values or a query row's columns. The mapping mirrors
/// ``DocumentEncoder``: `Date` from an ISO-8601 string, `Data` from binary data (or a Base64
/// string, as JSON carries it), `Blob` from a blob dictionary, numbers converted when exact
/// (an integral `Double` is stored as an integer).
struct DocumentDecoder: Decoder {
    /// The value being decoded: an API value (`DictionaryObject`, `ArrayObject`, `Result`, `Blob`,
    /// `String`, numbers, `Bool`, `Data`, `NSNull`).
    let value: Any
    let codingPath: [any CodingKey]
    /// Set at the root only: what `@DocumentID` is filled from.
    let identity: DocumentIdentity?
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(value: Any, codingPath: [any CodingKey] = [], identity: DocumentIdentity? = nil) {
        self.value = value
        self.codingPath = codingPath
        self.identity = identity
    }

    /// The model stored in `document`, tied to its ID and current revision.
    static func decode<T: Decodable>(_ type: T.Type, from document: Document) throws -> T {
        try T(from: DocumentDecoder(value: document, identity: .document(id: document.id, revisionID: document.revisionID)))
    }

    /// The model in a query row: its columns, or the dictionary in column `dataKey` (`* AS data`).
    static func decode<T: Decodable>(_ type: T.Type, from row: Result, dataKey: String?) throws -> T {
        guard let dataKey else { return try unbox(row, as: T.self, at: [], identity: .row(row)) }
        guard let data = row.value(forKey: dataKey) else {
            throw DecodingError.keyNotFound(CodableKey(dataKey), .init(codingPath: [],
                debugDescription: "The row has no column '\(dataKey)' (columns: \(row.keyNames.joined(separator: ", ")))"))
        }
        return try unbox(data, as: T.self, at: [CodableKey(dataKey)], identity: .row(row))
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard let source = value as? KeyedValueSource else {
            throw Self.mismatch([String: Any].self, value, codingPath)
        }
        return KeyedDecodingContainer(KeyedContainer<Key>(source: source, codingPath: codingPath, identity: identity))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard let array = value as? ArrayObject else { throw Self.mismatch([Any].self, value, codingPath) }
        return UnkeyedContainer(array: array, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        SingleValueContainer(value: value, codingPath: codingPath)
    }

    // MARK: Values

    /// `value` as `T`: the types the encoder maps specially are read here, everything else
    /// decodes itself from a nested decoder.
    static func unbox<T: Decodable>(_ value: Any, as type: T.Type, at codingPath: [any CodingKey],
                                    identity: DocumentIdentity? = nil) throws -> T {
        if T.self == Date.self {
            if let string = value as? String, let date = ISO8601.parse(string) { return date as! T }
            throw mismatch(Date.self, value, codingPath, "an ISO-8601 date string")
        }
        if T.self == Data.self {
            if let data = value as? Data { return data as! T }
            if let string = value as? String, let data = Data(base64Encoded: string) { return data as! T }
            throw mismatch(Data.self, value, codingPath, "binary data")
        }
        if T.self == Blob.self {
            if let blob = value as? Blob { return blob as! T }
            throw mismatch(Blob.self, value, codingPath, "a blob")
        }
        if T.self == URL.self {
            if let string = value as? String, let url = URL(string: string) { return url as! T }
            throw mismatch(URL.self, value, codingPath, "a URL string")
        }
        if T.self == Decimal.self {
            if let double = number(value, as: Double.self) { return Decimal(double) as! T }
            if let string = value as? String, let decimal = Decimal(string: string) { return decimal as! T }
            throw mismatch(Decimal.self, value, codingPath, "a number")
        }
        return try T(from: DocumentDecoder(value: value, codingPath: codingPath, identity: identity))
    }

    /// A stored number as `N` when it converts exactly (Fleece keeps integral doubles as integers;
    /// a `Float` may read a `Double` with rounding).
    static func number<N: Numeric>(_ value: Any, as type: N.Type) -> N? {
        switch value {
        case is Bool: return nil
        case let v as Int: return convert(v, to: N.self)
        case let v as Int64: return convert(v, to: N.self)
        case let v as UInt64: return convert(v, to: N.self)
        case let v as Double: return convert(v, to: N.self)
        case let v as Float: return convert(Double(v), to: N.self)
        default: return nil
        }
    }

    private static func convert<I: BinaryInteger, N: Numeric>(_ v: I, to type: N.Type) -> N? {
        switch type {
        case is Double.Type: return Double(v) as? N
        case is Float.Type: return Float(v) as? N
        default: return N(exactly: v)
        }
    }

    private static func convert<N: Numeric>(_ v: Double, to type: N.Type) -> N? {
        switch type {
        case is Double.Type: return v as? N
        case is Float.Type: return Float(v) as? N
        case let integer as any FixedWidthInteger.Type: return integer.init(exactly: v) as? N
        default: return nil
        }
    }

    static func mismatch(_ type: Any.Type, _ value: Any, _ codingPath: [any CodingKey],
                         _ expected: String? = nil) -> DecodingError {
        if value is NSNull {
            return .valueNotFound(type, .init(codingPath: codingPath, debugDescription: "Found null, expected \(type)"))
        }
        return .typeMismatch(type, .init(codingPath: codingPath,
            debugDescription: "Expected \(expected ?? "\(type)") but found \(Swift.type(of: value)) \(value)"))
    }

    // MARK: Containers

    private struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let source: KeyedValueSource
        let codingPath: [any CodingKey]
        let identity: DocumentIdentity?

        var allKeys: [Key] { source.sourceKeys.compactMap { Key(stringValue: $0) } }

        func contains(_ key: Key) -> Bool { source.sourceValue(forKey: key.stringValue) != nil }

        private func value(_ key: Key) throws -> Any {
            guard let value = source.sourceValue(forKey: key.stringValue) else {
                throw DecodingError.keyNotFound(key, .init(codingPath: codingPath,
                    debugDescription: "No value for key '\(key.stringValue)'"))
            }
            return value
        }

        func decodeNil(forKey key: Key) throws -> Bool { try value(key) is NSNull }

        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            if let id = documentID(T.self, key) { return id }
            return try DocumentDecoder.unbox(try value(key), as: T.self, at: codingPath + [key])
        }

        func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
            if let id = documentID(T.self, key) { return id }
            guard let value = source.sourceValue(forKey: key.stringValue), !(value is NSNull) else { return nil }
            return try DocumentDecoder.unbox(value, as: T.self, at: codingPath + [key])
        }

        /// At the root, `@DocumentID` comes from the document (or the row's ID column), not the body.
        private func documentID<T>(_ type: T.Type, _ key: Key) -> T? {
            guard T.self == DocumentID.self, let identity else { return nil }
            switch identity {
            case .document(let id, let revisionID):
                return DocumentID(id: id, revisionID: revisionID) as? T
            case .row(let row):
                return DocumentID(id: row.value(forKey: key.stringValue) as? String, revisionID: nil) as? T
            }
        }

        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type,
                                                   forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
            try DocumentDecoder(value: try value(key), codingPath: codingPath + [key]).container(keyedBy: type)
        }

        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            try DocumentDecoder(value: try value(key), codingPath: codingPath + [key]).unkeyedContainer()
        }

        func superDecoder() throws -> any Decoder {
            let key = CodableKey("super")
            return DocumentDecoder(value: source.sourceValue(forKey: "super") ?? NSNull(), codingPath: codingPath + [key])
        }

        func superDecoder(forKey key: Key) throws -> any Decoder {
            DocumentDecoder(value: source.sourceValue(forKey: key.stringValue) ?? NSNull(), codingPath: codingPath + [key])
        }
    }

    private struct UnkeyedContainer: UnkeyedDecodingContainer {
        let array: ArrayObject
        let codingPath: [any CodingKey]
        private(set) var currentIndex = 0

        init(array: ArrayObject, codingPath: [any CodingKey]) {
            self.array = array
            self.codingPath = codingPath
        }

        var count: Int? { array.count }
        var isAtEnd: Bool { currentIndex >= array.count }

        private var path: [any CodingKey] { codingPath + [CodableKey(index: currentIndex)] }

        private func current<T>(_ type: T.Type) throws -> Any {
            guard !isAtEnd, let value = array.value(at: currentIndex) else {
                throw DecodingError.valueNotFound(type, .init(codingPath: path, debugDescription: "Unkeyed container is at end"))
            }
            return value
        }

        mutating func decodeNil() throws -> Bool {
            guard try current(Any.self) is NSNull else { return false }
            currentIndex += 1
            return true
        }

        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
            let decoded = try DocumentDecoder.unbox(try current(T.self), as: T.self, at: path)
            currentIndex += 1
            return decoded
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
            let container = try DocumentDecoder(value: try current(type), codingPath: path).container(keyedBy: type)
            currentIndex += 1
            return container
        }

        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
            let container = try DocumentDecoder(value: try current([Any].self), codingPath: path).unkeyedContainer()
            currentIndex += 1
            return container
        }

        mutating func superDecoder() throws -> any Decoder {
            let decoder = DocumentDecoder(value: try current(Any.self), codingPath: path)
            currentIndex += 1
            return decoder
        }
    }

    private struct SingleValueContainer: SingleValueDecodingContainer {
        let value: Any
        let codingPath: [any CodingKey]

        func decodeNil() -> Bool { value is NSNull }

        func decode(_ type: Bool.Type) throws -> Bool {
            if let b = value as? Bool { return b }
            // Query expressions yield booleans as the integers 0 and 1 (LiteCore's semantics).
            if let n = DocumentDecoder.number(value, as: Int.self), n == 0 || n == 1 { return n == 1 }
            throw DocumentDecoder.mismatch(Bool.self, value, codingPath)
        }

        func decode(_ type: String.Type) throws -> String {
            guard let s = value as? String else { throw DocumentDecoder.mismatch(String.self, value, codingPath) }
            return s
        }

        func decode(_ type: Double.Type) throws -> Double { try number(Double.self) }
        func decode(_ type: Float.Type) throws -> Float { try number(Float.self) }
        func decode(_ type: Int.Type) throws -> Int { try number(Int.self) }
        func decode(_ type: Int8.Type) throws -> Int8 { try number(Int8.self) }
        func decode(_ type: Int16.Type) throws -> Int16 { try number(Int16.self) }
        func decode(_ type: Int32.Type) throws -> Int32 { try number(Int32.self) }
        func decode(_ type: Int64.Type) throws -> Int64 { try number(Int64.self) }
        func decode(_ type: UInt.Type) throws -> UInt { try number(UInt.self) }
        func decode(_ type: UInt8.Type) throws -> UInt8 { try number(UInt8.self) }
        func decode(_ type: UInt16.Type) throws -> UInt16 { try number(UInt16.self) }
        func decode(_ type: UInt32.Type) throws -> UInt32 { try number(UInt32.self) }
        func decode(_ type: UInt64.Type) throws -> UInt64 { try number(UInt64.self) }

        func decode<T: Decodable>(_ type: T.Type) throws -> T {
            try DocumentDecoder.unbox(value, as: T.self, at: codingPath)
        }

        private func number<N: Numeric>(_ type: N.Type) throws -> N {
            guard let n = DocumentDecoder.number(value, as: N.self) else {
                throw DocumentDecoder.mismatch(N.self, value, codingPath, "a number that fits \(N.self)")
            }
            return n
        }
    }
}

/// What a keyed decoding container reads: a dictionary of a document or a query row.
protocol KeyedValueSource {
    var sourceKeys: [String] { get }
    /// The API value for `key`, nil when absent (MISSING).
    func sourceValue(forKey key: String) -> Any?
}

extension DictionaryObject: KeyedValueSource {
    var sourceKeys: [String] { keys }
    func sourceValue(forKey key: String) -> Any? { value(forKey: key) }
}

extension Result: KeyedValueSource {
    var sourceKeys: [String] { keyNames }
    func sourceValue(forKey key: String) -> Any? { value(forKey: key) }
}
