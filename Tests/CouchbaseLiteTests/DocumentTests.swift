import Foundation
import XCTest
@testable import CouchbaseLite

final class DocumentTests: DatabaseTestCase {

    /// The iOS digest rule: `{"foo":"bar"}` as a new document is `1-cd809becc169215072fd567eebd8b8de` (spec 3.3).
    func testFirstRevisionIDMatchesRealCouchbaseLite() throws {
        let rev = try db.document(withID: "d")!.putProperties(["foo": "bar"])
        XCTAssertEqual(rev.revisionID, "1-cd809becc169215072fd567eebd8b8de")
    }

    /// Spec 3.3 worked example (ios140 doc1): the same body on the same parent gives the same gen-2 ID.
    func testSecondGenerationRevisionIDMatchesWorkedExample() throws {
        let body = Array(#"{"_attachments":{"attach1":{"content_type":"text/plain; charset=utf-8","digest":"sha1-P1i5kI/sosq745/9BDR7kEghKps=","length":7,"revpos":2,"stub":true}},"boolean":true,"date":"2017-01-31T23:56:31.714Z","foo":"bar","number":1,"type":"doc"}"#.utf8)
        XCTAssertEqual(try RevisionID.generate(json: body, deleted: false, parent: "1-b7123bd4ca12ee6cf95c0be4410dbac3"),
                       "2-b7f9508257a0bc0835f745cb5809af7e")
        let gen1 = Array(#"{"boolean":true,"date":"2017-01-31T23:56:31.714Z","foo":"bar","number":1,"type":"doc"}"#.utf8)
        XCTAssertEqual(try RevisionID.generate(json: gen1, deleted: false, parent: nil), "1-b7123bd4ca12ee6cf95c0be4410dbac3")
        // Through the API: same properties, same parent, same attachment bytes → same IDs.
        let doc = db.document(withID: "doc1")!
        let r1 = try doc.putProperties(["boolean": true, "date": "2017-01-31T23:56:31.714Z", "foo": "bar", "number": 1, "type": "doc"])
        XCTAssertEqual(r1.revisionID, "1-b7123bd4ca12ee6cf95c0be4410dbac3")
        let unsaved = r1.createRevision()
        unsaved.setAttachmentNamed("attach1", withContentType: "text/plain; charset=utf-8", content: Data("attach1".utf8))
        XCTAssertEqual(try unsaved.save().revisionID, "2-b7f9508257a0bc0835f745cb5809af7e")
    }

    func testRevisionIDParsing() {
        XCTAssertEqual(RevisionID.generation("1-utiopturoewpt"), 1)
        XCTAssertEqual(RevisionID.generation("321-fdjfdsj-e"), 321)
        XCTAssertEqual(RevisionID.suffix("321-fdjfdsj-e"), "fdjfdsj-e")
        for bad in ["0-x", "-4-x", "5_x", " 5-x", "7 -x", "7-", "7", "eiuwtiu", "", "1234567890-x"] {
            XCTAssertEqual(RevisionID.generation(bad), 0, bad)
        }
    }

    func testPutGetUpdateDelete() throws {
        let doc = db.createDocument()
        XCTAssertTrue(doc.documentID.hasPrefix("-"))
        XCTAssertEqual(doc.documentID.count, 23)
        XCTAssertNil(doc.currentRevision)
        let r1 = try doc.putProperties(["title": "one", "n": 1, "tags": ["a", "b"], "nested": ["x": 1.5]])
        XCTAssertEqual(doc.currentRevisionID, r1.revisionID)
        XCTAssertEqual(doc["title"] as? String, "one")
        XCTAssertEqual(doc.property(forKey: "n") as? Int, 1)
        XCTAssertEqual(doc.properties?["_id"] as? String, doc.documentID)
        XCTAssertEqual(doc.properties?["_rev"] as? String, r1.revisionID)
        XCTAssertNil(doc.userProperties?["_id"])
        XCTAssertEqual(db.documentCount, 1)
        XCTAssertEqual(db.lastSequenceNumber, 1)

        // Stale _rev → 409; correct _rev → new generation.
        XCTAssertThrowsStatus(409, try doc.putProperties(["title": "conflict"]))
        var props = doc.properties!
        props["title"] = "two"
        let r2 = try doc.putProperties(props)
        XCTAssertTrue(r2.revisionID!.hasPrefix("2-"))
        XCTAssertEqual(r2.parentRevisionID, r1.revisionID)
        XCTAssertThrowsStatus(409, try doc.putProperties(["_rev": r1.revisionID!, "title": "stale"]))

        let r3 = try doc.update { rev in
            rev["title"] = "three"
            return true
        }
        XCTAssertEqual(r3.revisionID?.prefix(2), "3-")
        XCTAssertEqual(try doc.getRevisionHistory().map(\.revisionID), [r1.revisionID, r2.revisionID, r3.revisionID])
        XCTAssertEqual(db.document(withID: doc.documentID), doc, "identity map")

        try doc.delete()
        XCTAssertTrue(doc.isDeleted)
        XCTAssertTrue(doc.isGone)
        XCTAssertNil(doc.currentRevision)
        XCTAssertEqual(db.documentCount, 0)
        XCTAssertNil(db.existingDocument(withID: doc.documentID))
        let tombstone = try doc.getLeafRevisions().first!
        XCTAssertTrue(tombstone.isDeletion)
        XCTAssertEqual(tombstone.revisionID?.prefix(2), "4-")
        XCTAssertEqual(tombstone.properties?["_deleted"] as? Bool, true)

        // Re-creating a deleted document continues the tombstone's branch.
        let r5 = try doc.putProperties(["title": "back"])
        XCTAssertEqual(r5.revisionID?.prefix(2), "5-")
        XCTAssertEqual(r5.parentRevisionID, tombstone.revisionID)
        XCTAssertFalse(doc.isDeleted)
    }

    func testUpdateReturningFalseSavesNothing() throws {
        let doc = db.document(withID: "u")!
        try doc.putProperties(["a": 1])
        XCTAssertThrowsStatus(304, try doc.update { _ in false })
        XCTAssertEqual(doc.currentRevisionID?.prefix(2), "1-")
    }

    func testSavedRevisionDataIsReadBackFromDisk() throws {
        let doc = db.document(withID: "persist")!
        try doc.putProperties(["unicode": "héllo 🌍", "num": 3.25, "neg": -7, "yes": true, "none": NSNull(), "arr": [1, "two", ["three": 3]]])
        manager.close()
        let m2 = try CBLManager(directory: manager.directory)
        let doc2 = try m2.existingDatabaseNamed("db").existingDocument(withID: "persist")!
        XCTAssertEqual(doc2["unicode"] as? String, "héllo 🌍")
        XCTAssertEqual(doc2["num"] as? Double, 3.25)
        XCTAssertEqual(doc2["neg"] as? Int, -7)
        XCTAssertEqual(doc2["yes"] as? Bool, true)
        XCTAssertTrue(doc2["none"] is NSNull)
        XCTAssertJSONEqual(doc2["arr"], [1, "two", ["three": 3]] as [Any])
        m2.close()
    }

    func testStoredBodyIsCanonicalJSONWithoutSpecialKeys() throws {
        let doc = db.document(withID: "canon")!
        try doc.putProperties(["b": 1, "a": ["z": true, "y": NSNull()], "_id": "canon", "_revisions": ["ids": ["x"]], "_removed": true])
        let raw = try rawConnection(db.directoryURL.appendingPathComponent("db.sqlite3").path, readOnly: true)
        defer { raw.close() }
        let stmt = try raw.prepare("SELECT json, typeof(json), no_attachments, doc_type FROM revs")
        XCTAssertTrue(try stmt.step())
        XCTAssertEqual(String(decoding: stmt.bytes(0)!, as: UTF8.self), #"{"_removed":true,"a":{"y":null,"z":true},"b":1}"#)
        XCTAssertEqual(stmt.string(1), "blob")
        XCTAssertEqual(stmt.int(2), 1)
        XCTAssertTrue(stmt.isNull(3))
    }

    func testDocTypeColumnTracksTypeOfLeafOnly() throws {
        let doc = db.document(withID: "typed")!
        try doc.putProperties(["type": "task"])
        try doc.update { $0["x"] = 1; return true }
        let raw = try rawConnection(db.directoryURL.appendingPathComponent("db.sqlite3").path, readOnly: true)
        defer { raw.close() }
        var rows: [String] = []
        try raw.prepare("SELECT current, doc_type FROM revs ORDER BY sequence").forEachRow {
            rows.append("\($0.int(0)):\($0.string(1) ?? "NULL")")
        }
        XCTAssertEqual(rows, ["0:NULL", "1:task"])
    }

    func testInvalidDocumentIDsAndReservedKeysAreRefused() throws {
        XCTAssertNil(db.document(withID: ""))
        XCTAssertNil(db.document(withID: "_foo"))
        XCTAssertNotNil(db.document(withID: "_design/x"))
        let doc = db.document(withID: "ok")!
        XCTAssertThrowsStatus(400, try doc.putProperties(["_bogus": 1]))
        XCTAssertThrowsStatus(400, try doc.putProperties(["date": Date()]))
        XCTAssertThrowsStatus(400, try doc.putProperties(["nan": Double.nan]))
        XCTAssertThrowsStatus(400, try doc.putProperties(["_id": "other"]))
        XCTAssertThrowsStatus(400, try doc.putProperties(["_rev": "garbage"]))
        XCTAssertNil(doc.currentRevision, "nothing was saved")
        XCTAssertEqual(db.lastSequenceNumber, 0)
    }

    func testConflictsWinnerAndResolution() throws {
        let doc = db.document(withID: "c")!
        let r1 = try doc.putProperties(["v": 1])
        let a = r1.createRevision()
        a["v"] = "a"
        let ra = try a.save()
        let b = r1.createRevision()
        b["v"] = "b"
        XCTAssertThrowsStatus(409, try b.save())
        let rb = try b.saveAllowingConflict()
        let conflicts = try doc.getConflictingRevisions()
        XCTAssertEqual(conflicts.count, 2)
        // Winner: same generation, higher revID in ASCII order.
        let expected = max(ra.revisionID!, rb.revisionID!)
        XCTAssertEqual(doc.currentRevisionID, expected)
        // Resolve: delete the loser.
        let loser = conflicts.first { $0.revisionID != expected }!
        try loser.deleteDocument()
        XCTAssertEqual(try doc.getConflictingRevisions().count, 1)
        XCTAssertEqual(try doc.getLeafRevisions().count, 2)
        XCTAssertEqual(doc.currentRevisionID, expected)
    }

    func testNonDeletedLeafBeatsLongerTombstoneBranch() throws {
        let doc = db.document(withID: "w")!
        let r1 = try doc.putProperties(["v": 1])
        let short = r1.createRevision()
        short["v"] = 2
        let live = try short.save()
        // A longer branch that ends in a deletion.
        let r2b = try db.forceInsert(docID: "w", history: ["2-bbbb", r1.revisionID!], properties: ["v": 3])!
        _ = try db.forceInsert(docID: "w", history: ["3-cccc", "2-bbbb", r1.revisionID!], properties: ["_deleted": true])
        XCTAssertEqual(r2b.revisionID, "2-bbbb")
        XCTAssertEqual(doc.currentRevisionID, live.revisionID)
        XCTAssertEqual(try doc.getLeafRevisions().map(\.revisionID), [live.revisionID, "3-cccc"])
    }

    func testForceInsertGraftsHistoryAndIsIdempotent() throws {
        let history = ["4-dddd", "3-cccc", "2-bbbb", "1-aaaa"]
        let rev = try db.forceInsert(docID: "pulled", history: history, properties: ["x": 1], source: "http://127.0.0.1:1/db")
        XCTAssertEqual(rev?.revisionID, "4-dddd")
        XCTAssertNil(try db.forceInsert(docID: "pulled", history: history, properties: ["x": 1]))
        let doc = db.document(withID: "pulled")!
        XCTAssertEqual(try doc.getRevisionHistory().map(\.revisionID), history.reversed())
        XCTAssertFalse(try doc.getRevisionHistory().first!.propertiesAvailable)
        // A branch off gen 2 makes a conflict.
        try db.forceInsert(docID: "pulled", history: ["3-zzzz", "2-bbbb", "1-aaaa"], properties: ["x": 2])
        XCTAssertEqual(try doc.getConflictingRevisions().count, 2)
        XCTAssertEqual(doc.currentRevisionID, "4-dddd")
    }

    func testPruningKeepsMaxRevTreeDepth() throws {
        db.maxRevTreeDepth = 5
        let doc = db.document(withID: "deep")!
        for i in 0..<12 { try doc.update { $0["i"] = i; return true } }
        let history = try doc.getRevisionHistory()
        XCTAssertEqual(history.count, 5)
        XCTAssertEqual(history.first?.revisionID?.prefix(2), "8-")
        XCTAssertEqual(history.last?.revisionID?.prefix(3), "12-")
        XCTAssertEqual(db.maxRevTreeDepth, 5)
        // Default is 20.
        let other = try manager.databaseNamed("other")
        XCTAssertEqual(other.maxRevTreeDepth, 20)
    }

    func testPurgeRemovesEverything() throws {
        let doc = db.document(withID: "p")!
        try doc.putProperties(["a": 1])
        try doc.update { $0["a"] = 2; return true }
        var notified: [CBLDatabaseChange] = []
        let token = db.addChangeListener { notified += $0 }
        try doc.purgeDocument()
        db.removeChangeListener(token)
        XCTAssertTrue(doc.isGone)
        XCTAssertFalse(doc.isDeleted)
        XCTAssertNil(db.existingDocument(withID: "p"))
        XCTAssertEqual(db.documentCount, 0)
        XCTAssertEqual(notified.map(\.isPurge), [true])
        let raw = try rawConnection(db.directoryURL.appendingPathComponent("db.sqlite3").path, readOnly: true)
        XCTAssertEqual(try raw.scalarInt("SELECT count(*) FROM revs"), 0)
        raw.close()
    }

    func testPurgeSpecificRevisions() throws {
        let doc = db.document(withID: "pr")!
        let r1 = try doc.putProperties(["a": 1])
        let r2 = try doc.update { $0["a"] = 2; return true }
        // Spec 3.8: a purged leaf takes the ancestors no other leaf needs with it.
        let branch = r1.createRevision()
        branch["a"] = "b"
        let r2b = try branch.saveAllowingConflict()
        let purged = try db.purgeRevisions(docID: "pr", revIDs: [r2.revisionID!])
        XCTAssertEqual(purged, [r2.revisionID!], "r1 is still needed by the other branch")
        XCTAssertEqual(db.document(withID: "pr")?.currentRevisionID, r2b.revisionID)
        XCTAssertEqual(try db.purgeRevisions(docID: "pr", revIDs: [r2b.revisionID!]).sorted(),
                       [r1.revisionID!, r2b.revisionID!])
        XCTAssertTrue(db.document(withID: "pr")!.isGone)
    }

    func testValidationRejectsWith403() throws {
        db.setValidationNamed("needs-title") { rev, context in
            if !rev.isDeletion && rev["title"] == nil { context.reject(withMessage: "title is required") }
            if let old = context.currentRevision, old["locked"] as? Bool == true {
                context.reject(withMessage: "locked")
            }
        }
        let doc = db.document(withID: "v")!
        XCTAssertThrowsError(try doc.putProperties(["x": 1])) { error in
            XCTAssertEqual((error as NSError).code, 403)
            XCTAssertEqual((error as? CBLError)?.message, "title is required")
        }
        XCTAssertNil(doc.currentRevision)
        try doc.putProperties(["title": "t", "locked": true])
        XCTAssertThrowsStatus(403, try doc.update { $0["title"] = "u"; return true })
        XCTAssertNotNil(db.validationNamed("needs-title"))
        db.setValidationNamed("needs-title", as: nil)
        try doc.update { $0["title"] = "u"; return true }
        db.setFilterNamed("f") { rev, params in rev["title"] as? String == params?["t"] as? String }
        XCTAssertEqual(db.filterNamed("f")?(doc.currentRevision!, ["t": "u"]), true)
    }

    func testValidationContextChangedKeys() throws {
        var seen: [String] = []
        db.setValidationNamed("keys") { _, context in seen = context.changedKeys }
        let doc = db.document(withID: "ck")!
        try doc.putProperties(["a": 1, "b": 2])
        try doc.update { $0["b"] = 3; $0["c"] = 4; return true }
        XCTAssertEqual(seen, ["b", "c"])
    }
}
