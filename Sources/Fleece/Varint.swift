/// Unsigned LEB128 varints: 7 bits per byte, low group first, 0x80 = "more bytes follow".
///
/// Fleece uses them for string/data lengths ≥ 15 bytes and for collection counts ≥ 2047
/// (cbl2-format.md §6.1).
enum Varint {
    /// The longest varint of a 64-bit value.
    static let maxLength = 10

    @inline(__always)
    static func size(_ value: UInt64) -> Int {
        var v = value
        var n = 1
        while v >= 0x80 { v >>= 7; n &+= 1 }
        return n
    }

    /// Writes `value` at `dst` and returns the number of bytes written.
    @inline(__always)
    static func write(_ value: UInt64, to dst: UnsafeMutablePointer<UInt8>) -> Int {
        var v = value
        var n = 0
        while v >= 0x80 {
            dst[n] = UInt8(truncatingIfNeeded: v) | 0x80
            v >>= 7
            n &+= 1
        }
        dst[n] = UInt8(truncatingIfNeeded: v)
        return n &+ 1
    }

    /// Reads a varint starting at `p[at]` without reading at or beyond `p[end]`.
    /// Returns nil when it is truncated, longer than 10 bytes or overflows 64 bits.
    @inline(__always)
    static func read(_ p: UnsafePointer<UInt8>, at: Int, end: Int) -> (value: UInt64, length: Int)? {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        var i = at
        while i < end && i &- at < maxLength {
            let b = p[i]
            if shift == 63 && b > 1 { return nil }
            result |= UInt64(b & 0x7F) << shift
            i &+= 1
            if b & 0x80 == 0 { return (result, i &- at) }
            shift &+= 7
        }
        return nil
    }
}
