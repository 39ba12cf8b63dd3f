import CCollation
import XCTest
import CBLTestSupport

// MARK: - Reference comparator over parsed values (spec 6.1-6.5)

/// Independent model of the collation: compares parsed values instead of
/// scanning text. Strings must be ASCII in .unicode mode (the model has no
/// Unicode collator); .raw and .ascii compare UTF-8 bytes.
enum Reference {
    /// Spec 6.2 priority sequence, exactly as printed there (98 characters).
    static let prioritySequence = Array(
        "\t\n\r `^_-,;:!?.'\"()[]{}@*/\\&#%+<=>|~$0123456789aAbBcCdDeEfFgGhHiIjJkKlLmMnNoOpPqQrRsStTuUvVwWxXyYzZ".utf8)

    static let priority: [Int] = {
        var t = [Int](repeating: 0, count: 128)
        for (i, ch) in prioritySequence.enumerated() { t[Int(ch)] = i + 1 }
        return t
    }()

    static let priorityCaseInsensitive: [Int] = {
        var t = priority
        for ch in UInt8(ascii: "a")...UInt8(ascii: "z") { t[Int(ch)] = priority[Int(ch - 32)] }
        return t
    }()

    static func sign(_ x: Int) -> Int { x < 0 ? -1 : (x > 0 ? 1 : 0) }
    static func cmp<T: Comparable>(_ a: T, _ b: T) -> Int { a < b ? -1 : (a > b ? 1 : 0) }

    static func compareASCIIPriority(_ a: [UInt8], _ b: [UInt8]) -> Int {
        var tieBreak = 0
        for (ca, cb) in zip(a, b) where ca != cb {
            let s = cmp(priorityCaseInsensitive[Int(ca)], priorityCaseInsensitive[Int(cb)])
            if s != 0 { return s }
            if tieBreak == 0 { tieBreak = cmp(priority[Int(ca)], priority[Int(cb)]) }
        }
        return a.count != b.count ? cmp(a.count, b.count) : tieBreak
    }

    static func compareBytes(_ a: [UInt8], _ b: [UInt8]) -> Int {
        for (ca, cb) in zip(a, b) where ca != cb { return cmp(ca, cb) }
        return cmp(a.count, b.count)
    }

    static func compareStrings(_ a: String, _ b: String, _ mode: Mode) -> Int {
        let ua = Array(a.utf8), ub = Array(b.utf8)
        if mode == .unicode {
            precondition(ua.allSatisfy { $0 < 0x80 } && ub.allSatisfy { $0 < 0x80 })
            return compareASCIIPriority(ua, ub)
        }
        return compareBytes(ua, ub)
    }

    static func typeRank(_ v: JSONValue, _ mode: Mode) -> Int {
        switch (v, mode) {
        case (.null, .raw): return 2
        case (.bool(false), .raw): return 1
        case (.bool(true), .raw): return 3
        case (.number, .raw): return 0
        case (.string, .raw): return 6
        case (.array, .raw): return 5
        case (.object, .raw): return 4
        case (.null, _): return 4
        case (.bool(false), _): return 5
        case (.bool(true), _): return 6
        case (.number, _): return 7
        case (.string, _): return 8
        case (.array, _): return 9
        case (.object, _): return 10
        }
    }

    /// Element-wise comparison of two sequences, where an end marker sorts
    /// below a comma and a comma below any value. With limit > 0 (top level
    /// only), the limit-th separating comma ends the comparison as equal.
    static func compareSequences(_ na: Int, _ nb: Int, limit: Int, _ element: (Int) -> Int) -> Int {
        if na == 0 || nb == 0 { return cmp(na, nb) }
        var i = 0
        while true {
            let r = element(i)
            if r != 0 { return r }
            i += 1
            let aMore = i < na, bMore = i < nb
            if (aMore || bMore) && limit > 0 && i >= limit { return 0 }
            if !(aMore && bMore) { return cmp(aMore ? 1 : 0, bMore ? 1 : 0) }
        }
    }

