import Foundation

/// Encodes a model straight into document values (no JSON in between): keyed containers become
/// `MutableDictionaryObject`s, unkeyed ones `MutableArrayObject`s, and values what a
/// `MutableDocument` holds. The mapping is 2.x's: `Date` as an ISO-8601 string, `Data` as Fleece
/// binary data, `Blob` as a blob dictionary (its content saved with the document), `URL` as its
/// string, nil optionals left out (synthesized `encodeIfPresent`), `@DocumentID` not stored.
final class DocumentEncoder: Encoder {
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }
    /// The document root: its `@DocumentID` is skipped (the ID is the document's, not a property).
    let isRoot: Bool
    /// What was encoded: a scalar, `MutableDictionaryObject` or `MutableArrayObject`; nil when nothing.
    private(set) var value: Any?
    /// Where `value` goes once set (superEncoder's slot in its parent).
    private let store: ((Any) -> Void)?

    init(codingPath: [any CodingKey] = [], isRoot: Bool = false, store: ((Any) -> Void)? = nil) {
        self.codingPath = codingPath
        self.isRoot = isRoot
        self.store = store
    }

    /// Encodes `object` as the whole body of `document` (properties it does not encode are removed).
    static func encode<T: Encodable>(_ object: T, into document: MutableDocument) throws {
        let encoder = DocumentEncoder(isRoot: true)
        try object.encode(to: encoder)
        guard let body = (encoder.value ?? MutableDictionaryObject()) as? MutableDictionaryObject else {
            throw EncodingError.invalidValue(object, .init(codingPath: [],
                debugDescription: "\(T.self) does not encode as a dictionary, so it cannot be a document"))
        }
        document.root.storage = body.storage
    }

    func set(_ newValue: Any) {
        value = newValue
        store?(newValue)
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        // Asking again (a subclass calling super.encode(to:)) continues the same dictionary.
        let dictionary: MutableDictionaryObject
        if let existing = value as? MutableDictionaryObject {
            dictionary = existing
        } else {
            dictionary = MutableDictionaryObject()
            set(dictionary)
        }
        return KeyedEncodingContainer(KeyedContainer(dictionary: dictionary, codingPath: codingPath, isRoot: isRoot))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        let array: MutableArrayObject
        if let existing = value as? MutableArrayObject {
            array = existing
        } else {
            array = MutableArrayObject()
            set(array)
        }
        return UnkeyedContainer(array: array, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        SingleValueContainer(encoder: self)
    }

    // MARK: Values

    /// `value` as a document value; other types encode themselves into a nested encoder.
    static func box<T: Encodable>(_ value: T, at codingPath: [any CodingKey]) throws -> Any {
        switch value {
        case let v as String: return v
        case let v as Bool: return v
        case let v as Int: return v
        case let v as Int8: return v
        case let v as Int16: return v
        case let v as Int32: return v
        case let v as Int64: return v
        case let v as UInt: return v
        case let v as UInt8: return v
        case let v as UInt16: return v
        case let v as UInt32: return v
        case let v as UInt64: return v
        case let v as Float: return try finite(Double(v), v, codingPath)
        case let v as Double: return try finite(v, v, codingPath)
        case let v as Date: return ISO8601.string(from: v)
        case let v as Data: return v
        case let v as Blob: return v
        case let v as URL: return v.absoluteString
        case let v as Decimal: return try finite(NSDecimalNumber(decimal: v).doubleValue, v, codingPath)
        default:
            let encoder = DocumentEncoder(codingPath: codingPath)
            try value.encode(to: encoder)
            // Encoding nothing gives an empty dictionary, as JSONEncoder does.
            return encoder.value ?? MutableDictionaryObject()
        }
    }

    /// Fleece cannot store NaN or infinity: refuse it here, with the property's path.
    private static func finite<N>(_ d: Double, _ original: N, _ codingPath: [any CodingKey]) throws -> Any {
        guard d.isFinite else {
            throw EncodingError.invalidValue(original, .init(codingPath: codingPath,
                debugDescription: "\(original) cannot be stored: documents hold finite numbers only"))
        }
        return original
    }
}

/// A coding key built from a string or an array index (for coding paths and `super`).
struct CodableKey: CodingKey {
    let stringValue: String
    let intValue: Int?

    init(_ string: String) {
        stringValue = string
        intValue = nil
    }

    init(index: Int) {
        stringValue = "Index \(index)"
        intValue = index
    }

    init?(stringValue: String) { self.init(stringValue) }
    init?(intValue: Int) { self.init(index: intValue) }
}
