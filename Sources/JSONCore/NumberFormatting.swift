#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

// Number formatting, byte-exact with Couchbase Lite 1.x iOS `CBJSONEncoder -encodeNumber:`.
//
// The iOS rule (Source/CBJSONEncoder.m, couchbase-lite-ios 1.x, -encodeNumber:; the yajl
// generator is only handed the resulting text via yajl_gen_number), by the NSNumber's objCType:
//   * 'c' (char): `true`/`false` only if the object is the kCFBoolean singleton, else an integer.
//   * 'f' (float):  sprintf("%.6g",  value)  -- then ".0" appended, see below.
//   * 'd' (double): sprintf("%.16g", value)  -- then ".0" appended, see below.
//     NaN and +/-Inf are rejected (encoding fails).
//     If every character of the result is in "0123456789-" (it "looks like an integer"),
//     ".0" is appended: 1.0 -> "1.0", -0.0 -> "-0.0", 1e15 -> "1000000000000000.0",
//     but 1e16 -> "1e+16", 1e100 -> "1e+100", 1e-5 -> "1e-05" (C exponent form, at least two
//     exponent digits, no ".0"), 0.1 -> "0.1", 2.5 -> "2.5",
//     123456789012345678 (as a double) -> "1.234567890123457e+17".
//   * 'Q' (unsigned long long): "%llu" (we also treat 'L' as unsigned).
//   * anything else: yajl_gen_integer(longLongValue), i.e. "%lld".
// (CBJSONEncoder's own comment: yajl_gen_double used 20 significant digits, which printed
// 8.99 as "8.9900000000000002"; hence %.16g.)
// A Swift `Float` corresponds to 'f', `Double`/`CGFloat` to 'd', every integer type to an
// integer. This file reproduces C's "%.<P>g" (P = 16 or 6) exactly -- the decimal value of
// the binary double correctly rounded to P significant digits, ties to even, trailing zeros
// and a trailing '.' removed, exponent form when exp < -4 or exp >= P -- without calling
// printf on the hot path (printf is ~0.4 µs per double on glibc) and without any locale
// dependence. Values outside the exact 128-bit range (|d| below ~1e-7, above ~1.7e38, or
// subnormal) fall back to the C library, whose output is sanitized so that a locale's
// decimal separator can never leak into JSON. The tests check both paths against glibc's
// printf on >100k values.

internal enum NumberFormat {
    /// Room a caller must provide for any single number (longest is ~24 bytes).
    static let maxLength = 48

    /// Writes the decimal representation of a signed integer; returns the length.
    @inline(__always)
    static func formatInt(_ v: Int64, into out: UnsafeMutablePointer<UInt8>) -> Int {
        if v >= 0 {
            return formatUInt(UInt64(v), into: out)
        }
        out[0] = UInt8(ascii: "-")
        return 1 &+ formatUInt(v.magnitude, into: out + 1)
    }

    /// Writes the decimal representation of an unsigned integer; returns the length.
    @inline(__always)
    static func formatUInt(_ v: UInt64, into out: UnsafeMutablePointer<UInt8>) -> Int {
        if v < 10 {
            out[0] = UInt8(truncatingIfNeeded: v) &+ 0x30
            return 1
        }
        var digits = 1
        var t = v
        while t >= 10 { t /= 10; digits &+= 1 }
        var i = digits &- 1
        var x = v
        while x >= 10 {
            let q = x / 10
            out[i] = UInt8(truncatingIfNeeded: x &- q &* 10) &+ 0x30
            x = q
            i &-= 1
        }
        out[i] = UInt8(truncatingIfNeeded: x) &+ 0x30
        return digits
    }