    static func compare(_ a: JSONValue, _ b: JSONValue, _ mode: Mode, arrayLimit: Int = 0) -> Int {
        let ra = typeRank(a, mode), rb = typeRank(b, mode)
        if ra != rb { return cmp(ra, rb) }
        switch (a, b) {
        case (.number(let x), .number(let y)):
            return cmp(Double(x)!, Double(y)!)
        case (.string(let x), .string(let y)):
            return compareStrings(x, y, mode)
        case (.array(let x), .array(let y)):
            return compareSequences(x.count, y.count, limit: arrayLimit) { compare(x[$0], y[$0], mode) }
        case (.object(let x), .object(let y)):
            return compareSequences(x.count, y.count, limit: arrayLimit) {
                let k = compareStrings(x[$0].key, y[$0].key, mode)
                return k != 0 ? k : compare(x[$0].value, y[$0].value, mode)
            }
        default:
            return 0   // null/true/false of the same rank
        }
    }
}

// MARK: - Random values

struct ValueGenerator {
    var rng: SplitMix64
    var allowNonASCII: Bool

    /// Small pools so that ties, shared prefixes and case-only differences are common.
    static let numbers = ["0", "-0", "1", "1.0", "10e-1", "0.1e1", "01", "2", "-1", "0.5", "5e-1",
                          "-2.5", "100", "1e2", "1E+2", "3.14159", "-1e-3", "12345678901234567890",
                          "123456789012345", "-999999999999999", "1e308", "-1e308", "4.9e-324"]
    static let asciiChars: [String] = ["a", "A", "b", "B", "z", "Z", "_", " ", "~", "1", "9", "/",
                                       "\"", "\\", "\n", "\t", "\u{01}", "\u{7F}", "`", "$", "[", "{"]
    static let nonASCIIChars: [String] = ["é", "É", "ø", "あ", "😀", "\u{0300}"]

    init(seed: UInt64, allowNonASCII: Bool) {
        rng = SplitMix64(seed: seed)
        self.allowNonASCII = allowNonASCII
    }

    mutating func int(_ n: Int) -> Int { Int(rng.next() % UInt64(n)) }

    mutating func string() -> String {
        var s = ""
        for _ in 0..<int(5) {
            if allowNonASCII && int(5) == 0 {
                s += Self.nonASCIIChars[int(Self.nonASCIIChars.count)]
            } else {
                s += Self.asciiChars[int(Self.asciiChars.count)]
            }
        }
        return s
    }

    mutating func value(depth: Int = 0) -> JSONValue {
        let kinds = depth >= 3 ? 5 : 7
        switch int(kinds) {
        case 0: return [.null, .bool(false), .bool(true)][int(3)]
        case 1, 2: return .number(Self.numbers[int(Self.numbers.count)])
        case 3, 4: return .string(string())
        case 5: return .array((0..<int(4)).map { _ in value(depth: depth + 1) })
        default:
            return .object((0..<int(4)).map { _ in
                JSONValue.Member(key: [String](["a", "b", "B", "", "a/"])[int(5)], value: value(depth: depth + 1))
            })
        }
    }
}

// MARK: - Property tests

final class PropertyTests: XCTestCase {

    private struct Sample {
        var value: JSONValue
        var text: [UInt8]
    }

    private func samples(_ mode: Mode, count: Int, seed: UInt64) -> [Sample] {
        var gen = ValueGenerator(seed: seed, allowNonASCII: mode != .unicode)
        var escRNG = SplitMix64(seed: seed ^ 0xABCDEF)
        return (0..<count).map { n in
            let v = gen.value()
            // Half the texts use varied escaping; the collator must not care.
            let text = n % 2 == 0 ? CompactJSON.compact(v) : CompactJSON.randomlyEscaped(v, rng: &escRNG)
            return Sample(value: v, text: text)
        }
    }

