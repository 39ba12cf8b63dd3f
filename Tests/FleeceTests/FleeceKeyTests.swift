import Foundation
import XCTest
@testable import Fleece

/// `FleeceKey` (a key prepared for many look-ups) must answer exactly like `dict[string]`.
final class FleeceKeyTests: XCTestCase {
    private func encode(_ json: String, _ sharedKeys: SharedKeys?) throws -> FleeceDocument {
        var e = sharedKeys.map { FleeceEncoder(sharedKeys: $0) } ?? FleeceEncoder()
        try e.writeJSON(Array(json.utf8))
        return try FleeceDocument(bytes: try e.finish(), sharedKeys: sharedKeys)
    }

    func testSameAnswersAsStringLookups() throws {
        let sk = SharedKeys()
        let docs = [
            try encode(#"{"name":"Lue","age":3000,"a b":1,"long-key-more-than-16":2,"":3}"#, sk),
            try encode(#"{"name":"Jasper","zip":"66840","other key":[1]}"#, sk),
            try encode(#"{"name":"no shared keys","age":7}"#, nil),
        ]
        let keys = ["name", "age", "a b", "long-key-more-than-16", "", "zip", "other key", "missing", "nam"].map(FleeceKey.init)
        for _ in 0..<2 {   // the second pass uses the resolved codes
            for doc in docs {
                let dict = try XCTUnwrap(doc.root.dictValue)
                for key in keys {
                    XCTAssertEqual(dict[key]?.toJSON(), dict[key.string]?.toJSON(), "key '\(key.string)'")
                }
            }
        }
    }

    func testKeyThatBecomesSharedLaterIsFound() throws {
        let sk = SharedKeys()
        let key = FleeceKey("late")
        let before = try encode(#"{"early":1}"#, sk)
        XCTAssertNil(before.root.dictValue?[key])          // resolved now: not in the table
        let after = try encode(#"{"late":2}"#, sk)         // adds "late" to the table
        XCTAssertEqual(after.root.dictValue?[key]?.intValue, 2)
        let other = SharedKeys()                           // another table: resolved again
        let elsewhere = try encode(#"{"x":0,"late":3}"#, other)
        XCTAssertEqual(elsewhere.root.dictValue?[key]?.intValue, 3)
    }
}
