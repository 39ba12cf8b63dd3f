import JSONCore
import XCTest
@testable import CouchbaseLite

/// Query rows read simple key and value texts without the general JSON parser; the result
/// must be exactly what `JSON.parse` gives for every text.
final class QueryRowValueTests: XCTestCase {
    func testSimpleTextsParseAsTheGeneralParserDoes() throws {
        let texts = [#""Customer 12 Springfield""#, #""""#, #""a""#, "0", "7", "-7", "413", "123456789012345678",
                     "-123456789012345678"]
        for text in texts {
            let bytes = Array(text.utf8)
            let fast = try XCTUnwrap(LazyJSONValue.parseSimple(bytes), text)
            let general = try JSON.parse(bytes)
            XCTAssertEqual(type(of: fast) == String.self, type(of: general) == String.self, text)
            XCTAssertEqual(fast as? String, general as? String, text)
            XCTAssertEqual(fast as? Int, general as? Int, text)
            XCTAssertEqual(LazyJSONValue(text: bytes).value as? String, general as? String, text)
            XCTAssertEqual(LazyJSONValue(text: bytes).value as? Int, general as? Int, text)
        }
    }

    func testOtherTextsFallBackToTheGeneralParser() throws {
        let texts = [#""caf\u00e9""#, #""tab\t""#, "\"caf\u{e9}\"", "-0", "007", "1.5", "1e3", "1234567890123456789",
                     "[1,2]", #"{"a":1}"#, "true", "null", "\"", "-", "*"]
        for text in texts {
            XCTAssertNil(LazyJSONValue.parseSimple(Array(text.utf8)), text)
        }
        XCTAssertEqual(LazyJSONValue(text: Array(#""caf\u00e9""#.utf8)).value as? String, "caf\u{e9}")
        XCTAssertEqual(LazyJSONValue(text: Array("1.5".utf8)).value as? Double, 1.5)
        XCTAssertEqual(LazyJSONValue(text: Array("[1,2]".utf8)).value as? [Int], [1, 2])
        XCTAssertNil(LazyJSONValue(text: Array("nonsense".utf8)).value)
    }

    func testStarValueIsReportedWithoutParsing() {
        XCTAssertTrue(LazyJSONValue(text: Array("*".utf8)).valueUnlessStar.isStar)
        let plain = LazyJSONValue(text: Array("42".utf8)).valueUnlessStar
        XCTAssertFalse(plain.isStar)
        XCTAssertEqual(plain.value as? Int, 42)
    }
}
