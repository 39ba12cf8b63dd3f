// Collation benchmark (`--only collation`): `cbl_json_collate(CBLCollationUnicode, …)` on JSON view
// keys against ICU's ucol_strcollUTF8 called directly on the same (unescaped) strings.

import CCollation
import CCollationBaseline
import Foundation
import CBLTestSupport

/// Realistic view keys: the JSON text the index stores, and the plain string ICU gets
/// (for array keys, the first string element).
struct CollationKeys {
    var jsonArena: [UInt8] = []
    var jsonOffsets: [Int] = []
    var jsonLengths: [Int] = []
    var plainArena: [UInt8] = []
    var plainOffsets: [Int] = []
    var plainLengths: [Int] = []
    var isNonASCII: [Bool] = []
    var isArray: [Bool] = []

    static let first = ["Alice", "bob", "Carol", "dave", "Eve", "Frank", "grace", "Heidi", "Ivan", "judy", "Mallory",
                        "Oscar", "peggy", "Trent", "Victor", "walter", "Customer", "The", "A", "an"]
    static let words = ["Smith", "Dark Side", "of the Moon", "Johnson", "Blue", "river", "Night", "Street", "Band",
                        "Live", "Greatest Hits", "Springfield", "Shelbyville", "Capital City", "order", "Rock & Roll",
                        "AC/DC", "Back in Black", "Vol. 2", "(Remastered)", "jazz", "Symphony No. 5", "O'Brien", "x-ray"]
    static let nonASCII = ["Zoë", "Ñandú", "東京", "Müller", "Ångström", "São Paulo", "Øresund", "Čapek", "Δελφοί",
                           "Москва", "Crème brûlée", "naïve", "Beyoncé", "Mötley Crüe", "Sigur Rós", "ÆON"]
    static let genres = ["Rock", "Pop", "Jazz", "Blues", "Classical", "Hip-Hop", "Folk", "Electronic", "Metal", "Soul"]

    init(count: Int, seed: UInt64) {
        var rng = SplitMix64(seed: seed)
        func pick(_ list: [String]) -> String { list[Int(rng.next() % UInt64(list.count))] }
        for _ in 0..<count {
            let r = rng.next() % 100
            let nonASCII = r < 10                  // ~10% of keys contain non-ASCII text
            let array = r < 5 || r >= 75           // ~30% are array keys like ["Rock","Band A",3]
            var text: String
            if nonASCII {
                text = rng.next() % 2 == 0 ? pick(Self.nonASCII) + " " + pick(Self.words) : pick(Self.first) + " " + pick(Self.nonASCII)
            } else {
                text = pick(Self.first) + " " + pick(Self.words)
            }
            if rng.next() % 2 == 0 { text += " \(rng.next() % 1000)" }
            if rng.next() % 50 == 0 { text += " \"Live\"" }   // an escaped quote now and then
            let plain: String
            let json: String
            if array {
                let genre = nonASCII && rng.next() % 2 == 0 ? pick(Self.nonASCII) : pick(Self.genres)
                plain = genre
                json = "[" + Self.quote(genre) + "," + Self.quote(text) + ",\(rng.next() % 20)]"
            } else {
                plain = text
                json = Self.quote(text)
            }
            jsonOffsets.append(jsonArena.count); jsonLengths.append(json.utf8.count); jsonArena += json.utf8
            plainOffsets.append(plainArena.count); plainLengths.append(plain.utf8.count); plainArena += plain.utf8
            isNonASCII.append(json.utf8.contains { $0 >= 0x80 })
            isArray.append(array)
        }
    }

    /// Compact JSON string literal as the 1.x writer makes it (raw UTF-8, `"` and `\` escaped).
    static func quote(_ s: String) -> String {
        "\"" + s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }
}

