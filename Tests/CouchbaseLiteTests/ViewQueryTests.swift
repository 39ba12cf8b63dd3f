import Foundation
import XCTest
@testable import CouchbaseLite

final class ViewQueryTests: DatabaseTestCase {
    override var databaseName: String { "views" }

    private func put(_ id: String, _ props: [String: Any]) throws {
        try db.document(withID: id)!.putProperties(props)
    }

    private func keys(_ e: CBLQueryEnumerator) -> [String] {
        e.map { try! JSONSerialization.data(withJSONObject: $0.key ?? NSNull(), options: [.fragmentsAllowed, .sortedKeys]) }
            .map { String(decoding: $0, as: UTF8.self) }
    }

    /// The 1.x docs' "phones" example: count with rereduce.
    func testPhonesViewWithCountReduce() throws {
        try put("a", ["name": "Alice", "phones": ["650-555-1212", "415-555-0000"]])
        try put("b", ["name": "Bob", "phones": ["212-555-9999"]])
        try put("c", ["name": "Carol"])
        let view = db.viewNamed("phones")
        XCTAssertNil(view.mapBlock)
        view.setMapBlock({ doc, emit in
            if let phones = doc["phones"] as? [String] {
                for phone in phones { emit(phone, doc["name"]) }
            }
        }, reduce: { _, values, rereduce in
            rereduce ? CBLView.totalValues(values) : Double(values.count)
        }, version: "2")
        XCTAssertNotNil(view.mapBlock)

        let count = try view.createQuery().run()
        XCTAssertEqual(count.count, 1)
        XCTAssertEqual(count.row(at: 0).value as? Double, 3)
        XCTAssertNil(count.row(at: 0).key)

        let query = view.createQuery()
        query.mapOnly = true
        let rows = try query.run()
        XCTAssertEqual(keys(rows), [#""212-555-9999""#, #""415-555-0000""#, #""650-555-1212""#])
        XCTAssertEqual(rows.row(at: 0).value as? String, "Bob")
        XCTAssertEqual(rows.row(at: 0).documentID, "b")
        XCTAssertEqual(rows.row(at: 0).document?.documentID, "b")
        XCTAssertEqual(view.totalRows, 3)
        XCTAssertEqual(view.lastSequenceIndexed, 3)
        XCTAssertFalse(view.stale)
    }

    func testDescendingRangeWithNumberKeys() throws {
        for i in 80...110 { try put("post\(i)", ["date": i, "title": "Post \(i)"]) }
        let view = db.viewNamed("postsByDate")
        view.setMapBlock({ doc, emit in emit(doc["date"]!, doc["title"]) }, version: "1")
        let query = view.createQuery()
        query.descending = true
        query.startKey = 100
        query.endKey = 90
        let rows = try query.run()
        XCTAssertEqual(rows.map { $0.key as? Int }, Array((90...100).reversed()))
        query.inclusiveEnd = false
        XCTAssertEqual(try query.run().map { $0.key as? Int }.last, 91)
        query.inclusiveEnd = true
        query.limit = 3
        query.skip = 2
        XCTAssertEqual(try query.run().map { $0.key as? Int }, [98, 97, 96])
    }

    func testArrayKeyRangeWithEmptyObjectSentinel() throws {
        try put("1", ["color": "red", "size": 1])
        try put("2", ["color": "red", "size": 5])
        try put("3", ["color": "reddish", "size": 2])
        try put("4", ["color": "blue", "size": 3])
        let view = db.viewNamed("byColor")
        view.setMapBlock({ doc, emit in emit([doc["color"]!, doc["size"]!], nil) }, version: "1")
        let query = view.createQuery()
        query.startKey = ["red"]
        query.endKey = ["red", [String: Any]()]
        XCTAssertEqual(keys(try query.run()), [#"["red",1]"#, #"["red",5]"#])
    }

    /// `[genre, artist, album, track]` keys grouped at level 3 sum durations per album (1.x docs).
    func testGroupLevelThree() throws {
        let tracks: [(String, String, String, String, Int)] = [
            ("Rock", "Band A", "First", "t1", 100), ("Rock", "Band A", "First", "t2", 200),
            ("Rock", "Band A", "Second", "t1", 50), ("Jazz", "Trio", "Live", "t1", 300),
            ("Jazz", "Trio", "Live", "t2", 30),
        ]
        for (i, t) in tracks.enumerated() {
            try put("track\(i)", ["genre": t.0, "artist": t.1, "album": t.2, "name": t.3, "duration": t.4])
        }
        let view = db.viewNamed("music/byTrack")
        view.setMapBlock({ doc, emit in
            emit([doc["genre"]!, doc["artist"]!, doc["album"]!, doc["name"]!], doc["duration"])
        }, reduce: { _, values, _ in CBLView.totalValues(values) }, version: "1")
        let query = view.createQuery()
        query.groupLevel = 3
        let rows = try query.run()
        XCTAssertEqual(keys(rows), [#"["Jazz","Trio","Live"]"#, #"["Rock","Band A","First"]"#, #"["Rock","Band A","Second"]"#])
        XCTAssertEqual(rows.map { $0.value as? Double }, [330, 300, 50])
        XCTAssertNil(rows.row(at: 0).documentID)
        query.groupLevel = 1
        XCTAssertEqual(try query.run().map { $0.value as? Double }, [330, 350])
        XCTAssertEqual(rows.row(at: 0).key(at: 1) as? String, "Trio")
    }

    func testGroupLevelOneGroupsNonArrayKeysAndGroupsWithoutReduceHaveNullValues() throws {
        for (i, k) in ["a", "b", "a", "c", "a"].enumerated() { try put("d\(i)", ["k": k]) }
        let view = db.viewNamed("byK")
        view.setMapBlock({ doc, emit in emit(doc["k"]!, 1) }, reduce: { _, values, _ in values.count }, version: "1")
        let query = view.createQuery()
        query.groupLevel = 1
        let rows = try query.run()
        XCTAssertEqual(rows.map { $0.key as? String }, ["a", "b", "c"])
        XCTAssertEqual(rows.map { $0.value as? Int }, [3, 1, 1])

        let noReduce = db.viewNamed("byK2")
        noReduce.setMapBlock({ doc, emit in emit(doc["k"]!, 1) }, version: "1")
        let q2 = noReduce.createQuery()
        q2.groupLevel = 1
        let grouped = try q2.run()
        XCTAssertEqual(grouped.map { $0.key as? String }, ["a", "b", "c"])
        XCTAssertTrue(grouped.allObjects.allSatisfy { $0.value is NSNull })
    }

    /// prefixMatchLevel examples: `"foo"` matches `"foolish"` not `"fong"`; `[1]` matches `[1,"x"]`.
    func testPrefixMatchLevel() throws {
        for word in ["fong", "foo", "foolish", "food", "fop", "fo"] { try put(word, ["w": word]) }
        let view = db.viewNamed("words")
        view.setMapBlock({ doc, emit in emit(doc["w"]!, nil) }, version: "1")
        let query = view.createQuery()
        query.startKey = "foo"
        query.endKey = "foo"
        query.prefixMatchLevel = 1
        XCTAssertEqual(try query.run().map { $0.key as? String }, ["foo", "food", "foolish"])

        let arrays = db.viewNamed("arrays")
        try put("x1", ["k": [1, "x"]])
        try put("x2", ["k": [1, "y", 3]])
        try put("x3", ["k": [2, "x"]])
        try put("x4", ["k": [1]])
        arrays.setMapBlock({ doc, emit in if let k = doc["k"] { emit(k, nil) } }, version: "1")
        let q = arrays.createQuery()
        q.startKey = [1]
        q.endKey = [1]
        q.prefixMatchLevel = 1
        XCTAssertEqual(keys(try q.run()), ["[1]", #"[1,"x"]"#, #"[1,"y",3]"#])
        q.startKey = [1, "x"]
        q.endKey = [1, "x"]
        q.prefixMatchLevel = 2
        XCTAssertEqual(keys(try q.run()), [#"[1,"x"]"#])
        q.startKey = [1, "y"]
        q.endKey = [1, "y"]
        XCTAssertEqual(keys(try q.run()), [#"[1,"y",3]"#])
    }

    func testKeysOptionKeepsGivenOrder() throws {
        for i in 0..<10 { try put("k\(i)", ["n": i]) }
        let view = db.viewNamed("n")
        view.setMapBlock({ doc, emit in emit(doc["n"]!, nil) }, version: "1")
        let query = view.createQuery()
        query.keys = [7, 2, 99, 5]
        XCTAssertEqual(try query.run().map { $0.key as? Int }, [7, 2, 5])
    }

    func testIncrementalIndexingReplacesUpdatedAndDeletedDocuments() throws {
        for i in 0..<20 { try put("d\(i)", ["v": i]) }
        let view = db.viewNamed("v")
        var mapCalls = 0
        view.setMapBlock({ doc, emit in mapCalls += 1; emit(doc["v"]!, nil) }, version: "1")
        XCTAssertEqual(try view.createQuery().run().count, 20)
        XCTAssertEqual(mapCalls, 20)
        mapCalls = 0
        try db.document(withID: "d3")!.update { $0["v"] = 300; return true }
        try db.document(withID: "d4")!.delete()
        try put("new", ["v": -1])
        let rows = try view.createQuery().run()
        XCTAssertEqual(mapCalls, 2, "only changed documents are mapped")
        XCTAssertEqual(rows.count, 20)
        XCTAssertEqual(rows.row(at: 0).key as? Int, -1)
        XCTAssertEqual(rows.allObjects.last?.key as? Int, 300)
        XCTAssertFalse(rows.allObjects.contains { $0.documentID == "d4" })

        // A new version discards the index and maps everything again.
        mapCalls = 0
        view.setMapBlock({ doc, emit in mapCalls += 1; emit("x", doc["v"]) }, version: "2")
        XCTAssertEqual(try view.createQuery().run().count, 20)
        XCTAssertEqual(mapCalls, 20)
    }

    func testOnlyWinningRevisionIsMappedWithConflictsListed() throws {
        let r1 = try db.document(withID: "c")!.putProperties(["v": "base"])
        try db.forceInsert(docID: "c", history: ["2-aaaa", r1.revisionID!], properties: ["v": "a"])
        try db.forceInsert(docID: "c", history: ["2-bbbb", r1.revisionID!], properties: ["v": "b"])
        var seenConflicts: [String]?
        let view = db.viewNamed("winner")
        view.setMapBlock({ doc, emit in seenConflicts = doc["_conflicts"] as? [String]; emit(doc["v"]!, doc["_local_seq"]) }, version: "1")
        let rows = try view.createQuery().run()
        XCTAssertEqual(rows.map { $0.key as? String }, ["b"])
        XCTAssertEqual(seenConflicts, ["2-aaaa"])
    }

    func testDocumentTypeFilterAndDesignDocsSkipped() throws {
        try put("t1", ["type": "task", "n": 1])
        try put("l1", ["type": "list", "n": 2])
        try put("_design/app", ["views": [:]])
        let view = db.viewNamed("tasks")
        view.documentType = "task"
        view.setMapBlock({ doc, emit in emit(doc["n"]!, nil) }, version: "1")
        XCTAssertEqual(try view.createQuery().run().map(\.documentID), ["t1"])
        let all = db.viewNamed("all")
        all.setMapBlock({ doc, emit in emit(doc["_id"]!, nil) }, version: "1")
        XCTAssertEqual(try all.createQuery().run().map(\.documentID), ["l1", "t1"])
    }

    func testLinkedDocumentsAndEmitWholeDoc() throws {
        try put("author1", ["type": "author", "name": "Ann"])
        try put("book1", ["type": "book", "title": "T", "author": "author1"])
        let view = db.viewNamed("books")
        view.setMapBlock({ doc, emit in
            if doc["type"] as? String == "book" {
                emit([doc["title"]!, 0], doc)
                emit([doc["title"]!, 1], ["_id": doc["author"]!])
            }
        }, version: "1")
        let query = view.createQuery()
        query.prefetch = true
        let rows = try query.run()
        XCTAssertEqual(rows.count, 2)
        XCTAssertEqual((rows.row(at: 0).value as? [String: Any])?["title"] as? String, "T")
        XCTAssertEqual(rows.row(at: 0).documentProperties?["title"] as? String, "T")
        XCTAssertEqual(rows.row(at: 1).sourceDocumentID, "book1")
        XCTAssertEqual(rows.row(at: 1).documentID, "author1")
        XCTAssertEqual(rows.row(at: 1).documentProperties?["name"] as? String, "Ann")
    }

    func testStartAndEndKeyDocID() throws {
        for id in ["a", "b", "c", "d"] { try put(id, ["k": 1]) }
        try put("e", ["k": 2])
        let view = db.viewNamed("k")
        view.setMapBlock({ doc, emit in emit(doc["k"]!, nil) }, version: "1")
        let query = view.createQuery()
        query.startKey = 1
        query.startKeyDocID = "b"
        query.endKey = 1
        query.endKeyDocID = "c"
        XCTAssertEqual(try query.run().map(\.documentID), ["b", "c"])
    }

    func testPostFilterAppliesBeforeLimit() throws {
        for i in 0..<20 { try put("p\(i)", ["n": i]) }
        let view = db.viewNamed("p")
        view.setMapBlock({ doc, emit in emit(doc["n"]!, doc["n"]) }, version: "1")
        let query = view.createQuery()
        query.postFilter = NSPredicate { row, _ in ((row as? CBLQueryRow)?.value as? Int ?? 0) % 2 == 0 }
        query.skip = 1
        query.limit = 3
        XCTAssertEqual(try query.run().map { $0.key as? Int }, [2, 4, 6])
    }

    func testIndexUpdateModes() throws {
        try put("a", ["n": 1])
        let view = db.viewNamed("m")
        view.setMapBlock({ doc, emit in emit(doc["n"]!, nil) }, version: "1")
        XCTAssertEqual(try view.createQuery().run().count, 1)
        try put("b", ["n": 2])
        let never = view.createQuery()
        never.indexUpdateMode = .never
        let stale = try never.run()
        XCTAssertEqual(stale.count, 1)
        XCTAssertTrue(stale.stale)
        XCTAssertTrue(view.stale)
        try view.updateIndex()
        XCTAssertEqual(try never.run().count, 2)
        view.deleteIndex()
        XCTAssertEqual(view.lastSequenceIndexed, 0)
        XCTAssertEqual(try view.createQuery().run().count, 2)
    }

    func testMapEmittingNonJSONFailsAndLeavesIndexConsistent() throws {
        try put("a", ["n": 1])
        try put("b", ["n": 2])
        let view = db.viewNamed("bad")
        view.setMapBlock({ doc, emit in
            if doc["n"] as? Int == 2 { emit(Date(), nil) } else { emit(doc["n"]!, nil) }
        }, version: "1")
        XCTAssertThrowsStatus(400, try view.createQuery().run())
        XCTAssertEqual(view.lastSequenceIndexed, 0, "the failed pass was rolled back")
        let never = view.createQuery()
        never.indexUpdateMode = .never
        XCTAssertEqual(try never.run().count, 0)
    }

    func testReduceReturningNonJSONIsAnError() throws {
        try put("a", ["n": 1])
        let view = db.viewNamed("r")
        view.setMapBlock({ doc, emit in emit(doc["n"]!, nil) }, reduce: { _, _, _ in Date() }, version: "1")
        XCTAssertThrowsStatus(500, try view.createQuery().run())
    }

    func testLargeReduceIsChunkedWithRereduce() throws {
        let total = QueryRunner.reduceChunkSize * 2 + 5
        XCTAssertTrue(try db.inTransaction {
            for i in 0..<total { try db.document(withID: "r\(i)")!.putProperties(["n": 1]) }
            return true
        })
        let view = db.viewNamed("sum")
        var calls: [(Int, Bool)] = []
        view.setMapBlock({ doc, emit in emit(doc["_id"]!, doc["n"]) }, reduce: { _, values, rereduce in
            calls.append((values.count, rereduce))
            return CBLView.totalValues(values)
        }, version: "1")
        XCTAssertEqual(try view.createQuery().run().row(at: 0).value as? Double, Double(total))
        XCTAssertEqual(calls.map(\.0), [QueryRunner.reduceChunkSize, QueryRunner.reduceChunkSize, 5, 3])
        XCTAssertEqual(calls.map(\.1), [false, false, false, true])
    }

    func testIndexIsStoredInThe1xSchema() throws {
        try put("a", ["n": 1])
        let view = db.viewNamed("design/n")
        view.setMapBlock({ doc, emit in emit(doc["n"]!, nil) }, version: "7")
        _ = try view.createQuery().run()
        let raw = try rawConnection(db.directoryURL.appendingPathComponent("db.sqlite3").path, readOnly: true)
        defer { raw.close() }
        let stmt = try raw.prepare("SELECT view_id, version, lastsequence, total_docs FROM views WHERE name='design/n'")
        XCTAssertTrue(try stmt.step())
        let id = stmt.int64(0)
        XCTAssertEqual(stmt.string(1), "7")
        XCTAssertEqual(stmt.int64(2), 1)
        XCTAssertEqual(stmt.int64(3), 1)
        stmt.reset()
        XCTAssertEqual(try raw.scalarString("SELECT key FROM 'maps_\(id)'"), "1")
        XCTAssertEqual(try raw.scalarInt("SELECT count(*) FROM sqlite_master WHERE name IN ('maps_\(id)_keys', 'maps_\(id)_sequence')"), 2)

        // A rebuilt index (its indexes dropped while the table refills) ends with both again.
        try put("b", ["n": 0])
        view.deleteIndex()
        XCTAssertEqual(try view.createQuery().run().map { $0.key as? Int }, [0, 1])
        XCTAssertEqual(try raw.scalarInt("SELECT count(*) FROM sqlite_master WHERE name IN ('maps_\(id)_keys', 'maps_\(id)_sequence')"), 2)
        let plan = try raw.prepare("EXPLAIN QUERY PLAN SELECT key FROM 'maps_\(id)' ORDER BY key")
        XCTAssertTrue(try plan.step())
        XCTAssertEqual(plan.string(3), "SCAN maps_\(id) USING COVERING INDEX maps_\(id)_keys")
    }

    func testAllDocsQueryModes() throws {
        try put("b", ["v": 1])
        try put("a", ["v": 2])
        try put("c", ["v": 3])
        try db.document(withID: "c")!.delete()
        let r1 = try db.document(withID: "x")!.putProperties(["v": 0])
        try db.forceInsert(docID: "x", history: ["2-aaaa", r1.revisionID!], properties: ["v": 1])
        try db.forceInsert(docID: "x", history: ["2-bbbb", r1.revisionID!], properties: ["v": 2])

        let query = db.createAllDocumentsQuery()
        XCTAssertEqual(try query.run().map(\.documentID), ["a", "b", "x"])
        XCTAssertEqual((try query.run().row(at: 0).value as? [String: Any])?["rev"] as? String,
                       db.document(withID: "a")!.currentRevisionID)
        query.allDocsMode = .includeDeleted
        XCTAssertEqual(try query.run().map(\.documentID), ["a", "b", "c", "x"])
        query.allDocsMode = .onlyConflicts
        let conflicted = try query.run()
        XCTAssertEqual(conflicted.map(\.documentID), ["x"])
        XCTAssertEqual((conflicted.row(at: 0).value as? [String: Any])?["_conflicts"] as? [String], ["2-bbbb", "2-aaaa"])
        XCTAssertEqual(conflicted.row(at: 0).conflictingRevisions?.count, 2)
        query.allDocsMode = .allDocs
        query.descending = true
        query.limit = 2
        XCTAssertEqual(try query.run().map(\.documentID), ["x", "b"])
        query.descending = false
        query.limit = .max
        query.startKey = "b"
        XCTAssertEqual(try query.run().map(\.documentID), ["b", "x"])
        query.startKey = nil
        query.keys = ["x", "nope", "c"]
        let byKeys = try query.run()
        XCTAssertEqual(byKeys.map { $0.key as? String }, ["x", "nope", "c"])
        XCTAssertNil(byKeys.row(at: 1).value)
        XCTAssertEqual((byKeys.row(at: 2).value as? [String: Any])?["deleted"] as? Bool, true)
        let seq = db.createAllDocumentsQuery()
        seq.allDocsMode = .bySequence
        seq.startKey = 2
        XCTAssertEqual(try seq.run().allObjects.first?.sequenceNumber, 2)
    }

    func testEnumeratorAPI() throws {
        for i in 0..<3 { try put("e\(i)", ["n": i]) }
        let rows = try db.createAllDocumentsQuery().run()
        XCTAssertEqual(rows.count, 3)
        var seen = 0
        while rows.nextRow() != nil { seen += 1 }
        XCTAssertEqual(seen, 3)
        XCTAssertNil(rows.nextRow())
        rows.reset()
        XCTAssertEqual(rows.nextRow()?.documentID, "e0")
        XCTAssertEqual(rows.allObjects.count, 3)
        XCTAssertTrue(rows.isEqual(try db.createAllDocumentsQuery().run()))
        try put("e9", ["n": 9])
        XCTAssertFalse(rows.isEqual(try db.createAllDocumentsQuery().run()))
        XCTAssertTrue(rows.stale)
        var count = 0
        for _ in rows { count += 1 }
        XCTAssertEqual(count, 3)
    }

    /// A reduce block that runs the same query (same cached statement) must not disturb the outer one.
    func testReentrantQueryFromReduceBlock() throws {
        for i in 0..<5 { try put("r\(i)", ["n": i]) }
        let view = db.viewNamed("reentrant")
        var inner: UInt?
        view.setMapBlock({ doc, emit in emit(doc["n"]!, doc["n"]) }, reduce: { _, values, _ in
            if inner == nil {
                inner = 0
                let q = view.createQuery()
                q.indexUpdateMode = .never
                inner = try? q.run().count
            }
            return CBLView.totalValues(values)
        }, version: "1")
        XCTAssertEqual(try view.createQuery().run().row(at: 0).value as? Double, 10)
        XCTAssertEqual(inner, 1)
    }

    /// Rows emitted with the whole document (`*` in real 1.x files) expand in reduce and map rows.
    func testStarValuesFromRealFilesExpand() throws {
        try put("s1", ["n": 1, "title": "one"])
        let view = db.viewNamed("star")
        view.setMapBlock({ doc, emit in emit(doc["n"]!, nil) }, reduce: { _, values, _ in
            (values.first as? [String: Any])?["title"] ?? "none"
        }, version: "1")
        _ = try view.createQuery().run()
        let raw = try rawConnection(db.directoryURL.appendingPathComponent("db.sqlite3").path)
        let viewID = try XCTUnwrap(raw.scalarInt("SELECT view_id FROM views WHERE name='star'"))
        try raw.run("UPDATE 'maps_\(viewID)' SET value='*'")
        raw.close()
        let query = view.createQuery()
        XCTAssertEqual(try query.run().row(at: 0).value as? String, "one")
        query.mapOnly = true
        let row = try query.run().row(at: 0)
        XCTAssertEqual((row.value as? [String: Any])?["title"] as? String, "one")
        XCTAssertEqual((row.value as? [String: Any])?["_id"] as? String, "s1")
    }

    func testRunAsync() throws {
        try put("a", ["n": 1])
        let done = expectation(description: "async")
        db.createAllDocumentsQuery().runAsync { rows, error in
            XCTAssertEqual(rows.count, 1)
            XCTAssertTrue(error is CBLQueryNoError)
            done.fulfill()
        }
        wait(for: [done], timeout: 10)
    }
}