    /// Writes a double (P = 16) or a float (P = 6) in the iOS CBJSONEncoder format; returns
    /// the length. Throws for NaN and infinities.
    static func formatFloatingPoint(_ d: Double, precision p: Int,
                                    into out: UnsafeMutablePointer<UInt8>) throws -> Int {
        guard d.isFinite else {
            throw JSONError("cannot encode \(d) (NaN and infinity are not valid JSON numbers)")
        }
        let limit: Double = p == 16 ? 1e16 : 1e6
        let mag = d.magnitude
        // Fast path: an integral value below 10^P prints all its digits under %.Pg, so the
        // result is the integer followed by ".0" (including "-0.0" for negative zero).
        if mag < limit && mag.rounded(.towardZero) == mag {
            var n = 0
            if d.sign == .minus { out[0] = UInt8(ascii: "-"); n = 1 }
            n &+= formatUInt(UInt64(mag), into: out + n)
            out[n] = UInt8(ascii: ".")
            out[n &+ 1] = UInt8(ascii: "0")
            return n &+ 2
        }
        if #available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *) {
            let n = exactG(d, precision: p, into: out)
            if n > 0 { return n }
        }
        return libcG(d, precision: p, into: out)
    }

    // MARK: - Exact %.Pg with 128-bit arithmetic

    private static let pow10u64: [UInt64] = {
        var a: [UInt64] = []
        var x: UInt64 = 1
        for _ in 0...19 { a.append(x); x = x &* 10 }
        return a
    }()

    @available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
    @inline(__always)
    private static func pow10(_ k: Int) -> UInt128 {
        if k <= 19 { return UInt128(pow10u64[k]) }
        return UInt128(pow10u64[19]) &* UInt128(pow10u64[k &- 19])
    }

    @available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
    @inline(__always)
    private static func bitWidth(_ x: UInt128) -> Int { 128 &- x.leadingZeroBitCount }

    /// Exact "%.Pg" for normal doubles with 1e-7 <~ |d| < 2^127 (everything else returns 0,
    /// writing nothing, and is handled by the C library).
    ///
    /// |d| = m * 2^e exactly. With k = P-1-X (X = decimal exponent of d) the integer
    /// q = round_half_even(m * 2^e * 10^k) has exactly P digits; it is computed exactly as a
    /// 128-bit quotient num/den, then printed in %g style.
    @available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
    static func exactG(_ d: Double, precision p: Int, into out: UnsafeMutablePointer<UInt8>) -> Int {
        guard d.isNormal else { return 0 }
        let m = UInt128((1 as UInt64) << 52 | d.significandBitPattern)
        let e = Int(d.exponentBitPattern) &- 1075
        let exp2 = Int(d.exponentBitPattern) &- 1023            // floor(log2 |d|)
        // floor(log10 |d|) is either this estimate or one more.
        var dexp = Int((Double(exp2) * 0.301029995663981195).rounded(.down))
        let top = pow10u64[p]
        var q64: UInt64 = 0
        var attempts = 0
        while true {
            attempts &+= 1
            if attempts > 2 { return 0 }
            let k = p &- 1 &- dexp   // scale so that q = |d| * 10^k has P digits
            var num = m
            var den: UInt128 = 1
            if k > 0 {
                if k > 38 { return 0 }
                let t = pow10(k)
                if bitWidth(t) &+ 53 > 127 { return 0 }
                num = num &* t
            } else if k < 0 {
                if -k > 38 { return 0 }
                den = pow10(-k)
            }
            if e > 0 {
                if bitWidth(num) &+ e > 127 { return 0 }
                num = num << UInt128(e)
            } else if e < 0 {
                if bitWidth(den) &+ (-e) > 127 { return 0 }
                den = den << UInt128(-e)
            }
            var q: UInt128
            var rem: UInt128
            if den.nonzeroBitCount == 1 {
                let s = den.trailingZeroBitCount
                q = num >> UInt128(s)
                rem = num & (den &- 1)
            } else {
                (q, rem) = num.quotientAndRemainder(dividingBy: den)
            }
            if q >= UInt128(top) {
                // The estimate of the decimal exponent was one too small.
                dexp &+= 1
                continue
            }
            // Round half to even on the exact remainder.
            let twice = rem << 1
            if twice > den || (twice == den && (q & 1) == 1) {
                q &+= 1
            }
            q64 = UInt64(truncatingIfNeeded: q)
            if q64 == top {
                q64 = pow10u64[p &- 1]
                dexp &+= 1
            }
            if q64 < pow10u64[p &- 1] { return 0 }   // cannot happen
            break
        }
        // The P digits of q64, most significant first.
        var digits: (UInt64, UInt64) = (0, 0)
        return withUnsafeMutableBytes(of: &digits) { raw -> Int in
            var x = q64
            var i = p &- 1
            while i >= 0 {
                let qq = x / 10
                raw[i] = UInt8(truncatingIfNeeded: x &- qq &* 10) &+ 0x30
                x = qq
                i &-= 1
            }
            var nd = p                          // %g removes trailing zeros
            while nd > 1 && raw[nd &- 1] == 0x30 { nd &-= 1 }
            var n = 0
            if d.sign == .minus { out[0] = UInt8(ascii: "-"); n = 1 }
            let x10 = dexp
            if x10 < -4 || x10 >= p {
                // d.ddde±XX (at least two exponent digits)
                out[n] = raw[0]; n &+= 1
                if nd > 1 {
                    out[n] = UInt8(ascii: "."); n &+= 1
                    for i in 1..<nd { out[n] = raw[i]; n &+= 1 }
                }
                out[n] = UInt8(ascii: "e"); n &+= 1
                out[n] = x10 < 0 ? UInt8(ascii: "-") : UInt8(ascii: "+"); n &+= 1
                let ax = UInt64(x10.magnitude)
                if ax < 10 { out[n] = UInt8(ascii: "0"); n &+= 1 }
                n &+= formatUInt(ax, into: out + n)
            } else if x10 >= 0 {
                // integer part: x10+1 digits, then the fraction if any
                for i in 0...x10 { out[n] = i < nd ? raw[i] : UInt8(ascii: "0"); n &+= 1 }
                out[n] = UInt8(ascii: "."); n &+= 1
                if nd > x10 &+ 1 {
                    for i in (x10 &+ 1)..<nd { out[n] = raw[i]; n &+= 1 }
                } else {
                    // Looks like an integer: CBJSONEncoder appends ".0".
                    out[n] = UInt8(ascii: "0"); n &+= 1
                }
            } else {
                // 0.000ddd
                out[n] = UInt8(ascii: "0"); n &+= 1
                out[n] = UInt8(ascii: "."); n &+= 1
                for _ in 0..<(-x10 &- 1) { out[n] = UInt8(ascii: "0"); n &+= 1 }
                for i in 0..<nd { out[n] = raw[i]; n &+= 1 }
            }
            return n
        }
    }

    // MARK: - C library

    /// Formats with the C library's "%.16g"/"%.6g" and applies the ".0" rule. Any byte that is
    /// not a digit, sign or exponent mark can only be the locale's decimal separator: it is
    /// rewritten as '.', so the output never depends on the locale. Also used by the tests as
    /// the reference for `exactG`.
    static func libcG(_ d: Double, precision p: Int, into out: UnsafeMutablePointer<UInt8>) -> Int {
        var buf = [CChar](repeating: 0, count: 64)
        let r: Int32 = withVaList([d]) { va in
            buf.withUnsafeMutableBufferPointer { b in
                vsnprintf(b.baseAddress, 64, p == 16 ? "%.16g" : "%.6g", va)
            }
        }
        let len = Swift.max(0, Swift.min(Int(r), 40))
        return buf.withUnsafeBufferPointer { b in
            b.withMemoryRebound(to: UInt8.self) { u in
                normalizeCFormatted(UnsafeBufferPointer(rebasing: u[0..<len]), into: out)
            }
        }
    }

    /// Copies C "%g" output, rewriting the locale's decimal separator (any run of bytes that
    /// are not digits, signs or 'e') to '.', and applies CBJSONEncoder's rule: if every
    /// character is in "0123456789-", append ".0".
    static func normalizeCFormatted(_ s: UnsafeBufferPointer<UInt8>, into out: UnsafeMutablePointer<UInt8>) -> Int {
        var n = 0
        var looksIntegral = true
        var inRadix = false
        for c in s {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"):
                out[n] = c; n &+= 1
                inRadix = false
            case UInt8(ascii: "+"), UInt8(ascii: "e"), UInt8(ascii: "E"):
                out[n] = c == UInt8(ascii: "E") ? UInt8(ascii: "e") : c; n &+= 1
                looksIntegral = false
                inRadix = false
            default:
                // (part of) the locale's decimal separator
                if !inRadix { out[n] = UInt8(ascii: "."); n &+= 1 }
                inRadix = true
                looksIntegral = false
            }
        }
        if looksIntegral {
            out[n] = UInt8(ascii: "."); n &+= 1
            out[n] = UInt8(ascii: "0"); n &+= 1
        }
        return n
    }
}
