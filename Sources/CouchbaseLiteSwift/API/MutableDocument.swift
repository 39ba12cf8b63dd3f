import Foundation

/// A document that can be changed and saved with `Database.saveDocument(_:)` (2.x's
/// `MutableDocument`). A new one has no revision; one from `Document.toMutable()` remembers the
/// revision it was read at, which `saveDocument(_:concurrencyControl:)` checks for conflicts.
///
/// Thread-safe, unlike 2.x's (which documents mutable documents as not thread-safe): Swift does
/// not let it drop the `Sendable` that the read-only `Document` has, so its properties live in a
/// `MutableDictionaryObject`, which locks, and its revision fields in `Document`'s mutex. Each
/// call is atomic; edits from two threads interleave.
// @unchecked because its fields live in `Document`'s mutex and in `root`, which locks (see MutableDictionaryObject).
public final class MutableDocument: Document, MutableDictionaryProtocol, MutableDictionaryFragment, @unchecked Sendable {
    /// The properties, kept as Swift values until saved.
    let root: MutableDictionaryObject

    /// A new document with a random ID (a UUID, as Couchbase Lite generates).
    public convenience init() {
        self.init(id: nil)
    }

    /// A new document with `id` (a random one when nil).
    public convenience init(id: String?) {
        self.init(id: id, data: nil)
    }

    /// A new document with a random ID holding `data`.
    public convenience init(data: [String: Any]?) {
        self.init(id: nil, data: data)
    }

    /// A new document with `id` (random when nil) holding `data`.
    public init(id: String?, data: [String: Any]?) {
        root = MutableDictionaryObject(data: data)
        super.init(id: id ?? Self.generateID(), revisionID: nil, sequence: 0, isDeleted: false)
    }

    /// Copies a stored (or mutable) document: same ID, same base revision.
    init(copying document: Document) {
        root = MutableDictionaryObject(data: document.toDictionary())
        super.init(id: document.id, revisionID: document.revisionID, sequence: document.sequence,
                   isDeleted: document.isDeleted)
        owner = document.owner
    }

    /// Couchbase Lite's generated IDs: `-` followed by 22 characters of URL-safe Base64 of a UUID.
    static func generateID() -> String {
        let u = UUID().uuid
        let bytes = Data([u.0, u.1, u.2, u.3, u.4, u.5, u.6, u.7, u.8, u.9, u.10, u.11, u.12, u.13, u.14, u.15])
        let base64 = bytes.base64EncodedString().replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "=", with: "")
        return "-" + base64
    }

    /// A copy with the same ID, revision and properties.
    public override func toMutable() -> MutableDocument {
        MutableDocument(copying: self)
    }

    // MARK: Reading

    public override var count: Int { root.count }
    public override var keys: [String] { root.keys }
    public override func value(forKey key: String) -> Any? { root.value(forKey: key) }
    public override func string(forKey key: String) -> String? { root.string(forKey: key) }
    public override func number(forKey key: String) -> NSNumber? { root.number(forKey: key) }
    public override func int(forKey key: String) -> Int { root.int(forKey: key) }
    public override func int64(forKey key: String) -> Int64 { root.int64(forKey: key) }
    public override func float(forKey key: String) -> Float { root.float(forKey: key) }
    public override func double(forKey key: String) -> Double { root.double(forKey: key) }
    public override func boolean(forKey key: String) -> Bool { root.boolean(forKey: key) }
    public override func date(forKey key: String) -> Date? { root.date(forKey: key) }
    public override func blob(forKey key: String) -> Blob? { root.blob(forKey: key) }
    public override func array(forKey key: String) -> MutableArrayObject? { root.array(forKey: key) }
    public override func dictionary(forKey key: String) -> MutableDictionaryObject? { root.dictionary(forKey: key) }
    public override func contains(key: String) -> Bool { root.contains(key: key) }
    public override func toDictionary() -> [String: Any] { root.toDictionary() }

    /// The value for `key` as a fragment; assigning its `value` sets it (nil stores null).
    public override subscript(key: String) -> MutableFragment { root[key] }

    // MARK: Writing (see `MutableDictionaryObject` for the value rules)

    @discardableResult public func setValue(_ value: Any?, forKey key: String) -> Self { root.setValue(value, forKey: key); return self }
    @discardableResult public func setData(_ data: [String: Any]) -> Self { root.setData(data); return self }
    @discardableResult public func removeValue(forKey key: String) -> Self { root.removeValue(forKey: key); return self }
}
