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
    let storage: FleeceStorage
    let first: Int
    let wide: Bool
    /// The number of elements.
    package let count: Int

    init(storage: FleeceStorage, offset: Int) {
        self.storage = storage
        let (count, first, wide) = FleeceLayout.collection(UnsafePointer(storage.base), offset)
        self.count = count
        self.first = first
        self.wide = wide
    }

    /// Always 0.
    package var startIndex: Int { 0 }
    /// Equal to `count`.
    package var endIndex: Int { count }

    /// The element at `i` (`0 ..< count`).
    package subscript(i: Int) -> FleeceValue {
        // Kept: Collection's contract (as `Array`); a bad index would read outside the body.
        precondition(i >= 0 && i < count, "FleeceArray index out of range")
        let slot = first &+ i &* (wide ? 4 : 2)
        return FleeceValue(storage: storage,
                           offset: FleeceLayout.resolve(UnsafePointer(storage.base), slot, wide: wide))
    }
}

/// A Fleece dict: pairs in stored (sorted) order; look-ups by binary search.
///
/// Integer keys are shown as the strings the document's ``SharedKeys`` map them to.
// @unchecked because it holds a `FleeceStorage` (immutable bytes) and offsets.
package struct FleeceDict: Sequence, @unchecked Sendable {
    let storage: FleeceStorage
    let first: Int
    let wide: Bool
    /// The number of key/value pairs.
    package let count: Int

    init(storage: FleeceStorage, offset: Int) {
        self.storage = storage
        let (count, first, wide) = FleeceLayout.collection(UnsafePointer(storage.base), offset)
        self.count = count
        self.first = first
        self.wide = wide
    }

    /// True if the dict has no pairs.
    package var isEmpty: Bool { count == 0 }

    @inline(__always)
    var width: Int { wide ? 4 : 2 }

    /// Offset of the key value of pair `i`.
    @inline(__always)
    func keyOffset(_ i: Int) -> Int {
        FleeceLayout.resolve(UnsafePointer(storage.base), first &+ 2 &* i &* width, wide: wide)
    }

    /// Offset of the value of pair `i`.
    @inline(__always)
    func valueOffset(_ i: Int) -> Int {
        FleeceLayout.resolve(UnsafePointer(storage.base), first &+ (2 &* i &+ 1) &* width, wide: wide)
    }

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
