import Foundation
import XCTest
@testable import CouchbaseLite

final class TransactionAndNotificationTests: DatabaseTestCase {

    func testNestedTransactionsCommitAndRollBack() throws {
        XCTAssertTrue(try db.inTransaction {
            try db.document(withID: "outer")!.putProperties(["a": 1])
            let inner = try db.inTransaction {
                try db.document(withID: "inner")!.putProperties(["b": 2])
                return false
            }
            XCTAssertFalse(inner)
            return true
        })
        XCTAssertNotNil(db.existingDocument(withID: "outer"))
        XCTAssertNil(db.existingDocument(withID: "inner"), "inner level was rolled back")
        XCTAssertEqual(db.documentCount, 1)

        let doc = db.document(withID: "rolled")!
        XCTAssertFalse(try db.inTransaction {
            try doc.putProperties(["c": 3])
            XCTAssertNotNil(doc.currentRevision, "visible inside the transaction")
            return false
        })
        XCTAssertNil(doc.currentRevision, "cached revision forgotten after rollback")
        XCTAssertEqual(db.documentCount, 1)
    }

    /// Saves nested in a transaction run without savepoints; a failing one must leave no trace.
    func testFailedSaveInsideTransactionLeavesNoTrace() throws {
        db.setValidationNamed("no-bad") { rev, context in
            if rev["bad"] != nil { context.reject(withMessage: "bad") }
        }
        XCTAssertTrue(try db.inTransaction {
            try db.document(withID: "good")!.putProperties(["ok": 1])
            XCTAssertThrowsStatus(403, try db.document(withID: "rejected")!.putProperties(["bad": 1]))
            XCTAssertThrowsStatus(400, try db.document(withID: "badatt")!.putProperties(["_attachments": ["x": ["stub": true]]]))
            return true
        })
        XCTAssertNotNil(db.existingDocument(withID: "good"))
        let raw = try rawConnection(db.directoryURL.appendingPathComponent("db.sqlite3").path, readOnly: true)
        defer { raw.close() }
        XCTAssertEqual(try raw.scalarInt("SELECT count(*) FROM docs"), 1, "no orphan docs rows")
        XCTAssertEqual(try raw.scalarInt("SELECT count(*) FROM revs"), 1)
    }

    /// A body that cannot be encoded: 400 for a new document with nothing written, while for an
    /// existing one the conflict is still reported first (the checks' order is unchanged).
    func testUnencodableBodyWritesNothingAndKeepsErrorOrder() throws {
        try db.document(withID: "exists")!.putProperties(["a": 1])
        XCTAssertTrue(try db.inTransaction {
            XCTAssertThrowsStatus(400, try db.document(withID: "new")!.putProperties(["when": Date()]))
            XCTAssertThrowsStatus(400, try db.document(withID: "nan")!.putProperties(["x": Double.nan]))
            XCTAssertThrowsStatus(409, try db.document(withID: "exists")!.putProperties(["when": Date()]))
            return true
        })
        let raw = try rawConnection(db.directoryURL.appendingPathComponent("db.sqlite3").path, readOnly: true)
        defer { raw.close() }
        XCTAssertEqual(try raw.scalarInt("SELECT count(*) FROM docs"), 1, "no orphan docs rows")
        XCTAssertEqual(try raw.scalarInt("SELECT count(*) FROM revs"), 1)
    }

    /// A transaction with more changes than the identity map holds: every live document, including
    /// one first asked for after it was saved, hears exactly its own changes.
    func testDocumentListenersInLargeTransaction() throws {
        let kept = db.document(withID: "kept")!
        var keptChanges: [String] = [], laterChanges: [String] = [], batch: [CBLDatabaseChange] = []
        let t1 = kept.addChangeListener { keptChanges.append($0.revisionID) }
        let t2 = db.addChangeListener { batch += $0 }
        defer {
            kept.removeChangeListener(t1)
            db.removeChangeListener(t2)
        }
        var later: CBLDocument?
        var keptRevs: [String] = [], laterRevs: [String] = []
        XCTAssertTrue(try db.inTransaction {
            for i in 0..<600 { try db.document(withID: "bulk-\(i)")!.putProperties(["i": i]) }
            keptRevs.append(try! kept.putProperties(["v": 1]).revisionID!)
            keptRevs.append(try! kept.putProperties(["v": 2, "_rev": keptRevs[0]]).revisionID!)
            // Saved through an object that is then gone, asked for again before the commit.
            laterRevs.append(try! db.document(withID: "later")!.putProperties(["v": 1]).revisionID!)
            later = db.document(withID: "later")
            XCTAssertEqual(later?.currentRevisionID, laterRevs[0])
            _ = later!.addChangeListener { laterChanges.append($0.revisionID) }
            return true
        })
        XCTAssertEqual(batch.count, 603)
        XCTAssertEqual(keptChanges, keptRevs)
        XCTAssertEqual(laterChanges, laterRevs)
        XCTAssertEqual(batch.map(\.documentID).prefix(2), ["bulk-0", "bulk-1"])
        XCTAssertEqual(batch.map(\.sequence), Array(1...603).map(Int64.init))
        XCTAssertEqual(db.documentCount, 602)
    }

