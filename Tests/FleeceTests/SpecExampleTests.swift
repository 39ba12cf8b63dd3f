import XCTest
import JSONCore
@testable import Fleece

/// Byte-exact examples from cbl2-format.md §6.2/§6.8 and from Fleece's own encoder tests.
final class SpecExampleTests: XCTestCase {
    private func encode(_ build: (inout FleeceEncoder) -> Void,
                        sharedKeys: SharedKeys? = nil,
                        doubles: FleeceDoubleEncoding = .liteCore) throws -> [UInt8] {
        var e = FleeceEncoder(sharedKeys: sharedKeys, doubleEncoding: doubles)
        build(&e)
        return try e.finish()
    }

    private func json(_ text: String, sharedKeys: SharedKeys? = nil,
                      doubles: FleeceDoubleEncoding = .liteCore) throws -> [UInt8] {
        var e = FleeceEncoder(sharedKeys: sharedKeys, doubleEncoding: doubles)
        try e.writeJSON(Array(text.utf8))
        return try e.finish()
    }

    func testFooExample() throws {
        // §6.8: {"foo":123} without shared keys.
        XCTAssertEqual(hex(try json(#"{"foo":123}"#)), "43666F6F7001800300 7B8003".replacingOccurrences(of: " ", with: ""))
        let doc = try FleeceDocument(bytes: try json(#"{"foo":123}"#))
        XCTAssertEqual(doc.root["foo"]?.intValue, 123)
        XCTAssertEqual(doc.root.toJSON(), #"{"foo":123}"#)
    }

    func testFiftySixByteExample() throws {
        let sk = SharedKeys()
        let text = #"{"name":"Lue","age":3000,"tags":["a","bc"],"pi":3.14,"ok":true,"neg":-5}"#
        let out = try json(text, sharedKeys: sk)
        let expected = bytes("""
            43 4C 75 65  19 B8 0B 00  42 62 63 00  60 02 41 61 80 04
            28 00 1F 85 EB 51 B8 1E 09 40  70 06  00 00 80 10  00 01 80 10
            00 02 80 0E  00 03 80 0D  00 04 38 00  00 05 0F FB  80 0D
            """)
        XCTAssertEqual(out.count, 56)
        XCTAssertEqual(hex(out), hex(expected))
        XCTAssertEqual(sk.allKeys(), ["name", "age", "tags", "pi", "ok", "neg"])
        XCTAssertEqual(hex(sk.stateData()), hex(bytes("""
            44 6E 61 6D 65 00 43 61 67 65 44 74 61 67 73 00 42 70 69 00 42 6F 6B 00
            43 6E 65 67 60 06 80 0F 80 0D 80 0C 80 0A 80 09 80 08 80 07
            """)))
        // Reading it back, with keys in stored (code) order.
        let doc = try FleeceDocument(bytes: out, sharedKeys: sk)
        XCTAssertEqual(doc.root.toJSON(), #"{"name":"Lue","age":3000,"tags":["a","bc"],"pi":3.14,"ok":true,"neg":-5}"#)
        XCTAssertEqual(doc.root["pi"]?.doubleValue, 3.14)
        XCTAssertEqual(doc.root["tags"]?[1]?.stringValue, "bc")
        // The same through write(Any) (keys sorted, so codes are assigned in another order).
        let reloaded = try SharedKeys(stateData: sk.stateData())
        XCTAssertEqual(reloaded.allKeys(), sk.allKeys())
        var e = FleeceEncoder(sharedKeys: reloaded)
        try e.write(["name": "Lue", "age": 3000, "tags": ["a", "bc"], "pi": 3.14, "ok": true, "neg": -5] as [String: Any])
        let viaAny = try e.finish()
        XCTAssertEqual(try FleeceDocument(bytes: viaAny, sharedKeys: reloaded).root.toJSON(), doc.root.toJSON())
    }

    func testIntegerExamples() throws {
        // §6.2: non-negative → unsigned, minimal bytes; negative → signed, minimal bytes.
        XCTAssertEqual(hex(try json("3000")), "19B80B008002")
        XCTAssertEqual(hex(try json("1099511627776")), "1D00000000000100" + "8004")   // 2^40
        XCTAssertEqual(hex(try json("-5")), "0FFB")
        XCTAssertEqual(hex(try json("-3000")), "1148F4008002")
        XCTAssertEqual(hex(try json("2047")), "07FF")
        XCTAssertEqual(hex(try json("-2048")), "0800")
        XCTAssertEqual(hex(try json("2048")), "190008008002")
        XCTAssertEqual(hex(try json("18446744073709551615")), "1FFFFFFFFFFFFFFFFF008005")
        XCTAssertEqual(hex(try json("-9223372036854775808")), "170000000000000080008005")
        // Fleece's EncoderTests: signed writes (reached through integral doubles, which
        // Encoder::writeDouble turns into signed ints).
        XCTAssertEqual(hex(try encode { $0.writeDouble(2048) }), "110008008002")
        XCTAssertEqual(hex(try encode { $0.writeInt(-2049) }), "11FFF7008002")
        XCTAssertEqual(hex(try encode { $0.writeDouble(12345678) }), "134E61BC00008003")
        XCTAssertEqual(hex(try encode { $0.writeInt(-12345678) }), "13B29E43FF008003")
        XCTAssertEqual(hex(try encode { $0.writeInt(-0x1122334455667788) }), "177888 99AABBCCDDEE00 8005".replacingOccurrences(of: " ", with: ""))
        // writeInt of a non-negative value follows the JSON rule: unsigned.
        XCTAssertEqual(hex(try encode { $0.writeInt(2048) }), "190008008002")
        XCTAssertEqual(hex(try encode { $0.writeInt(0x1122334455667788) }), "1F887766554433221100" + "8005")
        XCTAssertEqual(hex(try encode { $0.writeUInt(0xCCBBAA9988776655) }), "1F5566778899AABBCC008005")
    }

    func testFloatExamplesAsInSpec() throws {
        // §6.2 as written (FleeceDoubleEncoding.preserveDoubles).
        XCTAssertEqual(hex(try json("1.5", doubles: .preserveDoubles)), "24000000C03F8003")
        XCTAssertEqual(hex(try json("0.1", doubles: .preserveDoubles)), "28009A9999999999B93F8005")
        XCTAssertEqual(hex(try json("1.0", doubles: .preserveDoubles)), "24000000803F8003")
        XCTAssertEqual(hex(try json("3.14", doubles: .preserveDoubles)), "28001F85EB51B81E09408005")
        let d = try FleeceDocument(bytes: try json("1.0", doubles: .preserveDoubles)).root
        XCTAssertTrue(d.isDouble)
        XCTAssertFalse(d.isInteger)
        XCTAssertEqual(d.toJSON(), "1.0")
    }

    func testFloatExamplesLikeLiteCore() throws {
        // Fleece's Encoder::writeDouble (what JSONConverter uses): integral → int,
        // float-representable → 0x20 float, else double. Bytes from Fleece's EncoderTests.
        XCTAssertEqual(hex(try json("1.5")), "20000000C03F8003")
        XCTAssertEqual(hex(try json("0.5")), "20000000003F8003")
        XCTAssertEqual(hex(try json("-0.5")), "2000000000BF8003")
        XCTAssertEqual(hex(try json("0.1")), "28009A9999999999B93F8005")
        XCTAssertEqual(hex(try json("1.0")), "0001")
        XCTAssertEqual(hex(try json("-2048.0")), "0800")
        XCTAssertEqual(hex(try json("3000.0")), "11B80B008002")   // signed, unlike JSON 3000
        XCTAssertEqual(hex(try encode { $0.writeDouble(Double.pi) }), "2800182D4454FB2109408005")
        XCTAssertEqual(hex(try encode { $0.writeFloat(Float(Double.pi)) }), "2000DB0F49408003")
        XCTAssertEqual(hex(try encode { $0.writeDouble(0x223344) }), "124433228002")
        XCTAssertEqual(hex(try encode { $0.writeFloat(-2048) }), "0800")
        // 1e19 is beyond Int64, not a float: a double. 2^64 is a float.
        XCTAssertEqual(hex(try json("10000000000000000000")), "1F0000E8890423C78A008005")
        XCTAssertEqual(hex(try json("18446744073709551616")), "20000000805F8003")
        XCTAssertEqual(hex(try json("1e19")), "2800003D9160E458E1438005")
    }

    func testSpecialsAndStrings() throws {
        XCTAssertEqual(hex(try json("null")), "3000")
        XCTAssertEqual(hex(try json("false")), "3400")
        XCTAssertEqual(hex(try json("true")), "3800")
        XCTAssertEqual(hex(try json(#""""#)), "4000")
        XCTAssertEqual(hex(try json(#""a""#)), "4161")
        XCTAssertEqual(hex(try json(#""ab""#)), "426162008002")
        XCTAssertEqual(hex(try json(#""abcdefghijklmn""#)), "4E6162636465666768696A6B6C6D6E008008")
        XCTAssertEqual(hex(try json(#""abcdefghijklmno""#)), "4F0F6162636465666768696A6B6C6D6E6F008009")
        XCTAssertEqual(hex(try json(#""abcdefghijklmnop""#)), "4F106162636465666768696A6B6C6D6E6F708009")
        XCTAssertEqual(hex(try json(#""müßchop""#)), "496DC3BCC39F63686F708005")
        XCTAssertEqual(hex(try encode { $0.writeData([1, 2, 3]) }), "530102038002")
    }

    func testCollections() throws {
        XCTAssertEqual(hex(try json("[]")), "6000")
        XCTAssertEqual(hex(try json("{}")), "7000")
        XCTAssertEqual(hex(try json("[null]")), "600130008002")
        XCTAssertEqual(hex(try json(#"["a","hello"]"#)), "4568656C6C6F600241618005" + "8003")
        // De-duplicated strings (Fleece's SharedStrings test).
        XCTAssertEqual(hex(try json(#"["a","hello","a","hello"]"#)), "4568656C6C6F600441618005416180078005")
        XCTAssertEqual(hex(try json(#"{"f":42}"#)), "70014166002A8003")
        XCTAssertEqual(hex(try json(#"{"o-o":42}"#)), "436F2D6F70018003002A8003")
    }

    func testDictKeysAreSorted() throws {
        let sk = try SharedKeys(stateData: SharedKeys().stateData())
        _ = sk.encodeKey("zz")          // code 0
        _ = sk.encodeKey("aa")          // code 1
        let out = try json(#"{"b":1,"aa":2,"a b":3,"zz":4,"":5,"ab":6}"#, sharedKeys: sk)
        let doc = try FleeceDocument(bytes: out, sharedKeys: sk)
        // Codes first (zz=0, aa=1, then new: b=2, ""=3, ab=4), then the string key "a b".
        XCTAssertEqual(doc.root.dictValue?.keys, ["zz", "aa", "b", "", "ab", "a b"])
        XCTAssertEqual(doc.root["a b"]?.intValue, 3)
        XCTAssertEqual(doc.root[""]?.intValue, 5)
        let plain = try FleeceDocument(bytes: try json(#"{"b":1,"aa":2,"a":3,"":4,"ab":5,"abc":6}"#))
        XCTAssertEqual(plain.root.dictValue?.keys, ["", "a", "aa", "ab", "abc", "b"])
        for (k, v) in [("", 4), ("a", 3), ("aa", 2), ("ab", 5), ("abc", 6), ("b", 1)] {
            XCTAssertEqual(plain.root[k]?.intValue, Int64(v), k)
        }
        XCTAssertNil(plain.root["zzz"])
    }

    func testDuplicateJSONKeysKeepTheLastValue() throws {
        let doc = try FleeceDocument(bytes: try json(#"{"a":1,"b":2,"a":3}"#))
        XCTAssertEqual(doc.root.toJSON(), #"{"a":3,"b":2}"#)
        let sk = SharedKeys()
        let doc2 = try FleeceDocument(bytes: try json(#"{"x":[1],"y":2,"x":{"z":true}}"#, sharedKeys: sk), sharedKeys: sk)
        XCTAssertEqual(doc2.root.toJSON(), #"{"x":{"z":true},"y":2}"#)
        XCTAssertEqual((try JSON.parse(#"{"a":1,"a":3}"#) as? [String: Any])?["a"] as? Int, 3)   // JSONCore agrees
    }

    func testSharedKeyEligibility() throws {
        let sk = SharedKeys()
        XCTAssertEqual(sk.encodeKey("name"), 0)
        XCTAssertEqual(sk.encodeKey("name"), 0)
        XCTAssertEqual(sk.encodeKey("with_under-score9"), nil)     // 17 bytes
        XCTAssertEqual(sk.encodeKey("with_under-scor9"), 1)        // 16 bytes
        XCTAssertNil(sk.encodeKey("has space"))
        XCTAssertNil(sk.encodeKey("naïve"))
        XCTAssertNil(sk.encodeKey("a.b"))
        XCTAssertEqual(sk.code(for: "name"), 0)
        XCTAssertNil(sk.code(for: "other"))
        XCTAssertEqual(sk.string(forCode: 1), "with_under-scor9")
        XCTAssertNil(sk.string(forCode: 2))
        for i in 2..<SharedKeys.maxCount { XCTAssertEqual(sk.encodeKey("k\(i)"), i) }
        XCTAssertNil(sk.encodeKey("onemore"))
        XCTAssertEqual(sk.count, 2048)
        // A full table still encodes known keys, and long keys stay strings.
        let out = try json(#"{"k5":1,"onemore":2,"name":3}"#, sharedKeys: sk)
        let doc = try FleeceDocument(bytes: out, sharedKeys: sk)
        XCTAssertEqual(doc.root.dictValue?.keys, ["name", "k5", "onemore"])
    }
}
