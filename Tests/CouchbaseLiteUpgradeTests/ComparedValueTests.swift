// Imports CouchbaseLiteUpgrade only (not JSONCore): `JSONValue` and `JSONObject` must come with it.
import CouchbaseLiteUpgrade
import Foundation
import XCTest

/// The comparison's values: JSONCore's `JSONValue` (re-exported) or MISSING.
final class ComparedValueTests: XCTestCase {
    func testJSONValueAndJSONObjectAreReExported() {
        let members: JSONObject = ["b": [true, nil, 1.5], "a": 1]
        let value: JSONValue = .object(members)
        XCTAssertEqual(ComparedValue(value).json, #"{"a":1,"b":[true,null,1.5]}"#)
        XCTAssertEqual(ComparedValue(nil), .missing)
        XCTAssertNil(ComparedValue.missing.jsonValue)
        XCTAssertEqual(ComparedValue.missing.json, "MISSING")
        XCTAssertEqual(ComparedValue.missing.typeName, "missing")
        XCTAssertEqual(ComparedValue.value(.null).typeName, "null")
    }

    func testNumbersCompareByValueAndBooleansAreNotNumbers() {
        XCTAssertEqual(ComparedValue.value(.int(1)), .value(.double(1.0)))
        XCTAssertEqual(Set([ComparedValue.value(.int(1)), .value(.double(1.0))]).count, 1)
        XCTAssertNotEqual(ComparedValue.value(.bool(true)), .value(.int(1)))
        XCTAssertNotEqual(ComparedValue.value(.null), .missing)
        XCTAssertEqual(ComparedValue.value(.double(2.0)).json, "2")
        XCTAssertEqual(ComparedValue.value(.double(0.5)).json, "0.5")
    }

    func testRowsEncodeMissingAsNullWithAFlag() throws {
        let row = ComparedRow(documentID: "d", key: .missing, value: .value(["n": 2.0]), index: 3)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let text = String(decoding: try encoder.encode(row), as: UTF8.self)
        XCTAssertEqual(text, #"{"id":"d","index":3,"key":null,"keyMissing":true,"value":{"n":2}}"#)
        let back = try JSONDecoder().decode(ComparedRow.self, from: Data(text.utf8))
        XCTAssertEqual(back, row)
    }

    func testFiltersRoundTripThroughCodable() throws {
        let d = MapDescription(filters: [.init(path: "type", value: "task"), .init(path: "n", value: 3)], keyPaths: ["k"])
        let back = try JSONDecoder().decode(MapDescription.self, from: try JSONEncoder().encode(d))
        XCTAssertEqual(back, d)
    }
}
