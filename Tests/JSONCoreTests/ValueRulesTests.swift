import Foundation
import XCTest
import JSONCore

final class ValueRulesTests: XCTestCase {
    func testSwiftIntIsNeverABoolean() {
        XCTAssertEqual(canon(1), "1")
        XCTAssertEqual(canon(0), "0")
        XCTAssertEqual(canon([1, 0, true, false] as [Any]), "[1,0,true,false]")
        XCTAssertEqual(canon(["one": 1, "t": true]), #"{"one":1,"t":true}"#)
    }

    func testNSNumberBooleansAndIntegers() {
        XCTAssertEqual(canon(NSNumber(value: true)), "true")
        XCTAssertEqual(canon(NSNumber(value: false)), "false")
        XCTAssertEqual(canon(true as NSNumber), "true")
        XCTAssertEqual(canon(NSNumber(value: 1)), "1")
        XCTAssertEqual(canon(NSNumber(value: 0)), "0")
        XCTAssertEqual(canon(NSNumber(value: 2)), "2")
        XCTAssertEqual(canon(NSNumber(value: Int8(1))), "1")       // 'c'-like char is an integer
        XCTAssertEqual(canon(NSNumber(value: UInt8(1))), "1")
        XCTAssertEqual(canon(NSNumber(value: 2.5)), "2.5")
        XCTAssertEqual(canon(NSNumber(value: 1.0)), "1.0")
        XCTAssertEqual(canon(NSNumber(value: Int64.max)), "9223372036854775807")
        XCTAssertEqual(canon(NSDecimalNumber(string: "1.5")), "1.5")
        XCTAssertEqual(canon([NSNumber(value: true), NSNumber(value: 1), NSNumber(value: 1.5)]), "[true,1,1.5]")
    }

    func testJSONSerializationValuesRoundTrip() throws {
        let text = #"{"a":true,"b":1,"c":2.5,"d":false,"e":0,"f":1.0,"g":-3,"h":"s","i":null,"j":[true,1,0,false],"k":{"x":1e3},"l":9223372036854775807,"m":0.1}"#
        let foundation = try JSONSerialization.jsonObject(with: Data(text.utf8))
        let expected = #"{"a":true,"b":1,"c":2.5,"d":false,"e":0,"f":1.0,"g":-3,"h":"s","i":null,"j":[true,1,0,false],"k":{"x":1000.0},"l":9223372036854775807,"m":0.1}"#
        XCTAssertEqual(canon(foundation), expected)
        XCTAssertEqual(canon(try JSON.parse(text)), expected)
        XCTAssertTrue(JSON.isValid(foundation))
        // Our output parses back identically with JSONSerialization.
        let back = try JSONSerialization.jsonObject(with: Data(try JSON.canonicalData(foundation)))
        XCTAssertEqual(canon(back), expected)
        // Bridged Foundation containers.
        let nsDict = NSDictionary(dictionary: ["b": NSNumber(value: true), "a": NSArray(array: [NSNumber(value: 1), NSString(string: "x"), NSNull()])])
        XCTAssertEqual(canon(nsDict), #"{"a":[1,"x",null],"b":true}"#)
        let nsArray = NSMutableArray(array: [NSNumber(value: false), NSNumber(value: 7)])
        XCTAssertEqual(canon(nsArray), "[false,7]")
    }

    func testOptionalsAndTypedCollections() {
        let opt: Int? = nil
        let some: Int? = 5
        XCTAssertEqual(canon([opt as Any, some as Any, "x"]), "[null,5,\"x\"]")
        XCTAssertEqual(canon([1, nil, "a"] as [Any?]), #"[1,null,"a"]"#)
        XCTAssertEqual(canon(["b": nil, "a": 1] as [String: Any?]), #"{"a":1,"b":null}"#)
        XCTAssertEqual(canon(["x", "y"]), #"["x","y"]"#)
        XCTAssertEqual(canon([3, 1, 2]), "[3,1,2]")
        XCTAssertEqual(canon([1.5, 2.0]), "[1.5,2.0]")
        XCTAssertEqual(canon(["k": "v", "a": "b"]), #"{"a":"b","k":"v"}"#)
        XCTAssertEqual(canon(["k": [1, 2]]), #"{"k":[1,2]}"#)
        XCTAssertEqual(canon([["z": 1, "a": 2]]), #"[{"a":2,"z":1}]"#)
        XCTAssertEqual(canon(["a" as AnyHashable: 1]), #"{"a":1}"#)
        XCTAssertEqual(canon(CGFloat(1.5)), "1.5")
        XCTAssertEqual(canon(Decimal(string: "2.25")!), "2.25")
        XCTAssertEqual(canon(Optional<String>.none as Any), "null")
        XCTAssertTrue(JSON.isValid([1, nil] as [Any?]))
        XCTAssertTrue(JSON.isValid(["a": nil] as [String: Any?]))
    }

    func testInvalidValuesThrow() {
        struct Custom {}
        final class Obj {}
        let bad: [Any] = [Date(), Data([1, 2]), NSDate(), NSData(), Custom(), Obj(), Double.nan,
                          [1: "x"], NSDictionary(dictionary: [1: "x"]), ["a": Date()],
                          [[Date()]], ["ok": ["nested": Float.infinity]], URL(string: "http://x")!,
                          Set([1]), (1, 2)]
        for v in bad {
            XCTAssertThrowsError(try JSON.canonicalData(v), "\(type(of: v))") { XCTAssertTrue($0 is JSONError) }
            XCTAssertThrowsError(try JSON.data(v, sortedKeys: false))
            XCTAssertFalse(JSON.isValid(v), "\(type(of: v))")
        }
        XCTAssertThrowsError(try JSON.canonicalData(Date())) { error in
            XCTAssertTrue((error as? JSONError)?.message.contains("Date") ?? false)
            XCTAssertNil((error as? JSONError)?.offset)
        }
    }

    func testValidValues() {
        let good: [Any] = ["s", 1, 2.5, true, NSNull(), [Any](), [String: Any](), NSNumber(value: 3),
                           ["a": [1, ["b": NSNull()]]], Int8(1), UInt64.max, Float(1.5), "x"[...],
                           NSString(string: "n"), NSArray(array: [1]), NSDictionary(dictionary: ["k": 1])]
        for v in good {
            XCTAssertTrue(JSON.isValid(v), "\(type(of: v))")
            XCTAssertNoThrow(try JSON.canonicalData(v))
        }
    }

    // (A cyclic NSMutableArray cannot be tested on Linux: swift-corelibs-foundation converts
    // NSArray elements that are themselves NSArrays to Swift arrays on every element access,
    // recursively, so merely reading such a value never terminates.)
    func testDeepValuesThrowInsteadOfCrashing() {
        var deep: Any = 1
        for _ in 0..<600 { deep = [deep] }
        XCTAssertThrowsError(try JSON.canonicalData(deep))
        XCTAssertFalse(JSON.isValid(deep))
        var ok: Any = 1
        for _ in 0..<500 { ok = ["k": ok] }
        XCTAssertNoThrow(try JSON.canonicalData(ok))
        // Nested Foundation containers (converted one level at a time).
        let inner = NSMutableArray(array: [NSNumber(value: 1), NSDictionary(dictionary: ["b": NSNull(), "a": NSString(string: "s")])])
        let outer = NSMutableDictionary(dictionary: ["list": inner, "flag": NSNumber(value: false)])
        XCTAssertEqual(canon(outer), #"{"flag":false,"list":[1,{"a":"s","b":null}]}"#)
        XCTAssertTrue(JSON.isValid(outer))
    }
}
