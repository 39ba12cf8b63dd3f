#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Checks untrusted Fleece data completely before anything reads it, so that accessors can
/// run without bounds checks afterwards.
///
/// Rules (cbl2-format.md §6.1–6.6, LiteCore's `Value::validate`): even length ≥ 2; the
/// root trailer; every pointer points strictly backwards to an in-bounds value that ends
/// before the pointer (so pointer cycles are impossible); a pointer's target that is itself a
/// pointer is read as wide (at most 4 such hops); values fit their container or slot; only
/// known tags and sub-types; inline collections are empty; dict keys are strings or
/// non-negative short ints known to the shared keys, in sorted order. Nesting is limited to
/// 512 levels, and each collection is checked once however many pointers reach it, so
/// hostile DAGs cannot make validation exponential.
struct FleeceValidator {
    static let maxDepth = 512
    static let maxPointerHops = 4

    private let p: UnsafePointer<UInt8>
    private let n: Int
    /// Number of shared keys known, or nil when the document has no SharedKeys.
    private let keyCount: Int?
    private let visited: UnsafeMutablePointer<UInt64>

    /// Validates `p[0..<n]` and returns the offset of the root value.
    static func validate(_ p: UnsafePointer<UInt8>, count n: Int, sharedKeyCount: Int?) throws -> Int {
        guard n >= 2 else { throw FleeceError.invalidData("data is shorter than 2 bytes") }
        guard n & 1 == 0 else { throw FleeceError.invalidData("data length \(n) is odd") }
        let words = (n >> 1 &+ 63) >> 6
        return try withUnsafeTemporaryAllocation(of: UInt64.self, capacity: words) { bits in
            bits.initialize(repeating: 0)
            let v = FleeceValidator(p: p, n: n, keyCount: sharedKeyCount, visited: bits.baseAddress!)
            return try v.validateRoot()
        }
    }

    private func fail(_ message: String) -> FleeceError { .invalidData(message) }

    private func validateRoot() throws -> Int {
        let rootPos = n &- 2
        if p[rootPos] & 0x80 == 0 {
            // §6.4: an inline root must be the whole data.
            guard n == 2 else { throw fail("root is not a pointer but the data is longer than 2 bytes") }
            try validateInline(at: 0, width: 2)
            return 0
        }
        let (target, end) = try deref(at: rootPos, wide: false)
        try validateValue(at: target, end: end, depth: 0)
        return target
    }

    /// Follows the pointer at `at`; returns the target value and the limit it must end by.
    private func deref(at: Int, wide: Bool) throws -> (Int, Int) {
        var pos = at
        var w = wide
        var hops = 0
        while true {
            if w {
                guard p[pos] & 0x40 == 0 else { throw fail("external pointer at \(pos)") }
            }
            let offset = FleeceLayout.pointerOffset(p, pos, wide: w)
            guard offset > 0 && offset <= pos else {
                throw fail("pointer at \(pos) points outside the data (offset \(offset))")
            }
            let target = pos &- offset
            guard p[target] & 0x80 != 0 else { return (target, pos) }
            // §6.3: a pointer to a pointer (the wide root trailer) is followed as wide.
            hops &+= 1
            guard hops <= FleeceValidator.maxPointerHops else { throw fail("pointer chain too long at \(pos)") }
            guard target &+ 4 <= pos else { throw fail("wide pointer at \(target) overlaps its referrer") }
            pos = target
            w = true
        }
    }

    private func validateValue(at o: Int, end: Int, depth: Int) throws {
        guard o &+ 2 <= end else { throw fail("value at \(o) extends past its end") }
        let b0 = p[o]
        switch b0 >> 4 {
        case 0:
            return
        case 1:
            guard o &+ 2 &+ Int(b0 & 0x07) <= end else { throw fail("integer at \(o) is truncated") }
        case 2:
            let size: Int
            switch b0 & 0x0F {
            case 0x0, 0x4: size = 6
            case 0x8: size = 10
            default: throw fail("unknown float kind 0x\(String(b0, radix: 16)) at \(o)")
            }
            guard o &+ size <= end else { throw fail("float at \(o) is truncated") }
        case 3:
            guard b0 & 0x03 == 0 else { throw fail("unknown special value 0x\(String(b0, radix: 16)) at \(o)") }
        case 4, 5:
            _ = try stringExtent(at: o, end: end)
        case 6, 7:
            try validateCollection(at: o, end: end, depth: depth)
        default:
            throw fail("unexpected pointer at \(o)")
        }
    }

