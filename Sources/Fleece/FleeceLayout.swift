/// Readers for the Fleece byte layout (cbl2-format.md §6.1–6.3) over data that has already
/// been validated by `FleeceValidator`, so they do no bounds checks.
enum FleeceLayout {
    @inline(__always)
    static func be16(_ p: UnsafePointer<UInt8>, _ at: Int) -> UInt32 {
        UInt32(p[at]) << 8 | UInt32(p[at &+ 1])
    }

    @inline(__always)
    static func be32(_ p: UnsafePointer<UInt8>, _ at: Int) -> UInt32 {
        UInt32(p[at]) << 24 | UInt32(p[at &+ 1]) << 16 | UInt32(p[at &+ 2]) << 8 | UInt32(p[at &+ 3])
    }

    /// The byte distance a pointer at `at` points back. §6.3: narrow = 14-bit offset/2 below
    /// the external flag; an "external" narrow pointer in a stand-alone document is an old
    /// (≤ 2.x) 15-bit pointer. Wide = 30-bit offset/2.
    @inline(__always)
    static func pointerOffset(_ p: UnsafePointer<UInt8>, _ at: Int, wide: Bool) -> Int {
        if wide {
            return Int(be32(p, at) & 0x3FFF_FFFF) << 1
        }
        let raw = be16(p, at)
        return raw & 0x4000 != 0 ? Int(raw & 0x7FFF) << 1 : Int(raw & 0x3FFF) << 1
    }

    /// The value a slot holds: the slot itself if inline, else the end of its pointer chain
    /// (a pointer reached through a pointer is read as wide, §6.3).
    @inline(__always)
    static func resolve(_ p: UnsafePointer<UInt8>, _ slot: Int, wide: Bool) -> Int {
        var pos = slot
        var w = wide
        while p[pos] & 0x80 != 0 {
            pos &-= pointerOffset(p, pos, wide: w)
            w = true
        }
        return pos
    }

    /// Count, first slot and width of the array/dict at `at` (count = pairs for a dict).
    @inline(__always)
    static func collection(_ p: UnsafePointer<UInt8>, _ at: Int) -> (count: Int, first: Int, wide: Bool) {
        let b0 = p[at]
        var count = Int(b0 & 0x07) << 8 | Int(p[at &+ 1])
        var first = at &+ 2
        if count == 2047 {
            let (extra, next) = Varint.readValidated(p, at: first)
            count &+= extra
            first = next
            if first & 1 != 0 { first &+= 1 }
        }
        return (count, first, b0 & 0x08 != 0)
    }

    /// Start and length of the bytes of the string/data value at `at`.
    @inline(__always)
    static func stringBytes(_ p: UnsafePointer<UInt8>, _ at: Int) -> (start: Int, length: Int) {
        let low = Int(p[at] & 0x0F)
        if low < 15 { return (at &+ 1, low) }
        let (length, start) = Varint.readValidated(p, at: at &+ 1)
        return (start, length)
    }

    /// The 12-bit signed value of a short int.
    @inline(__always)
    static func shortInt(_ p: UnsafePointer<UInt8>, _ at: Int) -> Int64 {
        let raw = Int64(p[at] & 0x0F) << 8 | Int64(p[at &+ 1])
        return raw >= 2048 ? raw &- 4096 : raw
    }

    /// A long int: (value bits, isUnsigned). Signed values are sign-extended.
    @inline(__always)
    static func longInt(_ p: UnsafePointer<UInt8>, _ at: Int) -> (bits: UInt64, unsigned: Bool) {
        let b0 = p[at]
        let n = Int(b0 & 0x07) &+ 1
        var v: UInt64 = 0
        for k in 0..<n { v |= UInt64(p[at &+ 1 &+ k]) << (UInt64(k) &* 8) }
        let unsigned = b0 & 0x08 != 0
        if !unsigned && n < 8 && p[at &+ n] & 0x80 != 0 {
            v |= ~0 << (UInt64(n) &* 8)
        }
        return (v, unsigned)
    }
}
