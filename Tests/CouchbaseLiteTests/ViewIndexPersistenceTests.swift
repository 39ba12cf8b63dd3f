import Foundation
import XCTest
@testable import CouchbaseLite

final class ViewIndexPersistenceTests: XCTestCase {
    func testViewsOfOneGroupShareAnIndexingPass() throws {
        let dir = TempDirectory()
        let manager = try makeManager(dir)
        defer { manager.close() }
        let db = try manager.databaseNamed("g")
        for i in 0..<10 { try db.document(withID: "d\(i)")!.putProperties(["n": i]) }
        var callsA = 0, callsB = 0
        let a = db.viewNamed("app/a"), b = db.viewNamed("app/b"), other = db.viewNamed("other/c")
        a.setMapBlock({ doc, emit in callsA += 1; emit(doc["n"]!, nil) }, version: "1")
        b.setMapBlock({ doc, emit in callsB += 1; emit("b", doc["n"]) }, version: "1")
        other.setMapBlock({ doc, emit in emit(1, nil) }, version: "1")
        XCTAssertEqual(try a.createQuery().run().count, 10)
        XCTAssertEqual(callsB, 10, "app/b was indexed in the same pass")
        XCTAssertEqual(b.lastSequenceIndexed, 10)
        XCTAssertEqual(other.lastSequenceIndexed, 0, "another group is left alone")
        XCTAssertEqual(try b.createQuery().run().count, 10)
        XCTAssertEqual(callsA + callsB, 20, "no second pass")
    }

    func testIndexIsReusedAfterReopenWhenVersionMatches() throws {
        let dir = TempDirectory()
        var manager = try makeManager(dir)
        var db = try manager.databaseNamed("persist")
        for i in 0..<25 { try db.document(withID: "d\(i)")!.putProperties(["n": i]) }
        db.viewNamed("v").setMapBlock({ doc, emit in emit(doc["n"]!, nil) }, version: "1")
        XCTAssertEqual(try db.viewNamed("v").createQuery().run().count, 25)
        manager.close()

        manager = try CBLManager(directory: manager.directory)
        db = try manager.existingDatabaseNamed("persist")
        XCTAssertNotNil(db.existingViewNamed("v"), "views in the file are found")
        var calls = 0
        db.viewNamed("v").setMapBlock({ doc, emit in calls += 1; emit(doc["n"]!, nil) }, version: "1")
        XCTAssertEqual(try db.viewNamed("v").createQuery().run().count, 25)
        XCTAssertEqual(calls, 0, "same name and version: the stored index is reused")
        db.viewNamed("v").setMapBlock({ doc, emit in calls += 1; emit(doc["n"]!, nil) }, version: "2")
        XCTAssertEqual(try db.viewNamed("v").createQuery().run().count, 25)
        XCTAssertEqual(calls, 25)
        db.viewNamed("v").delete()
        XCTAssertNil(db.existingViewNamed("v"))
        manager.close()
    }

    func testCorruptedIndexTableGivesErrorNotCrash() throws {
        let dir = TempDirectory()
        let manager = try makeManager(dir)
        defer { manager.close() }
        let db = try manager.databaseNamed("corrupt")
        for i in 0..<5 { try db.document(withID: "d\(i)")!.putProperties(["n": i]) }
        let view = db.viewNamed("v")
        view.setMapBlock({ doc, emit in emit(doc["n"]!, doc["n"]) }, reduce: { _, values, _ in values.count }, version: "1")
        XCTAssertEqual(try view.createQuery().run().row(at: 0).value as? Int, 5)

        // Garbage keys and values written behind our back: queries still answer.
        let raw = try rawConnection(db.directoryURL.appendingPathComponent("db.sqlite3").path)
        let viewID = try XCTUnwrap(raw.scalarInt("SELECT view_id FROM views WHERE name='v'"))
        try raw.run("INSERT INTO 'maps_\(viewID)' (sequence, key, value) VALUES (1, '{garbage', 'not json')")
        let query = view.createQuery()
        query.indexUpdateMode = .never
        query.mapOnly = true
        let rows = try query.run()
        XCTAssertEqual(rows.count, 6)
        _ = rows.allObjects.map { ($0.key, $0.value) }
        query.mapOnly = false
        XCTAssertEqual(try query.run().row(at: 0).value as? Int, 6)

        // The table dropped entirely: a clear error.
        try raw.execute("DROP TABLE 'maps_\(viewID)'")
        raw.close()
        XCTAssertThrowsStatus(500, try query.run())
    }

