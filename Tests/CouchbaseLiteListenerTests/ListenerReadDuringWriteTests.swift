import CouchbaseLite
import CouchbaseLiteListener
import Foundation
import XCTest

/// A GET answered while a big `_bulk_docs` is still inside its transaction: reads run on the
/// database's reader connections, so they neither wait for the write nor see it before it commits.
final class ListenerReadDuringWriteTests: ListenerTestCase {
    func testGetAndChangesAnswerWhileBulkDocsIsInsideItsTransaction() throws {
        let db = try createDB()
        let firstRev = try putDoc("/db/stable", ["v": 1])
        let sequenceBefore = db.lastSequenceNumber
        let bulkCount = 20_000
        let stopAt = bulkCount / 2

        // A validation block runs inside the `_bulk_docs` transaction, once per document: half-way
        // through it tells the test, then holds the transaction open until the GETs are answered.
        let validated = LockedBox(0)
        let writerInside = DispatchSemaphore(value: 0)
        let readsAnswered = DispatchSemaphore(value: 0)
        let answeredWhileInside = LockedBox<Bool?>(nil)
        db.setValidationNamed("holdHalfWay") { _, _ in
            var n = 0
            validated.update { $0 += 1; n = $0 }
            guard n == stopAt else { return }
            writerInside.signal()
            answeredWhileInside.update { $0 = readsAnswered.wait(timeout: .now() + 20) == .success }
        }

        var docs: [[String: Any]] = [["_id": "stable", "_rev": firstRev, "v": 2]]
        docs += (0..<bulkCount).map { ["_id": "bulk-\($0)", "n": $0] }
        let body = Array(try JSONSerialization.data(withJSONObject: ["docs": docs]))
        let bulkResult = LockedBox<HTTPResult?>(nil)
        let bulkError = LockedBox<String?>(nil)
        let bulkDone = DispatchGroup()
        bulkDone.enter()
        let client = self.client!
        Thread.detachNewThread {
            do {
                let r = try client.send("POST", "/db/_bulk_docs", headers: ["Content-Type": "application/json"],
                                        body: body, timeout: 180)
                bulkResult.update { $0 = r }
            } catch {
                bulkError.update { $0 = "\(error)" }
            }
            bulkDone.leave()
        }

        XCTAssertEqual(writerInside.wait(timeout: .now() + 120), .success, "_bulk_docs never reached half-way")
        let stable = try get("/db/stable")
        let written = try get("/db/bulk-0")          // saved earlier in the same, still open, transaction
        let changes = try get("/db/_changes?since=\(sequenceBefore)")
        let info = try get("/db")
        readsAnswered.signal()

        XCTAssertEqual(bulkDone.wait(timeout: .now() + 180), .success, "_bulk_docs did not finish")
        XCTAssertNil(bulkError.value)
        XCTAssertEqual(answeredWhileInside.value, true, "the GETs waited for the _bulk_docs transaction")
        expect(stable, 200)
        XCTAssertEqual(stable.dict["v"] as? Int, 1, "GET saw an uncommitted write")
        XCTAssertEqual(stable.dict["_rev"] as? String, firstRev)
        expect(written, 404)
        expect(changes, 200)
        XCTAssertEqual((changes.dict["results"] as? [Any])?.count, 0)
        XCTAssertEqual(info.dict["doc_count"] as? Int, 1)

        // Committed: now every GET sees it.
        let result = try XCTUnwrap(bulkResult.value)
        expect(result, 201)
        XCTAssertEqual(result.array.count, bulkCount + 1)
        XCTAssertEqual(try get("/db/stable").dict["v"] as? Int, 2)
        XCTAssertEqual(try get("/db/bulk-0").dict["n"] as? Int, 0)
        XCTAssertEqual(try get("/db").dict["doc_count"] as? Int, bulkCount + 1)
    }
}
