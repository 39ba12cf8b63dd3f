import CCollation
import Foundation
import XCTest
import CBLTestSupport

/// String step of the collations: priority table (6.2), escapes (6.1),
/// byte order (6.3), ICU fallback and its thread safety, numbers, REVID extras.
final class StringCollationTests: XCTestCase {

    /// All 128 x 128 single-character pairs follow the spec 6.2 table.
    func testPriorityTableExhaustively() {
        for c1 in 0..<128 {
            for c2 in 0..<128 {
                let a = [UInt8(c1)], b = [UInt8(c2)]
                let expected = Reference.compareASCIIPriority(a, b)
                XCTAssertEqual(collateUnicodeStrings(a, b), expected, "\(c1) vs \(c2)")
            }
        }
        XCTAssertEqual(Reference.prioritySequence.count, 98)
    }

    func testFastPathExamplesFromSpec() {
        let ordered = ["a", "A", "aa", "b", "B", "ba"]
        for i in ordered.indices {
            for j in ordered.indices {
                XCTAssertEqual(collateUnicodeStrings(Array(ordered[i].utf8), Array(ordered[j].utf8)),
                               Reference.cmp(i, j), "\(ordered[i]) vs \(ordered[j])")
            }
        }
        let u = { (a: String, b: String) in collateUnicodeStrings(Array(a.utf8), Array(b.utf8)) }
        XCTAssertEqual(u("~", "A"), -1)
        XCTAssertEqual(u("_", "A"), -1)
        XCTAssertEqual(u(" ", "_"), -1)
        XCTAssertEqual(u("_", "~"), -1)
        XCTAssertEqual(u("~", "a"), -1)
        XCTAssertEqual(u("hello World", "hellO wOrLd"), -1)   // first case difference: o vs O
        XCTAssertEqual(u("Ab", "aC"), -1)                     // case-insensitive b < c decides first
        XCTAssertEqual(u("\u{01}", "\u{02}"), 0)              // both unlisted: priority 0
        XCTAssertEqual(u("\u{01}a", "\u{02}A"), -1)           // later case difference still breaks the tie
    }

    /// Random ASCII strings: C fast path == Swift model.
    func testFastPathAgainstModel() {
        var rng = SplitMix64(seed: 12345)
        let alphabet = Array("aAbBzZ09 _~`$\\\"/\t\n\u{01}\u{7F}".utf8)
        for _ in 0..<20_000 {
            let a = (0..<Int(rng.next() % 6)).map { _ in alphabet[Int(rng.next() % UInt64(alphabet.count))] }
            var b = a
            if !b.isEmpty && rng.next() % 2 == 0 {
                b[Int(rng.next() % UInt64(b.count))] = alphabet[Int(rng.next() % UInt64(alphabet.count))]
            } else {
                b = (0..<Int(rng.next() % 6)).map { _ in alphabet[Int(rng.next() % UInt64(alphabet.count))] }
            }
            XCTAssertEqual(collateUnicodeStrings(a, b), Reference.compareASCIIPriority(a, b), "\(a) vs \(b)")
        }
    }

