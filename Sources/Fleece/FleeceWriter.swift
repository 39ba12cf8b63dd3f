#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// How the encoder stores a `Double` (or a JSON number with a fraction or exponent).
package enum FleeceDoubleEncoding: Sendable, Equatable {
    /// What Fleece's `Encoder::writeDouble` does, i.e. what LiteCore's JSON import
    /// (`JSONConverter`), `FLEncoder_WriteDouble` and its 1.x upgrader write: an integral value
    /// in Int64 range becomes a (signed) integer, a value exactly representable as a 32-bit
    /// float becomes a 6-byte float with tag byte `0x20`, anything else an 8-byte double
    /// (`0x28`). `1.0` → `00 01`, `1.5` → `20 00 00 00 C0 3F`.
    case liteCore
    /// cbl2-format.md §6.2 as written (and what Fleece's mutable-collection slots,
    /// `ValueSlot::set(double)`, produce): never an integer; float-representable values get
    /// tag byte `0x24` ("double stored as float"), others `0x28`. `1.0` → `24 00 00 00 80 3F`.
    case preserveDoubles
}

/// The encoder's machinery, a value type so that the hot path (JSON conversion) runs on an
/// `inout` struct without dynamic exclusivity checks. All memory is manually managed;
/// `FleeceEncoder` owns one of these in a box that deallocates it.
///
/// Layout rules (cbl2-format.md §6.5): scalars that don't fit in a slot are appended to the
/// output as they are met; a collection's slots are collected in `items` (as inline 2-byte
/// values or as absolute pointer targets) and written when it ends, after its header.
struct FleeceWriter {
    /// A dict key as needed for sorting: a shared-key code, or where the key's bytes are.
    struct KeyRef {
        /// ≥ 0: shared key; −1: string key.
        var code: Int32
        /// String keys of ≥ 2 bytes: offset of the bytes in `out`; 1-byte keys: the byte.
        var pos: Int32
        var length: Int32
    }

    struct Frame {
        var itemStart: Int
        var keyStart: Int
        var isDict: Bool
        var parentInDict: Bool
        var parentExpectingKey: Bool
    }

    /// Item flag: the item is a pointer; the low 31 bits are the target offset / 2.
    static let pointerFlag: UInt32 = 0x8000_0000
    /// Narrow pointers reach back at most this far (Pointer::kMaxNarrowOffset).
    static let maxNarrowOffset = 0x7FFE
    /// Collections with this many items store (count − 2047) as a varint (kLongArrayCount).
    static let longCount = 2047

    var out: UnsafeMutablePointer<UInt8>
    var outCount = 0
    var outCapacity: Int
    var items: UnsafeMutablePointer<UInt32>
    var itemCount = 0
    var itemCapacity: Int
    var keys: UnsafeMutablePointer<KeyRef>
    var keyCount = 0
    var keyCapacity: Int
    var frames: UnsafeMutablePointer<Frame>
    var frameCount = 0
    var frameCapacity: Int
    /// Sorted dict slots / sort permutation (scratch for `endDict`).
    var sorted: UnsafeMutablePointer<UInt32>
    var permutation: UnsafeMutablePointer<Int32>
    var sortCapacity: Int
    /// Decoding buffer for JSON strings with escapes.
    var scratch: UnsafeMutablePointer<UInt8>
    var scratchCapacity: Int

    var inDict = false
    var expectingKey = false
    var failed = false
    var error: FleeceError?

    var strings: StringDedupTable
    let sharedKeys: SharedKeys?
    /// Copies of facts about `sharedKeys`, so the hot path does not touch (retain) it.
    let hasSharedKeys: Bool
    let sharedKeysMayHoldIneligible: Bool
    var keyCache: SharedKeyCache
    var doubleEncoding: FleeceDoubleEncoding

    init(sharedKeys: SharedKeys?, doubleEncoding: FleeceDoubleEncoding = .liteCore) {
        outCapacity = 1024
        out = .allocate(capacity: outCapacity)
        itemCapacity = 256
        items = .allocate(capacity: itemCapacity)
        keyCapacity = 128
        keys = .allocate(capacity: keyCapacity)
        frameCapacity = 32
        frames = .allocate(capacity: frameCapacity)
        sortCapacity = 128
        sorted = .allocate(capacity: sortCapacity * 2)
        permutation = .allocate(capacity: sortCapacity)
        scratchCapacity = 256
        scratch = .allocate(capacity: scratchCapacity)
        strings = StringDedupTable()
        self.sharedKeys = sharedKeys
        hasSharedKeys = sharedKeys != nil
        sharedKeysMayHoldIneligible = sharedKeys?.containsIneligibleKeys ?? false
        keyCache = SharedKeyCache(capacity: sharedKeys == nil ? 2 : 256)
        self.doubleEncoding = doubleEncoding
    }

