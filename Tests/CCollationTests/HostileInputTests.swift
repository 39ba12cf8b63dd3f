import CCollation
import XCTest
import CBLTestSupport

/// Malformed and adversarial inputs: never crash, never read past the given
/// length (inputs sit right before a PROT_NONE page), results in {-1, 0, 1}
/// and antisymmetric.
final class HostileInputTests: XCTestCase {
    private let bufA = GuardedBuffer(capacity: 1 << 21)
    private let bufB = GuardedBuffer(capacity: 1 << 21)

    /// Compares guarded copies both ways for every mode and a few limits.
    private func check(_ a: [UInt8], _ b: [UInt8], limits: [Int] = [0, 1, 2],
                       file: StaticString = #filePath, line: UInt = #line) {
        bufA.with(a) { pa, na in
            bufB.with(b) { pb, nb in
                for mode in Mode.allCases {
                    for limit in limits {
                        let ab = Int(cbl_json_collate(mode.c, pa, na, pb, nb, Int32(limit)))
                        let ba = Int(cbl_json_collate(mode.c, pb, nb, pa, na, Int32(limit)))
                        if !(-1...1).contains(ab) || ba != -ab {
                            XCTFail("\(mode) limit \(limit): \(a.prefix(60)) vs \(b.prefix(60)) -> \(ab), \(ba)",
                                    file: file, line: line)
                        }
                    }
                }
                let r = Int(cbl_revid_collate(pa, na, pb, nb))
                let rr = Int(cbl_revid_collate(pb, nb, pa, na))
                if !(-1...1).contains(r) || rr != -r {
                    XCTFail("revid: \(a.prefix(60)) vs \(b.prefix(60)) -> \(r), \(rr)", file: file, line: line)
                }
                let u = Int(cbl_collate_unicode_strings(pa.assumingMemoryBound(to: CChar.self), na,
                                                        pb.assumingMemoryBound(to: CChar.self), nb))
                if !(-1...1).contains(u) { XCTFail("unicode strings -> \(u)", file: file, line: line) }
            }
        }
    }

    private static let valid: [String] = [
        "null", "true", "false", "0", "-12.5e3", "\"\"", "\"abc\"", "\"a\\\"b\"", "\"\\u00e9\\ud83d\\ude00\"",
        "[]", "[1,\"two\",[3,{\"four\":4}],null]", "{\"a\":[true,false],\"b\":{\"c\":\"d\\/e\"}}",
        "\"é😀\"", "[\"\\\\\",\"\\n\\t\\b\\r\\f\"]", "00000000000000000000000000000000000000000000000000000000000000000000001",
    ]

    /// Every prefix of every valid text against every prefix of the others.
    func testTruncatedTexts() {
        let texts = Self.valid.map { Array($0.utf8) }
        var prefixes: [[UInt8]] = []
        for t in texts { for n in 0...t.count { prefixes.append(Array(t.prefix(n))) } }
        for a in prefixes { for b in prefixes { check(a, b, limits: [0, 1]) } }
    }

    func testEmptyInputs() {
        check([], [])
        check([], Array("null".utf8))
        check(Array("[".utf8), [])
        for mode in Mode.allCases {
            XCTAssertEqual(cbl_json_collate(mode.c, nil, 0, nil, 0, 0), 0)
            XCTAssertEqual(collate(mode, [], []), 0)
            // End of input ranks like an illegal character (spec 6.1): above everything.
            XCTAssertEqual(collate(mode, "", "null"), 1)
        }
        XCTAssertEqual(cbl_revid_collate(nil, 0, nil, 0), 0)
        XCTAssertEqual(cbl_collate_unicode_strings(nil, 0, nil, 0), 0)
    }

    func testUnmatchedBracketsAndGarbage() {
        let cases = ["]", "}", "]]]]", "[[[[", "{{{", "[}", "{]", "[1,2", "[1,2]]", "{\"a\"", "{\"a\":",
                     "{:}", "[,]", ",", ":", "\"", "\"\\", "\"\\u", "\"\\u12", "\"\\ud800", "\"\\ud800\\u",
                     "\"\\udc00\\ud800\"", "-", "--", "-.", "1e", "1e+", ".5", "0x10", "-nan", "-inf", "1.5.6",
                     "nul", "tru", "fals", "n", " 1", "1 ", "[ 1]", "\u{00}", "\"\u{00}\"", "[\"a\"\u{00}]",
                     "\"\\\u{FF}\"", "\"\u{FF}\u{FE}\"", "\"\\é\""]
        let bytes = cases.map { Array($0.utf8) } + [[0xFF], [0xC3], [0x22, 0xC3], [0x22, 0xF0, 0x9F]]
        for a in bytes { for b in bytes { check(a, b) } }
    }

