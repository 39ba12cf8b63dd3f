import Fleece
import Foundation

/// Read access to a dictionary of a 2.x document (Couchbase Lite 2.x's `DictionaryProtocol`).
public protocol DictionaryProtocol {
    /// Number of keys.
    var count: Int { get }
    /// The keys, in stored order.
    var keys: [String] { get }
    /// The value for `key` as an API object (`String`, number, `Bool`, `NSNull`, `Blob`,
    /// `ArrayObject`, `DictionaryObject`, `Data`), or nil when absent.
    func value(forKey key: String) -> Any?
    func string(forKey key: String) -> String?
    func number(forKey key: String) -> NSNumber?
    func int(forKey key: String) -> Int
    func int64(forKey key: String) -> Int64
    func float(forKey key: String) -> Float
    func double(forKey key: String) -> Double
    func boolean(forKey key: String) -> Bool
    func date(forKey key: String) -> Date?
    func blob(forKey key: String) -> Blob?
    func array(forKey key: String) -> ArrayObject?
    func dictionary(forKey key: String) -> DictionaryObject?
    func contains(key: String) -> Bool
    /// The whole dictionary as plain Swift values (blobs stay `Blob` objects).
    func toDictionary() -> [String: Any]
}

/// A dictionary inside a 2.x document (read-only). `Document` is the dictionary at the root.
// @unchecked because a read-only view of immutable Fleece data (lets only); the mutable subclass locks.
public class DictionaryObject: DictionaryProtocol, DictionaryFragment, Sequence, @unchecked Sendable {
    let fleeceDict: FleeceDict?
    let context: DocumentContext?
    /// The top-level `_attachments` dict: its children are legacy blobs (spec 7).
    let isAttachments: Bool
    /// The document's root, whose `_attachments` child is special.
    let isDocumentRoot: Bool

    init(_ dict: FleeceDict?, context: DocumentContext?, isAttachments: Bool = false, isDocumentRoot: Bool = false) {
        self.fleeceDict = dict
        self.context = context
        self.isAttachments = isAttachments
        self.isDocumentRoot = isDocumentRoot
    }

    private func item(_ key: String) -> FleeceValue? { fleeceDict?[key] }

    public var count: Int { fleeceDict?.count ?? 0 }
    public var keys: [String] { fleeceDict?.keys ?? [] }

    public func value(forKey key: String) -> Any? {
        guard let v = item(key), let context else { return nil }
        if isDocumentRoot, key == "_attachments", let attachments = v.dictValue {
            return DictionaryObject(attachments, context: context, isAttachments: true)
        }
        return context.apiValue(v, inAttachments: isAttachments)
    }

    public func string(forKey key: String) -> String? { item(key)?.stringValue }
    public func number(forKey key: String) -> NSNumber? { ValueCoercion.number(item(key)) }
    public func int(forKey key: String) -> Int { Int(truncatingIfNeeded: ValueCoercion.int64(item(key))) }
    public func int64(forKey key: String) -> Int64 { ValueCoercion.int64(item(key)) }
    public func float(forKey key: String) -> Float { Float(ValueCoercion.double(item(key))) }
    public func double(forKey key: String) -> Double { ValueCoercion.double(item(key)) }
    public func boolean(forKey key: String) -> Bool { ValueCoercion.boolean(item(key)) }
    public func date(forKey key: String) -> Date? { ValueCoercion.date(item(key)) }

    public func blob(forKey key: String) -> Blob? {
        guard let dict = item(key)?.dictValue, let context else { return nil }
        return context.blob(dict, inAttachments: isAttachments)
    }

    public func array(forKey key: String) -> ArrayObject? {
        guard let array = item(key)?.arrayValue, let context else { return nil }
        return ArrayObject(array, context: context)
    }

    public func dictionary(forKey key: String) -> DictionaryObject? {
        guard let dict = item(key)?.dictValue, let context else { return nil }
        return DictionaryObject(dict, context: context, isAttachments: isDocumentRoot && key == "_attachments")
    }

    public func contains(key: String) -> Bool { item(key) != nil }

    public func toDictionary() -> [String: Any] {
        guard let fleeceDict, let context else { return [:] }
        return context.foundationDictionary(fleeceDict, isRoot: isDocumentRoot, isAttachments: isAttachments)
    }

    /// The value for `key` as a fragment: `doc["name"].string`.
    public subscript(key: String) -> Fragment { Fragment { [self] in value(forKey: key) } }

    /// Iterates the keys in stored order.
    public func makeIterator() -> IndexingIterator<[String]> { keys.makeIterator() }
}
