import Foundation
import JSONCore

/// Renders validated Fleece as compact JSON (`FleeceValue.toJSON`).
struct FleeceJSONWriter {
    let storage: FleeceStorage
    let p: UnsafePointer<UInt8>
    var out: [UInt8] = []

    init(storage: FleeceStorage) {
        self.storage = storage
        p = UnsafePointer(storage.base)
        out.reserveCapacity(Swift.max(64, storage.count &* 2))
    }

    private static let hex: [UInt8] = Array("0123456789abcdef".utf8)

    mutating func write(_ o: Int, depth: Int) {
        let b0 = p[o]
        switch b0 >> 4 {
        case 0:
            writeInt(FleeceLayout.shortInt(p, o))
        case 1:
            let (bits, unsigned) = FleeceLayout.longInt(p, o)
            if unsigned { writeUInt(bits) } else { writeInt(Int64(bitPattern: bits)) }
        case 2:
            let raw = UnsafeRawPointer(p + o + 2)
            if b0 & 0x08 != 0 {
                writeDouble(Double(bitPattern: UInt64(littleEndian: raw.loadUnaligned(as: UInt64.self))))
            } else {
                // Printed with double precision: LiteCore stores doubles that fit in a float as
                // 4-byte floats (0x20 or 0x24), and the text must read back as that double.
                let f = Float(bitPattern: UInt32(littleEndian: raw.loadUnaligned(as: UInt32.self)))
                writeDouble(Double(f))
            }
        case 3:
            switch b0 {
            case 0x38: appendLiteral("true")
            case 0x34: appendLiteral("false")
            default: appendLiteral("null")
            }
        case 4:
            let (start, length) = FleeceLayout.stringBytes(p, o)
            writeString(p + start, length)
        case 5:
            let (start, length) = FleeceLayout.stringBytes(p, o)
            let b64 = Data(UnsafeBufferPointer(start: p + start, count: length)).base64EncodedString()
            out.append(0x22)
            out.append(contentsOf: b64.utf8)
            out.append(0x22)
        case 6:
            let a = FleeceArray(storage: storage, offset: o)
            out.append(UInt8(ascii: "["))
            for i in 0..<a.count {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                write(a.slots.resolve(i), depth: depth &+ 1)
            }
            out.append(UInt8(ascii: "]"))
        default:
            let d = FleeceDict(storage: storage, offset: o)
            out.append(UInt8(ascii: "{"))
            for i in 0..<d.count {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                let k = d.keyOffset(i)
                if p[k] >> 4 == 0 {
                    var key = storage.key(forCode: Int(FleeceLayout.shortInt(p, k)))
                    key.withUTF8 { writeString($0.baseAddress, $0.count) }
                } else {
                    let (start, length) = FleeceLayout.stringBytes(p, k)
                    writeString(p + start, length)
                }
                out.append(UInt8(ascii: ":"))
                write(d.valueOffset(i), depth: depth &+ 1)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    private mutating func appendLiteral(_ s: StaticString) {
        out.append(contentsOf: UnsafeBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
    }

    private mutating func writeUInt(_ v: UInt64) {
        if v < 10 {
            out.append(UInt8(truncatingIfNeeded: v) &+ 0x30)
            return
        }
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { buf in
            var i = 20
            var x = v
            while x > 0 {
                i &-= 1
                buf[i] = UInt8(truncatingIfNeeded: x % 10) &+ 0x30
                x /= 10
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: buf[i..<20]))
        }
    }

    private mutating func writeInt(_ v: Int64) {
        if v < 0 { out.append(UInt8(ascii: "-")) }
        writeUInt(v.magnitude)
    }

    /// Shortest round-trip form (Swift's `description`); non-finite values become null.
    private mutating func writeDouble(_ d: Double) {
        guard d.isFinite else { appendLiteral("null"); return }
        out.append(contentsOf: d.description.utf8)
    }

    /// A JSON string: `"` and `\` escaped, control characters as `\n`-style or `\u00xx`,
    /// everything else raw UTF-8 (invalid UTF-8 is replaced by U+FFFD).
    mutating func writeString(_ s: UnsafePointer<UInt8>?, _ n: Int) {
        out.append(0x22)
        guard let s, n > 0 else { out.append(0x22); return }
        var nonASCII = false
        for i in 0..<n where s[i] >= 0x80 { nonASCII = true; break }
        if nonASCII && !JSONLexer.isValidUTF8(s, n) {
            var repaired = String(decoding: UnsafeBufferPointer(start: s, count: n), as: UTF8.self)
            out.removeLast()
            repaired.withUTF8 { writeString($0.baseAddress, $0.count) }
            return
        }
        var runStart = 0
        for i in 0..<n {
            let c = s[i]
            if c >= 0x20 && c != 0x22 && c != 0x5C { continue }
            if i > runStart { out.append(contentsOf: UnsafeBufferPointer(start: s + runStart, count: i &- runStart)) }
            runStart = i &+ 1
            out.append(0x5C)
            switch c {
            case 0x22: out.append(0x22)
            case 0x5C: out.append(0x5C)
            case 0x0A: out.append(UInt8(ascii: "n"))
            case 0x0D: out.append(UInt8(ascii: "r"))
            case 0x09: out.append(UInt8(ascii: "t"))
            case 0x08: out.append(UInt8(ascii: "b"))
            case 0x0C: out.append(UInt8(ascii: "f"))
            default:
                out.append(UInt8(ascii: "u"))
                out.append(0x30)
                out.append(0x30)
                out.append(FleeceJSONWriter.hex[Int(c >> 4)])
                out.append(FleeceJSONWriter.hex[Int(c & 0x0F)])
            }
        }
        if n > runStart { out.append(contentsOf: UnsafeBufferPointer(start: s + runStart, count: n &- runStart)) }
        out.append(0x22)
    }
}
