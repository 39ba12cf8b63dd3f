import Foundation
import XCTest
@testable import CouchbaseLite

/// The changes feed the listener and the pusher share (`syncChanges`): each document once, at
/// its newest leaf revision, in sequence order, read page by page.
final class SyncChangesTests: DatabaseTestCase {
    override var databaseName: String { "changes" }

    private func feed(since: Int64 = 0, limit: Int? = nil, descending: Bool = false, allLeaves: Bool = false,
                      docIDs: [String]? = nil, activeOnly: Bool = false) throws -> [String] {
        try db.syncChanges(since: since, limit: limit, descending: descending, allLeaves: allLeaves, docIDs: docIDs,
                           activeOnly: activeOnly, includeDocs: false)
            .map { "\($0.docID)@\($0.sequence):\($0.revIDs.joined(separator: ","))" }
    }

    func testADocumentAppearsOnceAtItsNewestLeaf() throws {
        let a1 = try db.document(withID: "a")!.putProperties(["v": 1])       // seq 1
        let b1 = try db.document(withID: "b")!.putProperties(["v": 1])       // seq 2
        try db.forceInsert(docID: "a", history: ["2-aaaa", a1.revisionID!], properties: ["v": "x"])  // seq 3
        try db.forceInsert(docID: "a", history: ["2-bbbb", a1.revisionID!], properties: ["v": "y"])  // seq 4
        _ = try db.document(withID: "c")!.putProperties(["v": 1])             // seq 5
        let b2 = try db.existingDocument(withID: "b")!.putProperties(["v": 2, "_rev": b1.revisionID!])  // seq 6

        let b = "b@6:\(b2.revisionID!)"
        let c = "c@5:\(try XCTUnwrap(db.existingDocument(withID: "c")?.currentRevisionID))"
        XCTAssertEqual(try feed(), ["a@4:2-bbbb", c, b])
        XCTAssertEqual(try feed(allLeaves: true), ["a@4:2-bbbb,2-aaaa", c, b])
        XCTAssertEqual(try feed(since: 3), ["a@4:2-bbbb", c, b], "a's newest leaf is after 3")
        XCTAssertEqual(try feed(since: 4), [c, b])
        XCTAssertEqual(try feed(limit: 2), ["a@4:2-bbbb", c])
        XCTAssertEqual(try feed(descending: true), [b, c, "a@4:2-bbbb"])
        XCTAssertEqual(try feed(docIDs: ["b", "a"]), ["a@4:2-bbbb", b])

        // A deleted winner is skipped by active_only, and the limit still fills from later rows.
        try db.existingDocument(withID: "c")!.delete()                         // seq 7
        let deleted = try feed(limit: 2, activeOnly: true)
        XCTAssertEqual(deleted, ["a@4:2-bbbb", b])
    }

    func testPagesThroughAThousandDocumentsInOrder() throws {
        try db.inTransaction {
            for i in 0..<1000 { try db.document(withID: String(format: "d%04d", i))!.putProperties(["i": i]) }
            return true
        }
        var since: Int64 = 0
        var seen: [String] = []
        while true {
            let page = try db.syncChanges(since: since, limit: 100, descending: false, allLeaves: false, docIDs: nil,
                                          activeOnly: false, includeDocs: false)
            guard let last = page.last else { break }
            seen += page.map(\.docID)
            since = last.sequence
        }
        XCTAssertEqual(seen, (0..<1000).map { String(format: "d%04d", $0) })
    }
}
