import Foundation
import SQLiteKit
import XCTest
@testable import CouchbaseLiteSwift

/// Collections in files written by real Couchbase Lite (copies of the shared fixtures, never the
/// originals) and in 2.8-layout files: a 3.1 database's non-default collection is found, read,
/// queried and written; a 2.8 file that gets its first collection is upgraded to the 3.1 schema
/// the way LiteCore does it, and its default-collection documents read exactly as before.
final class CollectionFixtureTests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = try QueryTestSupport.temporaryDirectory()
    }

    override func tearDownWithError() throws {
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }

    private func rows(_ db: Database, _ n1ql: String) throws -> [String] {
        try db.createQuery(n1ql).execute().map { row in
            row.toArray().map { QueryTestSupport.canonical($0) }.joined(separator: "|")
        }
    }

    private struct Snapshot: Equatable {
        var revisionID: String?
        var deleted: Bool
        var sequence: UInt64
        var properties: String
    }

    private func snapshot(_ db: Database) throws -> [String: Snapshot] {
        var out: [String: Snapshot] = [:]
        for doc in try db.allDocuments(includeDeleted: true) {
            out[doc.id] = Snapshot(revisionID: doc.revisionID, deleted: doc.isDeleted, sequence: doc.sequence,
                                   properties: QueryTestSupport.canonical(doc.toDictionary()))
        }
        return out
    }

    // MARK: A real 3.1 database with a collection

    func testRealThreeOneDatabaseWithANonDefaultCollection() throws {
        try CollectionTestSupport.copyFixture("upgrade_3.1_peerCheckpoints", to: directory, as: "peer")
        var db = try CollectionTestSupport.open("peer", in: directory)
        defer { try? db.close() }

        XCTAssertEqual(try db.scopes().map(\.name), ["_default", "loopback"])
        XCTAssertEqual(try db.collections(scope: "loopback").map(\.fullName), ["loopback.test"])
        XCTAssertEqual(try db.collections().map(\.fullName), ["_default._default"], "kv_peer\\Checkpoints is not a collection")
        let test = try XCTUnwrap(try db.collection(name: "test", scope: "loopback"))
        XCTAssertEqual(test.count, 100)
        XCTAssertEqual(db.count, 0)
        let first = try XCTUnwrap(try test.document(id: "0000001"))
        XCTAssertEqual(first.dictionary(forKey: "name")?.string(forKey: "first"), "Lue")
        XCTAssertEqual(first.string(forKey: "gender"), "female")
        XCTAssertEqual(first.sequence, 1)
        XCTAssertTrue(first.revisionID?.hasPrefix("1-") ?? false)

        XCTAssertEqual(try rows(db, "SELECT count(*) FROM loopback.test"), ["100"])
        XCTAssertEqual(try rows(db, "SELECT name.first FROM loopback.test WHERE meta().id = '0000002'"), ["\"Jasper\""])
        XCTAssertEqual(try rows(db, "SELECT test.gender, count(*) FROM loopback.test GROUP BY test.gender ORDER BY test.gender").count, 2)
        XCTAssertEqual(try rows(db, "SELECT count(*) FROM _"), ["0"])

        // Writes continue the collection's own sequence; the default collection starts its own.
        let added = MutableDocument(id: "new", data: ["name": ["first": "Nova"]])
        try test.save(document: added)
        XCTAssertEqual(added.sequence, 101)
        try db.saveDocument(MutableDocument(id: "d", data: ["x": 1]))
        XCTAssertEqual(db.document(withID: "d")?.sequence, 1)
        try test.delete(document: try XCTUnwrap(try test.document(id: "0000003")))
        XCTAssertEqual(test.count, 100)

        let sql = try CollectionTestSupport.raw("peer", in: directory)
        XCTAssertEqual(try CollectionTestSupport.strings("SELECT name || '=' || lastSeq FROM kvmeta ORDER BY name", sql),
                       [".loopback.test=102", "default=1"])
        XCTAssertEqual(try sql.scalarInt("SELECT sequence FROM \"kv_del_.loopback.test\" WHERE key='0000003'"), 102)
        XCTAssertEqual(try sql.scalarInt("SELECT count(*) FROM \"kv_.loopback.test\" WHERE key='0000003'"), 0)
        XCTAssertEqual(sql.userVersion, 500, "a 3.1 file needs no upgrade")
        XCTAssertEqual(try sql.integrityCheck(), "ok")

        try db.close()
        db = try CollectionTestSupport.open("peer", in: directory)
        let reopened = try XCTUnwrap(try db.collection(name: "test", scope: "loopback"))
        XCTAssertEqual(try reopened.document(id: "new")?.dictionary(forKey: "name")?.string(forKey: "first"), "Nova")
        XCTAssertNil(try reopened.document(id: "0000003"))
        XCTAssertEqual(try rows(db, "SELECT meta().id FROM loopback.test WHERE meta().deleted"), ["\"0000003\""])
    }

    // MARK: 2.8 files get their first collection

    func testRealTwoEightFileGetsACollectionAndKeepsItsDocuments() throws {
        try CollectionTestSupport.copyFixture("upgrade_2.8", to: directory, as: "old28")
        var db = try CollectionTestSupport.open("old28", in: directory)
        defer { try? db.close() }
        let sql = try CollectionTestSupport.raw("old28", in: directory)
        XCTAssertEqual(sql.userVersion, 302)
        let before = try snapshot(db)
        let query = "SELECT meta().id, n, even FROM _ WHERE n > 40 ORDER BY n"
        let queryBefore = try rows(db, query)
        XCTAssertEqual(before.count, 100)
        XCTAssertEqual(db.count, 50)

        let tasks = try db.createCollection(name: "tasks")
        try tasks.save(document: MutableDocument(id: "t", data: ["title": "new"]))

        // Upgraded as LiteCore 3.1 upgrades a 2.8 file.
        XCTAssertEqual(sql.userVersion, 500)
        XCTAssertEqual(try sql.columns(of: "kv_default"), ["key", "sequence", "flags", "version", "body", "extra", "expiration"])
        XCTAssertEqual(try sql.columns(of: "kv_del_default"), ["key", "sequence", "flags", "version", "body", "extra", "expiration"])
        XCTAssertEqual(try sql.columns(of: "kv_info"), ["key", "sequence", "flags", "version", "body", "extra"])
        XCTAssertEqual(try sql.scalar("SELECT body FROM kv_info WHERE key='versioning'"), .blob([0, 0, 0, 0, 0, 0, 0, 1]))
        // Documents are not rewritten: 2.x rows, deleted ones still in kv_default.
        XCTAssertEqual(try sql.scalarInt("SELECT count(*) FROM kv_default WHERE extra IS NULL"), 100)
        XCTAssertEqual(try sql.scalarInt("SELECT count(*) FROM kv_del_default"), 0)

        // …and read exactly as before, through the documents API and queries.
        XCTAssertEqual(try snapshot(db), before)
        XCTAssertEqual(try rows(db, query), queryBefore)
        XCTAssertEqual(db.count, 50)
        XCTAssertEqual(try tasks.document(id: "t")?.string(forKey: "title"), "new")

        // The next save of a default document writes the 3.x row; a deletion goes to kv_del_default.
        let doc1 = try XCTUnwrap(db.document(withID: "doc-001"))
        try db.saveDocument(doc1.toMutable().setInt(1001, forKey: "n"))
        XCTAssertEqual(try sql.scalarInt("SELECT count(*) FROM kv_default WHERE key='doc-001' AND extra IS NOT NULL"), 1)
        XCTAssertEqual(db.document(withID: "doc-001")?.int(forKey: "n"), 1001)
        XCTAssertEqual(db.document(withID: "doc-001")?.revisionID?.hasPrefix("2-"), true)
        try db.deleteDocument(try XCTUnwrap(db.document(withID: "doc-002")))
        XCTAssertEqual(try CollectionTestSupport.strings("SELECT key FROM kv_del_default", sql), ["doc-002"])
        XCTAssertEqual(db.count, 49)
        XCTAssertEqual(try rows(db, "SELECT count(*) FROM _"), ["49"])
        XCTAssertEqual(try rows(db, "SELECT count(*) FROM _ WHERE meta().deleted"), ["51"])
        XCTAssertEqual(try sql.integrityCheck(), "ok")

        try db.close()
        db = try CollectionTestSupport.open("old28", in: directory)
        let untouched = { (all: [String: Snapshot]) in all.filter { !["doc-001", "doc-002"].contains($0.key) } }
        XCTAssertEqual(untouched(try snapshot(db)), untouched(before))
        XCTAssertEqual(untouched(before).count, 98)
        XCTAssertEqual(db.document(withID: "doc-003")?.int(forKey: "n"), 3)
        XCTAssertEqual(try db.collection(name: "tasks")?.count, 1)
    }

    func testRealThreeZeroFileGetsACollection() throws {
        try CollectionTestSupport.copyFixture("db_3_0_0_names_100_with_deleted", to: directory, as: "v30")
        let db = try CollectionTestSupport.open("v30", in: directory)
        defer { try? db.close() }
        let sql = try CollectionTestSupport.raw("v30", in: directory)
        XCTAssertEqual(sql.userVersion, 400)
        let before = try snapshot(db)
        let countBefore = try rows(db, "SELECT count(*) FROM _")

        let people = try db.createCollection(name: "people")
        XCTAssertEqual(sql.userVersion, 500)
        XCTAssertTrue(try sql.tableExists("kv_del_default"))
        XCTAssertEqual(try snapshot(db), before)
        XCTAssertEqual(try rows(db, "SELECT count(*) FROM _"), countBefore)
        XCTAssertEqual(countBefore, ["78"])
        try people.save(document: MutableDocument(id: "p", data: ["n": 1]))
        XCTAssertEqual(try rows(db, "SELECT p.n FROM people p"), ["1"])
        XCTAssertEqual(try sql.integrityCheck(), "ok")
    }

    /// A database this package created (2.8 layout) with documents, a tombstone and a 2.x-style
    /// expiration column gets its first collection without losing any of them.
    func testOwnTwoEightDatabaseGetsACollection() throws {
        var db = try CollectionTestSupport.open("own", in: directory)
        defer { try? db.close() }
        for n in 1...5 { try db.saveDocument(MutableDocument(id: "d\(n)", data: ["n": n])) }
        try db.deleteDocument(try XCTUnwrap(db.document(withID: "d5")))
        let when = Date(timeIntervalSince1970: 1_900_000_000)
        try db.setDocumentExpiration(withID: "d1", expiration: when)
        try db.createIndex(ValueIndexConfiguration(["n"]), name: "byN")
        let sql = try CollectionTestSupport.raw("own", in: directory)
        XCTAssertEqual(sql.userVersion, 302)
        let before = try snapshot(db)

        let c = try db.createCollection(name: "c", scope: "s")
        XCTAssertEqual(sql.userVersion, 500)
        XCTAssertEqual(try snapshot(db), before)
        XCTAssertEqual(try db.getDocumentExpiration(withID: "d1"), when)
        XCTAssertEqual(try db.getIndexes(), ["byN"])
        XCTAssertEqual(try c.indexes(), [])
        XCTAssertEqual(try rows(db, "SELECT n FROM _ WHERE n >= 3 ORDER BY n"), ["3", "4"])
        // The 2.x expiration index is kept; no second one is made.
        XCTAssertEqual(try CollectionTestSupport.strings(
            "SELECT name FROM sqlite_master WHERE type='index' AND tbl_name='kv_default' AND sql NOT NULL ORDER BY name", sql),
                       ["byN", "kv_default_expiration"])
        try c.save(document: MutableDocument(id: "d1", data: ["in": "c"]))
        XCTAssertEqual(try CollectionTestSupport.strings(
            "SELECT name || '=' || lastSeq FROM kvmeta WHERE name != 'info' ORDER BY name", sql), [".s.c=1", "default=6"])
        XCTAssertEqual(try c.document(id: "d1")?.sequence, 1)
        XCTAssertEqual(db.document(withID: "d1")?.int(forKey: "n"), 1)

        try db.close()
        db = try CollectionTestSupport.open("own", in: directory)
        XCTAssertEqual(try snapshot(db), before)
        XCTAssertEqual(try db.collection(name: "c", scope: "s")?.document(id: "d1")?.string(forKey: "in"), "c")
    }
}
