import Foundation

/// N1QL `LIKE` as LiteCore runs it: case-sensitive by default (spec 9.3), `%` any run, `_` one
/// character, `\` escapes the next one. Under `COLLATE` the translator passes folding flags:
/// bit 0 = case-insensitive, bit 1 = diacritic-insensitive (both strings are folded first).
enum LikeMatcher {
    static let caseInsensitive = 1
    static let diacriticInsensitive = 2

    static func fold(_ s: String, _ flags: Int) -> String {
        var options: String.CompareOptions = []
        if flags & caseInsensitive != 0 { options.insert(.caseInsensitive) }
        if flags & diacriticInsensitive != 0 { options.insert(.diacriticInsensitive) }
        // Precomposed form, so an accent typed either way compares the same byte-wise.
        return (options.isEmpty ? s : s.folding(options: options, locale: nil)).precomposedStringWithCanonicalMapping
    }

    static func matches(_ string: String, pattern: String, flags: Int = 0) -> Bool {
        let s = Array((flags == 0 ? string : fold(string, flags)).unicodeScalars)
        let p = Array((flags == 0 ? pattern : fold(pattern, flags)).unicodeScalars)
        return match(s, 0, p, 0)
    }

    /// Iterative matcher with single-star backtracking (linear in practice, no recursion depth).
    private static func match(_ s: [Unicode.Scalar], _ si0: Int, _ p: [Unicode.Scalar], _ pi0: Int) -> Bool {
        var si = si0, pi = pi0
        var starP = -1, starS = -1
        while si < s.count {
            if pi < p.count {
                let c = p[pi]
                if c == "%" {
                    starP = pi; starS = si; pi += 1
                    continue
                }
                if c == "_" { si += 1; pi += 1; continue }
                var literal = c
                var width = 1
                if c == "\\", pi + 1 < p.count { literal = p[pi + 1]; width = 2 }
                if literal == s[si] { si += 1; pi += width; continue }
            }
            if starP >= 0 {
                starS += 1; si = starS; pi = starP + 1
                continue
            }
            return false
        }
        while pi < p.count, p[pi] == "%" { pi += 1 }
        return pi == p.count
    }
}
