import Foundation
import XCTest
@testable import CouchbaseLite

/// The 1.x API's view queries on the engine the listener answers CouchDB with: limit and skip
/// count reduced rows (as 1.x's ForestDB storage, .NET and CouchDB), keys are ranges of their
/// own (document-ID bounds apply per key), raw and ASCII collations, linked documents named by
/// `_rev`, the exclusive end with a document ID, and the offset.
final class ViewCouchDBSemanticsTests: DatabaseTestCase {
    override var databaseName: String { "couchviews" }

    private func put(_ id: String, _ props: [String: Any]) throws {
        try db.document(withID: id)!.putProperties(props)
    }

    private func keyTexts(_ e: CBLQueryEnumerator) -> [String] {
        e.map { String(decoding: $0.keyJSON, as: UTF8.self) }
    }

    func testLimitAndSkipCountGroupedRows() throws {
        for i in 1...6 { try put("d\(i)", ["n": i]) }
        let view = db.viewNamed("twice")
        // Two rows per document: a limit on the map rows would cut a group in half.
        view.setMapBlock({ doc, emit in emit(doc["n"]!, doc["n"]); emit(doc["n"]!, doc["n"]) },
                         reduce: { _, values, _ in CBLView.totalValues(values) }, version: "1")
        let query = view.createQuery()
        query.groupLevel = 1
        query.limit = 3
        XCTAssertEqual(try query.run().map { $0.value as? Double }, [2, 4, 6])
        query.skip = 4
        XCTAssertEqual(try query.run().map { $0.key as? Int }, [5, 6])
        query.skip = 0
        query.limit = 1
        query.descending = true
        XCTAssertEqual(try query.run().map { $0.value as? Double }, [12])
        // Ungrouped: one row, which a skip passes over.
        let total = view.createQuery()
        XCTAssertEqual(try total.run().map { $0.value as? Double }, [42])
        total.skip = 1
        XCTAssertEqual(try total.run().count, 0)
    }

    func testKeysAreRangesWithDocumentIDBoundsAndOrder() throws {
        for i in 0..<30 { try put(String(format: "doc%02d", i), ["k": i % 3]) }
        let view = db.viewNamed("mod")
        view.setMapBlock({ doc, emit in emit(doc["k"]!, nil) }, version: "1")
        let query = view.createQuery()
        query.keys = [2, 0]
        query.startKeyDocID = "doc03"
        query.endKeyDocID = "doc09"
        // For each key in the keys' order, its rows between the two document IDs.
        XCTAssertEqual(try query.run().map(\.documentID), ["doc05", "doc08", "doc03", "doc06", "doc09"])
        query.descending = true
        query.startKeyDocID = "doc09"
        query.endKeyDocID = "doc03"
        XCTAssertEqual(try query.run().map(\.documentID), ["doc08", "doc05", "doc09", "doc06", "doc03"])
        query.skip = 1
        query.limit = 3
        XCTAssertEqual(try query.run().map(\.documentID), ["doc05", "doc09", "doc06"])
    }

    func testRawAndASCIICollations() throws {
        let values: [Any] = [1, false, NSNull(), true, ["a": 1], ["a"], "A", "a", "B", "b"]
        for (i, value) in values.enumerated() { try put("v\(i)", ["foo": value]) }
        let view = db.viewNamed("collated")
        view.setMapBlock({ doc, emit in emit(doc["foo"]!, nil) }, version: "1")
        XCTAssertEqual(view.collation, .unicode)
        XCTAssertEqual(keyTexts(try view.createQuery().run()),
                       ["null", "false", "true", "1", "\"a\"", "\"A\"", "\"b\"", "\"B\"", "[\"a\"]", "{\"a\":1}"])
        view.collation = .raw
        XCTAssertEqual(keyTexts(try view.createQuery().run()),
                       ["1", "false", "null", "true", "{\"a\":1}", "[\"a\"]", "\"A\"", "\"B\"", "\"a\"", "\"b\""])
        let range = view.createQuery()
        range.startKey = "Z"
        range.endKey = "a"
        XCTAssertEqual(keyTexts(try range.run()), ["\"a\""])
        view.collation = .ascii
        XCTAssertEqual(keyTexts(try view.createQuery().run()),
                       ["null", "false", "true", "1", "\"A\"", "\"B\"", "\"a\"", "\"b\"", "[\"a\"]", "{\"a\":1}"])
        // Grouping follows the view's collation too.
        let grouped = db.viewNamed("collated-count")
        grouped.setMapBlock({ doc, emit in if doc["foo"] is String { emit(doc["foo"]!, 1) } },
                            reduce: { _, values, _ in values.count }, version: "1")
        grouped.collation = .raw
        let groups = grouped.createQuery()
        groups.groupLevel = 1
        XCTAssertEqual(try groups.run().map { $0.key as? String }, ["A", "B", "a", "b"])
    }

    func testLinkedDocumentByRevisionAlone() throws {
        let doc = db.document(withID: "linked")!
        let first = try doc.putProperties(["v": 1]).revisionID!
        try doc.update { rev in rev["v"] = 2; rev["prev"] = first; return true }
        let view = db.viewNamed("prev")
        // CouchDB's rule: `_rev` without `_id` names a revision of the emitting document.
        view.setMapBlock({ doc, emit in emit(doc["_id"]!, ["_rev": doc["prev"] ?? doc["_rev"]!]) }, version: "1")
        let query = view.createQuery()
        query.prefetch = true
        let row = try query.run().row(at: 0)
        XCTAssertEqual(row.documentProperties?["v"] as? Int, 1)
        XCTAssertEqual(row.documentRevisionID, first)
        XCTAssertEqual(row.documentID, "linked")
    }

    func testExclusiveEndWithDocumentIDAndOffset() throws {
        for i in 0..<10 { try put("d\(i)", ["k": i < 5 ? "a" : "b"]) }
        let view = db.viewNamed("ab")
        view.setMapBlock({ doc, emit in emit(doc["k"]!, nil) }, version: "1")
        let query = view.createQuery()
        query.endKey = "b"
        query.endKeyDocID = "d7"
        query.inclusiveEnd = false
        // The end is the pair ("b", "d7"), excluded: the "b" rows before d7 stay.
        XCTAssertEqual(try query.run().map(\.documentID), ["d0", "d1", "d2", "d3", "d4", "d5", "d6"])
        query.inclusiveEnd = true
        XCTAssertEqual(try query.run().count, 8)

        let paged = view.createQuery()
        paged.startKey = "b"
        paged.startKeyDocID = "d6"
        paged.skip = 1
        paged.countsOffset = true
        let result = try paged.run()
        XCTAssertEqual(result.map(\.documentID), ["d7", "d8", "d9"])
        XCTAssertEqual(result.offset, 7)   // d0…d5 come before ("b", "d6"), one skipped
        XCTAssertNil(try view.createQuery().run().offset)
    }
}