    /// A deep copy (for copy-on-write of `FleeceEncoder`).
    func copy() -> FleeceWriter {
        var c = FleeceWriter(sharedKeys: sharedKeys, doubleEncoding: doubleEncoding)
        c.reserveOut(outCount)
        c.out.update(from: out, count: outCount)
        c.outCount = outCount
        FleeceWriter.grow(&c.items, &c.itemCapacity, count: 0, needed: itemCount)
        c.items.update(from: items, count: itemCount)
        c.itemCount = itemCount
        FleeceWriter.grow(&c.keys, &c.keyCapacity, count: 0, needed: keyCount)
        c.keys.update(from: keys, count: keyCount)
        c.keyCount = keyCount
        FleeceWriter.grow(&c.frames, &c.frameCapacity, count: 0, needed: frameCount)
        c.frames.update(from: frames, count: frameCount)
        c.frameCount = frameCount
        c.inDict = inDict
        c.expectingKey = expectingKey
        c.failed = failed
        c.error = error
        c.strings.deallocate()
        c.strings = strings.copy()
        c.keyCache.deallocate()
        c.keyCache = keyCache.copy()
        return c
    }

    func deallocate() {
        out.deallocate()
        items.deallocate()
        keys.deallocate()
        frames.deallocate()
        sorted.deallocate()
        permutation.deallocate()
        scratch.deallocate()
        strings.deallocate()
        keyCache.deallocate()
    }

    /// Forgets everything written so far (keeps capacity and the shared-key cache).
    mutating func reset() {
        outCount = 0
        itemCount = 0
        keyCount = 0
        frameCount = 0
        inDict = false
        expectingKey = false
        failed = false
        error = nil
        strings.clear()
    }

    // MARK: - Buffers

    @inline(never)
    static func grow<T>(_ p: inout UnsafeMutablePointer<T>, _ capacity: inout Int,
                        count: Int, needed: Int) {
        guard count &+ needed > capacity else { return }
        let newCapacity = Swift.max(capacity &* 2, count &+ needed, 16)
        let np = UnsafeMutablePointer<T>.allocate(capacity: newCapacity)
        np.moveInitialize(from: p, count: count)
        p.deallocate()
        p = np
        capacity = newCapacity
    }

    @inline(__always)
    mutating func reserveOut(_ n: Int) {
        if outCount &+ n > outCapacity { FleeceWriter.grow(&out, &outCapacity, count: outCount, needed: n) }
    }

    @inline(__always)
    mutating func reserveScratch(_ n: Int) {
        if n > scratchCapacity { FleeceWriter.grow(&scratch, &scratchCapacity, count: 0, needed: n) }
    }

    @inline(__always)
    mutating func pushItem(_ v: UInt32) {
        if itemCount == itemCapacity { FleeceWriter.grow(&items, &itemCapacity, count: itemCount, needed: 1) }
        items[itemCount] = v
        itemCount &+= 1
    }

    @inline(__always)
    static func pointerItem(to pos: Int) -> UInt32 {
        pointerFlag | UInt32(truncatingIfNeeded: pos >> 1)
    }

    mutating func fail(_ e: FleeceError) {
        if !failed {
            failed = true
            error = e
        }
    }

    /// State check before any value: in a dict a key must come first; at the top level
    /// only one value is allowed.
    @inline(__always)
    mutating func beforeValue() -> Bool {
        if failed { return false }
        if inDict {
            if expectingKey {
                fail(.encodingMisuse("a dictionary value was written without a key"))
                return false
            }
            expectingKey = true
            return true
        }
        if frameCount == 0 && itemCount != 0 {
            fail(.encodingMisuse("more than one value at the top level"))
            return false
        }
        return true
    }

    // MARK: - Scalars

    mutating func writeNull() { if beforeValue() { pushItem(0x3000) } }
    mutating func writeUndefined() { if beforeValue() { pushItem(0x3C00) } }
    mutating func writeBool(_ b: Bool) { if beforeValue() { pushItem(b ? 0x3800 : 0x3400) } }

    /// Non-negative values are stored unsigned, like JSON integers (§6.2), so every path
    /// (`writeInt`, `write(Any)`, `writeJSON`) gives the same bytes for the same number.
    mutating func writeInt(_ i: Int64) {
        guard beforeValue() else { return }
        if i >= 0 { appendUInt(UInt64(i)) } else { appendInt(i) }
    }
    mutating func writeUInt(_ u: UInt64) { if beforeValue() { appendUInt(u) } }