    /// A transaction bigger than one notification's batch: every change arrives once, in commit
    /// order, in notifications of at most `changesPerNotification`, with the revision IDs the saves
    /// returned (a bulk insert's changes are kept compactly until the commit and made then); the
    /// changes of a rolled-back inner level are never announced.
    func testLargeTransactionIsAnnouncedInBatchesInCommitOrder() throws {
        let batchSize = CBLDatabase.changesPerNotification
        let total = batchSize * 2 + 7
        var batches: [[CBLDatabaseChange]] = []
        let token = db.addChangeListener { batches.append($0) }
        let noteBox = Locked<[Int]>([])
        let observer = NotificationCenter.default.addObserver(forName: .cblDatabaseChange, object: db, queue: nil) { note in
            let count = (note.userInfo?["changes"] as? [CBLDatabaseChange])?.count ?? -1
            noteBox.withLock { $0.append(count) }
        }
        defer {
            db.removeChangeListener(token)
            NotificationCenter.default.removeObserver(observer)
        }
        var revIDs: [String] = []
        XCTAssertTrue(try db.inTransaction {
            for i in 0..<total {
                revIDs.append(try db.document(withID: "doc-\(i)")!.putProperties(["i": i]).revisionID!)
                if i == 100 {
                    // An inner level that saves and rolls back leaves nothing to announce.
                    XCTAssertFalse(try db.inTransaction {
                        try db.document(withID: "gone")!.putProperties(["x": 1])
                        return false
                    })
                }
            }
            return true
        })
        XCTAssertEqual(batches.map(\.count), [batchSize, batchSize, 7])
        XCTAssertEqual(noteBox.withLock { $0 }, [batchSize, batchSize, 7])
        let changes = batches.flatMap { $0 }
        XCTAssertEqual(changes.map(\.documentID), (0..<total).map { "doc-\($0)" })
        XCTAssertEqual(changes.map(\.revisionID), revIDs)
        XCTAssertEqual(changes.map(\.winningRevisionID), revIDs)
        XCTAssertTrue(changes.allSatisfy { $0.isCurrentRevision && !$0.inConflict && !$0.isDeletion && !$0.isPurge && $0.source == nil })
        XCTAssertTrue(revIDs.allSatisfy { $0.hasPrefix("1-") && $0.utf8.count == 34 })
        // Sequences are increasing; the rolled-back save used one that the commit never shows.
        XCTAssertEqual(changes.map(\.sequence), changes.map(\.sequence).sorted())
        XCTAssertFalse(changes.contains { $0.documentID == "gone" })
        XCTAssertNil(db.existingDocument(withID: "gone"))
        XCTAssertEqual(db.documentCount, UInt(total))
    }

    /// What the database knows of its design documents' `validate_doc_update` (counted once per
    /// change to them, so saves need not look) follows saves, deletions and rollbacks: a rule
    /// deleted in a transaction that is rolled back applies again.
    func testDesignDocumentValidationFollowsARolledBackDeletion() throws {
        // No compiler is registered here: with the listener's setting, a design document's rule
        // that cannot run refuses every write (naming it) rather than being skipped.
        manager.refusesWritesWithUnrunnableValidations = true
        defer { manager.refusesWritesWithUnrunnableValidations = false }
        try db.document(withID: "before")!.putProperties(["ok": true])
        let rules = try db.document(withID: "_design/rules")!.putProperties(
            ["language": "javascript", "validate_doc_update": "function(newDoc) {}"])
        func refused(_ id: String) -> Bool {
            do {
                try db.document(withID: id)!.putProperties(["x": 1])
                return false
            } catch {
                XCTAssertTrue("\(error)".contains("_design/rules"), "\(error)")
                return true
            }
        }
        XCTAssertTrue(refused("a"))
        XCTAssertFalse(try db.inTransaction {
            try db.document(withID: "_design/rules")!.putProperties(["_rev": rules.revisionID!, "_deleted": true])
            XCTAssertFalse(refused("b"), "no rule while the design document is deleted")
            return false
        })
        XCTAssertTrue(refused("c"), "the rolled-back deletion left the rule in place")
        try db.document(withID: "_design/rules")!.putProperties(["_rev": rules.revisionID!, "views": [:] as [String: Any]])
        XCTAssertFalse(refused("d"), "the rule is gone with the new revision")
        XCTAssertEqual(db.documentCount, 3, "before, _design/rules and d")
    }

    func testThrowingBlockRollsBackAndRethrows() throws {
        struct Boom: Error {}
        XCTAssertThrowsError(try db.inTransaction {
            try db.document(withID: "x")!.putProperties(["a": 1])
            throw Boom()
        }) { XCTAssertTrue($0 is Boom) }
        XCTAssertNil(db.existingDocument(withID: "x"))
    }

