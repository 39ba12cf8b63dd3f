import Foundation
import XCTest
@testable import CouchbaseLite

/// Index updates spanning many sequences map documents on a helper thread while the indexing
/// thread writes the rows (`ViewIndexer.pipelineMinimumSequences`). These tests use enough
/// documents to take that path and check it gives exactly what the 1.x rules give.
final class ViewIndexPipelineTests: DatabaseTestCase {
    /// Comfortably above the threshold, and not a multiple of the batch size.
    let count = Int(ViewIndexer.pipelineMinimumSequences) + 1_000 + 37

    private func populate() throws {
        let ok = try db.inTransaction {
            for i in 0..<count {
                var props: [String: Any] = ["n": i, "type": i % 3 == 0 ? "fizz" : "plain", "name": "doc \(i)"]
                if i % 10 == 0 { props["tags"] = ["t\(i % 7)", i] }
                try db.document(withID: String(format: "d%05d", i))!.putProperties(props)
            }
            return true
        }
        XCTAssertTrue(ok)
    }

    func testBigUpdateIndexesEveryWinnerOnceWithConflictsDeletionsAndDesignDocs() throws {
        try populate()
        // A conflict, a deletion and a design document in the middle of the range.
        let base = db.document(withID: "d00100")!.currentRevision!
        try db.forceInsert(docID: "d00100", history: ["2-aaaa", base.revisionID!], properties: ["n": -1, "type": "plain"])
        try db.forceInsert(docID: "d00100", history: ["2-bbbb", base.revisionID!], properties: ["n": -2, "type": "plain"])
        try db.document(withID: "d00200")!.delete()
        try db.document(withID: "_design/app")!.putProperties(["views": [String: Any]()])
        XCTAssertGreaterThan(db.lastSequenceNumber, ViewIndexer.pipelineMinimumSequences)

        var calls = 0
        var conflictsSeen: [String]?
        let view = db.viewNamed("app/n")
        view.setMapBlock({ doc, emit in
            calls += 1
            if doc["_id"] as? String == "d00100" { conflictsSeen = doc["_conflicts"] as? [String] }
            emit(doc["n"]!, doc["tags"])
        }, version: "1")
        let fizz = db.viewNamed("app/fizz")
        fizz.documentType = "fizz"
        fizz.setMapBlock({ doc, emit in emit([doc["type"]!, doc["n"]!], nil) }, version: "1")

        let rows = try view.createQuery().run()
        // Every live document once (d00200 deleted, the design document skipped).
        XCTAssertEqual(calls, count - 1)
        XCTAssertEqual(rows.count, UInt(count - 1))
        XCTAssertEqual(view.totalRows, UInt(count - 1))
        XCTAssertEqual(conflictsSeen, ["2-aaaa"], "the winner (2-bbbb) is mapped with the loser listed")
        let keys = rows.map { $0.key as? Int }
        XCTAssertEqual(keys.first, -2, "the conflict's winner")
        XCTAssertEqual(keys.dropFirst().first, 0)
        XCTAssertFalse(keys.contains(200), "the deleted document emits nothing")
        XCTAssertFalse(keys.contains(100), "the losing generation-1 body is not mapped")
        XCTAssertEqual(keys, keys.sorted { ($0 ?? .min) < ($1 ?? .min) }, "rows come back in key order")
        let d30 = try XCTUnwrap(rows.first { $0.documentID == "d00030" })
        XCTAssertEqual(d30.value as? [AnyHashable], ["t2", 30] as [AnyHashable])
        XCTAssertEqual(rows.first { $0.documentID == "d00031" }.map { $0.value == nil }, true, "no tags: NULL value")

        // The other view of the group was indexed in the same pass, with its type filter.
        XCTAssertEqual(fizz.lastSequenceIndexed, db.lastSequenceNumber)
        let fizzRows = try fizz.createQuery().run()
        XCTAssertEqual(fizzRows.count, UInt((0..<count).filter { $0 % 3 == 0 }.count))
        XCTAssertEqual(fizzRows.row(at: 0).key as? [AnyHashable], ["fizz", 0] as [AnyHashable])

        // A second view indexed on its own gives the same rows.
        let inline = db.viewNamed("inline")
        inline.setMapBlock({ doc, emit in emit(doc["n"]!, doc["tags"]) }, version: "1")
        let inlineRows = try inline.createQuery().run()
        XCTAssertEqual(inlineRows.map { $0.key as? Int }, keys)
    }

