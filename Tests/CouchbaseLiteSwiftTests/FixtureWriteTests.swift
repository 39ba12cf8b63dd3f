import Fleece
import Foundation
import SQLiteKit
import XCTest
@testable import CouchbaseLiteSwift

/// Writes into copies of real Couchbase Lite files: existing documents stay readable and new rows
/// take the file's own shape (2.8: tree in `body`; 3.0: body + `extra`).
final class FixtureWriteTests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("cblfixwrites-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }

    /// Copies `lite_dbs/<name>.cblite2` into the scratch directory; skips without the shared fixtures.
    private func copyFixture(_ name: String) throws {
        let repoRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let source = repoRoot.deletingLastPathComponent().appendingPathComponent("shared/fixtures/cbl2/lite_dbs/\(name).cblite2")
        guard FileManager.default.fileExists(atPath: source.path) else { throw XCTSkip("shared fixtures not present (fresh clone)") }
        try FileManager.default.copyItem(at: source, to: directory.appendingPathComponent("\(name).cblite2"))
    }

    private func open(_ name: String) throws -> Database {
        try Database(name: name, config: DatabaseConfiguration(directory: directory.path))
    }

    private func raw(_ name: String) throws -> SQLiteConnection {
        try SQLiteConnection(path: directory.appendingPathComponent("\(name).cblite2/db.sqlite3").path,
                             mode: .init(readOnly: true, create: false))
    }

    private struct Snapshot: Equatable {
        var revisionID: String?
        var deleted: Bool
        var properties: NSDictionary
    }

    private func snapshot(_ db: Database) throws -> [String: Snapshot] {
        var out: [String: Snapshot] = [:]
        for doc in try db.allDocuments(includeDeleted: true) {
            out[doc.id] = Snapshot(revisionID: doc.revisionID, deleted: doc.isDeleted, properties: NSDictionary(dictionary: doc.toDictionary()))
        }
        return out
    }

    /// Our revision IDs are LiteCore's: recomputing every revision of a real 3.0 file from its
    /// parent, deleted flag and body gives the stored ID.
    func testGeneratedRevisionIDsMatchRealLiteCore() throws {
        try copyFixture("db_3_0_0_names_100_with_deleted")
        let db = try open("db_3_0_0_names_100_with_deleted")
        var checked = 0
        for doc in try db.allDocuments(includeDeleted: true) {
            let record = try XCTUnwrap(try db.record(forDocumentID: doc.id))
            let current = record.tree.revisions[0]
            let parent = current.parentIndex.map { record.tree.revisions[$0].revID }
            XCTAssertEqual(BinaryRevisionID.generate(parent: parent, deleted: record.isDeleted, body: try XCTUnwrap(record.body)),
                           record.version, doc.id)
            checked += 1
        }
        XCTAssertEqual(checked, 100)
    }

    func testWritingInto28FileKeepsItsShape() throws {
        let name = "upgrade_2.8"
        try copyFixture(name)
        var db = try open(name)
        let before = try snapshot(db)
        let keysBefore = try db.withOpenFile { $0.sharedKeys.allKeys() }
        let lastBefore = try db.withOpenFile { try $0.lastSequence() }
        let liveIDs = before.filter { !$0.value.deleted }.keys.sorted()
        XCTAssertGreaterThan(liveIDs.count, 2)

        let fresh = MutableDocument(id: "new-doc", data: ["n": 1000, "even": true, "addedKey": "x"])
        try db.saveDocument(fresh)
        let updated = try XCTUnwrap(db.document(withID: liveIDs[0])).toMutable()
        updated.setInt(-1, forKey: "n")
        try db.saveDocument(updated)
        try db.deleteDocument(try XCTUnwrap(db.document(withID: liveIDs[1])))
        // Saved unchanged, a document's Fleece body is byte for byte the one LiteCore wrote.
        let untouchedBody = try XCTUnwrap(try db.record(forDocumentID: liveIDs[2])?.body)
        try db.saveDocument(try XCTUnwrap(db.document(withID: liveIDs[2])).toMutable())
        XCTAssertEqual(try db.record(forDocumentID: liveIDs[2])?.body, untouchedBody)
        try db.close()

        db = try open(name)
        let after = try snapshot(db)
        for (id, old) in before where id != liveIDs[0] && id != liveIDs[1] && id != liveIDs[2] {
            XCTAssertEqual(after[id], old, id)
        }
        XCTAssertEqual(db.document(withID: liveIDs[0])?.int(forKey: "n"), -1)
        XCTAssertNil(db.document(withID: liveIDs[1]))
        XCTAssertEqual(db.document(withID: "new-doc")?.string(forKey: "addedKey"), "x")
        let keysAfter = try db.withOpenFile { $0.sharedKeys.allKeys() }
        XCTAssertEqual(Array(keysAfter.prefix(keysBefore.count)), keysBefore, "shared keys only grow at the end")
        XCTAssertEqual(keysAfter.count, keysBefore.count + (keysBefore.contains("addedKey") ? 0 : 1))

        // The new row looks like the file's own: rev tree in `body`, first record
        // `size FFFF 82 len revID 00 <fleece>`, `version` = that revID.
        let record = try XCTUnwrap(try db.record(forDocumentID: "new-doc"))
        XCTAssertEqual(record.sequence, lastBefore + 1)
        try db.close()
        let sql = try raw(name)
        defer { sql.close() }
        let stmt = try sql.prepare("SELECT body, version, flags, sequence FROM kv_default WHERE key=?")
        try stmt.bind("new-doc", at: 1)
        XCTAssertTrue(try stmt.step())
        let body = try XCTUnwrap(stmt.bytes(0))
        let version = try XCTUnwrap(stmt.bytes(1))
        XCTAssertEqual(stmt.int64(2), 0)
        XCTAssertEqual(Array(body[4..<8]), [0xFF, 0xFF, 0x82, UInt8(version.count)])
        XCTAssertEqual(Array(body[8..<(8 + version.count)]), version)
        XCTAssertEqual(body[8 + version.count], 0, "sequence 0: added in this save")
        XCTAssertEqual(Array(body.suffix(4)), [0, 0, 0, 0])
        stmt.reset()

        // The fixture's own rows (one we did not touch) have the same record header.
        let fixtureRow = try sql.prepare("SELECT body FROM kv_default WHERE key=?")
        try fixtureRow.bind(liveIDs[3], at: 1)
        XCTAssertTrue(try fixtureRow.step())
        XCTAssertEqual(try XCTUnwrap(fixtureRow.bytes(0))[4..<7], [0xFF, 0xFF, 0x82])

        XCTAssertEqual(try sql.scalarInt("SELECT lastSeq FROM kvmeta WHERE name='default'"),
                       try sql.scalarInt("SELECT max(sequence) FROM kv_default"))
        XCTAssertEqual(try sql.scalarInt("SELECT flags FROM kv_default WHERE key=?", [.text(liveIDs[1])]), 1)
        // The tombstone's first record: parent 1, flags HasData|Leaf|Deleted (0x83) like the file's own tombstones.
        let tomb = try sql.prepare("SELECT body FROM kv_default WHERE key=?")
        try tomb.bind(liveIDs[1], at: 1)
        XCTAssertTrue(try tomb.step())
        XCTAssertEqual(try XCTUnwrap(tomb.bytes(0))[4..<7], [0x00, 0x01, 0x83])
        XCTAssertEqual(try sql.scalarInt("SELECT count(*) FROM pragma_integrity_check WHERE integrity_check='ok'"), 1)
        XCTAssertEqual(sql.userVersion, 302)
    }

    func testWritingInto30FileUsesBodyAndExtra() throws {
        let name = "db_3_0_0_names_100_with_deleted"
        try copyFixture(name)
        var db = try open(name)
        let before = try snapshot(db)
        let live = before.filter { !$0.value.deleted }.keys.sorted()
        let updated = try XCTUnwrap(db.document(withID: live[0])).toMutable()
        updated.setString("changed", forKey: "name")
        try db.saveDocument(updated)
        try db.saveDocument(MutableDocument(id: "added", data: ["name": "new"]))
        try db.deleteDocument(try XCTUnwrap(db.document(withID: live[1])))
        try db.close()

        db = try open(name)
        let after = try snapshot(db)
        for (id, old) in before where id != live[0] && id != live[1] { XCTAssertEqual(after[id], old, id) }
        XCTAssertEqual(db.document(withID: live[0])?.string(forKey: "name"), "changed")
        XCTAssertEqual(db.document(withID: "added")?.string(forKey: "name"), "new")
        XCTAssertNil(db.document(withID: live[1]))
        let record = try XCTUnwrap(try db.record(forDocumentID: live[0]))
        XCTAssertEqual(record.tree.revisions.count, 2)
        XCTAssertTrue(record.revisionID?.hasPrefix("2-") ?? false)
        try db.close()

        let sql = try raw(name)
        defer { sql.close() }
        let stmt = try sql.prepare("SELECT body, extra FROM kv_default WHERE key='added'")
        XCTAssertTrue(try stmt.step())
        let extra = try XCTUnwrap(stmt.bytes(1))
        XCTAssertEqual(extra[6], 0x02, "3.x `extra`: the current revision has no body (no 0x80 bit)")
        XCTAssertEqual(try XCTUnwrap(stmt.bytes(0)).count > 2, true)
        XCTAssertEqual(try sql.scalarInt("SELECT lastSeq FROM kvmeta WHERE name='default'"),
                       try sql.scalarInt("SELECT max(sequence) FROM kv_default"))
        XCTAssertEqual(try sql.scalarInt("SELECT count(*) FROM pragma_integrity_check WHERE integrity_check='ok'"), 1)
    }
}
