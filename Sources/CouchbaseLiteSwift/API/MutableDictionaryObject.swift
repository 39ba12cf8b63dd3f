import Foundation

/// A dictionary that can be changed, inside a `MutableDocument` (2.x's `MutableDictionaryObject`).
/// Values are kept as Swift values until the document is saved.
public final class MutableDictionaryObject: DictionaryObject, MutableDictionaryProtocol, MutableDictionaryFragment, @unchecked Sendable {
    var storage: [String: Any] = [:]

    /// An empty dictionary.
    public init() {
        super.init(nil, context: nil)
    }

    /// A dictionary holding `data` (nested dictionaries and arrays become mutable objects).
    public convenience init(data: [String: Any]?) {
        self.init()
        setData(data ?? [:])
    }

    // MARK: Reading

    public override var count: Int { storage.count }
    /// The keys, sorted (a saved dictionary stores them in this order, spec 6.6).
    public override var keys: [String] { storage.keys.sorted() }
    public override func value(forKey key: String) -> Any? { storage[key] }
    public override func string(forKey key: String) -> String? { storage[key] as? String }
    public override func number(forKey key: String) -> NSNumber? { MutableValues.number(storage[key]) }
    public override func int(forKey key: String) -> Int { Int(truncatingIfNeeded: MutableValues.int64(storage[key])) }
    public override func int64(forKey key: String) -> Int64 { MutableValues.int64(storage[key]) }
    public override func float(forKey key: String) -> Float { Float(MutableValues.double(storage[key])) }
    public override func double(forKey key: String) -> Double { MutableValues.double(storage[key]) }
    public override func boolean(forKey key: String) -> Bool { MutableValues.boolean(storage[key]) }
    public override func date(forKey key: String) -> Date? { MutableValues.date(storage[key]) }
    public override func blob(forKey key: String) -> Blob? { storage[key] as? Blob }
    public override func array(forKey key: String) -> MutableArrayObject? { storage[key] as? MutableArrayObject }
    public override func dictionary(forKey key: String) -> MutableDictionaryObject? { storage[key] as? MutableDictionaryObject }
    public override func contains(key: String) -> Bool { storage[key] != nil }
    public override func toDictionary() -> [String: Any] { storage.mapValues(MutableValues.plain) }

    /// The value for `key` as a fragment; assigning its `value` sets it (nil stores null).
    public override subscript(key: String) -> MutableFragment {
        MutableFragment(read: { [self] in value(forKey: key) }, write: { [self] v in setValue(v, forKey: key) })
    }

    // MARK: Writing

    /// Sets any valid value: `String`, numbers, `Bool`, `Date` (stored as ISO-8601), `Blob`,
    /// `Data`, `NSNull`, dictionaries and arrays (plain or Couchbase Lite objects); nil stores null.
    @discardableResult public func setValue(_ value: Any?, forKey key: String) -> Self {
        storage[key] = MutableValues.normalize(value); return self
    }

    /// Replaces all content with `data`.
    @discardableResult public func setData(_ data: [String: Any]) -> Self {
        storage = data.mapValues(MutableValues.normalize(nonNil:))
        return self
    }

    /// Removes `key` (absent after saving, unlike a null value).
    @discardableResult public func removeValue(forKey key: String) -> Self {
        storage[key] = nil; return self
    }
}
