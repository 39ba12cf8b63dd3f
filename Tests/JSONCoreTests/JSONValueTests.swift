import Foundation
import XCTest
@testable import JSONCore

/// The package's one typed JSON value: read from bytes in member order, written canonically or as
/// ordered, exact numbers, JSON's equality.
final class JSONValueTests: XCTestCase {
    private func text(_ v: JSONValue, sorted: Bool) throws -> String { try JSON.string(v, sortedKeys: sorted) }

    func testObjectsKeepMemberOrderAndWriteCanonicallyWhenAsked() throws {
        let v = try JSON.value(#"{"zebra":1,"apple":{"y":true,"b":null},"Mango":[3,"x"]}"#)
        XCTAssertEqual(Array(v.objectValue!.keys), ["zebra", "apple", "Mango"])
        XCTAssertEqual(try text(v, sorted: false), #"{"zebra":1,"apple":{"y":true,"b":null},"Mango":[3,"x"]}"#)
        XCTAssertEqual(try text(v, sorted: true), #"{"Mango":[3,"x"],"apple":{"b":null,"y":true},"zebra":1}"#)
    }

    func testCanonicalFormMatchesTheFoundationWriterByteForByte() throws {
        // UTF-16 order puts U+FF21 after U+1F600 (a surrogate pair); numbers in 1.x's forms.
        let texts = [#"{"\uFF21":1,"😀":2,"a":0.1,"b":1e300,"c":-0,"d":12345678901234567,"e":"\u0001\"\\/"}"#,
                     #"[{"b":[],"a":{}},1.5,-2,true,false,null,"é"]"#]
        for t in texts {
            let typed = try JSON.data(JSON.value(t), sortedKeys: true)
            let foundation = try JSON.canonicalData(JSON.parse(t))
            XCTAssertEqual(String(decoding: typed, as: UTF8.self), String(decoding: foundation, as: UTF8.self), t)
        }
    }

    func testNumbersStayExact() throws {
        XCTAssertEqual(try JSON.value("9223372036854775807"), .int(Int64.max))
        XCTAssertEqual(try JSON.value("-9223372036854775808"), .int(Int64.min))
        XCTAssertEqual(try JSON.value("9223372036854775808"), .double(9223372036854775808.0))
        if case .double(let d) = try JSON.value("2.0") { XCTAssertEqual(d, 2) } else { XCTFail("2.0 is a double") }
        if case .int(let i) = try JSON.value("2") { XCTAssertEqual(i, 2) } else { XCTFail("2 is an integer") }
        XCTAssertEqual(try text(.double(2.0), sorted: true), String(decoding: try JSON.canonicalData(2.0), as: UTF8.self))
        XCTAssertEqual(try text(.double(0.1), sorted: true), "0.1")
        XCTAssertEqual(try text(.uint(UInt64.max), sorted: true), "18446744073709551615")
    }

    func testEqualityIsJSONs() throws {
        XCTAssertEqual(JSONValue.int(1), .double(1.0))
        XCTAssertEqual(Set<JSONValue>([.int(1), .double(1.0), .uint(1)]).count, 1)
        XCTAssertNotEqual(JSONValue.int(1), .bool(true))
        XCTAssertNotEqual(JSONValue.int(1), .string("1"))
        let a = try JSON.value(#"{"a":1,"b":[1,2]}"#), b = try JSON.value(#"{"b":[1,2.0],"a":1.0}"#)
        XCTAssertEqual(a, b)
        XCTAssertEqual(a.hashValue, b.hashValue)
        XCTAssertNotEqual(try JSON.value("[1,2]"), try JSON.value("[2,1]"))
    }

    func testRepeatedMemberKeepsFirstPlaceAndLastValue() throws {
        let v = try JSON.value(#"{"a":1,"b":2,"a":3}"#)
        XCTAssertEqual(try text(v, sorted: false), #"{"a":3,"b":2}"#)
    }

    func testBadInputIsRefusedWithTheReadersErrors() {
        for bad in ["", "{", #"{"a":1,}"#, "[1] x", "01", "\"\u{1}\"", #""\ud800""#, "tru", "1e999",
                    String(repeating: "[", count: 600) + String(repeating: "]", count: 600)] {
            XCTAssertThrowsError(try JSON.value(bad), bad)
        }
        XCTAssertThrowsError(try JSON.value([0x22, 0xFF, 0x22]))   // invalid UTF-8 in a string
        XCTAssertThrowsError(try JSON.object(Array("[1]".utf8)))
    }

    func testFoundationBridgeKeepsBooleansAndIntegersApart() throws {
        let dict: [String: Any] = ["t": NSNumber(value: true), "one": NSNumber(value: 1), "f": Float(0.1),
                                   "n": NSNull(), "a": [1, "x"] as [Any], "nested": ["k": 2.5]]
        let v = try JSONValue(foundation: dict)
        XCTAssertEqual(v["t"], .bool(true))
        XCTAssertEqual(v["one"], .int(1))
        XCTAssertEqual(v["one"]?.boolValue, nil)
        XCTAssertEqual(try text(v["f"]!, sorted: true), "0.1")
        XCTAssertEqual(v["n"], .null)
        XCTAssertEqual(v["a"], [1, "x"])
        XCTAssertEqual(v["nested"]?["k"], .double(2.5))
        XCTAssertThrowsError(try JSONValue(foundation: ["d": Date()]))
        XCTAssertThrowsError(try JSONValue(foundation: Double.nan))
        let back = v.foundation as! [String: Any]
        XCTAssertEqual(back["t"] as? Bool, true)
        XCTAssertEqual(back["one"] as? Int, 1)
        XCTAssertTrue(back["n"] is NSNull)
    }

    func testWriterSkipsMembersItWasToldTo() throws {
        let o = try JSON.object(Array(#"{"_id":"x","b":1,"_rev":"1-a","a":2}"#.utf8))
        var w = JSONWriter()
        try w.writeObject(o, sortedKeys: true, skippingKey: { $0.hasPrefix("_") })
        XCTAssertEqual(String(decoding: w.bytes, as: UTF8.self), #"{"a":2,"b":1}"#)
    }
}
