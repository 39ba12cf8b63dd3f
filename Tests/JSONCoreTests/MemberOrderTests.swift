import Foundation
import XCTest
import JSONCore

/// The member order of JSON text (what CouchDB keeps and its collation compares) and the writer
/// that follows it.
final class MemberOrderTests: XCTestCase {
    private func order(_ text: String) -> JSONMemberOrder? { JSONMemberOrder.unsorted(in: Array(text.utf8)) }

    private func written(_ value: Any, _ text: String) throws -> String {
        var writer = JSONWriter()
        try writer.write(value, order: order(text))
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    func testSortedTextHasNoOrder() {
        XCTAssertNil(order(#"{"a":1,"b":{"c":[1,{"d":2,"e":3}]}}"#))
        XCTAssertNil(order(#"[1,"x",null,{"a":{}}]"#))
        XCTAssertNil(order(#""just a string""#))
        XCTAssertNil(order(#"{"a":1,"#))   // unreadable
        // UTF-16 order: U+FF5E (one unit, 0xFF5E) sorts after U+1F600 (surrogates 0xD83D…).
        XCTAssertNil(order("{\"\u{1F600}\":1,\"\u{FF5E}\":2}"))
        XCTAssertNotNil(order("{\"\u{FF5E}\":2,\"\u{1F600}\":1}"))
    }

    func testUnsortedObjectsAtAnyDepthAreKept() {
        XCTAssertEqual(order(#"{"b":2,"a":1}"#)?.memberNames, ["b", "a"])
        let nested = order(#"{"a":1, "list": [0, {"z": 1, "y": [ {"q":1,"p":2} ]}], "n": {"x": 1}}"#)
        XCTAssertEqual(nested?.memberNames, ["a", "list", "n"])
        XCTAssertNil(nested?.member("n"))   // sorted inside: nothing kept
        let element = nested?.member("list")?.element(1)
        XCTAssertEqual(element?.memberNames, ["z", "y"])
        XCTAssertEqual(element?.member("y")?.element(0)?.memberNames, ["q", "p"])
        XCTAssertNil(nested?.member("list")?.element(0))
        // Escaped names are decoded.
        XCTAssertEqual(order(#"{"\u0062":1,"\"a":2}"#)?.memberNames, ["b", "\"a"])
    }

    func testCompleteOrderKeepsSortedContainers() {
        let complete = JSONMemberOrder.complete(in: Array(#"{"_attachments":{"a.txt":{},"b.txt":{}},"x":[]}"#.utf8))
        XCTAssertEqual(complete?.memberNames, ["_attachments", "x"])
        XCTAssertEqual(complete?.member("_attachments")?.memberNames, ["a.txt", "b.txt"])
        XCTAssertEqual(complete?.member("x"), .array([]))
    }

    func testWriterFollowsTheOrderAndSortsTheRest() throws {
        let value: [String: Any] = ["b": 2, "a": 1, "c": ["y": 1, "x": [["k": 1, "j": 2]]]]
        XCTAssertEqual(try written(value, #"{"b":2,"a":1,"c":{"y":1,"x":[{"k":1,"j":2}]}}"#),
                       #"{"b":2,"a":1,"c":{"y":1,"x":[{"k":1,"j":2}]}}"#)
        // Members the order does not name (added since) follow, sorted; names it has but the value
        // lacks are passed over.
        XCTAssertEqual(try written(["z": 0, "b": 2, "a": 1, "m": 5], #"{"b":0,"gone":1,"a":0}"#),
                       #"{"b":2,"a":1,"m":5,"z":0}"#)
        // Numbers and strings are written canonically whatever the order.
        XCTAssertEqual(try written(["b": 1.5, "a": "é\n"], #"{"b":1.50,"a":"\u00e9\n"}"#), "{\"b\":1.5,\"a\":\"é\\n\"}")
        // Without an order: sorted, as canonical JSON.
        var writer = JSONWriter()
        try writer.write(["b": 2, "a": 1] as [String: Any], order: nil)
        XCTAssertEqual(String(decoding: writer.bytes, as: UTF8.self), #"{"a":1,"b":2}"#)
    }

    func testWriteObjectSkipsTopLevelKeysOnly() throws {
        var writer = JSONWriter()
        let doc: [String: Any] = ["_id": "x", "b": ["_id": 1, "z": 2], "a": 1]
        try writer.writeObject(doc, order: order(#"{"_id":"x","b":{"z":2,"_id":1},"a":1}"#)!,
                               skippingKey: { $0.hasPrefix("_") })
        XCTAssertEqual(String(decoding: writer.bytes, as: UTF8.self), #"{"b":{"z":2,"_id":1},"a":1}"#)
    }

    func testFragmentsAreWrittenAsGiven() throws {
        var writer = JSONWriter()
        try writer.write(["key": JSONFragment(Array(#"{"b":2,"a":1}"#.utf8)), "id": "5"] as [String: Any])
        XCTAssertEqual(String(decoding: writer.bytes, as: UTF8.self), #"{"id":"5","key":{"b":2,"a":1}}"#)
    }

    /// The member order a typed value carries is the one the text scanner finds in its text.
    func testTypedValueGivesTheTextsOrder() throws {
        for text in [#"{"a":1,"b":2}"#, #"{"b":2,"a":1}"#, #"{"a":{"d":1,"c":2},"b":[{"y":1,"x":2},3]}"#,
                     #"[{"b":1,"a":2},{"a":1}]"#, #"[1,"x",null]"#, #"{"z":{"a":{"c":1,"b":2}}}"#, "7"] {
            let typed = try JSON.value(text)
            XCTAssertEqual(JSONMemberOrder(unsortedIn: typed), JSONMemberOrder.unsorted(in: Array(text.utf8)), text)
            // Written back in its own order, a typed value is its text again.
            XCTAssertEqual(try JSON.string(typed, sortedKeys: false), text)
        }
    }

    /// A value put in an order writes, unsorted, what the dictionary writer writes in that order.
    func testOrderedValueWritesWhatTheOrderedWriterWrites() throws {
        for text in [#"{"b":2,"a":1}"#, #"{"a":{"d":1,"c":2},"b":[{"y":1,"x":2},3]}"#, #"[{"b":1,"a":2},{"z":0,"a":1}]"#] {
            let order = JSONMemberOrder.unsorted(in: Array(text.utf8))
            var writer = JSONWriter()
            try writer.write(try JSON.parse(text), order: order)
            let typed = try JSON.value(text)
            XCTAssertEqual(try JSON.string(typed.ordered(by: order), sortedKeys: false), String(decoding: writer.bytes, as: UTF8.self), text)
            XCTAssertEqual(try JSON.string(typed.ordered(by: nil), sortedKeys: false), try JSON.string(typed, sortedKeys: true), text)
        }
        // An order naming only some members: the others follow, sorted.
        let partial = JSONMemberOrder.object([.init(name: "m", order: nil)])
        XCTAssertEqual(try JSON.string(try JSON.value(#"{"z":1,"a":2,"m":3}"#).ordered(by: partial), sortedKeys: false),
                       #"{"m":3,"a":2,"z":1}"#)
    }
}
