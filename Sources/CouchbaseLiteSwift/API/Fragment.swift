import Foundation

/// Subscript access to a dictionary: `doc["name"].string` (2.x `DictionaryFragment`).
public protocol DictionaryFragment {
    subscript(key: String) -> Fragment { get }
}

/// Subscript access to an array: `doc["tags"][0].string` (2.x `ArrayFragment`).
public protocol ArrayFragment {
    subscript(index: Int) -> Fragment { get }
}

/// Subscript access that can also write: `doc["name"].value = "x"` (2.x `MutableDictionaryFragment`).
public protocol MutableDictionaryFragment: DictionaryFragment {
    subscript(key: String) -> MutableFragment { get }
}

/// Subscript access into a mutable array (2.x `MutableArrayFragment`).
public protocol MutableArrayFragment: ArrayFragment {
    subscript(index: Int) -> MutableFragment { get }
}

/// A value reached by subscripts, read lazily; a missing key or index gives a fragment whose
/// `exists` is false and whose typed accessors give their defaults (nil, 0, false).
// @unchecked because `read` (not `@Sendable` in type) only reads a thread-safe container: a read-only object, or a mutable one that locks.
public class Fragment: DictionaryFragment, ArrayFragment, @unchecked Sendable {
    private let read: () -> Any?

    init(_ read: @escaping () -> Any?) { self.read = read }

    /// The value, as `value(forKey:)` gives it; nil when absent.
    public var value: Any? { read() }
    /// Whether there is a value here (null counts as one).
    public var exists: Bool { value != nil }
    public var string: String? { value as? String }
    public var number: NSNumber? { MutableValues.number(value) }
    public var int: Int { Int(truncatingIfNeeded: MutableValues.int64(value)) }
    public var int64: Int64 { MutableValues.int64(value) }
    public var float: Float { Float(MutableValues.double(value)) }
    public var double: Double { MutableValues.double(value) }
    public var boolean: Bool { MutableValues.boolean(value) }
    /// An ISO-8601 string as a `Date`.
    public var date: Date? { MutableValues.date(value) }
    public var blob: Blob? { value as? Blob }
    public var array: ArrayObject? { value as? ArrayObject }
    public var dictionary: DictionaryObject? { value as? DictionaryObject }

    /// The value under `key` when this is a dictionary.
    public subscript(key: String) -> Fragment {
        Fragment { [self] in Self.child(of: self.value, key: key) }
    }

    /// The item at `index` when this is an array (out of range: absent).
    public subscript(index: Int) -> Fragment {
        Fragment { [self] in Self.child(of: self.value, index: index) }
    }

    static func child(of container: Any?, key: String) -> Any? {
        switch container {
        case let d as DictionaryObject: return d.value(forKey: key)
        case let r as Result: return r.value(forKey: key)
        default: return nil
        }
    }

    static func child(of container: Any?, index: Int) -> Any? {
        switch container {
        case let a as ArrayObject: return index >= 0 && index < a.count ? a.value(at: index) : nil
        case let r as Result: return index >= 0 && index < r.count ? r.value(at: index) : nil
        default: return nil
        }
    }
}

/// A fragment of a mutable document, dictionary or array: assigning to `value` or to a typed
/// property sets the value in its container (nil stores null, as `setValue` does). Thread-safe
/// as its container is (mutable containers lock).
// @unchecked because `write` only calls the setters of a mutable container, which lock.
public final class MutableFragment: Fragment, MutableDictionaryFragment, MutableArrayFragment, @unchecked Sendable {
    private let write: (Any?) -> Void

    init(read: @escaping () -> Any?, write: @escaping (Any?) -> Void) {
        self.write = write
        super.init(read)
    }

    public override var value: Any? {
        get { super.value }
        set { write(newValue) }
    }
    public override var string: String? {
        get { super.string }
        set { write(newValue) }
    }
    public override var number: NSNumber? {
        get { super.number }
        set { write(newValue) }
    }
    public override var int: Int {
        get { super.int }
        set { write(newValue) }
    }
    public override var int64: Int64 {
        get { super.int64 }
        set { write(newValue) }
    }
    public override var float: Float {
        get { super.float }
        set { write(newValue) }
    }
    public override var double: Double {
        get { super.double }
        set { write(newValue) }
    }
    public override var boolean: Bool {
        get { super.boolean }
        set { write(newValue) }
    }
    public override var date: Date? {
        get { super.date }
        set { write(newValue) }
    }
    public override var blob: Blob? {
        get { super.blob }
        set { write(newValue) }
    }
    /// The mutable array here, if it is one.
    public var mutableArray: MutableArrayObject? { value as? MutableArrayObject }
    /// The mutable dictionary here, if it is one.
    public var mutableDictionary: MutableDictionaryObject? { value as? MutableDictionaryObject }

    public override subscript(key: String) -> MutableFragment {
        MutableFragment(read: { [self] in Fragment.child(of: self.value, key: key) },
                        write: { [self] v in (self.value as? MutableDictionaryObject)?.setValue(v, forKey: key) })
    }

    public override subscript(index: Int) -> MutableFragment {
        MutableFragment(read: { [self] in Fragment.child(of: self.value, index: index) },
                        write: { [self] v in
                            guard let a = self.value as? MutableArrayObject, index >= 0, index < a.count else { return }
                            a.setValue(v, at: index)
                        })
    }
}

/// `database["id"]`, `collection["id"]`: the document with that ID, if any (2.x `DocumentFragment`).
public final class DocumentFragment: DictionaryFragment, Sendable {
    /// The document, or nil when it does not exist or is deleted.
    public let document: Document?

    init(_ document: Document?) { self.document = document }

    /// Whether the document exists.
    public var exists: Bool { document != nil }

    /// A property of the document.
    public subscript(key: String) -> Fragment {
        let doc = document
        return Fragment { doc?.value(forKey: key) }
    }
}

extension Result: DictionaryFragment, ArrayFragment {
    /// The column named `key` as a fragment: `result["name"].string`.
    public subscript(key: String) -> Fragment { Fragment { [self] in value(forKey: key) } }
    /// The column at `index` as a fragment: `result[0].int`.
    public subscript(index: Int) -> Fragment {
        Fragment { [self] in index >= 0 && index < count ? value(at: index) : nil }
    }
}
