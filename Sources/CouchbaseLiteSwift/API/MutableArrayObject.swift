import Foundation

/// An array that can be changed, inside a `MutableDocument` (2.x's `MutableArrayObject`).
///
/// Thread-safe, unlike 2.x's (which documents mutable objects as not thread-safe): Swift does not
/// let it drop the `Sendable` that the read-only `ArrayObject` has, so every access to its items
/// takes its lock instead. Each call is atomic; a sequence of calls from two threads interleaves.
// @unchecked because the items (normalized document values) and `rejectedEdit` are only touched under `lock`.
public final class MutableArrayObject: ArrayObject, MutableArrayFragment, @unchecked Sendable {
    private let lock = NSLock()
    private var items: [Any] = []
    private var firstRejectedEdit: String?

    /// The items (a snapshot when read; in place, under the lock, when changed).
    var storage: [Any] {
        get { lock.lock(); defer { lock.unlock() }; return items }
        set { lock.lock(); defer { lock.unlock() }; items = newValue }
        _modify { lock.lock(); defer { lock.unlock() }; yield &items }
    }

    /// The first set, insert or remove at an index out of range (2.x raises a range exception
    /// there; these setters cannot throw): ignored, and saving the document throws `invalidParameter`.
    var rejectedEdit: String? { lock.lock(); defer { lock.unlock() }; return firstRejectedEdit }

    /// Runs `body` on the items under the lock (a check and the change it guards, atomically).
    private func edit(_ body: (inout [Any], inout String?) -> Void) -> Self {
        lock.lock()
        defer { lock.unlock() }
        body(&items, &firstRejectedEdit)
        return self
    }

    /// An empty array.
    public init() {
        super.init(nil, context: nil)
    }

    /// An array holding `data` (nested dictionaries and arrays become mutable objects).
    public convenience init(data: [Any]?) {
        self.init()
        setData(data ?? [])
    }

    private func item(_ index: Int) -> Any? {
        lock.lock()
        defer { lock.unlock() }
        return items.indices.contains(index) ? items[index] : nil
    }

    // MARK: Reading

    public override var count: Int { storage.count }
    public override func value(at index: Int) -> Any? { item(index) }
    public override func string(at index: Int) -> String? { item(index) as? String }
    public override func number(at index: Int) -> NSNumber? { MutableValues.number(item(index)) }
    public override func int(at index: Int) -> Int { Int(truncatingIfNeeded: MutableValues.int64(item(index))) }
    public override func int64(at index: Int) -> Int64 { MutableValues.int64(item(index)) }
    public override func float(at index: Int) -> Float { Float(MutableValues.double(item(index))) }
    public override func double(at index: Int) -> Double { MutableValues.double(item(index)) }
    public override func boolean(at index: Int) -> Bool { MutableValues.boolean(item(index)) }
    public override func date(at index: Int) -> Date? { MutableValues.date(item(index)) }
    public override func blob(at index: Int) -> Blob? { item(index) as? Blob }
    public override func array(at index: Int) -> MutableArrayObject? { item(index) as? MutableArrayObject }
    public override func dictionary(at index: Int) -> MutableDictionaryObject? { item(index) as? MutableDictionaryObject }
    public override func toArray() -> [Any] { storage.map(MutableValues.plain) }
    public override func makeIterator() -> IndexingIterator<[Any]> { storage.makeIterator() }

    /// The item at `index` as a fragment; assigning its `value` replaces it (the index must exist).
    public override subscript(index: Int) -> MutableFragment {
        MutableFragment(read: { [self] in value(at: index) },
                        write: { [self] v in
                            let normalized = MutableValues.normalize(v)
                            _ = edit { items, _ in if items.indices.contains(index) { items[index] = normalized } }
                        })
    }

    // MARK: Writing (the index of a set/insert must be in range, as in Couchbase Lite)

    @discardableResult public func setValue(_ value: Any?, at index: Int) -> Self {
        let normalized = MutableValues.normalize(value)
        return edit { items, rejected in
            guard items.indices.contains(index) else { return Self.reject("set", at: index, of: items, &rejected) }
            items[index] = normalized
        }
    }
    @discardableResult public func setString(_ value: String?, at index: Int) -> Self { setValue(value, at: index) }
    @discardableResult public func setNumber(_ value: NSNumber?, at index: Int) -> Self { setValue(value, at: index) }
    @discardableResult public func setInt(_ value: Int, at index: Int) -> Self { setValue(value, at: index) }
    @discardableResult public func setInt64(_ value: Int64, at index: Int) -> Self { setValue(value, at: index) }
    @discardableResult public func setFloat(_ value: Float, at index: Int) -> Self { setValue(value, at: index) }
    @discardableResult public func setDouble(_ value: Double, at index: Int) -> Self { setValue(value, at: index) }
    @discardableResult public func setBoolean(_ value: Bool, at index: Int) -> Self { setValue(value, at: index) }
    @discardableResult public func setDate(_ value: Date?, at index: Int) -> Self { setValue(value, at: index) }
    @discardableResult public func setBlob(_ value: Blob?, at index: Int) -> Self { setValue(value, at: index) }
    @discardableResult public func setArray(_ value: ArrayObject?, at index: Int) -> Self { setValue(value, at: index) }
    @discardableResult public func setDictionary(_ value: DictionaryObject?, at index: Int) -> Self { setValue(value, at: index) }

    @discardableResult public func addValue(_ value: Any?) -> Self {
        let normalized = MutableValues.normalize(value)
        return edit { items, _ in items.append(normalized) }
    }
    @discardableResult public func addString(_ value: String?) -> Self { addValue(value) }
    @discardableResult public func addNumber(_ value: NSNumber?) -> Self { addValue(value) }
    @discardableResult public func addInt(_ value: Int) -> Self { addValue(value) }
    @discardableResult public func addInt64(_ value: Int64) -> Self { addValue(value) }
    @discardableResult public func addFloat(_ value: Float) -> Self { addValue(value) }
    @discardableResult public func addDouble(_ value: Double) -> Self { addValue(value) }
    @discardableResult public func addBoolean(_ value: Bool) -> Self { addValue(value) }
    @discardableResult public func addDate(_ value: Date?) -> Self { addValue(value) }
    @discardableResult public func addBlob(_ value: Blob?) -> Self { addValue(value) }
    @discardableResult public func addArray(_ value: ArrayObject?) -> Self { addValue(value) }
    @discardableResult public func addDictionary(_ value: DictionaryObject?) -> Self { addValue(value) }

    @discardableResult public func insertValue(_ value: Any?, at index: Int) -> Self {
        let normalized = MutableValues.normalize(value)
        return edit { items, rejected in
            guard index >= 0 && index <= items.count else { return Self.reject("insert", at: index, of: items, &rejected) }
            items.insert(normalized, at: index)
        }
    }

    @discardableResult public func removeValue(at index: Int) -> Self {
        edit { items, rejected in
            guard items.indices.contains(index) else { return Self.reject("remove", at: index, of: items, &rejected) }
            items.remove(at: index)
        }
    }

    private static func reject(_ edit: String, at index: Int, of items: [Any], _ rejected: inout String?) {
        if rejected == nil { rejected = "cannot \(edit) at index \(index) of an array of \(items.count)" }
    }

    /// Replaces all content with `data`.
    /// Replaces all content with `data` (and forgets a rejected edit).
    @discardableResult public func setData(_ data: [Any]) -> Self {
        let normalized = data.map(MutableValues.normalize(nonNil:))
        return edit { items, rejected in
            items = normalized
            rejected = nil
        }
    }
}
