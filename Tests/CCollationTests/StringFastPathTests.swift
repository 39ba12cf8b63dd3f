import CCollation
import CCollationBaseline
import Foundation
import XCTest
import CBLTestSupport

/// The Unicode string step's shortcuts against its definition (spec 6.2: decode
/// the escapes; both ASCII -> priority table, else the whole strings to ICU).
///
/// The JSON scanner decides most pairs at the first difference by the
/// decisive-character rule (collate_strings.c) without looking at the rest of
/// the strings, skips identical bytes eight at a time, and hands escape-free
/// strings to ICU as they are. The expected results here are computed the slow
/// way: decoded bytes into `Reference.compareASCIIPriority` or straight into
/// ICU (`cbl_icu_strcoll_baseline`, no fast path of ours).
final class StringFastPathTests: XCTestCase {

    /// Decoded text pieces: decisive letters/digits/space, the ASCII characters
    /// ICU 72 root leaves out of the rule (l, L, 4: contractions), punctuation,
    /// controls, and non-ASCII text including combining marks, the contraction
    /// partners U+00B7 / U+0387 / U+FDD1, Thai prevowels, kana with a
    /// context-dependent length mark, and invalid UTF-8.
    static let pieces: [[UInt8]] = {
        let strings = ["a", "A", "b", "B", "e", "E", "z", "Z", "o", "O", "l", "L", "0", "1", "4", "9", " ", "  ",
                       "-", "'", ".", "_", "~", ",", "$", "`", "^", "&", "/", "\"", "\\", "\n", "\t", "\u{8}", "\u{1}", "\u{7F}",
                       "é", "e\u{301}", "\u{301}", "l\u{301}", "·", "\u{387}", "l·", "L·", "ß", "ł", "Ł", "ø", "Ø", "Å", "A\u{30A}",
                       "東", "京", "ก", "เ", "เก", "ー", "ア", "カー", "ᄀ", "ᅡ", "가", "Ω", "Ж", "ж", "ǅ", "ﬀ", "\u{200B}", "\u{AD}",
                       "😀", "Alice", "alice", "ALICE", "Smith", "smith", "Müller", "Muller", "Zoë", "Zoe", "Live", "live"]
        var bytes = strings.map { Array($0.utf8) }
        let fdd1: [UInt8] = [0xEF, 0xB7, 0x91]   // U+FDD1 (noncharacter; contracts with 4 and L in root)
        bytes += [fdd1, fdd1 + [0x34], fdd1 + [0x4C], fdd1 + [0x31], [0xEF, 0xBF, 0xBE], [0xEF, 0xBF, 0xBF]]
        bytes += [[0xFF], [0xC3], [0xE6, 0x9D], [0x80], [0xC3, 0x41]]   // invalid UTF-8
        return bytes
    }()

    private static func randomText(_ rng: inout SplitMix64, maxPieces: Int = 8) -> [UInt8] {
        var out: [UInt8] = []
        for _ in 0..<Int(rng.next() % UInt64(maxPieces + 1)) { out += pieces[Int(rng.next() % UInt64(pieces.count))] }
        return out
    }

    /// A near-copy, so that most pairs share a prefix and differ late or only in case.
    private static func mutate(_ s: [UInt8], _ rng: inout SplitMix64) -> [UInt8] {
        var t = s
        for _ in 0..<(1 + Int(rng.next() % 3)) {
            switch rng.next() % 6 {
            case 0, 1:   // flip the case of one byte (if it is a letter)
                if !t.isEmpty {
                    let k = Int(rng.next() % UInt64(t.count))
                    if (0x41...0x5A).contains(t[k]) { t[k] += 32 } else if (0x61...0x7A).contains(t[k]) { t[k] -= 32 }
                }
            case 2: t.insert(contentsOf: pieces[Int(rng.next() % UInt64(pieces.count))], at: Int(rng.next() % UInt64(t.count + 1)))
            case 3: if !t.isEmpty { t.removeSubrange(Int(rng.next() % UInt64(t.count))...) }
            case 4: t += pieces[Int(rng.next() % UInt64(pieces.count))]
            default: if !t.isEmpty { t[Int(rng.next() % UInt64(t.count))] = UInt8(truncatingIfNeeded: rng.next() % 128) }
            }
        }
        return t
    }

