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
    /// decodes itself from a nested decoder. Each `as! T` follows a `T.self ==` match: it cannot fail.
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
