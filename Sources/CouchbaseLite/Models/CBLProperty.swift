import Foundation
import Synchronization

/// Declares a document property on a ``CBLModel`` subclass: the Linux replacement for 1.x's
/// `@NSManaged` (which needs the Objective-C runtime). Edit each declaration one for one:
///
/// ```swift
/// @NSManaged var title: String?            →  @CBLProperty var title: String?
/// @NSManaged var checked: Bool             →  @CBLProperty var checked: Bool
/// @NSManaged var created_at: Date?         →  @CBLProperty var created_at: Date?
/// @NSManaged var list_id: List?            →  @CBLProperty var list_id: List?
///                                             @CBLProperty("list_id") var list: List?   // another Swift name
/// ```
///
/// The property's document key is the Swift property name, or the key given. Reads return the
/// model's unsaved value, else the document's, converted as ``CBLPropertyValue`` describes (dates
/// as ISO-8601 strings, data as base64, model references as document IDs loaded when read, typed
/// arrays of those, other `Codable` values as JSON objects, `[String: Any]`/`[Any]` as they are);
/// an absent or unconvertible value reads as the default (nil, the initial value, or `0`/`false`/
/// `""`/empty). Assigning a different value marks the model as needing a save; assigning nil
/// removes the property.
///
/// Only for properties of `CBLModel` subclasses: the value lives in the model, not the wrapper.
@propertyWrapper
public struct CBLProperty<Value>: PropertyIdentifying {
    /// The document key, when it differs from the Swift property name.
    public let key: String?
    let defaultValue: Value
    let propertyID: UInt64

    /// A property that reads as `wrappedValue` while the document has no value for it
    /// (`@CBLProperty var checked = false`).
    public init(wrappedValue: Value, _ key: String? = nil) {
        self.key = key
        self.defaultValue = wrappedValue
        self.propertyID = PropertyKeys.nextID()
    }

    /// An optional property, nil while the document has no value for it.
    public init(_ key: String? = nil) where Value: ExpressibleByNilLiteral {
        self.init(wrappedValue: nil, key)
    }

    /// A property reading as `0`, `false`, `""` or empty while the document has no value for it.
    public init(_ key: String? = nil) where Value: CBLPropertyDefaultValue {
        self.init(wrappedValue: Value.cblDefaultValue, key)
    }

    /// Not available: the value lives in the enclosing ``CBLModel`` (read through the static
    /// subscript), so `@CBLProperty` outside a model subclass does not compile.
    @available(*, unavailable, message: "@CBLProperty is only for properties of CBLModel subclasses")
    public var wrappedValue: Value {
        // Unreachable: `unavailable` makes every use a compile error; the bodies only satisfy the type checker.
        get { fatalError("@CBLProperty is only for properties of CBLModel subclasses") }
        set { fatalError("@CBLProperty is only for properties of CBLModel subclasses") }
    }

    /// Reads and writes the value in the enclosing model.
    public static subscript<Model: CBLModel>(
        _enclosingInstance model: Model,
        wrapped wrappedKeyPath: ReferenceWritableKeyPath<Model, Value>,
        storage storageKeyPath: ReferenceWritableKeyPath<Model, CBLProperty<Value>>
    ) -> Value {
        get {
            let wrapper = model[keyPath: storageKeyPath]
            let key = wrapper.key ?? PropertyKeys.name(of: storageKeyPath, id: wrapper.propertyID, in: model)
            guard let stored = model.currentValue(ofProperty: key) else { return wrapper.defaultValue }
            return PropertyCoding.decode(Value.self, from: stored, in: CBLPropertyContext(model: model, property: key))
                ?? wrapper.defaultValue
        }
        set {
            let wrapper = model[keyPath: storageKeyPath]
            let key = wrapper.key ?? PropertyKeys.name(of: storageKeyPath, id: wrapper.propertyID, in: model)
            model.setValue(PropertyCoding.encode(newValue), ofProperty: key)
        }
    }
}

protocol PropertyIdentifying {
    var propertyID: UInt64 { get }
}

/// Finds a wrapped property's Swift name: the first time a property is used, the model is
/// reflected to find the wrapper with the same ID; the name is then cached by key path.
enum PropertyKeys {
    private static let counter = Atomic<UInt64>(0)
    private static let names = Locked<[AnyKeyPath: String]>([:])