    /// JSON string literal whose decoded text is exactly `text`: `"` and `\` escaped, other ASCII
    /// bytes escaped at random (\uXXXX in either case, \/, \n, \t, \r, \b), everything else raw.
    private static func literal(_ text: [UInt8], _ rng: inout SplitMix64) -> [UInt8] {
        var out: [UInt8] = [0x22]
        for ch in text {
            let escape = rng.next() % 8 == 0
            switch ch {
            case 0x22: out += Array(#"\""#.utf8)
            case 0x5C: out += Array(#"\\"#.utf8)
            case 0x2F where escape: out += Array(#"\/"#.utf8)
            case 0x0A where escape: out += Array(#"\n"#.utf8)
            case 0x09 where escape: out += Array(#"\t"#.utf8)
            case 0x0D where escape: out += Array(#"\r"#.utf8)
            case 0x08 where escape: out += Array(#"\b"#.utf8)
            case 0..<0x80 where escape:
                let hex = String(format: rng.next() % 2 == 0 ? "\\u%04x" : "\\u%04X", Int(ch))
                out += Array(hex.utf8)
            default: out.append(ch)
            }
        }
        out.append(0x22)
        return out
    }

    /// Spec 6.2 on decoded text, computed without any of the shortcuts.
    static func expected(_ a: [UInt8], _ b: [UInt8]) -> Int {
        if a.allSatisfy({ $0 < 0x80 }) && b.allSatisfy({ $0 < 0x80 }) {
            return Reference.compareASCIIPriority(a, b)
        }
        let ca = a.map { CChar(bitPattern: $0) } + [0], cb = b.map { CChar(bitPattern: $0) } + [0]   // never empty
        return Int(cbl_icu_strcoll_baseline(ca, a.count, cb, b.count))
    }

    /// Random strings (and two-string arrays) with shared prefixes, case-only differences,
    /// escapes and non-ASCII text: the JSON collation == the definition, and antisymmetric.
    func testJSONStringsMatchDefinition() {
        var rng = SplitMix64(seed: 0x5EED_C0FF)
        var failures = 0
        for n in 0..<30_000 {
            let a = Self.randomText(&rng)
            let b = n % 5 == 0 ? Self.randomText(&rng) : Self.mutate(a, &rng)
            let a2 = Self.randomText(&rng, maxPieces: 3)
            let b2 = n % 2 == 0 ? a2 : Self.mutate(a2, &rng)
            let first = Self.expected(a, b)
            let cases: [([UInt8], [UInt8], Int)] = [
                (Self.literal(a, &rng), Self.literal(b, &rng), first),
                ([0x5B] + Self.literal(a, &rng) + [0x2C] + Self.literal(a2, &rng) + [0x5D],
                 [0x5B] + Self.literal(b, &rng) + [0x2C] + Self.literal(b2, &rng) + [0x5D],
                 first != 0 ? first : Self.expected(a2, b2)),
            ]
            for (ja, jb, want) in cases {
                let got = collate(.unicode, ja, jb), back = collate(.unicode, jb, ja)
                if got != want || back != -want {
                    failures += 1
                    if failures <= 10 { XCTFail("\(show(ja)) vs \(show(jb)): got \(got), reversed \(back), expected \(want)") }
                }
            }
        }
        XCTAssertEqual(failures, 0)
    }

    /// Where the decisive-character rule must not apply: ICU root contracts l/L with a
    /// following middle dot and U+FDD1 with a following 4 or L, so a difference at those
    /// letters cannot be decided by the priority table alone.
    func testContractionsAndNonASCIIAfterTheDifference() {
        let fdd1: [UInt8] = [0xEF, 0xB7, 0x91]   // U+FDD1 (a noncharacter: Swift rejects "\u{FDD1}")
        let pairs: [([UInt8], [UInt8])] = [
            (fdd1 + Array("4".utf8), fdd1 + Array("1".utf8)),
            (fdd1 + Array("4".utf8), fdd1 + Array("5".utf8)),
            (fdd1 + Array("L".utf8), fdd1 + Array("M".utf8)),
            (fdd1 + Array("L".utf8), fdd1 + Array("K".utf8)),
            (fdd1 + Array("4x".utf8), fdd1 + Array("3y".utf8)),
            (Array("l·a".utf8), Array("m".utf8)), (Array("L·a".utf8), Array("k".utf8)),
            (Array("al·".utf8), Array("am".utf8)), (Array("al\u{387}".utf8), Array("ak".utf8)),
            (Array("Zoë river".utf8), Array("Alice".utf8)), (Array("Zoë".utf8), Array("Zoe".utf8)),
            (Array("Résumé".utf8), Array("résumé".utf8)), (Array("Résumé".utf8), Array("resume".utf8)),
            (Array("Mötley Crüe".utf8), Array("Mötley crüe".utf8)), (Array("a\u{301}b".utf8), Array("ac".utf8)),
            (Array("東京 Night".utf8), Array("東京 night".utf8)), (Array("東京 A".utf8), Array("東京 b".utf8)),
        ]
        for (a, b) in pairs {
            var rng = SplitMix64(seed: 1)
            let want = Self.expected(a, b)
            XCTAssertEqual(collate(.unicode, Self.literal(a, &rng), Self.literal(b, &rng)), want, "\(show(a)) vs \(show(b))")
            XCTAssertEqual(collate(.unicode, Self.literal(b, &rng), Self.literal(a, &rng)), -want, "\(show(b)) vs \(show(a))")
        }
    }

    /// ASCII fast path with long common prefixes (identical bytes skipped eight at a time):
    /// C == Swift model, directly and through the JSON collation.
    func testASCIIFastPathWithLongCommonPrefixes() {
        var rng = SplitMix64(seed: 4711)
        let alphabet = Array("aAbBlLzZ049 _~`$\\\"/\t\n\u{01}\u{02}\u{7F}".utf8)
        for _ in 0..<20_000 {
            let a = (0..<Int(rng.next() % 40)).map { _ in alphabet[Int(rng.next() % UInt64(alphabet.count))] }
            var b = a
            for _ in 0..<Int(rng.next() % 3) where !b.isEmpty {
                let k = Int(rng.next() % UInt64(b.count))
                b[k] = rng.next() % 2 == 0 ? alphabet[Int(rng.next() % UInt64(alphabet.count))]
                    : ((0x41...0x5A).contains(b[k]) ? b[k] + 32 : ((0x61...0x7A).contains(b[k]) ? b[k] - 32 : b[k]))
            }
            if rng.next() % 4 == 0 { b = Array(b.prefix(Int(rng.next() % UInt64(b.count + 1)))) }
            let want = Reference.compareASCIIPriority(a, b)
            XCTAssertEqual(collateUnicodeStrings(a, b), want, "\(a) vs \(b)")
            var lrng = SplitMix64(seed: rng.next())
            XCTAssertEqual(collate(.unicode, Self.literal(a, &lrng), Self.literal(b, &lrng)), want, "\(a) vs \(b)")
        }
    }

    /// The scanner reads up to 8 bytes at a time, near the end of the input by re-reading
    /// bytes before the current position: it must stay inside [start, start + length).
    func testNoReadsOutsideTheInput() {
        let front = GuardedBuffer(capacity: 4096, guardPage: .before), frontB = GuardedBuffer(capacity: 4096, guardPage: .before)
        let back = GuardedBuffer(capacity: 4096), backB = GuardedBuffer(capacity: 4096)
        var rng = SplitMix64(seed: 99)
        for _ in 0..<5_000 {
            let a = Self.randomText(&rng, maxPieces: 4)
            let b = Self.mutate(a, &rng)
            var ja = Self.literal(a, &rng), jb = Self.literal(b, &rng)
            if rng.next() % 3 == 0 { ja.removeLast(Int(rng.next() % UInt64(ja.count))) }   // unterminated
            if rng.next() % 3 == 0 { jb = [0x5B] + jb }
            for mode in Mode.allCases {
                let plain = collate(mode, ja, jb)
                let viaFront = front.with(ja) { pa, na in frontB.with(jb) { pb, nb in
                    Int(cbl_json_collate(mode.c, pa, na, pb, nb, 0)) } }
                let viaBack = back.with(ja) { pa, na in backB.with(jb) { pb, nb in
                    Int(cbl_json_collate(mode.c, pa, na, pb, nb, 0)) } }
                XCTAssertEqual(viaFront, plain)
                XCTAssertEqual(viaBack, plain)
            }
        }
    }
}
