import Fleece

/// Revision IDs in LiteCore's binary form (spec 3.2): `uvarint(generation)` followed by the
/// hex-decoded digest. `2-db99…50c7` is stored as `02 DB 99 … 50 C7`.
package enum BinaryRevisionID {
    /// The longest binary revision ID LiteCore accepts.
    package static let maxLength = 42

    /// Encodes `GEN-DIGEST`; nil when the ID does not follow LiteCore's rules (generation of 1–20
    /// decimal digits and non-zero, digest of lower-case hex with an even number of digits).
    package static func encode(_ revID: String) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(24)
        guard append(revID, to: &out) else { return nil }
        return out
    }

    /// Appends the binary form of `revID` to `out`; returns false (leaving `out` unspecified) when invalid.
    package static func append(_ revID: String, to out: inout [UInt8]) -> Bool {
        var revID = revID
        return revID.withUTF8 { append(UnsafeRawBufferPointer($0), to: &out) }
    }

    /// Appends the binary form of the UTF-8 revision ID in `bytes`; false when invalid.
    /// (Runs once per revision in the converter: a table lookup per hex digit, no bounds checks
    /// past the length tests.)
    package static func append(_ bytes: UnsafeRawBufferPointer, to out: inout [UInt8]) -> Bool {
        let count = bytes.count
        guard count >= 3, let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return false }
        var dash = 0
        var generation: UInt64 = 0
        while dash < count && base[dash] != UInt8(ascii: "-") {
            let d = base[dash] &- 0x30
            guard d <= 9, dash < 20 else { return false }
            let (m, o1) = generation.multipliedReportingOverflow(by: 10)
            let (s, o2) = m.addingReportingOverflow(UInt64(d))
            guard !o1, !o2 else { return false }
            generation = s
            dash += 1
        }
        let digestCount = count - dash - 1
        guard dash > 0, generation > 0, digestCount > 0, digestCount % 2 == 0 else { return false }
        let start = out.count
        Varint.append(generation, to: &out)
        var i = dash + 1
        while i < count {
            let hi = hexValues[Int(base[i])], lo = hexValues[Int(base[i + 1])]
            guard hi | lo < 16 else { return false }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out.count - start <= maxLength
    }

    /// Lower-case hex digits only (LiteCore rejects upper-case digests, spec 3.2); 0xFF = invalid.
    private static let hexValues: [UInt8] = (0..<256).map { c in
        switch c {
        case 0x30...0x39: return UInt8(c - 0x30)
        case 0x61...0x66: return UInt8(c - 0x61 + 10)
        default: return 0xFF
        }
    }

    /// The text form (`GEN-digest`, lower-case hex) of a binary revision ID; nil when malformed,
    /// or when it is a version-vector style ID (leading `00`, spec 3.2), which rev trees never use.
    package static func decode(_ bytes: some Swift.Collection<UInt8>) -> String? {
        let bytes = Array(bytes)
        return bytes.withUnsafeBufferPointer { decode(UnsafeRawBufferPointer($0)) }
    }

    package static func decode(_ bytes: UnsafeRawBufferPointer) -> String? {
        guard let first = bytes.first, first != 0 else { return nil }
        var offset = 0
        guard let generation = Varint.read(bytes, at: &offset), generation > 0, offset < bytes.count else { return nil }
        var out = Array(String(generation).utf8)
        out.reserveCapacity(out.count + 1 + 2 * (bytes.count - offset))
        out.append(UInt8(ascii: "-"))
        let hex: [UInt8] = Array("0123456789abcdef".utf8)
        for i in offset..<bytes.count {
            out.append(hex[Int(bytes[i] >> 4)])
            out.append(hex[Int(bytes[i] & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// LiteCore's order of revision IDs (spec 3.2): generation, then digest bytes, shorter first on a tie.
    package static func compare(_ a: [UInt8], _ b: [UInt8]) -> Int {
        var ia = 0, ib = 0
        let ga = a.withUnsafeBytes { Varint.read($0, at: &ia) } ?? 0
        let gb = b.withUnsafeBytes { Varint.read($0, at: &ib) } ?? 0
        if ga != gb { return ga < gb ? -1 : 1 }
        let da = a[ia...], db = b[ib...]
        for (x, y) in zip(da, db) where x != y { return x < y ? -1 : 1 }
        return da.count == db.count ? 0 : (da.count < db.count ? -1 : 1)
    }
}
