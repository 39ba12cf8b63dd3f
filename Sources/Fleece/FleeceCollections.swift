#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A Fleece array: random access to its elements, in place.
// @unchecked because it holds a `FleeceStorage` (immutable bytes) and offsets.
package struct FleeceArray: RandomAccessCollection, @unchecked Sendable {
    let slots: FleeceSlots
    /// The number of elements.
    package var count: Int { slots.count }

    init(storage: FleeceStorage, offset: Int) {
        slots = FleeceSlots(storage: storage, offset: offset)
    }

    /// Always 0.
    package var startIndex: Int { 0 }
    /// Equal to `count`.
    package var endIndex: Int { count }

    /// The element at `i` (`0 ..< count`).
    package subscript(i: Int) -> FleeceValue {
        // Kept: Collection's contract (as `Array`); a bad index would read outside the body.
        precondition(i >= 0 && i < count, "FleeceArray index out of range")
        return FleeceValue(storage: slots.storage, offset: slots.resolve(i))
    }
}

/// A Fleece dict: pairs in stored (sorted) order; look-ups by binary search.
///
/// Integer keys are shown as the strings the document's ``SharedKeys`` map them to.
// @unchecked because it holds a `FleeceStorage` (immutable bytes) and offsets.
package struct FleeceDict: Sequence, @unchecked Sendable {
    /// The pairs' slots: key, then value.
    let slots: FleeceSlots
    /// The number of key/value pairs.
    package var count: Int { slots.count }

    init(storage: FleeceStorage, offset: Int) {
        slots = FleeceSlots(storage: storage, offset: offset)
    }

    @inline(__always)
    var storage: FleeceStorage { slots.storage }

    /// True if the dict has no pairs.
    package var isEmpty: Bool { count == 0 }

    /// Offset of the key value of pair `i`.
    @inline(__always)
    func keyOffset(_ i: Int) -> Int { slots.resolve(2 &* i) }

    /// Offset of the value of pair `i`.
    @inline(__always)
    func valueOffset(_ i: Int) -> Int { slots.resolve(2 &* i &+ 1) }

    /// The key of pair `i` as a string.
    func key(at i: Int) -> String {
        let p = UnsafePointer(storage.base)
        let k = keyOffset(i)
        if p[k] >> 4 == 0 { return storage.key(forCode: Int(FleeceLayout.shortInt(p, k))) }
        let (start, length) = FleeceLayout.stringBytes(p, k)
        return String(decoding: UnsafeBufferPointer(start: p + start, count: length), as: UTF8.self)
    }

    /// All keys in stored order.
    package var keys: [String] { (0..<count).map { key(at: $0) } }

    /// The value for `key`, or nil. A key the SharedKeys know is looked up by its code first
    /// and then, for data written before the key got a code, as a string.
    package subscript(key: String) -> FleeceValue? {
        if let sk = storage.sharedKeys, let code = sk.code(for: key), code < storage.keyStrings.count,
           let i = find(code: code) {
            return FleeceValue(storage: storage, offset: valueOffset(i))
        }
        var k = key
        let found = k.withUTF8 { find(utf8: $0) }
        return found.map { FleeceValue(storage: storage, offset: valueOffset($0)) }
    }

    /// Binary search for an integer key (they sort before all string keys).
    func find(code: Int) -> Int? {
        let p = UnsafePointer(storage.base)
        var lo = 0, hi = count
        while lo < hi {
            let mid = (lo &+ hi) >> 1
            let k = keyOffset(mid)
            if p[k] >> 4 != 0 {
                hi = mid                                     // a string key: past the codes
                continue
            }
            let c = Int(FleeceLayout.shortInt(p, k))
            if c == code { return mid }
            if c < code { lo = mid &+ 1 } else { hi = mid }
        }
        return nil
    }

    /// Binary search for a string key (memcmp order, shorter first).
    func find(utf8 key: UnsafeBufferPointer<UInt8>) -> Int? {
        let p = UnsafePointer(storage.base)
        var lo = 0, hi = count
        while lo < hi {
            let mid = (lo &+ hi) >> 1
            let k = keyOffset(mid)
            if p[k] >> 4 == 0 {
                lo = mid &+ 1                                // integer keys sort first
                continue
            }
            let (start, length) = FleeceLayout.stringBytes(p, k)
            let m = Swift.min(length, key.count)
            var c = m == 0 ? 0 : Int(memcmp(p + start, key.baseAddress!, m))
            if c == 0 { c = length &- key.count }
            if c == 0 { return mid }
            if c < 0 { lo = mid &+ 1 } else { hi = mid }
        }
        return nil
    }

    /// Iterates the pairs in stored order.
    package struct Iterator: IteratorProtocol {
        let dict: FleeceDict
        var index = 0

        package mutating func next() -> (key: String, value: FleeceValue)? {
            guard index < dict.count else { return nil }
            defer { index &+= 1 }
            return (dict.key(at: index), FleeceValue(storage: dict.storage, offset: dict.valueOffset(index)))
        }
    }

    /// An iterator over the pairs in stored order.
    package func makeIterator() -> Iterator { Iterator(dict: self) }

    /// Equal to `count`.
    package var underestimatedCount: Int { count }
}

/// Where a collection's slots lie in its storage (the layout ``FleeceArray`` and ``FleeceDict``
/// share): `count` items (a dict's pairs take two slots each) from `first`, each slot 2 bytes,
/// or 4 when `wide`.
// @unchecked because it holds a `FleeceStorage` (immutable bytes) and offsets.
struct FleeceSlots: @unchecked Sendable {
    let storage: FleeceStorage
    let first: Int
    let wide: Bool
    let count: Int

    @inline(__always)
    init(storage: FleeceStorage, offset: Int) {
        self.storage = storage
        (count, first, wide) = FleeceLayout.collection(UnsafePointer(storage.base), offset)
    }

    /// The offset of the value slot `i` holds or points to.
    @inline(__always)
    func resolve(_ i: Int) -> Int {
        FleeceLayout.resolve(UnsafePointer(storage.base), first &+ i &* (wide ? 4 : 2), wide: wide)
    }
}