    private func stringExtent(at o: Int, end: Int) throws -> (Int, Int) {
        let low = Int(p[o] & 0x0F)
        if low < 15 {
            guard o &+ 1 &+ low <= end else { throw fail("string at \(o) is truncated") }
            return (o &+ 1, low)
        }
        guard let (length, varintSize) = Varint.read(p, at: o &+ 1, end: end) else {
            throw fail("bad length varint of string at \(o)")
        }
        let start = o &+ 1 &+ varintSize
        guard length <= UInt64(end &- start) else { throw fail("string at \(o) is truncated") }
        return (start, Int(length))
    }

    /// A value stored in a slot itself must fit in the slot.
    private func validateInline(at s: Int, width: Int) throws {
        let b0 = p[s]
        switch b0 >> 4 {
        case 0:
            return
        case 1:
            guard 2 &+ Int(b0 & 0x07) <= width else { throw fail("inline integer at \(s) does not fit its slot") }
        case 2:
            throw fail("inline float at \(s) does not fit its slot")
        case 3:
            guard b0 & 0x03 == 0 else { throw fail("unknown special value 0x\(String(b0, radix: 16)) at \(s)") }
        case 4, 5:
            let low = Int(b0 & 0x0F)
            guard low < 15 && 1 &+ low <= width else { throw fail("inline string at \(s) does not fit its slot") }
        default:        // 6, 7: only empty collections can be inline
            guard b0 & 0x07 == 0 && p[s &+ 1] == 0 else {
                throw fail("non-empty inline collection at \(s)")
            }
        }
    }

    private func validateCollection(at o: Int, end: Int, depth: Int) throws {
        guard depth < FleeceValidator.maxDepth else { throw fail("nesting deeper than \(FleeceValidator.maxDepth)") }
        let b0 = p[o]
        var count = Int(b0 & 0x07) << 8 | Int(p[o &+ 1])
        var first = o &+ 2
        if count == 2047 {
            guard let (extra, varintSize) = Varint.read(p, at: first, end: end),
                  extra <= UInt64(n) else {
                throw fail("bad count varint of collection at \(o)")
            }
            count &+= Int(extra)
            first &+= varintSize
            if first & 1 != 0 { first &+= 1 }
        }
        let wide = b0 & 0x08 != 0
        let width = wide ? 4 : 2
        let isDict = b0 >> 4 == 7
        let slots = isDict ? count &* 2 : count
        guard first <= end && slots <= (end &- first) / width else {
            throw fail("collection at \(o) (\(count) items) extends past its end")
        }
        if count == 0 { return }
        let word = o >> 7, bit = UInt64(1) << UInt64((o >> 1) & 63)
        if visited[word] & bit != 0 { return }
        var s = first
        for _ in 0..<slots {
            if p[s] & 0x80 != 0 {
                let (target, targetEnd) = try deref(at: s, wide: wide)
                try validateValue(at: target, end: targetEnd, depth: depth &+ 1)
            } else {
                try validateInline(at: s, width: width)
            }
            s &+= width
        }
        if isDict { try validateKeys(first: first, count: count, width: width, dict: o) }
        visited[word] |= bit
    }

    /// §6.6: keys are strings or shared-key codes, sorted (codes first, ascending; then
    /// strings by memcmp, shorter first). Equal neighbours are tolerated.
    private func validateKeys(first: Int, count: Int, width: Int, dict: Int) throws {
        let wide = width == 4
        var prevCode = -1
        var prevString: (Int, Int)? = nil
        for i in 0..<count {
            let k = FleeceLayout.resolve(p, first &+ 2 &* i &* width, wide: wide)
            let b0 = p[k]
            switch b0 >> 4 {
            case 0:
                let code = Int(FleeceLayout.shortInt(p, k))
                guard code >= 0 else {
                    throw fail("dict at \(dict) has key \(code) (parent-dict inheritance is not supported)")
                }
                guard let keyCount else {
                    throw fail("dict at \(dict) uses shared keys but no SharedKeys were given")
                }
                guard code < keyCount else { throw fail("dict at \(dict) uses unknown shared key \(code)") }
                guard prevString == nil && code >= prevCode else { throw fail("dict at \(dict) is not sorted") }
                prevCode = code
            case 4:
                let (start, length) = FleeceLayout.stringBytes(p, k)
                if let (ps, pl) = prevString {
                    let m = Swift.min(pl, length)
                    let c = m == 0 ? 0 : memcmp(p + ps, p + start, m)
                    guard c < 0 || (c == 0 && pl <= length) else { throw fail("dict at \(dict) is not sorted") }
                }
                prevString = (start, length)
            default:
                throw fail("dict at \(dict) has a key that is not a string or shared-key code")
            }
        }
    }
}