    static func nextID() -> UInt64 {
        counter.wrappingAdd(1, ordering: .relaxed).newValue
    }

    static func name(of keyPath: AnyKeyPath, id: UInt64, in model: CBLModel) -> String {
        if let name = names.withLock({ $0[keyPath] }) { return name }
        var mirror: Mirror? = Mirror(reflecting: model)
        while let current = mirror {
            for child in current.children {
                guard let wrapper = child.value as? PropertyIdentifying, wrapper.propertyID == id,
                      let label = child.label else { continue }
                let name = label.hasPrefix("_") ? String(label.dropFirst()) : label
                names.withLock { $0[keyPath] = name }
                return name
            }
            mirror = current.superclassMirror
        }
        // Unreachable: the storage key path the compiler hands the enclosing-self subscript is a
        // stored `CBLProperty` of `model`'s class chain, which reflection lists.
        preconditionFailure("@CBLProperty: cannot find the property for \(keyPath) in \(type(of: model))")
    }
}

/// Conversions between property values and the JSON documents store.
enum PropertyCoding {
    static func decode<V>(_ type: V.Type, from stored: Any, in context: CBLPropertyContext) -> V? {
        if let valueType = V.self as? any CBLPropertyValue.Type {
            return decodeValue(valueType, stored, context) as? V
        }
        if let decodable = V.self as? any Decodable.Type {
            if let ready = stored as? V { return ready }
            do {
                return try decodeCodable(decodable, stored) as? V
            } catch {
                CBLLog.debug("Model", "Property \(context.property) of \(context.model) does not decode as \(V.self): \(error)")
                return nil
            }
        }
        return stored as? V
    }

    private static func decodeValue<T: CBLPropertyValue>(_ type: T.Type, _ stored: Any, _ context: CBLPropertyContext) -> T? {
        T.cblDecode(stored, in: context)
    }

    private static func decodeCodable<T: Decodable>(_ type: T.Type, _ stored: Any) throws -> T {
        try JSONValueDecoder().decode(T.self, from: stored)
    }

    /// The JSON form of a property value; nil removes the property.
    static func encode<V>(_ value: V) -> Any? {
        guard let value = unwrapped(value) else { return nil }
        if let convertible = value as? any CBLPropertyValue { return convertible.cblEncode() }
        return externalize(value)
    }

    /// `Optional.none` (at any depth) as nil, `Optional.some(x)` as x.
    static func unwrapped(_ value: Any) -> Any? {
        guard let optional = value as? AnyOptional else { return value }
        return optional.wrappedAny.flatMap(unwrapped)
    }

    /// A value made JSON the way 1.x `CBLModel` externalized property values when saving.
    static func externalize(_ value: Any) -> Any {
        switch value {
        case is String, is Int, is Double, is Bool, is NSNull: return value
        case let array as [Any]: return array.map { unwrapped($0).map(externalize) ?? NSNull() }
        case let object as [String: Any]: return object.mapValues { unwrapped($0).map(externalize) ?? NSNull() }
        case let convertible as any CBLPropertyValue: return convertible.cblEncode() ?? NSNull()
        case let encodable as any Encodable:
            do {
                return try JSONValueEncoder().encode(encodable)
            } catch {
                CBLLog.warning("Model", "Cannot encode \(type(of: value)) as JSON: \(error)")
                return NSNull()
            }
        default: return value
        }
    }

    /// Whether setting `new` over `current` changes nothing (1.x compared with `isEqual:`).
    static func same(_ new: Any?, _ current: Any?) -> Bool {
        switch (new, current) {
        case (nil, nil): return true
        case (nil, _), (_, nil): return false
        case let (n?, c?):
            if (n is NSNull) != (c is NSNull) { return false }
            return PredicateValue.equal(externalize(n), externalize(c), options: [])
        }
    }
}

/// Lets a value of unknown type be checked for being an optional and unwrapped.
protocol AnyOptional {
    var wrappedAny: Any? { get }
}

extension Optional: AnyOptional {
    var wrappedAny: Any? { map { $0 as Any } }
}