/// Times `pairs` comparisons; `icu` selects the ICU baseline over plain strings, else the JSON collation.
func timeComparisons(_ keys: CollationKeys, a: [Int32], b: [Int32], icu: Bool) -> (Duration, Int, [Int8]) {
    let arena = icu ? keys.plainArena : keys.jsonArena
    let offsets = icu ? keys.plainOffsets : keys.jsonOffsets
    let lengths = icu ? keys.plainLengths : keys.jsonLengths
    var signs = [Int8](repeating: 0, count: a.count)
    var checksum = 0
    let elapsed = arena.withUnsafeBytes { arenaBuf in
        offsets.withUnsafeBufferPointer { offs in
            lengths.withUnsafeBufferPointer { lens in
                a.withUnsafeBufferPointer { pa in
                    b.withUnsafeBufferPointer { pb in
                        signs.withUnsafeMutableBufferPointer { out in
                            let base = arenaBuf.baseAddress!
                            return clock.measure {
                                if icu {
                                    let chars = base.assumingMemoryBound(to: CChar.self)
                                    for k in 0..<pa.count {
                                        let i = Int(pa[k]), j = Int(pb[k])
                                        let r = cbl_icu_strcoll_baseline(chars + offs[i], lens[i], chars + offs[j], lens[j])
                                        out[k] = Int8(r)
                                    }
                                } else {
                                    for k in 0..<pa.count {
                                        let i = Int(pa[k]), j = Int(pb[k])
                                        let r = cbl_json_collate(CBLCollationUnicode, base + offs[i], lens[i], base + offs[j], lens[j], 0)
                                        out[k] = Int8(r)
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    for (k, s) in signs.enumerated() { checksum &+= Int(s) &* (k & 15 &+ 1) }
    return (elapsed, checksum, signs)
}

@MainActor
func runCollationBenchmarks(options: Options) -> (rows: [BenchRow], notes: [String]) {
    let keys = CollationKeys(count: 10_000, seed: options.seed &+ 20)
    let comparisons = options.quick ? 500_000 : 2_000_000
    var rng = SplitMix64(seed: options.seed &+ 21)
    var a = [Int32](), b = [Int32]()
    a.reserveCapacity(comparisons); b.reserveCapacity(comparisons)
    for _ in 0..<comparisons {
        a.append(Int32(rng.next() % 10_000))
        b.append(Int32(rng.next() % 10_000))
    }
    // The pairs where at least one side contains non-ASCII text (ICU on both sides).
    var na = [Int32](), nb = [Int32]()
    for k in 0..<comparisons where keys.isNonASCII[Int(a[k])] || keys.isNonASCII[Int(b[k])] {
        na.append(a[k]); nb.append(b[k])
    }

    // Warm-up (collator creation, caches), then the timed runs: best of 3 alternating rounds.
    _ = timeComparisons(keys, a: Array(a.prefix(50_000)), b: Array(b.prefix(50_000)), icu: true)
    _ = timeComparisons(keys, a: Array(a.prefix(50_000)), b: Array(b.prefix(50_000)), icu: false)
    var icuSigns: [Int8] = [], ourSigns: [Int8] = []
    let (icuTime, oursTime) = bestOf(3, { let r = timeComparisons(keys, a: a, b: b, icu: true); icuSigns = r.2; return r.0 },
                                        { let r = timeComparisons(keys, a: a, b: b, icu: false); ourSigns = r.2; return r.0 })
    let (icuNonASCII, oursNonASCII) = bestOf(3, { timeComparisons(keys, a: na, b: nb, icu: true).0 },
                                                { timeComparisons(keys, a: na, b: nb, icu: false).0 })

    // How often the two orders agree on string-vs-string pairs (informational: the ASCII
    // priority table of spec 6.2 differs from ICU root order for some punctuation).
    var stringPairs = 0, agree = 0
    for k in 0..<comparisons where !keys.isArray[Int(a[k])] && !keys.isArray[Int(b[k])] {
        stringPairs += 1
        if icuSigns[k] == ourSigns[k] { agree += 1 }
    }
    let nonASCIIKeys = keys.isNonASCII.filter { $0 }.count
    let arrays = keys.isArray.filter { $0 }.count
    let rows = [
        BenchRow(name: "collation JSON vs ICU", base: icuTime, api: oursTime, budget: 1.3, ops: comparisons),
        BenchRow(name: "  non-ASCII pairs (info)", base: icuNonASCII, api: oursNonASCII, budget: nil, ops: na.count),
    ]
    let notes = [
        String(format: "collation: %d keys (%d non-ASCII, %d arrays), %d random pairs (%d involve non-ASCII): "
               + "cbl_json_collate %.1f M cmp/s, ICU ucol_strcollUTF8 %.1f M cmp/s",
               keys.isArray.count, nonASCIIKeys, arrays, comparisons, na.count,
               Double(comparisons) / seconds(oursTime) / 1e6, Double(comparisons) / seconds(icuTime) / 1e6),
        String(format: "collation: string-vs-string pairs where our order agrees with ICU: %.2f%% of %d",
               Double(agree) / Double(max(stringPairs, 1)) * 100, stringPairs),
    ]
    return (rows, notes)
}
