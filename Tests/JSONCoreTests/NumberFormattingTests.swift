import Foundation
import XCTest
import JSONCore
import CBLTestSupport

/// iOS CBJSONEncoder: doubles with sprintf("%.16g"), floats with "%.6g"; if the result
/// consists only of "0123456789-", ".0" is appended. Integers plainly.
final class NumberFormattingTests: XCTestCase {
    func testDoubleRuleExamples() throws {
        let cases: [(Double, String)] = [
            (1.0, "1.0"),
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (-1.0, "-1.0"),
            (0.1, "0.1"),
            (2.5, "2.5"),
            (3.1, "3.1"),
            (8.99, "8.99"),
            (1e100, "1e+100"),
            (1e-100, "1e-100"),
            (1e-5, "1e-05"),
            (1e-4, "0.0001"),
            (0.000123, "0.000123"),
            (1e15, "1000000000000000.0"),
            (1e16, "1e+16"),
            (9007199254740992.0, "9007199254740992.0"),      // 2^53
            (Double(123456789012345678 as Int64), "1.234567890123457e+17"),
            (1234567890123456.7, "1234567890123457.0"),      // rounds to an integer-looking form
            (0.1 + 0.2, "0.3"),                               // %.16g, not shortest round-trip
            (1.0 / 3.0, "0.3333333333333333"),
            (2.0 / 3.0, "0.6666666666666666"),
            (Double.pi, "3.141592653589793"),
            (6.02e23, "6.02e+23"),
            (-1.5e-7, "-1.5e-07"),
            (111111.111111, "111111.111111"),
            (4294967295.01, "4294967295.01"),
            (Double(UInt64.max), "1.844674407370955e+19"),
            (Double.greatestFiniteMagnitude, "1.797693134862316e+308"),
            (Double.leastNormalMagnitude, "2.225073858507201e-308"),
            (Double.leastNonzeroMagnitude, "4.940656458412465e-324"),
            (Double("5e-324")!, "4.940656458412465e-324"),
            (0.5, "0.5"),
            (99999999999999.99, "99999999999999.98"),
            (9.999999999999999e22, "9.999999999999999e+22"),
            (1e23, "9.999999999999999e+22"),                 // 1e23 is not a double
            (1e22, "1e+22"),
        ]
        for (d, expected) in cases {
            XCTAssertEqual(try formatDouble(d), expected, "\(d)")
            XCTAssertEqual(referenceG(d, precision: 16), expected, "libc reference for \(d)")
        }
    }

    func testFloatUsesSixSignificantDigits() {
        XCTAssertEqual(canon(Float(0.1)), "0.1")
        XCTAssertEqual(canon(Float(1)), "1.0")
        XCTAssertEqual(canon(Float(3.14159265)), "3.14159")
        XCTAssertEqual(canon(Float(1234567)), "1.23457e+06")
        XCTAssertEqual(canon(Float(999999)), "999999.0")
        XCTAssertEqual(canon(Float(-2.5e-9)), "-2.5e-09")
        XCTAssertEqual(canon(NSNumber(value: Float(0.1))), "0.1")
        XCTAssertThrowsError(try JSON.canonicalData(Float.nan))
        XCTAssertThrowsError(try JSON.canonicalData(Float.infinity))
    }

    func testIntegers() {
        XCTAssertEqual(canon(Int.max), "9223372036854775807")
        XCTAssertEqual(canon(Int.min), "-9223372036854775808")
        XCTAssertEqual(canon(Int64.min), "-9223372036854775808")
        XCTAssertEqual(canon(UInt64.max), "18446744073709551615")
        XCTAssertEqual(canon(UInt.max), "18446744073709551615")
        XCTAssertEqual(canon(Int8.min), "-128")
        XCTAssertEqual(canon(Int16(-300)), "-300")
        XCTAssertEqual(canon(Int32.max), "2147483647")
        XCTAssertEqual(canon(UInt8(255)), "255")
        XCTAssertEqual(canon(UInt16(65535)), "65535")
        XCTAssertEqual(canon(UInt32.max), "4294967295")
        XCTAssertEqual(canon(NSNumber(value: UInt64.max)), "18446744073709551615")
        XCTAssertEqual(canon(NSNumber(value: Int64.min)), "-9223372036854775808")
        XCTAssertEqual(canon(NSNumber(value: 123456789012345678 as Int)), "123456789012345678")
        for i in [0, 1, 9, 10, 99, 100, 12345, -1, -10, 1_000_000_007] {
            XCTAssertEqual(canon(i), String(i))
        }
    }

    func testNaNAndInfinityThrow() {
        for d in [Double.nan, Double.infinity, -Double.infinity, Double.signalingNaN] {
            XCTAssertThrowsError(try JSON.canonicalData(d)) { XCTAssertTrue($0 is JSONError) }
            XCTAssertThrowsError(try JSON.canonicalData(["x": [d]]))
            XCTAssertThrowsError(try JSON.canonicalData(NSNumber(value: d)))
            XCTAssertFalse(JSON.isValid(d))
            XCTAssertFalse(JSON.isValid(["x": [d]]))
        }
        XCTAssertThrowsError(try JSON.canonicalData(NSDecimalNumber.notANumber))
    }

    /// Whatever path is taken (fast integral, exact 128-bit, libc fallback), the public
    /// output equals the C library's correctly rounded printf plus the ".0" rule.
    func testPublicOutputMatchesLibc() throws {
        var rng = SplitMix64(seed: 42)
        func check(_ d: Double) throws {
            guard d.isFinite else { return }
            XCTAssertEqual(try formatDouble(d), referenceG(d, precision: 16), "\(d.bitPattern)")
        }
        for _ in 0..<10_000 {
            try check(Double(bitPattern: rng.next()))                       // every exponent
            let f = Float(bitPattern: UInt32(truncatingIfNeeded: rng.next()))
            if f.isFinite {
                XCTAssertEqual(canon(f), referenceG(Double(f), precision: 6))
            }
            let mant = Double(rng.next() % 10_000_000_000)                  // decimal-looking
            try check(mant * pow(10, Double(Int(rng.next() % 40) - 20)))
            try check(Double(rng.next() % 100_000) / 100)
            try check(Double(Int64(bitPattern: rng.next())) / 1e6)
        }
        for e in -25...40 {                                                 // around powers of 10
            var up = pow(10.0, Double(e)), down = up
            for _ in 0..<8 { try check(up); try check(-down); up = up.nextUp; down = down.nextDown }
        }
        for i in 0..<2000 {                                                 // ties and near-integers
            try check(Double(i) + 0.5)
            try check(1e15 + Double(i) + 0.5)
            try check(9_007_199_254_740_992.0 + Double(i * 2))
        }
    }

    func testParsedNumbersReencode() throws {
        let cases: [(String, String)] = [
            ("1", "1"), ("-0", "0"), ("1.0", "1.0"), ("-0.0", "-0.0"), ("1.5", "1.5"),
            ("1e2", "100.0"), ("1E-2", "0.01"), ("0.1", "0.1"), ("123456789012345678", "123456789012345678"),
            ("9223372036854775807", "9223372036854775807"), ("-9223372036854775808", "-9223372036854775808"),
            ("9223372036854775808", "9.223372036854776e+18"), ("12345678901234567890", "1.234567890123457e+19"),
            ("3.14159", "3.14159"), ("1e308", "1e+308"), ("2.2250738585072014e-308", "2.225073858507201e-308"),
            ("1e-400", "0.0"), ("0.30000000000000004", "0.3"),
        ]
        for (text, expected) in cases {
            XCTAssertEqual(canon(try JSON.parse(text)), expected, text)
        }
    }
}
