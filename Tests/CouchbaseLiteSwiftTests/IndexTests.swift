import Foundation
import XCTest
@testable import CouchbaseLiteSwift

/// Value indexes: stored as LiteCore stores them (spec 2.2) and used by SQLite's planner for the
/// SQL the query translator writes, in databases made here and in a real 2.8 file.
final class IndexTests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = try QueryTestSupport.temporaryDirectory()
    }

    override func tearDownWithError() throws {
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }

    private func people() throws -> Database {
        let db = try Database(name: "people", config: DatabaseConfiguration(directory: directory.path))
        try db.inBatch {
            for i in 0..<50 {
                try db.saveDocument(MutableDocument(id: String(format: "p%02d", i))
                    .setString("name\(i % 10)", forKey: "name")
                    .setValue(["city": "city\(i % 5)"], forKey: "address")
                    .setInt(i, forKey: "age"))
            }
        }
        return db
    }

    private func sqlite(_ db: Database, _ sql: String) throws -> [String] {
        try db.withOpenFile { try CollectionTestSupport.strings(sql, $0.connection) }
    }

    private func assertUses(_ q: Query, _ index: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let plan = try q.explain()
        XCTAssertTrue(plan.contains("USING INDEX \(index)") || plan.contains("USING COVERING INDEX \(index)"), plan, file: file, line: line)
    }

    func testValueIndexIsStoredAsLiteCoreStoresIt() throws {
        let db = try people()
        XCTAssertEqual(db.indexes, [])
        try db.createIndex(ValueIndexConfiguration(["name", "address.city"]), name: "byName")
        XCTAssertEqual(db.indexes, ["byName"])
        XCTAssertEqual(try sqlite(db, "SELECT sql FROM sqlite_master WHERE name='byName'"),
                       [#"CREATE INDEX "byName" ON "kv_default" (fl_value(body, 'name'), fl_value(body, 'address.city'))"#])
        XCTAssertEqual(try sqlite(db, "SELECT name || '|' || type || '|' || keyStore || '|' || expression || '|' || ifnull(indexTableName, 'NULL') FROM indexes"),
                       [#"byName|0|default|[[".name"],[".address.city"]]|NULL"#])
        // Same DDL as the fixture's 2.8 `indexes` table.
        XCTAssertEqual(try sqlite(db, "SELECT sql FROM sqlite_master WHERE name='indexes'"),
                       ["CREATE TABLE indexes (name TEXT PRIMARY KEY, type INTEGER NOT NULL, keyStore TEXT NOT NULL, expression TEXT, indexTableName TEXT)"])
    }

    func testQueriesUseTheIndex() throws {
        let db = try people()
        try db.createIndex(ValueIndexConfiguration(["name", "address.city"]), name: "byName")
        let q = try db.createQuery("SELECT meta().id FROM _ WHERE name = 'name3' ORDER BY meta().id")
        try assertUses(q, "byName")
        XCTAssertEqual(try q.execute().map { $0.string(at: 0) ?? "" }, ["p03", "p13", "p23", "p33", "p43"])

        let range = try db.createQuery("SELECT name FROM _ WHERE name > 'name7' ORDER BY name LIMIT 3")
        try assertUses(range, "byName")

        let nested = try db.createQuery("SELECT count(*) FROM _ WHERE name = 'name1' AND address.city = 'city1'")
        try assertUses(nested, "byName")
        XCTAssertEqual(try nested.execute().map { $0.int(at: 0) }, [5])

        let unindexed = try db.createQuery("SELECT meta().id FROM _ WHERE age = 3")
        XCTAssertFalse(try unindexed.explain().contains("USING INDEX byName"))
    }

    func testWritesAfterIndexingAreSeenThroughTheIndex() throws {
        let db = try people()
        try db.createIndex(IndexBuilder.valueIndex(items: ValueIndexItem.property("name")), withName: "name2x")
        try db.saveDocument(MutableDocument(id: "new").setString("zed", forKey: "name"))
        let doc = try XCTUnwrap(db.document(withID: "p00")).toMutable()
        doc.setString("zed", forKey: "name")
        try db.saveDocument(doc)
        try db.deleteDocument(try XCTUnwrap(db.document(withID: "p10")))
        let q = try db.createQuery("SELECT meta().id FROM _ WHERE name = $n ORDER BY meta().id")
        q.parameters = Parameters(["n": "zed"])
        try assertUses(q, "name2x")
        XCTAssertEqual(try q.execute().map { $0.string(at: 0) ?? "" }, ["new", "p00"])
        q.parameters = Parameters(["n": "name0"])
        // p10 is deleted: LiteCore indexes deleted rows too, the query's flags test drops them.
        XCTAssertEqual(try q.execute().map { $0.string(at: 0) ?? "" }, ["p20", "p30", "p40"])
        XCTAssertEqual(try sqlite(db, "PRAGMA integrity_check"), ["ok"])
    }

    func testDeleteAndRecreate() throws {
        let db = try people()
        try db.createIndex(ValueIndexConfiguration(["name"]), name: "i")
        try db.createIndex(ValueIndexConfiguration(["name"]), name: "i")       // identical: no-op
        XCTAssertEqual(try db.getIndexes(), ["i"])
        try db.createIndex(ValueIndexConfiguration(["age"]), name: "i")        // other keys: replaced
        XCTAssertEqual(try sqlite(db, "SELECT expression FROM indexes"), [#"[[".age"]]"#])
        try assertUses(try db.createQuery("SELECT 1 FROM _ WHERE age = 4"), "i")
        try db.deleteIndex(forName: "i")
        try db.deleteIndex(forName: "i")                                       // absent: no error
        XCTAssertEqual(db.indexes, [])
        XCTAssertEqual(try sqlite(db, "SELECT count(*) FROM sqlite_master WHERE name='i'"), ["0"])
        XCTAssertThrowsError(try db.createIndex(ValueIndexConfiguration(["name ="]), name: "bad"))
        XCTAssertEqual(db.indexes, [])
    }

    func testIndexesSurviveReopen() throws {
        var db = try people()
        try db.createIndex(ValueIndexConfiguration(["lower(name)"]), name: "lowerName")
        try db.close()
        db = try Database(name: "people", config: DatabaseConfiguration(directory: directory.path))
        XCTAssertEqual(db.indexes, ["lowerName"])
        let q = try db.createQuery("SELECT meta().id FROM _ WHERE lower(name) = 'name9' ORDER BY meta().id")
        try assertUses(q, "lowerName")
        XCTAssertEqual(try q.execute().allResults().count, 5)
        try db.saveDocument(MutableDocument(id: "x").setString("NAME9", forKey: "name"))
        XCTAssertEqual(try q.execute().allResults().count, 6)
    }

    func testRealFixtureIndexIsListedAndUsed() throws {
        let fixture = try QueryTestSupport.requireFixtures().appendingPathComponent("lite_dbs/upgrade_2.8_index.cblite2")
        let target = directory.appendingPathComponent("indexed.cblite2")
        try FileManager.default.copyItem(at: fixture, to: target)
        for f in try FileManager.default.contentsOfDirectory(atPath: target.path) {
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: target.appendingPathComponent(f).path)
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: target.path)
        let db = try Database(name: "indexed", config: DatabaseConfiguration(directory: directory.path))
        XCTAssertEqual(db.indexes, ["index1"])
        let q = try db.createQuery("SELECT firstName, lastName FROM _ WHERE firstName = $f")
        try assertUses(q, "index1")
        let all = try db.createQuery("SELECT firstName FROM _ WHERE firstName IS VALUED ORDER BY firstName").execute()
            .compactMap { $0.string(at: 0) }
        XCTAssertEqual(all.count, 2)
        q.parameters = Parameters(["f": all[0]])
        let same = all.filter { $0 == all[0] }.count
        XCTAssertEqual(try q.execute().allResults().count, same)
        // Writing to the indexed table evaluates the index's fl_value calls.
        try db.saveDocument(MutableDocument(id: "added").setString(all[0], forKey: "firstName").setString("Z", forKey: "lastName"))
        XCTAssertEqual(try q.execute().allResults().count, same + 1)
        try db.createIndex(ValueIndexConfiguration(["lastName"]), name: "byLast")
        XCTAssertEqual(db.indexes, ["byLast", "index1"])
        XCTAssertEqual(try sqlite(db, "PRAGMA user_version"), ["302"])
    }

    func testIndexingAPre25FileAddsTheIndexesTable() throws {
        let db = try people()
        try db.withOpenFile { try $0.connection.setUserVersion(201) }
        try db.close()
        let reopened = try Database(name: "people", config: DatabaseConfiguration(directory: directory.path))
        // A 2.0/2.1 value index: a plain SQLite index, no `indexes` table.
        try reopened.withOpenFile { try $0.connection.run(#"CREATE INDEX "legacy" ON "kv_default" (fl_value(body, 'age'))"#) }
        XCTAssertEqual(reopened.indexes, ["legacy"])
        try assertUses(try reopened.createQuery("SELECT 1 FROM _ WHERE age = 7"), "legacy")
        try reopened.createIndex(ValueIndexConfiguration(["name"]), name: "n")
        XCTAssertEqual(try sqlite(reopened, "PRAGMA user_version"), ["301"])
        XCTAssertEqual(reopened.indexes, ["legacy", "n"])
        XCTAssertEqual(try sqlite(reopened, "SELECT name || ':' || ifnull(expression, 'NULL') FROM indexes ORDER BY name"),
                       ["legacy:NULL", #"n:[[".name"]]"#])
        try reopened.createIndex(ValueIndexConfiguration(["age"]), name: "legacy")   // same SQL: kept as is
        XCTAssertEqual(try sqlite(reopened, "SELECT ifnull(expression, 'NULL') FROM indexes WHERE name='legacy'"), ["NULL"])
    }

    func testCollatedIndexIsUsedAndWritableAfterReopen() throws {
        var db = try people()
        try db.createIndex(ValueIndexConfiguration(["name COLLATE UNICODE"]), name: "uni")
        try db.close()
        db = try Database(name: "people", config: DatabaseConfiguration(directory: directory.path))
        // The index expression calls the LCUnicode collation: writes need it registered on open.
        try db.saveDocument(MutableDocument(id: "c").setString("Name3", forKey: "name"))
        let q = try db.createQuery("SELECT meta().id FROM _ WHERE (name COLLATE UNICODE) = 'name3'")
        XCTAssertEqual(try q.execute().allResults().count, 5)
        try assertUses(q, "uni")
    }

    /// 3.0 (schema 400, `extra` column) and 3.1 (500, `kv_del_default`) files: the index is made
    /// on `kv_default` and queries through it give what the scan gave.
    func testIndexOn3xFiles() throws {
        for name in ["db_3_0_0_names_100_with_deleted", "upgrade_3.1_peerCheckpoints"] {
            let fixture = try QueryTestSupport.requireFixtures().appendingPathComponent("lite_dbs/\(name).cblite2")
            let target = directory.appendingPathComponent("\(name).cblite2")
            try FileManager.default.copyItem(at: fixture, to: target)
            for f in try FileManager.default.contentsOfDirectory(atPath: target.path) {
                try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: target.appendingPathComponent(f).path)
            }
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: target.path)
            let db = try Database(name: name, config: DatabaseConfiguration(directory: directory.path))
            try db.saveDocument(MutableDocument(id: "indexed-1").setString("v1", forKey: "indexedProp"))
            let victim = MutableDocument(id: "indexed-2").setString("v1", forKey: "indexedProp")
            try db.saveDocument(victim)
            try db.deleteDocument(victim)
            // A string property of the fixture's own documents (the 3.1 file has none: ours then).
            let other = try db.allDocuments().first { $0.id != "indexed-1" }
            let key = other?.keys.sorted().first { other?.value(forKey: $0) is String } ?? "indexedProp"
            let value = other?.value(forKey: key) ?? "v1"
            let q = try db.createQuery("SELECT meta().id FROM _ WHERE `\(key)` = $v ORDER BY meta().id")
            q.parameters = Parameters(["v": value])
            let scanned = try q.execute().map { $0.string(at: 0) ?? "" }
            try db.createIndex(ValueIndexConfiguration(["`\(key)`"]), name: "byKey")
            let q2 = try db.createQuery("SELECT meta().id FROM _ WHERE `\(key)` = $v ORDER BY meta().id")
            q2.parameters = q.parameters
            try assertUses(q2, "byKey")
            XCTAssertFalse(scanned.isEmpty, name)
            XCTAssertEqual(try q2.execute().map { $0.string(at: 0) ?? "" }, scanned, name)
            XCTAssertEqual(db.indexes, ["byKey"], name)
            XCTAssertEqual(try sqlite(db, "SELECT tbl_name FROM sqlite_master WHERE name='byKey'"), ["kv_default"])
            try db.close()
        }
    }
}