    func testNotificationsArriveAfterOutermostCommitOnly() throws {
        var batches: [[CBLDatabaseChange]] = []
        let token = db.addChangeListener { batches.append($0) }
        defer { db.removeChangeListener(token) }
        var saved: [CBLSavedRevision] = []
        try db.inTransaction {
            saved.append(try db.document(withID: "a")!.putProperties(["v": 1]))
            saved.append(try db.document(withID: "b")!.putProperties(["v": 2]))
            XCTAssertTrue(batches.isEmpty, "nothing delivered before commit")
            return true
        }
        XCTAssertEqual(batches.count, 1)
        XCTAssertEqual(batches[0].map(\.documentID), ["a", "b"])
        XCTAssertTrue(batches[0].allSatisfy { $0.isCurrentRevision && !$0.inConflict && !$0.isDeletion && $0.source == nil })
        // A new document's first revision: its own ID is the winner, with the sequence it got.
        XCTAssertEqual(batches[0].map(\.revisionID), saved.map(\.revisionID))
        XCTAssertEqual(batches[0].map(\.winningRevisionID), saved.map(\.revisionID))
        XCTAssertEqual(batches[0].map(\.sequence), [1, 2])
        XCTAssertEqual(batches[0].map(\.isPurge), [false, false])

        try db.inTransaction {
            try db.document(withID: "c")!.putProperties(["v": 3])
            return false
        }
        XCTAssertEqual(batches.count, 1, "rolled-back changes are never announced")

        try db.document(withID: "a")!.delete()
        XCTAssertEqual(batches.last?.first?.isDeletion, true)
    }

    func testNotificationCenterPostsDatabaseAndDocumentChanges() throws {
        let doc = db.document(withID: "observed")!
        let dbBox = Locked<[Notification]>([]), docBox = Locked<[Notification]>([])
        var dbNotes: [Notification] { dbBox.withLock { $0 } }
        var docNotes: [Notification] { docBox.withLock { $0 } }
        let o1 = NotificationCenter.default.addObserver(forName: .cblDatabaseChange, object: db, queue: nil) { n in dbBox.withLock { $0.append(n) } }
        let o2 = NotificationCenter.default.addObserver(forName: .cblDocumentChange, object: doc, queue: nil) { n in docBox.withLock { $0.append(n) } }
        defer {
            NotificationCenter.default.removeObserver(o1)
            NotificationCenter.default.removeObserver(o2)
        }
        let rev = try doc.putProperties(["x": 1])
        XCTAssertEqual(dbNotes.count, 1)
        let changes = dbNotes[0].userInfo?["changes"] as? [CBLDatabaseChange]
        XCTAssertEqual(changes?.first?.revisionID, rev.revisionID)
        XCTAssertEqual(dbNotes[0].userInfo?["external"] as? Bool, false)
        XCTAssertEqual(docNotes.count, 1)
        XCTAssertEqual((docNotes[0].userInfo?["change"] as? CBLDatabaseChange)?.documentID, "observed")

        try db.forceInsert(docID: "observed", history: ["2-ffff", rev.revisionID!], properties: ["x": 2],
                           source: "http://127.0.0.1:4984/db")
        XCTAssertEqual(dbNotes.last?.userInfo?["external"] as? Bool, true)
        XCTAssertEqual((dbNotes.last?.userInfo?["changes"] as? [CBLDatabaseChange])?.first?.source?.absoluteString,
                       "http://127.0.0.1:4984/db")
        XCTAssertEqual(doc.currentRevisionID, "2-ffff", "document follows revisions inserted by others")
    }

    func testConflictFlagInChange() throws {
        var last: CBLDatabaseChange?
        let token = db.addChangeListener { last = $0.last }
        defer { db.removeChangeListener(token) }
        let r1 = try db.document(withID: "k")!.putProperties(["v": 1])
        try db.forceInsert(docID: "k", history: ["2-aaaa", r1.revisionID!], properties: ["v": 2])
        try db.forceInsert(docID: "k", history: ["2-bbbb", r1.revisionID!], properties: ["v": 3])
        XCTAssertEqual(last?.inConflict, true)
        XCTAssertEqual(last?.isCurrentRevision, true)
        XCTAssertEqual(last?.winningRevisionID, "2-bbbb")
    }

    func testAsyncSequenceOfChanges() async throws {
        let stream = db.changes()
        let database = db!
        let task = Task {
            var ids: [String] = []
            for await change in stream {
                ids.append(change.documentID)
                if ids.count == 3 { break }
            }
            return ids
        }
        for i in 0..<3 { try database.document(withID: "s\(i)")!.putProperties(["i": i]) }
        let ids = await task.value
        XCTAssertEqual(ids, ["s0", "s1", "s2"])
    }

    func testDispatchQueueDeliversAsynchronously() throws {
        let queue = DispatchQueue(label: "notify")
        manager.dispatchQueue = queue
        defer { manager.dispatchQueue = nil }
        let delivered = expectation(description: "delivered on queue")
        let token = db.addChangeListener { _ in
            dispatchPrecondition(condition: .onQueue(queue))
            delivered.fulfill()
        }
        defer { db.removeChangeListener(token) }
        try db.document(withID: "q")!.putProperties(["a": 1])
        wait(for: [delivered], timeout: 5)
    }
}