    func testMapBlocksRunOneAtATimeInDocumentOrder() throws {
        try populate()
        let lock = NSLock()
        var active = 0, maxActive = 0
        var seen: [String] = []
        var callsOnCallingThread = 0
        let caller = Thread.current
        let view = db.viewNamed("order")
        view.setMapBlock({ doc, emit in
            lock.lock(); active += 1; maxActive = max(maxActive, active); lock.unlock()
            if Thread.current === caller { callsOnCallingThread += 1 }
            seen.append(doc["_id"] as! String)
            emit(doc["n"]!, nil)
            lock.lock(); active -= 1; lock.unlock()
        }, version: "1")
        try view.updateIndex()
        XCTAssertEqual(maxActive, 1, "map blocks are never called concurrently")
        XCTAssertEqual(seen.count, count)
        XCTAssertEqual(seen, seen.sorted(), "documents are mapped in order")
        if ProcessInfo.processInfo.activeProcessorCount > 1 {
            XCTAssertEqual(callsOnCallingThread, 0, "a big update maps on the helper thread")
        }
    }

    func testMapFailureInBigUpdateCommitsNothing() throws {
        try populate()
        let view = db.viewNamed("bad")
        view.setMapBlock({ doc, emit in
            // A Date is not JSON: the update must fail as a whole.
            if doc["n"] as? Int == 2_500 { emit("k", Date()) } else { emit(doc["n"]!, nil) }
        }, version: "1")
        XCTAssertThrowsError(try view.updateIndex()) { error in
            let e = error as? CBLError
            XCTAssertEqual(e?.code, 400)
            XCTAssertTrue(e?.message.contains("'bad'") ?? false, "\(error)")
            XCTAssertTrue(e?.message.contains("d02500") ?? false, "\(error)")
        }
        XCTAssertEqual(view.lastSequenceIndexed, 0, "nothing committed")
        XCTAssertEqual(view.totalRows, 0)

        // The database stays usable: a fixed map function indexes everything.
        view.setMapBlock({ doc, emit in emit(doc["n"]!, nil) }, version: "2")
        XCTAssertEqual(try view.createQuery().run().count, UInt(count))
        try db.document(withID: "after")!.putProperties(["n": -5])
        XCTAssertEqual(try view.createQuery().run().row(at: 0).key as? Int, -5)
    }

    func testTypedViewIndexesFirstThenIncrementally() throws {
        try populate()
        let view = db.viewNamed("typed")
        view.documentType = "fizz"
        view.setMapBlock({ doc, emit in emit(doc["n"]!, nil) }, version: "1")
        let fizzCount = (0..<count).filter { $0 % 3 == 0 }.count
        XCTAssertEqual(try view.createQuery().run().count, UInt(fizzCount))

        // An incremental update (sequence and type both bound): a fizz doc changes, a plain doc
        // becomes fizz, a fizz doc becomes plain.
        try db.document(withID: "d00003")!.update { $0["n"] = -3; return true }
        try db.document(withID: "d00001")!.update { $0["type"] = "fizz"; return true }
        try db.document(withID: "d00006")!.update { $0["type"] = "plain"; return true }
        let keys = try view.createQuery().run().map { $0.key as? Int }
        XCTAssertEqual(keys.count, fizzCount)
        XCTAssertEqual(Array(keys.prefix(3)), [-3, 0, 1])
        XCTAssertFalse(keys.contains(6))
        XCTAssertFalse(keys.contains(3))
    }

    /// A map block written in main-actor code (as a ported app's view setup often is) still runs
    /// on the helper thread of a big update.
    @MainActor
    func testMapBlockFromMainActorCodeRunsOnTheHelperThread() throws {
        try populate()
        var calls = 0
        let view = db.viewNamed("mainactor")
        view.setMapBlock({ doc, emit in
            calls += 1
            emit(doc["n"]!, nil)
        }, version: "1")
        XCTAssertEqual(try view.createQuery().run().count, UInt(count))
        XCTAssertEqual(calls, count)
    }
}
