import Foundation

/// Encodes `Encodable` values straight into the JSON values documents hold (`[String: Any]`,
/// `[Any]`, `String`, `Int`, `Double`, `Bool`, `NSNull`), with 1.x `CBLModel`'s mappings for the
/// types JSON lacks: `Date` → ISO-8601 string (`CBLJSON.jsonObject(with:)`), `Data` → base64,
/// `URL` → its absolute string, `Decimal` → its string (1.x stored `NSDecimalNumber` that way).
/// A `nil` optional property is left out of its object, as 1.x removed a property set to nil.
struct JSONValueEncoder {
    func encode<T: Encodable>(_ value: T) throws -> Any {
        try EncodingNode.box(value, codingPath: []).finished
    }
}

/// A value being built: containers are references so nested containers can fill them later.
private enum EncodingNode {
    case value(Any)
    case object(ObjectBox)
    case array(ArrayBox)

    final class ObjectBox { var entries: [String: EncodingNode] = [:] }
    final class ArrayBox { var items: [EncodingNode] = [] }

    var finished: Any {
        switch self {
        case .value(let v): return v
        case .object(let box): return box.entries.mapValues(\.finished)
        case .array(let box): return box.items.map(\.finished)
        }
    }

    /// Encodes one value, with the 1.x mappings for non-JSON types.
    static func box<T: Encodable>(_ value: T, codingPath: [CodingKey]) throws -> EncodingNode {
        switch value {
        case let date as Date: return .value(ISO8601Date.string(from: date))
        case let data as Data: return .value(data.base64EncodedString())
        case let url as URL: return .value(url.absoluteString)
        case let decimal as Decimal: return .value(decimal.description)
        case let string as String: return .value(string)
        case let bool as Bool: return .value(bool)
        case let int as Int: return .value(int)
        case let double as Double: return .value(try checked(double, codingPath))
        case let integer as any BinaryInteger: return .value(Int(exactly: integer) ?? Double(integer))
        case let float as any BinaryFloatingPoint: return .value(try checked(Double(float), codingPath))
        default: break
        }
        let encoder = NodeEncoder(codingPath: codingPath)
        try value.encode(to: encoder)
        return encoder.node ?? .object(ObjectBox())
    }

    static func checked(_ d: Double, _ path: [CodingKey]) throws -> Double {
        guard d.isFinite else {
            throw EncodingError.invalidValue(d, .init(codingPath: path, debugDescription: "\(d) is not representable in JSON"))
        }
        return d
    }
}

private final class NodeEncoder: Encoder {
    let codingPath: [CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }
    var node: EncodingNode?

    init(codingPath: [CodingKey]) { self.codingPath = codingPath }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        let box: EncodingNode.ObjectBox
        if case .object(let existing) = node {
            box = existing
        } else {
            box = EncodingNode.ObjectBox()
            node = .object(box)
        }
        return KeyedEncodingContainer(KeyedNodeContainer<Key>(box: box, codingPath: codingPath))
    }

    func unkeyedContainer() -> UnkeyedEncodingContainer {
        let box: EncodingNode.ArrayBox
        if case .array(let existing) = node {
            box = existing
        } else {
            box = EncodingNode.ArrayBox()
            node = .array(box)
        }
        return UnkeyedNodeContainer(box: box, codingPath: codingPath)
    }

    func singleValueContainer() -> SingleValueEncodingContainer { SingleNodeContainer(encoder: self) }
}