    /// §6.2: −2048…2047 as a short int, else signed little-endian with the fewest bytes whose
    /// top bit still carries the sign.
    @inline(__always)
    mutating func appendInt(_ i: Int64) {
        if i >= -2048 && i < 2048 {
            pushItem(UInt32(truncatingIfNeeded: i) & 0x0FFF)
            return
        }
        var n = 1
        while n < 8 {
            let rest = i >> (n &* 8 &- 1)
            if rest == 0 || rest == -1 { break }
            n &+= 1
        }
        appendLongInt(UInt64(bitPattern: i), byteCount: n, unsigned: false)
    }

    /// §6.2: < 2048 as a short int, else unsigned with the fewest bytes.
    @inline(__always)
    mutating func appendUInt(_ u: UInt64) {
        if u < 2048 {
            pushItem(UInt32(truncatingIfNeeded: u))
            return
        }
        let n = (64 &- u.leadingZeroBitCount &+ 7) >> 3
        appendLongInt(u, byteCount: n, unsigned: true)
    }

    @inline(__always)
    private mutating func appendLongInt(_ raw: UInt64, byteCount n: Int, unsigned: Bool) {
        reserveOut(10)
        let pos = outCount
        let p = out + pos
        p[0] = 0x10 | (unsigned ? 0x08 : 0) | UInt8(truncatingIfNeeded: n &- 1)
        var v = raw
        for k in 1...n {
            p[k] = UInt8(truncatingIfNeeded: v)
            v >>= 8
        }
        var size = 1 &+ n
        if size & 1 != 0 { p[size] = 0; size &+= 1 }
        outCount = pos &+ size
        pushItem(FleeceWriter.pointerItem(to: pos))
    }

    mutating func writeDouble(_ d: Double) {
        guard beginFloatingPoint(d) else { return }
        appendDouble(d)
    }

    /// Whether a floating-point value can be written here: nothing failed yet, the value is
    /// finite (Fleece, like JSON, has no NaN or infinity) and a value is expected.
    @inline(__always)
    private mutating func beginFloatingPoint<F: BinaryFloatingPoint & LosslessStringConvertible>(_ x: F) -> Bool {
        guard !failed else { return false }
        guard x.isFinite else {
            fail(.unsupportedValue("\(x) (NaN and infinity cannot be stored)"))
            return false
        }
        return beforeValue()
    }

    @inline(__always)
    mutating func appendDouble(_ d: Double) {
        if doubleEncoding == .liteCore {
            // Encoder::isIntRepresentable (with a strict upper bound: 2^63 itself is not).
            if d >= -9.223_372_036_854_775_808e18 && d < 9.223_372_036_854_775_808e18
                && d.rounded(.down) == d {
                appendInt(Int64(d))
                return
            }
        }
        if d.magnitude <= Double(Float.greatestFiniteMagnitude) && Double(Float(d)) == d {
            appendFloat32(Float(d), tagByte: doubleEncoding == .liteCore ? 0x20 : 0x24)
            return
        }
        reserveOut(10)
        let pos = outCount
        let p = out + pos
        p[0] = 0x28
        p[1] = 0
        UnsafeMutableRawPointer(p + 2).storeBytes(of: d.bitPattern.littleEndian, as: UInt64.self)
        outCount = pos &+ 10
        pushItem(FleeceWriter.pointerItem(to: pos))
    }

    mutating func writeFloat(_ f: Float) {
        guard beginFloatingPoint(f) else { return }
        // Encoder::writeFloat: integral values in Int32 range become integers.
        if doubleEncoding == .liteCore && f >= -2_147_483_648 && f < 2_147_483_648 && f.rounded(.down) == f {
            appendInt(Int64(f))
            return
        }
        appendFloat32(f, tagByte: 0x20)
    }

    @inline(__always)
    private mutating func appendFloat32(_ f: Float, tagByte: UInt8) {
        reserveOut(6)
        let pos = outCount
        let p = out + pos
        p[0] = tagByte
        p[1] = 0
        UnsafeMutableRawPointer(p + 2).storeBytes(of: f.bitPattern.littleEndian, as: UInt32.self)
        outCount = pos &+ 6
        pushItem(FleeceWriter.pointerItem(to: pos))
    }

    // MARK: - Strings and data

    mutating func writeString(_ p: UnsafePointer<UInt8>?, _ n: Int) {
        if beforeValue() { _ = appendString(p, n) }
    }

    mutating func writeData(_ p: UnsafePointer<UInt8>?, _ n: Int) {
        guard beforeValue() else { return }
        if n < 2 {
            pushItem(0x5000 | UInt32(n) << 8 | (n == 1 ? UInt32(p![0]) : 0))
            return
        }
        let (valuePos, _) = appendStringBytes(tag: 0x50, p!, n)
        pushItem(FleeceWriter.pointerItem(to: valuePos))
    }

