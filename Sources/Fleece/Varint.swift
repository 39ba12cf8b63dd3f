/// Unsigned LEB128 varints: 7 bits per byte, low group first, 0x80 = "more bytes follow".
///
/// The one implementation in the package: Fleece uses them for string/data lengths ≥ 15 bytes and
/// for collection counts ≥ 2047 (cbl2-format.md §6.1); the 2.x file format (`CouchbaseLiteSwift`)
/// for the generation of a binary revision ID and the sequence of a rev-tree record (spec 3.2, 3.3).
/// Every read refuses a truncated varint, one longer than 10 bytes, and one that overflows 64 bits.
package enum Varint {
    /// The longest varint of a 64-bit value.
    package static let maxLength = 10

    @inline(__always)
    package static func size(_ value: UInt64) -> Int {
        var v = value
        var n = 1
        while v >= 0x80 { v >>= 7; n &+= 1 }
        return n
    }

    /// Writes `value` at `dst` and returns the number of bytes written.
    @inline(__always)
    package static func write(_ value: UInt64, to dst: UnsafeMutablePointer<UInt8>) -> Int {
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
    package static func read(_ p: UnsafePointer<UInt8>, at: Int, end: Int) -> (value: UInt64, length: Int)? {
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

    /// Reads a varint the validator has already checked (`FleeceValidator`, with ``read(_:at:end:)``):
    /// no bounds or overflow test, for the decoder's hot paths. Returns the value and the index
    /// of the byte after it.
    @inline(__always)
    static func readValidated(_ p: UnsafePointer<UInt8>, at: Int) -> (value: Int, next: Int) {
        var value = 0
        var shift = 0
        var i = at
        while true {
            let b = p[i]
            i &+= 1
            value |= Int(b & 0x7F) << shift
            if b & 0x80 == 0 { return (value, i) }
            shift &+= 7
        }
    }

    /// Appends `value` to `out`.
    package static func append(_ value: UInt64, to out: inout [UInt8]) {
        var v = value
        while v >= 0x80 {
            out.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        out.append(UInt8(truncatingIfNeeded: v))
    }

    /// Reads a varint at `offset` in `bytes`, advancing `offset` past it; nil (leaving `offset`
    /// alone) when it is truncated, longer than 10 bytes or overflows 64 bits.
    @inline(__always)
    package static func read(_ bytes: UnsafeRawBufferPointer, at offset: inout Int) -> UInt64? {
        guard offset >= 0, offset < bytes.count, let base = bytes.baseAddress else { return nil }
        guard let (value, length) = read(base.assumingMemoryBound(to: UInt8.self), at: offset, end: bytes.count) else {
            return nil
        }
        offset &+= length
        return value
    }
}
