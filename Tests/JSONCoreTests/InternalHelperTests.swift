// Tests of internal helpers (need `@testable import`, hence debug builds only).
#if DEBUG
import Foundation
import XCTest
@testable import JSONCore
import CBLTestSupport

/// Our exact formatter alone (nil when it declines the value).
private func exactG(_ d: Double, precision p: Int) -> String? {
    var out = [UInt8](repeating: 0, count: NumberFormat.maxLength)
    let n = out.withUnsafeMutableBufferPointer { NumberFormat.exactG(d, precision: p, into: $0.baseAddress!) }
    return n == 0 ? nil : String(decoding: out[0..<n], as: UTF8.self)
}

final class InternalHelperTests: XCTestCase {
    /// The exact 128-bit formatter agrees with the C library's correctly rounded printf on
    /// many doubles of every magnitude and shape.
    func testExactFormatterMatchesLibcRandomized() {
        var rng = SplitMix64(seed: 0xC0FFEE)
        var checked = 0
        var mismatches: [String] = []
        func check(_ d: Double) {
            for p in [16, 6] {
                guard let ours = exactG(d, precision: p) else { continue }
                let ref = referenceG(d, precision: p)
                checked += 1
                if ours != ref && mismatches.count < 10 {
                    mismatches.append("\(d.bitPattern) p=\(p): ours \(ours) libc \(ref)")
                }
            }
        }
        // Random bit patterns (all exponents).
        for _ in 0..<15_000 {
            check(Double(bitPattern: rng.next()))
        }
        // Random decimal-looking values in the common range.
        for _ in 0..<15_000 {
            let mant = Double(rng.next() % 10_000_000_000)
            let exp = Int(rng.next() % 40) - 20
            check(mant * pow(10, Double(exp)))
            check(Double(rng.next() % 100_000) / 100)
        }
        // Neighbours of powers of ten and of 2^53 (rounding/carry boundaries).
        for e in -30...40 {
            var x = pow(10.0, Double(e))
            for _ in 0..<30 { check(x); check(-x); x = x.nextUp }
            x = pow(10.0, Double(e))
            for _ in 0..<30 { check(x); x = x.nextDown }
        }
        // Ties at the 16th digit and near-integers.
        for i in 0..<5000 {
            check(Double(i) + 0.5)
            check(1e15 + Double(i) + 0.5)
            check(Double(i) * 1e-3)
            check(9_007_199_254_740_992.0 + Double(i * 2))
        }
        XCTAssertEqual(mismatches, [])
        XCTAssertGreaterThan(checked, 50_000)
    }

    func testLocaleDecimalSeparatorIsNormalized() {
        func norm(_ s: String) -> String {
            var out = [UInt8](repeating: 0, count: 64)
            let bytes = Array(s.utf8)
            let n = bytes.withUnsafeBufferPointer { b in
                out.withUnsafeMutableBufferPointer { NumberFormat.normalizeCFormatted(b, into: $0.baseAddress!) }
            }
            return String(decoding: out[0..<n], as: UTF8.self)
        }
        XCTAssertEqual(norm("3,14"), "3.14")
        XCTAssertEqual(norm("1\u{066B}5e+20"), "1.5e+20")   // Arabic decimal separator (2 bytes)
        XCTAssertEqual(norm("-12"), "-12.0")
        XCTAssertEqual(norm("1E+16"), "1e+16")
        XCTAssertEqual(norm("0.25"), "0.25")
    }

    /// ASCII keys of every length take the word-load path: the prefix is their first 8 bytes, big-endian, zero-padded.
    func testASCIISortPrefixIsTheFirstEightBytes() {
        let text = Array("type_NAME-address.zip~0123456789".utf8)
        for start in 0..<8 {
            for length in 0...(text.count - start) {
                let bytes = Array(text[start..<(start + length)])
                var expected: UInt64 = 0
                for (i, b) in bytes.prefix(8).enumerated() { expected |= UInt64(b) << UInt64(56 - 8 * i) }
                XCTAssertEqual(sortPrefix(String(decoding: bytes, as: UTF8.self)), expected, "\(bytes)")
            }
        }
    }

    func testSortPrefixAgreesWithUTF16Order() {
        var rng = SplitMix64(seed: 11)
        let alphabet: [Unicode.Scalar] = ["a", "B", "\u{0}", "\u{E9}", "\u{D7FF}", "\u{E000}", "\u{FF5E}",
                                          "\u{FFFF}", "\u{10000}", "\u{1F600}", "\u{10FFFF}"]
        for _ in 0..<5000 {
            var a = String.UnicodeScalarView(), b = String.UnicodeScalarView()
            for _ in 0..<Int(rng.next() % 6) { a.append(alphabet[Int(rng.next() % UInt64(alphabet.count))]) }
            for _ in 0..<Int(rng.next() % 6) { b.append(alphabet[Int(rng.next() % UInt64(alphabet.count))]) }
            let sa = String(a), sb = String(b)
            let pa = sortPrefix(sa), pb = sortPrefix(sb)
            let reference = sa.utf16.lexicographicallyPrecedes(sb.utf16)
            if pa != pb {
                XCTAssertEqual(pa < pb, reference, "\(Array(sa.utf16)) vs \(Array(sb.utf16))")
            }
        }
    }
}
#endif
