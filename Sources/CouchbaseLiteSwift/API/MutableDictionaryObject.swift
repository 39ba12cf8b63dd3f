import Foundation

/// A dictionary that can be changed, inside a `MutableDocument` (2.x's `MutableDictionaryObject`).
/// Values are kept as Swift values until the document is saved.
///
/// Thread-safe, unlike 2.x's (which documents mutable objects as not thread-safe): Swift does not
/// let it drop the `Sendable` that the read-only `DictionaryObject` has, so every access to its
/// values takes its lock instead. Each call is atomic; a sequence of calls from two threads interleaves.
// @unchecked because the values (normalized document values) are only touched under `lock`.
public final class MutableDictionaryObject: DictionaryObject, MutableDictionaryProtocol, MutableDictionaryFragment, @unchecked Sendable {
    private let lock = NSLock()
    private var values: [String: Any] = [:]

    /// The values (a snapshot when read; in place, under the lock, when changed).
    var storage: [String: Any] {
        get { lock.lock(); defer { lock.unlock() }; return values }
        set { lock.lock(); defer { lock.unlock() }; values = newValue }
        _modify { lock.lock(); defer { lock.unlock() }; yield &values }
    }

    private func item(_ key: String) -> Any? {
        lock.lock()
        defer { lock.unlock() }
        return values[key]
    }

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
    public override func value(forKey key: String) -> Any? { item(key) }
    public override func string(forKey key: String) -> String? { item(key) as? String }
    public override func number(forKey key: String) -> NSNumber? { MutableValues.number(item(key)) }
    public override func int(forKey key: String) -> Int { Int(truncatingIfNeeded: MutableValues.int64(item(key))) }
    public override func int64(forKey key: String) -> Int64 { MutableValues.int64(item(key)) }
    public override func float(forKey key: String) -> Float { Float(MutableValues.double(item(key))) }
    public override func double(forKey key: String) -> Double { MutableValues.double(item(key)) }
    public override func boolean(forKey key: String) -> Bool { MutableValues.boolean(item(key)) }
    public override func date(forKey key: String) -> Date? { MutableValues.date(item(key)) }
    public override func blob(forKey key: String) -> Blob? { item(key) as? Blob }
    public override func array(forKey key: String) -> MutableArrayObject? { item(key) as? MutableArrayObject }
    public override func dictionary(forKey key: String) -> MutableDictionaryObject? { item(key) as? MutableDictionaryObject }
    public override func contains(key: String) -> Bool { item(key) != nil }
    public override func toDictionary() -> [String: Any] { storage.mapValues(MutableValues.plain) }

    /// The value for `key` as a fragment; assigning its `value` sets it (nil stores null).
    public override subscript(key: String) -> MutableFragment {
        MutableFragment(read: { [self] in value(forKey: key) }, write: { [self] v in setValue(v, forKey: key) })
    }

    // MARK: Writing

    /// Sets any valid value: `String`, numbers, `Bool`, `Date` (stored as ISO-8601), `Blob`,
    /// `Data`, `NSNull`, dictionaries and arrays (plain or Couchbase Lite objects); nil stores null.
    @discardableResult public func setValue(_ value: Any?, forKey key: String) -> Self {
        let normalized = MutableValues.normalize(value)
        storage[key] = normalized
        return self
    }

    /// Replaces all content with `data`.
    @discardableResult public func setData(_ data: [String: Any]) -> Self {
        let normalized = data.mapValues(MutableValues.normalize(nonNil:))
        storage = normalized
        return self
    }

    /// Removes `key` (absent after saving, unlike a null value).
    @discardableResult public func removeValue(forKey key: String) -> Self {
        storage[key] = nil; return self
    }
}
