import Foundation

/// An array that can be changed, inside a `MutableDocument` (2.x's `MutableArrayObject`).
public final class MutableArrayObject: ArrayObject, MutableArrayFragment, @unchecked Sendable {
    var storage: [Any] = []

    /// An empty array.
    public init() {
        super.init(nil, context: nil)
    }

    /// An array holding `data` (nested dictionaries and arrays become mutable objects).
    public convenience init(data: [Any]?) {
        self.init()
        setData(data ?? [])
    }

    private func item(_ index: Int) -> Any? { storage.indices.contains(index) ? storage[index] : nil }

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
        MutableFragment(read: { [self] in index >= 0 && index < count ? value(at: index) : nil },
                        write: { [self] v in if index >= 0 && index < count { setValue(v, at: index) } })
    }

    // MARK: Writing (the index of a set/insert must be in range, as in Couchbase Lite)

    @discardableResult public func setValue(_ value: Any?, at index: Int) -> Self {
        storage[index] = MutableValues.normalize(value); return self
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

    @discardableResult public func addValue(_ value: Any?) -> Self { storage.append(MutableValues.normalize(value)); return self }
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
        storage.insert(MutableValues.normalize(value), at: index); return self
    }

    @discardableResult public func removeValue(at index: Int) -> Self { storage.remove(at: index); return self }

    /// Replaces all content with `data`.
    @discardableResult public func setData(_ data: [Any]) -> Self { storage = data.map(MutableValues.normalize(nonNil:)); return self }
}