    /// Escapes are decoded before comparing (spec 6.1), \u correctly to UTF-8.
    func testEscapeDecoding() {
        let equalPairs: [(String, String)] = [
            (#""12\/34""#, #""12/34""#),
            (#""\u00e9""#, "\"é\""),
            (#""\u00E9t\u00e9""#, "\"été\""),
            (#""\ud83d\ude00""#, "\"😀\""),
            (#""\uD83D\uDE00x""#, "\"😀x\""),
            (#""\ud800""#, "\"\u{FFFD}\""),          // lone high surrogate
            (#""\udc00a""#, "\"\u{FFFD}a\""),        // lone low surrogate
            (#""\ud800\u0041""#, "\"\u{FFFD}A\""),   // high surrogate + non-surrogate
            (#""\f""#, #""f""#),                      // spec quirk: \f is the letter f
            (#""\a\q""#, #""aq""#),                   // other escapes stand for themselves
            (#""\"\\""#, #""\u0022\u005c""#),
            (#""\u""#, #""u""#),                      // malformed \u: 'u' stands for itself
            (#""\u12""#, #""u12""#),
            (#""\uZZZZ""#, #""uZZZZ""#),
            (#""\u0041""#, #""A""#),
            (#""a\tb""#, "\"a\u{09}b\""),
            (#""\b\n\r""#, "\"\u{08}\u{0A}\u{0D}\""),
        ]
        for mode in Mode.allCases {
            for (a, b) in equalPairs {
                XCTAssertEqual(collate(mode, a, b), 0, "\(mode): \(a) vs \(b)")
                XCTAssertEqual(collate(mode, "[\(a),1]", "[\(b),1]"), 0, "\(mode): in array")
            }
            // Android decoded \u001a as ':' (spec 6.6); we decode correctly.
            XCTAssertNotEqual(collate(mode, #""\u001a""#, #"":""#), 0, "\(mode)")
        }
        XCTAssertEqual(collate(.ascii, #""\u001a""#, #"":""#), -1)
        XCTAssertEqual(collate(.unicode, #""\u0001""#, #"" ""#), -1)
    }

    func testByteOrderModes() {
        for mode in [Mode.ascii, .raw] {
            XCTAssertEqual(collate(mode, #""B""#, #""a""#), -1)
            XCTAssertEqual(collate(mode, #""a""#, #""aa""#), -1)
            XCTAssertEqual(collate(mode, #""z""#, "\"é\""), -1)            // unsigned bytes: 0xC3 > 'z'
            XCTAssertEqual(collate(mode, #""\u00e9""#, #""z""#), 1)
            XCTAssertEqual(collate(mode, "\"\u{FFFF}\"", "\"😀\""), -1)   // EF BF BF < F0 9F
        }
    }

    /// Non-ASCII strings are compared by ICU (root/en_US, tertiary).
    func testICUFallback() {
        let u = { (a: String, b: String) in collate(.unicode, "\"\(a)\"", "\"\(b)\"") }
        XCTAssertEqual(u("fréd", "fréd"), 0)
        XCTAssertEqual(u("ømø", "omo"), 1)
        XCTAssertEqual(u("あ", "い"), -1)
        XCTAssertEqual(u("Hello world", "Hello wörld!"), -1)
        XCTAssertEqual(u("é", "f"), -1)            // accent is secondary: e-acute < f
        XCTAssertEqual(u("resume", "résumé"), -1)
        XCTAssertEqual(u("résumé", "Resume"), 1)   // secondary (accent) outweighs tertiary (case)
        XCTAssertEqual(u("a", "ä"), -1)
        XCTAssertEqual(u("ä", "B"), -1)
        XCTAssertEqual(u("e\u{301}", "é"), 0)       // canonically equivalent
        XCTAssertEqual(u("😀", "😀"), 0)
        // Invalid UTF-8 must not break ICU.
        XCTAssertTrue((-1...1).contains(collate(.unicode, [0x22, 0xFF, 0xC3, 0x22], [0x22, 0xC3, 0xA9, 0x22])))
    }

    /// The shared collator is used from many threads at once (ICU const API).
    func testConcurrentICUComparisons() {
        let words = ["é", "e", "É", "f", "ømø", "omo", "あ", "い", "Straße", "strasse", "résumé", "resume",
                     "😀", "中文", "Ωmega", "omega", "naïve", "naive", "a", "B"].map { Array("\"\($0)\"".utf8) }
        var expected: [Int] = []
        for a in words { for b in words { expected.append(collate(.unicode, a, b)) } }
        final class Counter: @unchecked Sendable {
            private let lock = NSLock()
            private var n = 0
            func add(_ k: Int) { lock.lock(); n += k; lock.unlock() }
            var value: Int { lock.lock(); defer { lock.unlock() }; return n }
        }
        let mismatches = Counter()
        let expectedCopy = expected
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            var bad = 0
            for _ in 0..<50 {
                var k = 0
                for a in words {
                    for b in words {
                        if collate(.unicode, a, b) != expectedCopy[k] { bad += 1 }
                        k += 1
                    }
                }
            }
            mismatches.add(bad)
        }
        XCTAssertEqual(mismatches.value, 0)
    }

    func testNumbers() {
        for mode in Mode.allCases {
            XCTAssertEqual(collate(mode, "123", "0123.0"), 0)
            XCTAssertEqual(collate(mode, "1e2", "100"), 0)
            XCTAssertEqual(collate(mode, "-0", "0"), 0)
            XCTAssertEqual(collate(mode, "0.1e1", "1"), 0)
            XCTAssertEqual(collate(mode, "-5e-324", "0"), -1)
            XCTAssertEqual(collate(mode, "1e400", "1e401"), 0)               // both +inf
            XCTAssertEqual(collate(mode, "-1e400", "-1.7976931348623157e308"), -1)
            XCTAssertEqual(collate(mode, "9007199254740993", "9007199254740992"), 0)  // same double
            XCTAssertEqual(collate(mode, "123456789012345", "123456789012346"), -1)  // integer fast path
            XCTAssertEqual(collate(mode, "-123456789012345", "-123456789012346"), 1)
            XCTAssertEqual(collate(mode, "[1.5,2]", "[1.50,2]"), 0)
            XCTAssertEqual(collate(mode, "[1.5,2]", "[1.5,3]"), -1)
            // strtod stops at the longest valid prefix; the rest is the next token.
            XCTAssertEqual(collate(mode, "[1.5.3]", "[1.5]"), 1)             // '.' is illegal, above ']'
            XCTAssertEqual(collate(mode, "[0x10]", "[0]"), 1)                // no hex: 0 then illegal 'x'
            XCTAssertEqual(collate(mode, "[-]", "[0]"), 0)                   // "-" parses as 0
        }
    }

    /// The short-decimal fast path must give exactly strtod's double: compare
    /// random decimals against Swift's Double(String), and against the same
    /// value padded past 15 digits (which forces the strtod path).
    func testDecimalFastPathMatchesStrtod() {
        XCTAssertEqual(collate(.unicode, "0.1", "0.10000000000000001"), 0)   // same double
        XCTAssertEqual(collate(.unicode, "0.3", "0.30000000000000004"), -1)  // next double up
        XCTAssertEqual(collate(.unicode, "1.", "1"), 0)
        XCTAssertEqual(collate(.unicode, "-.5", "-0.5"), 0)                  // strtod accepts "-.5"
        var rng = SplitMix64(seed: 2024)
        func randomDecimal() -> String {
            let intDigits = Int(rng.next() % 8), fracDigits = Int(rng.next() % 9)
            var s = rng.next() % 3 == 0 ? "-" : ""
            s += intDigits == 0 ? "0" : String((0..<intDigits).map { _ in Character(String(rng.next() % 10)) })
            if fracDigits > 0 { s += "." + String((0..<fracDigits).map { _ in Character(String(rng.next() % 10)) }) }
            return s
        }
        for _ in 0..<5000 {
            let a = randomDecimal()
            // Neighbour: change the last digit by one, so values are very close.
            var b = a
            if let last = b.last, let d = last.wholeNumberValue {
                b.removeLast()
                b.append(Character(String((d + 1) % 10)))
            }
            let padded = a.contains(".") ? a + "0000000000000000" : a + ".0000000000000000"
            XCTAssertEqual(collate(.unicode, a, padded), 0, "\(a) vs \(padded)")
            XCTAssertEqual(collate(.unicode, a, b), Reference.cmp(Double(a)!, Double(b)!), "\(a) vs \(b)")
            XCTAssertEqual(collate(.raw, "[\(b)]", "[\(a)]"), Reference.cmp(Double(b)!, Double(a)!), "\(b) vs \(a)")
        }
    }

    func testArrayLimit() {
        XCTAssertEqual(collate(.unicode, #"[5,"wow"]"#, #"[5,"MOM"]"#, arrayLimit: 1), 0)
        XCTAssertEqual(collate(.unicode, #"[5,"wow"]"#, #"[5,"MOM"]"#, arrayLimit: 2), 1)
        XCTAssertEqual(collate(.unicode, #"[5,[1,2],3]"#, #"[5,[1,3],3]"#, arrayLimit: 2), -1)  // nested commas don't count
        XCTAssertEqual(collate(.unicode, #"[5,[1,2],3]"#, #"[5,[1,2],4]"#, arrayLimit: 2), 0)
        XCTAssertEqual(collate(.unicode, #"[5]"#, #"[5,1]"#, arrayLimit: 1), 0)
        XCTAssertEqual(collate(.unicode, #"[5]"#, #"[5,1]"#, arrayLimit: 2), -1)
        XCTAssertEqual(collate(.unicode, #"[]"#, #"[1]"#, arrayLimit: 1), -1)
        XCTAssertEqual(collate(.unicode, #"1"#, #"2"#, arrayLimit: 1), -1)
        XCTAssertEqual(collate(.unicode, #"[1,2]"#, #"[1,3]"#, arrayLimit: -1), -1)  // negative = unlimited
    }

    func testRevIDExtras() {
        XCTAssertEqual(collateRevID("10-a", "9-z"), 1)
        XCTAssertEqual(collateRevID("1-b", "10-a"), -1)
        XCTAssertEqual(collateRevID("01-b", "1-a"), 1)                 // same generation, suffix decides
        XCTAssertEqual(collateRevID("99999999-a", "100000000-a"), 1)   // '-' at index 9: bytewise, '9' > '1'
        XCTAssertEqual(collateRevID("12345678-a", "9-a"), 1)           // '-' at index 8: numeric
        XCTAssertEqual(collateRevID("0-a", "1-a"), -1)                 // generation 0: bytewise
        XCTAssertEqual(collateRevID("2x-a", "10-a"), 1)                // not a number: bytewise
        XCTAssertEqual(collateRevID("5-", "5-"), 0)
        XCTAssertEqual(collateRevID("3-abc", "3-abd"), -1)
    }
}