private struct KeyedNodeContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let box: EncodingNode.ObjectBox
    let codingPath: [CodingKey]

    mutating func encodeNil(forKey key: Key) throws { box.entries[key.stringValue] = .value(NSNull()) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        box.entries[key.stringValue] = try EncodingNode.box(value, codingPath: codingPath + [key])
    }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type,
                                                        forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        let nested = EncodingNode.ObjectBox()
        box.entries[key.stringValue] = .object(nested)
        return KeyedEncodingContainer(KeyedNodeContainer<NestedKey>(box: nested, codingPath: codingPath + [key]))
    }
    mutating func nestedUnkeyedContainer(forKey key: Key) -> UnkeyedEncodingContainer {
        let nested = EncodingNode.ArrayBox()
        box.entries[key.stringValue] = .array(nested)
        return UnkeyedNodeContainer(box: nested, codingPath: codingPath + [key])
    }
    /// Under `"super"`, as `JSONEncoder` puts it; the model's `Key` type need not have that case.
    mutating func superEncoder() -> Encoder {
        SlotEncoder(codingPath: codingPath + [SuperKey()]) { [box] node in box.entries[SuperKey.name] = node }
    }
    mutating func superEncoder(forKey key: Key) -> Encoder {
        SlotEncoder(codingPath: codingPath + [key]) { [box] node in box.entries[key.stringValue] = node }
    }
}

private struct UnkeyedNodeContainer: UnkeyedEncodingContainer {
    let box: EncodingNode.ArrayBox
    let codingPath: [CodingKey]
    var count: Int { box.items.count }

    private var nextKey: CodingKey { IndexKey(box.items.count) }

    mutating func encodeNil() throws { box.items.append(.value(NSNull())) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        box.items.append(try EncodingNode.box(value, codingPath: codingPath + [nextKey]))
    }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let nested = EncodingNode.ObjectBox()
        let path = codingPath + [nextKey]
        box.items.append(.object(nested))
        return KeyedEncodingContainer(KeyedNodeContainer<NestedKey>(box: nested, codingPath: path))
    }
    mutating func nestedUnkeyedContainer() -> UnkeyedEncodingContainer {
        let nested = EncodingNode.ArrayBox()
        let path = codingPath + [nextKey]
        box.items.append(.array(nested))
        return UnkeyedNodeContainer(box: nested, codingPath: path)
    }
    mutating func superEncoder() -> Encoder {
        let index = box.items.count
        box.items.append(.value(NSNull()))
        return SlotEncoder(codingPath: codingPath + [IndexKey(index)]) { [box] node in box.items[index] = node }
    }
}

private struct SingleNodeContainer: SingleValueEncodingContainer {
    let encoder: NodeEncoder
    var codingPath: [CodingKey] { encoder.codingPath }

    func encodeNil() throws { encoder.node = .value(NSNull()) }
    func encode<T: Encodable>(_ value: T) throws {
        encoder.node = try EncodingNode.box(value, codingPath: codingPath)
    }
}

/// The encoder `superEncoder()` hands out: whatever it encodes lands in its slot.
private final class SlotEncoder: Encoder {
    let codingPath: [CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }
    private let inner: NodeEncoder
    private let store: (EncodingNode) -> Void

    init(codingPath: [CodingKey], store: @escaping (EncodingNode) -> Void) {
        self.codingPath = codingPath
        self.inner = NodeEncoder(codingPath: codingPath)
        self.store = store
    }

    deinit { store(inner.node ?? .object(EncodingNode.ObjectBox())) }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> { inner.container(keyedBy: type) }
    func unkeyedContainer() -> UnkeyedEncodingContainer { inner.unkeyedContainer() }
    func singleValueContainer() -> SingleValueEncodingContainer { inner.singleValueContainer() }
}

/// An array position as a coding key (for coding paths in errors).
struct IndexKey: CodingKey {
    let intValue: Int?
    var stringValue: String { "Index \(intValue ?? 0)" }
    init(_ index: Int) { intValue = index }
    init?(intValue: Int) { self.intValue = intValue }
    init?(stringValue: String) { return nil }
}

/// The key `superEncoder()` writes under (`JSONEncoder`'s `"super"`).
struct SuperKey: CodingKey {
    static let name = "super"
    var stringValue: String { Self.name }
    var intValue: Int? { nil }
    init() {}
    init?(intValue: Int) { return nil }
    init?(stringValue: String) { guard stringValue == Self.name else { return nil } }
}