    func testRandomBytes() {
        var rng = SplitMix64(seed: 0xC0FFEE)
        let alphabet = Array("[]{},:\"\\-0123456789.eEnulltruefalse/u ".utf8) + [0x00, 0x80, 0xC3, 0xA9, 0xFF]
        var inputs: [[UInt8]] = []
        for _ in 0..<1500 {
            let len = Int(rng.next() % 24)
            inputs.append((0..<len).map { _ in
                rng.next() % 8 == 0 ? UInt8(truncatingIfNeeded: rng.next()) : alphabet[Int(rng.next() % UInt64(alphabet.count))]
            })
        }
        for i in 0..<inputs.count {
            check(inputs[i], inputs[(i * 7 + 3) % inputs.count])
            check(inputs[i], inputs[i])
        }
    }

    func testDeepNestingAndHugeTokens() {
        let deep = [UInt8](repeating: UInt8(ascii: "["), count: 1_000_000)
        check(deep, deep, limits: [0])
        check(deep + [UInt8(ascii: "1")], deep + [UInt8(ascii: "2")], limits: [0])
        XCTAssertEqual(collate(.unicode, deep + Array("1".utf8), deep + Array("2".utf8)), -1)

        // Long numbers go through the heap copy; value, not text, decides.
        let zeros = [UInt8](repeating: UInt8(ascii: "0"), count: 200_000)
        check(zeros + Array("7".utf8), Array("7".utf8), limits: [0])
        XCTAssertEqual(collate(.unicode, zeros + Array("7".utf8), Array("7".utf8)), 0)
        XCTAssertEqual(collate(.raw, Array("[".utf8) + zeros + Array("8]".utf8), Array("[7]".utf8)), 1)

        // Long strings with escapes go through the heap decode buffer.
        let body = [UInt8](repeating: UInt8(ascii: "a"), count: 100_000)
        let plain = [0x22] + body + Array("x\"".utf8)
        let escaped = [0x22] + body + Array("\\u0078\"".utf8)
        let other = [0x22] + body + Array("\\u0079\"".utf8)
        check(plain, escaped, limits: [0])
        for mode in Mode.allCases {
            XCTAssertEqual(collate(mode, plain, escaped), 0, "\(mode)")
            XCTAssertEqual(collate(mode, plain, other), -1, "\(mode)")
            XCTAssertEqual(collate(mode, plain + Array("x".utf8), plain), 0, "trailing garbage after a complete value")
        }
        // Unterminated long string with a trailing backslash.
        check([0x22] + body + [0x5C], [0x22] + body, limits: [0])
    }

    func testSQLiteCallbacksMatchAndTolerateBadLengths() {
        let a = Array("[1,\"a\"]".utf8), b = Array("[1,\"B\"]".utf8)
        typealias Callback = @convention(c) (UnsafeMutableRawPointer?, Int32, UnsafeRawPointer?, Int32, UnsafeRawPointer?) -> Int32
        let callbacks: [(Mode, Callback)] = [(.unicode, cbl_sqlite_collate_json), (.raw, cbl_sqlite_collate_json_raw),
                                              (.ascii, cbl_sqlite_collate_json_ascii)]
        for (mode, cb) in callbacks {
            a.withUnsafeBytes { pa in
                b.withUnsafeBytes { pb in
                    let r = cb(nil, Int32(pa.count), pa.baseAddress, Int32(pb.count), pb.baseAddress)
                    XCTAssertEqual(Int(r), collate(mode, a, b), "\(mode)")
                    XCTAssertEqual(cb(nil, -5, pa.baseAddress, -1, pb.baseAddress), 0, "negative lengths = empty")
                    XCTAssertEqual(cb(nil, 0, nil, 0, nil), 0)
                }
            }
        }
        XCTAssertEqual(collate(.unicode, a, b), -1)   // "a" < "B" (case-insensitive first)
        XCTAssertEqual(collate(.ascii, a, b), 1)      // 'a' (0x61) > 'B' (0x42)
        XCTAssertEqual(cbl_sqlite_collate_revid(nil, -1, nil, -1, nil), 0)
    }
}