    /// A database made here sorts its view indexes with our collator: reopening it rebuilds
    /// nothing (spec 6.8's REINDEX is for files from other platforms), so the file is untouched.
    func testReopeningOurDatabaseDoesNotRebuildItsViewIndexes() throws {
        let dir = TempDirectory()
        var manager = try makeManager(dir)
        var db = try manager.databaseNamed("ours")
        for i in 0..<50 { try db.document(withID: "d\(i)")!.putProperties(["name": "n\(49 - i)"]) }
        db.viewNamed("names").setMapBlock({ doc, emit in emit(doc["name"]!, nil) }, version: "1")
        XCTAssertEqual(try db.viewNamed("names").createQuery().run().count, 50)
        let bundle = db.directoryURL
        manager.close()
        let before = try directoryChecksums(bundle)

        manager = try CBLManager(directory: manager.directory)
        db = try manager.existingDatabaseNamed("ours")
        manager.close()
        XCTAssertEqual(try directoryChecksums(bundle), before, "opening rewrote nothing")

        manager = try CBLManager(directory: manager.directory)
        defer { manager.close() }
        db = try manager.existingDatabaseNamed("ours")
        var calls = 0
        db.viewNamed("names").setMapBlock({ doc, emit in calls += 1; emit(doc["name"]!, nil) }, version: "1")
        let query = db.viewNamed("names").createQuery()
        query.startKey = "n10"
        query.endKey = "n12"
        XCTAssertEqual(try query.run().map { $0.key as? String }, ["n10", "n11", "n12"])
        XCTAssertEqual(calls, 0, "the stored index answered")
    }

    /// A file whose indexes another platform sorted (no mark of ours) is still rebuilt once on
    /// open, and answers range queries in our order afterwards.
    func testForeignViewIndexesAreRebuiltOnceOnOpen() throws {
        let dir = TempDirectory()
        var manager = try makeManager(dir)
        var db = try manager.databaseNamed("foreign")
        for i in 0..<20 { try db.document(withID: "d\(i)")!.putProperties(["name": i % 2 == 0 ? "a\(i)" : "A\(i)"]) }
        db.viewNamed("names").setMapBlock({ doc, emit in emit(doc["name"]!, nil) }, version: "1")
        XCTAssertEqual(try db.viewNamed("names").createQuery().run().count, 20)
        let bundle = db.directoryURL
        manager.close()
        let raw = try rawConnection(bundle.appendingPathComponent("db.sqlite3").path)
        try raw.execute("DELETE FROM info WHERE key='linuxJSONCollation'")
        raw.close()
        let before = try directoryChecksums(bundle)

        manager = try CBLManager(directory: manager.directory)
        defer { manager.close() }
        db = try manager.existingDatabaseNamed("foreign")
        db.viewNamed("names").setMapBlock({ doc, emit in emit(doc["name"]!, nil) }, version: "1")
        let check = try rawConnection(bundle.appendingPathComponent("db.sqlite3").path, readOnly: true)
        XCTAssertEqual(try check.scalarString("SELECT value FROM info WHERE key='linuxJSONCollation'"), "1")
        check.close()
        XCTAssertNotEqual(try directoryChecksums(bundle), before, "the indexes were rebuilt")
        let query = db.viewNamed("names").createQuery()
        query.startKey = "a2"
        query.endKey = "A3"
        // 1.x collation: "a2" < "A3" < "a4" (case decides only between otherwise equal strings).
        XCTAssertEqual(try query.run().map { $0.key as? String }, ["a2", "A3"])
    }
}