    /// C collator == reference model, and antisymmetry, on random pairs
    /// (with and without arrayLimit).
    func testAgreesWithReferenceAndIsAntisymmetric() {
        for (k, mode) in Mode.allCases.enumerated() {
            let s = samples(mode, count: 3000, seed: 1000 + UInt64(k))
            var rng = SplitMix64(seed: 77 + UInt64(k))
            var failures = 0
            for n in 0..<40_000 {
                let a = s[Int(rng.next() % UInt64(s.count))]
                // Neighbours in generation order are random; pair some with a
                // near-copy to get many equal / almost-equal comparisons.
                let b = n % 4 == 0 ? a : s[Int(rng.next() % UInt64(s.count))]
                let limit = [0, 0, 0, 1, 2, 3][Int(rng.next() % 6)]
                let got = collate(mode, a.text, b.text, arrayLimit: limit)
                let expected = Reference.compare(a.value, b.value, mode, arrayLimit: limit)
                let reversed = collate(mode, b.text, a.text, arrayLimit: limit)
                if got != expected || reversed != -got {
                    failures += 1
                    if failures <= 10 {
                        XCTFail("\(mode) limit \(limit): \(show(a.text)) vs \(show(b.text)): got \(got), reversed \(reversed), reference \(expected)")
                    }
                }
            }
            XCTAssertEqual(failures, 0, "\(mode)")
        }
    }

    /// Two different escapings of the same value compare equal; a value equals itself.
    func testEscapingDoesNotChangeOrder() {
        for mode in Mode.allCases {
            var gen = ValueGenerator(seed: 4242, allowNonASCII: true)
            var rng = SplitMix64(seed: 99)
            for _ in 0..<2000 {
                let v = gen.value()
                let plain = CompactJSON.compact(v)
                let escaped = CompactJSON.randomlyEscaped(v, rng: &rng)
                XCTAssertEqual(collate(mode, plain, escaped), 0, "\(mode): \(show(plain)) vs \(show(escaped))")
                XCTAssertEqual(collate(mode, escaped, escaped), 0)
            }
        }
    }

    /// Transitivity on random triples (weak order: <=, and == is an equivalence).
    func testTransitivity() {
        for (k, mode) in Mode.allCases.enumerated() {
            let s = samples(mode, count: 600, seed: 5000 + UInt64(k)).map(\.text)
            var rng = SplitMix64(seed: 31 + UInt64(k))
            var failures = 0
            for _ in 0..<30_000 {
                let a = s[Int(rng.next() % 600)], b = s[Int(rng.next() % 600)], c = s[Int(rng.next() % 600)]
                let ab = collate(mode, a, b), bc = collate(mode, b, c), ac = collate(mode, a, c)
                let ok = !(ab <= 0 && bc <= 0 && ac > 0) && !(ab >= 0 && bc >= 0 && ac < 0)
                    && !(ab == 0 && bc == 0 && ac != 0)
                if !ok {
                    failures += 1
                    if failures <= 5 { XCTFail("\(mode): \(show(a)) \(show(b)) \(show(c)): \(ab) \(bc) \(ac)") }
                }
            }
            XCTAssertEqual(failures, 0, "\(mode)")
        }
    }

    /// Sorting with the collator yields a sequence that the reference agrees is
    /// non-decreasing (a cheap global consistency check).
    func testSortedOrderIsConsistentWithReference() {
        for (k, mode) in Mode.allCases.enumerated() {
            let s = samples(mode, count: 2000, seed: 9000 + UInt64(k))
            let sorted = s.sorted { collate(mode, $0.text, $1.text) < 0 }
            for i in 1..<sorted.count {
                XCTAssertLessThanOrEqual(Reference.compare(sorted[i - 1].value, sorted[i].value, mode), 0,
                                         "\(mode): \(show(sorted[i - 1].text)) then \(show(sorted[i].text))")
            }
        }
    }
}
