import OrderedCollections

/// A JSON value: the one typed, ordered, `Sendable` form of JSON the package passes between its
/// modules (replication messages, query trees, selectors, index specs, view rows), read straight from
/// bytes (``JSON/value(_:)-swift.type.method``) and written straight to bytes (``JSONWriter/write(_:sortedKeys:)``).
///
/// - Numbers stay exact: an integer literal that fits in 64 bits is ``int(_:)`` (or ``uint(_:)`` above
///   `Int64.max`), every other number ``double(_:)``. Equality and hashing are JSON's, where there is
///   one number type: `.int(1) == .double(1.0)`.
/// - Objects keep their members in the order they were read or inserted (CouchDB's view collation
///   compares objects member by member, in that order); equality ignores the order, and the canonical
///   1.x/2.x writing sorts members by UTF-16 code units.
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case int(Int64)
    /// An integer above `Int64.max` (only a Swift `UInt64` makes one; the reader gives ``double(_:)``).
    case uint(UInt64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)

    // MARK: Accessors

    /// The string, if this is one.
    @inlinable public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// The boolean, if this is one.
    @inlinable public var boolValue: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }

    /// The number as an integer when it is one exactly (`2.0` is 2, `2.5` is nil).
    public var intValue: Int? {
        switch self {
        case .int(let i): return Int(exactly: i)
        case .uint(let u): return Int(exactly: u)
        case .double(let d): return Int(exactly: d)
        default: return nil
        }
    }

    /// The number as a double (an integer converted, rounded when beyond 2^53).
    public var doubleValue: Double? {
        switch self {
        case .int(let i): return Double(i)
        case .uint(let u): return Double(u)
        case .double(let d): return d
        default: return nil
        }
    }

    /// True for the three number cases.
    @inlinable public var isNumber: Bool {
        switch self {
        case .int, .uint, .double: return true
        default: return false
        }
    }

    /// The members, if this is an object.
    @inlinable public var objectValue: JSONObject? {
        if case .object(let o) = self { return o }
        return nil
    }

    /// The items, if this is an array.
    @inlinable public var arrayValue: [JSONValue]? {
        if case .array(let a) = self { return a }
        return nil
    }

    @inlinable public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// The member `key` of an object (nil for a missing member or a value that is not an object).
    public subscript(key: String) -> JSONValue? {
        if case .object(let o) = self { return o[key] }
        return nil
    }

    /// The N1QL/JavaScript type name (`null`, `boolean`, `number`, `string`, `array`, `object`).
    public var typeName: String {
        switch self {
        case .null: return "null"
        case .bool: return "boolean"
        case .int, .uint, .double: return "number"
        case .string: return "string"
        case .array: return "array"
        case .object: return "object"
        }
    }

    // MARK: Equality (JSON's: one number type, members in any order)

    public static func == (a: JSONValue, b: JSONValue) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case (.bool(let x), .bool(let y)): return x == y
        case (.string(let x), .string(let y)): return x == y
        case (.array(let x), .array(let y)): return x == y
        case (.object(let x), .object(let y)): return x == y
        case (.int(let x), .int(let y)): return x == y
        case (.double(let x), .double(let y)): return x == y
        default:
            guard a.isNumber, b.isNumber else { return false }
            return Number(a) == Number(b)
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null: hasher.combine(0 as UInt8)
        case .bool(let b): hasher.combine(1 as UInt8); hasher.combine(b)
        case .int, .uint, .double:
            hasher.combine(2 as UInt8)
            // Equal numbers of different cases must hash alike: an exact integer hashes as one.
            switch Number(self) {
            case .integer(let i): hasher.combine(i)
            case .unsigned(let u): hasher.combine(u)
            case .fraction(let d): hasher.combine(d)
            }
        case .string(let s): hasher.combine(3 as UInt8); hasher.combine(s)
        case .array(let a): hasher.combine(4 as UInt8); hasher.combine(a)
        case .object(let o): hasher.combine(5 as UInt8); hasher.combine(o)
        }
    }

    /// A number in one normal form: an integral value that fits Int64 (or UInt64) as an integer.
    private enum Number: Equatable {
        case integer(Int64)
        case unsigned(UInt64)
        case fraction(Double)

        init(_ v: JSONValue) {
            switch v {
            case .int(let i): self = .integer(i)
            case .uint(let u): self = Int64(exactly: u).map(Number.integer) ?? .unsigned(u)
            case .double(let d):
                if let i = Int64(exactly: d) { self = .integer(i) } else if let u = UInt64(exactly: d) { self = .unsigned(u) } else { self = .fraction(d) }
            default: self = .fraction(.nan)
            }
        }
    }
}

/// The members of a JSON object, in order (the order they were read in, or inserted in), with
/// lookup by name. Equality and hashing ignore the order (JSON objects are unordered); see
/// ``JSONValue``.
public struct JSONObject: Sendable, Hashable, Sequence, ExpressibleByDictionaryLiteral {
    @usableFromInline var storage: OrderedDictionary<String, JSONValue>

    @inlinable public init() { storage = [:] }

    public init(minimumCapacity: Int) {
        storage = OrderedDictionary(minimumCapacity: minimumCapacity)
    }

    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        storage = OrderedDictionary(elements, uniquingKeysWith: { _, last in last })
    }

    /// Members in the given order; a repeated name keeps its first place and its last value (what
    /// a JSON reader does with `{"a":1,"a":2}`).
    public init<S: Sequence>(_ members: S) where S.Element == (key: String, value: JSONValue) {
        storage = [:]
        for (k, v) in members { storage[k] = v }
    }

    @inlinable public var count: Int { storage.count }
    @inlinable public var isEmpty: Bool { storage.isEmpty }
    /// The member names, in order.
    @inlinable public var keys: OrderedSet<String> { storage.keys }

    @inlinable public subscript(key: String) -> JSONValue? {
        get { storage[key] }
        set { storage[key] = newValue }
    }

    @discardableResult
    public mutating func removeValue(forKey key: String) -> JSONValue? {
        storage.removeValue(forKey: key)
    }

    public typealias Element = (key: String, value: JSONValue)
    public func makeIterator() -> some IteratorProtocol<Element> {
        storage.lazy.map { (key: $0.key, value: $0.value) }.makeIterator()
    }

    /// The members sorted by name in UTF-16 code-unit order (canonical JSON's order).
    public var sortedMembers: [Element] {
        storage.elements.map { (key: $0.key, value: $0.value) }.sorted { utf16Precedes($0.key, $1.key) }
    }

    /// True when the members are already in canonical (UTF-16) order.
    public var isSorted: Bool {
        var previous: String?
        for key in storage.keys {
            if let p = previous, !utf16Precedes(p, key) { return false }
            previous = key
        }
        return true
    }

    public static func == (a: JSONObject, b: JSONObject) -> Bool {
        guard a.count == b.count else { return false }
        for (k, v) in a.storage {
            guard let w = b.storage[k], w == v else { return false }
        }
        return true
    }

    public func hash(into hasher: inout Hasher) {
        // Order-independent: the members' hashes combined commutatively.
        var sum = 0
        for (k, v) in storage {
            var h = Hasher()
            h.combine(k)
            h.combine(v)
            sum = sum &+ h.finalize()
        }
        hasher.combine(count)
        hasher.combine(sum)
    }
}

extension JSONValue: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral {
    public init(nilLiteral: ()) { self = .null }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        var o = JSONObject(minimumCapacity: elements.count)
        for (k, v) in elements { o[k] = v }
        self = .object(o)
    }
}