    /// Writes a string item (inline, de-duplicated pointer, or new copy) and returns the
    /// offset of its bytes in `out` (meaningless for 0–1-byte strings, which are inline).
    @inline(__always)
    mutating func appendString(_ p: UnsafePointer<UInt8>?, _ n: Int) -> Int {
        if n < 2 {
            pushItem(0x4000 | UInt32(n) << 8 | (n == 1 ? UInt32(p![0]) : 0))
            return 0
        }
        let p = p!
        guard n <= 15 else {
            let (valuePos, dataPos) = appendStringBytes(tag: 0x40, p, n)
            pushItem(FleeceWriter.pointerItem(to: valuePos))
            return dataPos
        }
        // §6.5 / Encoder::_writeString: reuse an earlier copy if a narrow pointer could still
        // reach it (with Fleece's 32-byte safety margin), else write it again and remember
        // the new copy.
        let hash = fleeceHashBytes(p, n)
        let (index, found) = strings.find(p, n, hash: hash, out: out)
        if found {
            let slot = strings.slots[index]
            if outCount &- Int(slot.valuePos) <= FleeceWriter.maxNarrowOffset &- 32 {
                pushItem(FleeceWriter.pointerItem(to: Int(slot.valuePos)))
                return Int(slot.dataPos)
            }
            let (valuePos, dataPos) = appendStringBytes(tag: 0x40, p, n)
            strings.update(at: index, dataPos: dataPos, valuePos: valuePos)
            pushItem(FleeceWriter.pointerItem(to: valuePos))
            return dataPos
        }
        let (valuePos, dataPos) = appendStringBytes(tag: 0x40, p, n)
        strings.insert(at: index, hash: hash, length: n, dataPos: dataPos, valuePos: valuePos)
        pushItem(FleeceWriter.pointerItem(to: valuePos))
        return dataPos
    }

    /// Appends a string/data value of ≥ 2 bytes; returns the offsets of the value and its bytes.
    @inline(__always)
    private mutating func appendStringBytes(tag: UInt8, _ p: UnsafePointer<UInt8>,
                                            _ n: Int) -> (Int, Int) {
        reserveOut(n &+ 12)
        let pos = outCount
        let dst = out + pos
        var h = 1
        if n < 15 {
            dst[0] = tag | UInt8(truncatingIfNeeded: n)
        } else {
            dst[0] = tag | 0x0F
            h &+= Varint.write(UInt64(n), to: dst + 1)
        }
        (dst + h).update(from: p, count: n)
        var size = h &+ n
        if size & 1 != 0 { dst[size] = 0; size &+= 1 }
        outCount = pos &+ size
        return (pos, pos &+ h)
    }

    // MARK: - Keys

    mutating func writeKey(_ p: UnsafePointer<UInt8>?, _ n: Int) {
        guard !failed else { return }
        guard inDict && expectingKey else {
            fail(.encodingMisuse(inDict ? "a key was written where a value was expected"
                                        : "a key was written outside a dictionary"))
            return
        }
        expectingKey = false
        if keyCount == keyCapacity { FleeceWriter.grow(&keys, &keyCapacity, count: keyCount, needed: 1) }
        if hasSharedKeys {
            let code = sharedKeyCode(p, n)
            if code >= 0 {
                pushItem(UInt32(truncatingIfNeeded: code))      // short int, 0…2047
                keys[keyCount] = KeyRef(code: code, pos: 0, length: 0)
                keyCount &+= 1
                return
            }
        }
        let dataPos = appendString(p, n)
        keys[keyCount] = KeyRef(code: -1,
                                pos: n == 1 ? Int32(p![0]) : Int32(truncatingIfNeeded: dataPos),
                                length: Int32(truncatingIfNeeded: n))
        keyCount &+= 1
    }

    /// §6.7: the key's shared code (existing, or newly added if eligible), or −1.
    @inline(__always)
    mutating func sharedKeyCode(_ p: UnsafePointer<UInt8>?, _ n: Int) -> Int32 {
        if n > SharedKeys.maxKeyLength && !sharedKeysMayHoldIneligible { return -1 }
        guard let p else { return sharedKeyCodeMiss(nil, 0, hash: 0) }
        let hash = fleeceHashBytes(p, n)
        if let cached = keyCache.lookup(p, n, hash: hash) { return cached }
        if !sharedKeysMayHoldIneligible && !SharedKeys.isEligible(p, n) { return -1 }
        return sharedKeyCodeMiss(p, n, hash: hash)
    }

    /// Asks the (locked) SharedKeys and caches the answer.
    @inline(never)
    private mutating func sharedKeyCodeMiss(_ p: UnsafePointer<UInt8>?, _ n: Int, hash: UInt32) -> Int32 {
        guard let sk = sharedKeys else { return -1 }
        let code = Int32(sk.encodeKey(bytes: p, count: n) ?? -1)
        if let p { keyCache.insert(p, n, hash: hash, code: code) }
        return code
    }
}
