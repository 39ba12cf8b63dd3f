import Foundation
import XCTest
import JSONCore
import CBLTestSupport

final class ParserTests: XCTestCase {
    func testValueTypes() throws {
        let v = try JSON.parseObject(Array(#"{"s":"x","i":42,"n":-7,"d":2.5,"e":1e3,"z":0,"t":true,"f":false,"nul":null,"a":[1,"2",[]],"o":{"k":{}}}"#.utf8))
        XCTAssertEqual(v["s"] as? String, "x")
        XCTAssertTrue(type(of: v["i"]!) == Int.self)
        XCTAssertEqual(v["i"] as? Int, 42)
        XCTAssertEqual(v["n"] as? Int, -7)
        XCTAssertTrue(type(of: v["d"]!) == Double.self)
        XCTAssertEqual(v["d"] as? Double, 2.5)
        XCTAssertTrue(type(of: v["e"]!) == Double.self)
        XCTAssertEqual(v["e"] as? Double, 1000)
        XCTAssertTrue(type(of: v["z"]!) == Int.self)
        XCTAssertTrue(type(of: v["t"]!) == Bool.self)
        XCTAssertEqual(v["t"] as? Bool, true)
        XCTAssertEqual(v["f"] as? Bool, false)
        XCTAssertTrue(v["nul"] is NSNull)
        let a = try XCTUnwrap(v["a"] as? [Any])
        XCTAssertEqual(a.count, 3)
        XCTAssertEqual(a[1] as? String, "2")
        XCTAssertTrue(type(of: (v["o"] as! [String: Any])["k"]!) == [String: Any].self)
    }

    func testTopLevelScalarsAndWhitespace() throws {
        XCTAssertEqual(try JSON.parse(" \t\r\n 12 \n") as? Int, 12)
        XCTAssertEqual(try JSON.parse("\"s\"") as? String, "s")
        XCTAssertEqual(try JSON.parse("true") as? Bool, true)
        XCTAssertTrue(try JSON.parse("null") is NSNull)
        XCTAssertEqual(try JSON.parse(" [ 1 , 2 ] ") as? [Int], [1, 2])
        XCTAssertEqual((try JSON.parse(" { \"a\" : 1 } ") as? [String: Any])?["a"] as? Int, 1)
        XCTAssertThrowsError(try JSON.parseObject(Array("[1]".utf8)))
        XCTAssertThrowsError(try JSON.parseObject(Data("1".utf8)))
        XCTAssertThrowsError(try JSON.parseObject(Array("  ".utf8)))
    }

    func testAllInputOverloads() throws {
        let text = #"{"a":[1,2.5,"é"]}"#
        let bytes = Array(text.utf8)
        let expected: [String: Any] = ["a": [1, 2.5, "é"]]
        XCTAssertTrue(jsonEqual(try JSON.parse(text), expected))
        XCTAssertTrue(jsonEqual(try JSON.parse(bytes), expected))
        XCTAssertTrue(jsonEqual(try JSON.parse(Data(bytes)), expected))
        XCTAssertTrue(jsonEqual(try bytes.withUnsafeBytes { try JSON.parse($0) }, expected))
        XCTAssertTrue(jsonEqual(try JSON.parseObject(bytes), expected))
        XCTAssertTrue(jsonEqual(try JSON.parseObject(Data(bytes)), expected))
        XCTAssertTrue(jsonEqual(try bytes.withUnsafeBytes { try JSON.parseObject($0) }, expected))
        // A Data slice with a non-zero start index.
        let padded = Data(Array("xx".utf8) + bytes)
        XCTAssertTrue(jsonEqual(try JSON.parse(padded[2...]), expected))
        // A bridged/non-contiguous String.
        let ns = NSString(string: text) as String
        XCTAssertTrue(jsonEqual(try JSON.parse(ns), expected))
    }

    func testStringEscapes() throws {
        XCTAssertEqual(try JSON.parse(#""\"\\\/\b\f\n\r\t""#) as? String, "\"\\/\u{8}\u{C}\n\r\t")
        XCTAssertEqual(try JSON.parse(#""\u0041\u00e9\u00E9\u20AC\u0000z""#) as? String, "Aéé€\u{0}z")
        XCTAssertEqual(try JSON.parse(#""\uD83D\uDE00""#) as? String, "😀")
        XCTAssertEqual(try JSON.parse(#""a\ud83d\ude00b""#) as? String, "a😀b")
        XCTAssertEqual(try JSON.parse("\"raw 😀 é\"") as? String, "raw 😀 é")
        XCTAssertEqual(try JSON.parse(#""12\/34""#) as? String, "12/34")
        XCTAssertEqual(try JSON.parse("\"\u{7F}\u{2028}\"") as? String, "\u{7F}\u{2028}")
        // Long strings around the 8-byte scanning boundaries.
        for n in 0..<30 {
            let s = String(repeating: "a", count: n)
            XCTAssertEqual(try JSON.parse("\"\(s)\"") as? String, s)
            XCTAssertEqual(try JSON.parse("\"\(s)\\n\(s)é\"") as? String, s + "\n" + s + "é")
            XCTAssertEqual(try JSON.parse("[\"\(s)\"]") as? [String], [s])
        }
    }

    func testNumbers() throws {
        XCTAssertEqual(try JSON.parse("9223372036854775807") as? Int, Int.max)
        XCTAssertEqual(try JSON.parse("-9223372036854775808") as? Int, Int.min)
        XCTAssertEqual(try JSON.parse("9223372036854775808") as? Double, 9223372036854775808.0)
        XCTAssertEqual(try JSON.parse("-9223372036854775809") as? Double, -9223372036854775809.0)
        XCTAssertEqual(try JSON.parse("123456789012345678901234567890") as? Double, 1.2345678901234568e29)
        XCTAssertEqual(try JSON.parse("0.1") as? Double, 0.1)
        XCTAssertEqual(try JSON.parse("-0.0") as? Double, -0.0)
        XCTAssertEqual((try JSON.parse("-0.0") as? Double)?.sign, .minus)
        XCTAssertEqual(try JSON.parse("-0") as? Int, 0)
        XCTAssertEqual(try JSON.parse("1E+2") as? Double, 100)
        XCTAssertEqual(try JSON.parse("1e-2") as? Double, 0.01)
        XCTAssertEqual(try JSON.parse("2.2250738585072014e-308") as? Double, 2.2250738585072014e-308)
        XCTAssertEqual(try JSON.parse("4.9e-324") as? Double, .leastNonzeroMagnitude)
        XCTAssertEqual(try JSON.parse("1.7976931348623157e308") as? Double, .greatestFiniteMagnitude)
        XCTAssertEqual(try JSON.parse("0.000000000000000000000000000001") as? Double, 1e-30)
        XCTAssertEqual(try JSON.parse("1e-400") as? Double, 0)
        XCTAssertEqual(try JSON.parse("0.5") as? Double, 0.5)
        XCTAssertThrowsError(try JSON.parse("1e400"))
        XCTAssertThrowsError(try JSON.parse("-1e400"))
        // Correct rounding against Swift's own (correctly rounded) Double(String).
        var rng = SplitMix64(seed: 99)
        for _ in 0..<20_000 {
            let d = Double(bitPattern: rng.next())
            guard d.isFinite else { continue }
            for text in [d.description, String(format: "%.17g", d), String(format: "%.3e", d)] {
                let t = text.replacingOccurrences(of: "+", with: "")
                guard let want = Double(t), want.isFinite else { continue }
                let got = try JSON.parse(t)
                if let i = got as? Int {
                    XCTAssertEqual(Double(i), want, t)
                } else {
                    XCTAssertEqual((got as? Double)?.bitPattern, want.bitPattern, t)
                }
            }
        }
        for _ in 0..<20_000 {
            let m = rng.next() % 100_000_000_000
            let e = Int(rng.next() % 60) - 30
            let t = "\(m)e\(e)"
            XCTAssertEqual((try JSON.parse(t) as? Double)?.bitPattern, Double(t)!.bitPattern, t)
            let f = "\(m / 1000).\(m % 1000)"
            XCTAssertEqual((try JSON.parse(f) as? Double)?.bitPattern, Double(f)!.bitPattern, f)
        }
    }

    func testDuplicateKeysLastWins() throws {
        let d = try JSON.parseObject(Array(#"{"a":1,"b":2,"a":3}"#.utf8))
        XCTAssertEqual(d.count, 2)
        XCTAssertEqual(d["a"] as? Int, 3)
    }

    func testLargeDocument() throws {
        var items: [String] = []
        for i in 0..<5000 {
            items.append(#"{"id":\#(i),"name":"item \#(i)","tags":["x","y"],"v":\#(Double(i) / 8)}"#)
        }
        let text = "[" + items.joined(separator: ",") + "]"
        let parsed = try XCTUnwrap(try JSON.parse(text) as? [Any])
        XCTAssertEqual(parsed.count, 5000)
        let last = try XCTUnwrap(parsed.last as? [String: Any])
        XCTAssertEqual(last["id"] as? Int, 4999)
        XCTAssertEqual(last["v"] as? Double, 4999.0 / 8)
        // Wide object (value stacks outgrow their stack buffers).
        let wide = "{" + (0..<500).map { #""k\#($0)":[\#($0),{"n":\#($0)}]"# }.joined(separator: ",") + "}"
        let w = try JSON.parseObject(Array(wide.utf8))
        XCTAssertEqual(w.count, 500)
        XCTAssertEqual(((w["k499"] as? [Any])?[1] as? [String: Any])?["n"] as? Int, 499)
    }

    // MARK: - Errors

    func assertError(_ text: String, file: StaticString = #filePath, line: UInt = #line) {
        assertError(Array(text.utf8), file: file, line: line)
    }

    func assertError(_ bytes: [UInt8], file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try JSON.parse(bytes), "\(bytes)", file: file, line: line) { error in
            guard let e = error as? JSONError else {
                return XCTFail("not a JSONError: \(error)", file: file, line: line)
            }
            XCTAssertNotNil(e.offset, file: file, line: line)
            XCTAssertTrue(e.description.contains(e.message), file: file, line: line)
        }
    }

    func testTruncatedInput() {
        let full = #"{"a":[1,2.5,"xyz",{"b":null,"c":true,"d":false}],"e":"\u00e9"}"#
        let bytes = Array(full.utf8)
        XCTAssertNoThrow(try JSON.parse(bytes))
        for n in 0..<bytes.count {
            assertError(Array(bytes[0..<n]))
        }
        assertError("")
        assertError("   ")
    }

    func testSyntaxErrors() {
        for bad in ["[1,]", "{\"a\":1,}", "[,1]", "{,}", "[1 2]", "{\"a\" 1}", "{\"a\":}", "{a:1}",
                    "{'a':1}", "[01]", "[-]", "[1.]", "[.5]", "[1e]", "[1e+]", "[+1]", "[0x10]",
                    "[NaN]", "[Infinity]", "[tru]", "[nul]", "[True]", "[null1]", "1 2", "{} {}",
                    "[1]x", "\"abc", "[\"a\nb\"]", "[\"\t\"]", "{\"a\":1]", "[1}", "]", "}",
                    "[\"\\x\"]", "[\"\\u12\"]", "[\"\\u12G4\"]", "[\"\\\"]", "[\"\\U0041\"]",
                    "\u{FEFF}1", "[1,2", "{\"a\"", "{\"a\":1"] {
            assertError(bad)
        }
    }

    func testInvalidUTF8() {
        let cases: [[UInt8]] = [
            [0x22, 0xFF, 0x22],                          // invalid byte
            [0x22, 0xC3, 0x22],                          // truncated sequence
            [0x22, 0x80, 0x22],                          // lone continuation
            [0x22, 0xC0, 0xAF, 0x22],                    // overlong '/'
            [0x22, 0xE0, 0x80, 0xAF, 0x22],              // overlong
            [0x22, 0xED, 0xA0, 0x80, 0x22],              // UTF-8-encoded surrogate
            [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22],        // > U+10FFFF
            [0x22, 0x61, 0x5C, 0x6E, 0xE9, 0x22],        // invalid after an escape
            [0x5B, 0xC3, 0xA9, 0x5D],                    // non-ASCII outside a string
            Array("{\"k\u{e9}\":1}".utf8).map { $0 == 0xA9 ? 0x29 : $0 },  // broken key
        ]
        for c in cases { assertError(c) }
        XCTAssertEqual(try JSON.parse([0x22, 0xF4, 0x8F, 0xBF, 0xBF, 0x22]) as? String, "\u{10FFFF}")
        XCTAssertEqual(try JSON.parse([0x22, 0xEF, 0xBF, 0xBF, 0x22]) as? String, "\u{FFFF}")
    }

    func testLoneSurrogates() {
        for bad in [#""\uD800""#, #""\uDC00""#, #""\uD800x""#, #""\uD800\u0041""#, #""\uDBFF\uDBFF""#,
                    #""\uDE00\uD83D""#, #""\uD83D\""#, #""\uD83D\u""#] {
            assertError(bad)
        }
    }

    func testDeepNesting() throws {
        assertError(String(repeating: "[", count: 10_000))
        assertError(String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000))
        assertError(String(repeating: "{\"a\":", count: 10_000) + "1" + String(repeating: "}", count: 10_000))
        // 512 levels are fine, 513 are not.
        let ok = String(repeating: "[", count: 512) + String(repeating: "]", count: 512)
        XCTAssertNoThrow(try JSON.parse(ok))
        assertError(String(repeating: "[", count: 513) + String(repeating: "]", count: 513))
    }

    func testErrorOffsets() {
        XCTAssertThrowsError(try JSON.parse("[1,]")) { XCTAssertEqual(($0 as? JSONError)?.offset, 3) }
        XCTAssertThrowsError(try JSON.parse("  x")) { XCTAssertEqual(($0 as? JSONError)?.offset, 2) }
        XCTAssertThrowsError(try JSON.parse("[1] x")) { XCTAssertEqual(($0 as? JSONError)?.offset, 4) }
    }

    func testParseObjectWithExtraCapacityGivesTheSameValueWithRoomToGrow() throws {
        let text = Array(#"{"b":1,"a":{"x":[1,2,{"y":null}]},"c":"s","d":true,"e":2.5}"#.utf8)
        let plain = try JSON.parseObject(text)
        let roomy = try JSON.parseObject(text, extraCapacity: 3)
        XCTAssertEqual(try JSON.canonicalData(plain), try JSON.canonicalData(roomy))
        XCTAssertGreaterThanOrEqual(roomy.capacity, plain.count + 3, "room for _id, _rev, _deleted")
        XCTAssertThrowsError(try JSON.parseObject(Array("[1]".utf8), extraCapacity: 3))
        XCTAssertThrowsError(try JSON.parseObject(Array(#"{"a":1"#.utf8), extraCapacity: 3))
    }
}
