import CouchbaseLite
import Foundation
import SQLiteKit
import XCTest
@testable import CouchbaseLiteSwift
@testable import CouchbaseLiteUpgrade

/// A 1.x database written by our own 1.x store — conflicts, deletions, attachments, a design
/// document, local docs and an expiration — converts with the report numbers it must have.
final class OwnStoreUpgradeTests: XCTestCase {
    struct Made {
        let bundle: URL
        let conflictWinner: String
        let conflictLoser: String
        let conflictParent: String
        let expiration: Date
    }

    /// Builds the 1.x source with the 1.x API and closes it.
    func makeSource(in scratch: Scratch) throws -> Made {
        let manager = try CBLManager(directory: scratch.path("v1").path)
        let db = try manager.databaseNamed("legacyapp")
        for i in 1...5 {
            try db.document(withID: "plain-\(i)")!.putProperties(["type": "plain", "n": i, "name": "Doc \(i)", "tags": ["a", "b"]])
        }
        let gone = db.document(withID: "deleted")!
        try gone.putProperties(["type": "temp"])
        try gone.delete()

        let conflicted = db.document(withID: "conflicted")!
        let rev1 = try conflicted.putProperties(["side": "base"])
        try conflicted.putProperties(["_rev": rev1.revisionID!, "side": "main"])
        let branch = rev1.createRevision()
        branch["side"] = "branch"
        try branch.saveAllowingConflict()
        let leaves = try conflicted.getConflictingRevisions().compactMap(\.revisionID)
        XCTAssertEqual(leaves.count, 2)
        let winner = conflicted.currentRevisionID!

        let shared = Data("the same attachment bytes".utf8)
        for name in ["attached-a", "attached-b"] {
            let rev = db.document(withID: name)!.newRevision()
            rev["title"] = name
            rev.setAttachmentNamed("note.txt", withContentType: "text/plain", content: shared)
            try rev.save()
        }
        try db.document(withID: "_design/app")!.putProperties(["views": ["byName": ["map": "function(doc){}"], "byType": ["map": "x"]]])
        try db.putLocalDocument(["checkpoint": 42], withID: "cp1")
        let expiration = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 + 86_400).rounded(.down))
        db.document(withID: "plain-1")!.setExpirationDate(expiration)
        manager.close()
        return Made(bundle: scratch.path("v1/legacyapp.cblite2"), conflictWinner: winner,
                    conflictLoser: leaves.first { $0 != winner }!, conflictParent: rev1.revisionID!, expiration: expiration)
    }

    func testOwnStoreDatabaseConvertsWithExpectedReport() throws {
        let scratch = Scratch()
        let made = try makeSource(in: scratch)
        let before = try checksums(made.bundle)
        var events: [UpgradeProgress] = []
        let destination = scratch.path("out/app.cblite2")
        let report = try DatabaseUpgrader(source: made.bundle, destination: destination,
                                          options: UpgradeOptions(includeLocalDocuments: true, includeExpiration: true))
            .run { events.append($0) }
        XCTAssertEqual(try checksums(made.bundle), before, "source unchanged")

        XCTAssertEqual(report.documentsConverted, 9)          // 5 plain, deleted, conflicted, 2 attached
        XCTAssertEqual(report.tombstones, 1)
        XCTAssertEqual(report.conflictsDropped, [.init(docID: "conflicted", winningRevisionID: made.conflictWinner,
                                                       losingRevisionIDs: [made.conflictLoser])])
        XCTAssertEqual(report.attachmentsCopied, 1)
        XCTAssertEqual(report.attachmentsDeduplicated, 1)
        XCTAssertEqual(report.attachmentsMissing, [])
        XCTAssertEqual(report.skippedDocuments.map(\.docID), ["_design/app"])
        XCTAssertEqual(report.designDocuments, [.init(docID: "_design/app", views: ["byName", "byType"])])
        XCTAssertEqual(report.localDocumentsFound, 1)
        XCTAssertEqual(report.localDocumentsCopied, 1)
        XCTAssertEqual(report.expirationsCopied, 1)
        XCTAssertEqual(report.sourceSchemaVersion, 102)
        XCTAssertGreaterThan(report.destinationBytes, 0)
        XCTAssertTrue(report.summary.contains("9 converted (1 tombstones)"), report.summary)
        let decoded = try JSONDecoder().decode(UpgradeReport.self, from: try report.jsonData())
        XCTAssertEqual(decoded, report)
        XCTAssertEqual(events.last?.completed, 10)             // 10 docs rows read, incl. the design doc
        XCTAssertEqual(events.last?.total, 10)
        XCTAssertEqual(events.map(\.completed), events.map(\.completed).sorted())

        let db = try openConverted(destination)
        XCTAssertEqual(db.count, 8)
        XCTAssertNil(db.document(withID: "deleted"), "2.x hides tombstones")
        XCTAssertEqual(try db.documentIncludingDeleted(withID: "deleted")?.isDeleted, true)
        XCTAssertNil(db.document(withID: "_design/app"))
        let winner = try XCTUnwrap(db.document(withID: "conflicted"))
        XCTAssertEqual(winner.revisionID, made.conflictWinner)
        let record = try XCTUnwrap(try db.record(forDocumentID: "conflicted"))
        XCTAssertEqual(record.tree.currentHistory, [made.conflictWinner, made.conflictParent])
        XCTAssertEqual(record.tree.revisions.count, 2, "the losing branch is not copied")
        XCTAssertFalse(record.flags.contains(.conflicted))
        let plain = try XCTUnwrap(db.document(withID: "plain-3"))
        XCTAssertEqual(plain.int(forKey: "n"), 3)
        XCTAssertEqual(plain.array(forKey: "tags")?.toArray() as? [String], ["a", "b"])
        XCTAssertEqual(plain.sequence, 3)
        XCTAssertEqual(try db.getDocumentExpiration(withID: "plain-1"), made.expiration)
        XCTAssertNil(try db.getDocumentExpiration(withID: "plain-2"))
        for name in ["attached-a", "attached-b"] {
            let blob = db.document(withID: name)?.dictionary(forKey: "_attachments")?.blob(forKey: "note.txt")
            XCTAssertEqual(blob?.content, Data("the same attachment bytes".utf8), name)
            XCTAssertEqual(try db.record(forDocumentID: name)?.flags.contains(.hasAttachments), true)
        }
        XCTAssertEqual(try db.record(forDocumentID: "plain-2")?.flags.contains(.hasAttachments), false)
        // Sequences 1…N in docs-table order, kvmeta.lastSeq = N.
        let all = try db.allDocuments(includeDeleted: true)
        XCTAssertEqual(all.map(\.sequence).sorted(), Array(1...9))
        let local = try db.withOpenFile { try $0.rawRecord(store: LocalDocuments.keyStore, key: "_local/cp1") }
        XCTAssertNotNil(local)
        try db.close()
    }

    func testDefaultsDropLocalDocsAndExpirationLikeRealTwoX() throws {
        let scratch = Scratch()
        let made = try makeSource(in: scratch)
        let (bundle, report) = try upgrade(made.bundle, in: scratch)
        XCTAssertEqual(report.localDocumentsFound, 0)
        XCTAssertEqual(report.expirationsCopied, 0)
        let db = try openConverted(bundle)
        XCTAssertNil(try db.getDocumentExpiration(withID: "plain-1"))
        XCTAssertNil(try db.withOpenFile { try $0.rawRecord(store: LocalDocuments.keyStore, key: "_local/cp1") })
        try db.close()
    }

    func testInPlaceUpgradeReplacesTheSource() throws {
        let scratch = Scratch()
        let made = try makeSource(in: scratch)
        let report = try DatabaseUpgrader(source: made.bundle, destination: made.bundle, options: UpgradeOptions(inPlace: true)).run()
        XCTAssertEqual(report.documentsConverted, 9)
        let db = try Database(name: "legacyapp", config: DatabaseConfiguration(directory: scratch.path("v1").path))
        XCTAssertEqual(db.count, 8)
        XCTAssertFalse(FileManager.default.fileExists(atPath: made.bundle.appendingPathComponent("attachments").path))
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: scratch.path("v1").path), ["legacyapp.cblite2"])
        try db.close()
    }

    /// A kill between the in-place install's two renames leaves the source only under
    /// `.NAME.old-<uuid>`: the rerun puts it back and upgrades it.
    func testInPlaceRerunRestoresASourceLeftAsideByAKill() throws {
        let scratch = Scratch()
        let made = try makeSource(in: scratch)
        let aside = made.bundle.deletingLastPathComponent()
            .appendingPathComponent(".\(made.bundle.lastPathComponent).old-\(UUID().uuidString)")
        try FileManager.default.moveItem(at: made.bundle, to: aside)
        let report = try DatabaseUpgrader(source: made.bundle, destination: made.bundle, options: UpgradeOptions(inPlace: true)).run()
        XCTAssertEqual(report.documentsConverted, 9)
        let db = try Database(name: "legacyapp", config: DatabaseConfiguration(directory: scratch.path("v1").path))
        XCTAssertEqual(db.count, 8)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: scratch.path("v1").path), ["legacyapp.cblite2"])
        try db.close()
    }

    /// A run killed mid-conversion leaves its work directory `.NAME.upgrading-<uuid>` beside the
    /// database: the rerun deletes it (never the source of truth) and upgrades the source, while
    /// another database's work directory is left alone.
    func testInPlaceRerunRemovesAStaleWorkDirectory() throws {
        let scratch = Scratch()
        let made = try makeSource(in: scratch)
        let fm = FileManager.default
        let folder = made.bundle.deletingLastPathComponent()
        let stale = folder.appendingPathComponent(".\(made.bundle.lastPathComponent).upgrading-\(UUID().uuidString)")
        // What a kill during the conversion leaves: a half-built 2.x bundle in the work directory.
        let halfBuilt = stale.appendingPathComponent("new.cblite2", isDirectory: true)
        try fm.createDirectory(at: halfBuilt, withIntermediateDirectories: true)
        try Data("not a finished database".utf8).write(to: halfBuilt.appendingPathComponent("db.sqlite3"))
        let otherName = ".other.cblite2.upgrading-\(UUID().uuidString)"
        try fm.createDirectory(at: folder.appendingPathComponent(otherName), withIntermediateDirectories: true)
        // A run still working holds the lock file of its work directory: that one is not stale.
        let liveName = ".\(made.bundle.lastPathComponent).upgrading-\(UUID().uuidString)"
        let live = folder.appendingPathComponent(liveName)
        try fm.createDirectory(at: live, withIntermediateDirectories: true)
        let liveLock = open(live.appendingPathComponent(".lock").path, O_RDWR | O_CREAT, 0o600)
        XCTAssertGreaterThanOrEqual(liveLock, 0)
        XCTAssertEqual(flock(liveLock, LOCK_EX | LOCK_NB), 0)
        defer { close(liveLock) }

        let report = try DatabaseUpgrader(source: made.bundle, destination: made.bundle, options: UpgradeOptions(inPlace: true)).run()
        XCTAssertEqual(report.documentsConverted, 9)
        XCTAssertEqual(report.tombstones, 1)
        XCTAssertFalse(fm.fileExists(atPath: stale.path), "the stale work directory is gone")
        XCTAssertEqual(try fm.contentsOfDirectory(atPath: folder.path).sorted(),
                       [otherName, liveName, "legacyapp.cblite2"].sorted(), "another database's and a live run's are kept")
        try fm.removeItem(at: live)
        let db = try Database(name: "legacyapp", config: DatabaseConfiguration(directory: folder.path))
        XCTAssertEqual(db.count, 8)
        XCTAssertEqual(db.document(withID: "plain-3")?.int(forKey: "n"), 3)
        XCTAssertEqual(db.document(withID: "conflicted")?.revisionID, made.conflictWinner)
        try db.close()
    }

    /// Recent writes that sit in the source's WAL are converted too (the source is copied, not opened).
    func testWritesStillInTheWALAreConverted() throws {
        let scratch = Scratch()
        let made = try makeSource(in: scratch)
        let writer = try SQLiteConnection(path: made.bundle.appendingPathComponent("db.sqlite3").path)
        try writer.execute("PRAGMA wal_autocheckpoint=0")
        try writer.execute("UPDATE revs SET json='{\"type\":\"plain\",\"n\":99}' WHERE current=1 AND doc_id=(SELECT doc_id FROM docs WHERE docid='plain-2')")
        let walSize = (try FileManager.default.attributesOfItem(atPath: made.bundle.path + "/db.sqlite3-wal")[.size] as? NSNumber)?.intValue ?? 0
        XCTAssertGreaterThan(walSize, 0)
        let (bundle, _) = try upgrade(made.bundle, in: scratch)
        writer.close()
        let db = try openConverted(bundle)
        XCTAssertEqual(db.document(withID: "plain-2")?.int(forKey: "n"), 99)
        try db.close()
    }
}
