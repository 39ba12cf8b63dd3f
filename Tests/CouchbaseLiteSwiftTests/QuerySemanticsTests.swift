import Fleece
import Foundation
import XCTest
@testable import CouchbaseLiteSwift

/// Hand-written cases for LiteCore's query semantics (spec 9.3) on a copy of the 2.8 fixture
/// database with extra rows added through the storage layer.
final class QuerySemanticsTests: XCTestCase {
    private var temp: URL!
    private var db: Database!

    override func setUpWithError() throws {
        let fixtures = try QueryTestSupport.requireFixtures()
        temp = try QueryTestSupport.temporaryDirectory()
        let bundle = temp.appendingPathComponent("mixed.cblite2")
        try FileManager.default.copyItem(at: fixtures.appendingPathComponent("lite_dbs/upgrade_2.8.cblite2"), to: bundle)
        let file = try DataFile(directory: bundle, create: false)
        let docs: [(String, [String: Any])] = [
            ("mix-missing", [:]), ("mix-null", ["v": NSNull()]), ("mix-false", ["v": false]), ("mix-true", ["v": true]),
            ("mix-1.5", ["v": 1.5]), ("mix-2", ["v": 2]), ("mix-B", ["v": "B"]), ("mix-a", ["v": "a"]),
            ("mix-b", ["v": "b"]), ("mix-array", ["v": [1]]), ("mix-dict", ["v": ["a": 1]]),
            ("name-apple", ["name": "apple"]), ("name-Apple", ["name": "Apple"]), ("name-APPLE", ["name": "APPLE pie"]),
        ]
        let version = BinaryRevisionID.encode("1-abcd")!
        for (id, body) in docs {
            let fleece = try FleeceCoding.encode(body, sharedKeys: file.sharedKeys)
            var tree: [UInt8] = []
            _ = Array("1-abcd".utf8).withUnsafeBytes { LiteCoreRevTree.appendRecord(into: &tree, revID: $0, parentIndex: nil, flags: .leaf, body: fleece) }
            LiteCoreRevTree.appendEnd(into: &tree)
            try insert(file, id, version, tree)
        }
        // A row whose body is neither a rev tree nor Fleece: queries must not crash on it.
        try insert(file, "mix-corrupt", version, [0xFF, 0x00, 0x13, 0x37, 0x42])
        try file.saveSharedKeysIfChanged()
        file.close()
        var config = DatabaseConfiguration()
        config.directory = temp.path
        db = try Database(name: "mixed", config: config)
    }

    private func insert(_ file: DataFile, _ id: String, _ version: [UInt8], _ tree: [UInt8]) throws {
        try Array(id.utf8).withUnsafeBytes { idp in
            try version.withUnsafeBytes { vp in
                try tree.withUnsafeBytes { tp in _ = try file.insertRecord(docID: idp, flags: [], version: vp, tree: tp) }
            }
        }
    }

    override func tearDownWithError() throws {
        try? db?.close()
        if let temp { try? FileManager.default.removeItem(at: temp) }
    }

    private func ids(_ n1ql: String) throws -> [String] {
        try db.createQuery(n1ql).execute().map { $0.string(at: 0) ?? "?" }
    }

    func testMissingVersusNull() throws {
        XCTAssertEqual(try ids("SELECT meta().id FROM _ WHERE meta().id LIKE 'mix-%' AND v IS MISSING ORDER BY meta().id"),
                       ["mix-corrupt", "mix-missing"])
        XCTAssertEqual(try ids("SELECT meta().id FROM _ WHERE meta().id LIKE 'mix-%' AND v IS NULL"), ["mix-null"])
        XCTAssertEqual(try ids("SELECT meta().id FROM _ WHERE v = null"), ["mix-null"])   // LiteCore: null = null is true
        XCTAssertEqual(try ids("SELECT meta().id FROM _ WHERE meta().id LIKE 'mix-%' AND v IS NOT VALUED ORDER BY meta().id"),
                       ["mix-corrupt", "mix-missing", "mix-null"])
        let rows = try db.createQuery("SELECT meta().id, v FROM _ WHERE meta().id IN ['mix-missing', 'mix-null'] ORDER BY meta().id").execute().allResults()
        XCTAssertEqual(rows.count, 2)
        XCTAssertEqual(rows[0].keyNames, ["id", "v"])
        XCTAssertNil(rows[0].value(forKey: "v"))
        XCTAssertFalse(rows[0].contains(key: "v"))
        XCTAssertNil(rows[0].toDictionary()["v"])
        XCTAssertEqual(rows[0].toJSON(), #"{"id":"mix-missing"}"#)
        XCTAssertTrue(rows[1].value(forKey: "v") is NSNull)
        XCTAssertTrue(rows[1].contains(key: "v"))
        XCTAssertEqual(rows[1].toJSON(), #"{"id":"mix-null","v":null}"#)
    }

    func testOrderingOfMixedTypes() throws {
        // MISSING < numbers (booleans are 0/1) < strings (BINARY: 'B' < 'a') < blobs (null first).
        let order = try ids("SELECT meta().id FROM _ WHERE meta().id LIKE 'mix-%' AND meta().id != 'mix-corrupt' ORDER BY v, meta().id")
        XCTAssertEqual(Array(order.prefix(9)), ["mix-missing", "mix-false", "mix-true", "mix-1.5", "mix-2", "mix-B", "mix-a", "mix-b", "mix-null"])
        XCTAssertEqual(Set(order.suffix(2)), ["mix-array", "mix-dict"])
        XCTAssertEqual(try ids("SELECT meta().id FROM _ WHERE v = 1"), ["mix-true"])          // true = 1
        XCTAssertEqual(try ids("SELECT meta().id FROM _ WHERE v < 0.5"), ["mix-false"])
        let r = try db.createQuery("SELECT v FROM _ WHERE meta().id = 'mix-true'").execute().allResults()
        XCTAssertEqual(r.first?.value(at: 0) as? Bool, true)
        XCTAssertEqual(r.first?.toJSON(), #"{"v":true}"#)
    }

    func testLikeIsCaseSensitive() throws {
        XCTAssertEqual(try ids("SELECT meta().id FROM _ WHERE name LIKE 'a%'"), ["name-apple"])
        XCTAssertEqual(try ids("SELECT meta().id FROM _ WHERE name LIKE 'A%' ORDER BY name"), ["name-APPLE", "name-Apple"])
        XCTAssertEqual(try ids("SELECT meta().id FROM _ WHERE name LIKE '_pple' ORDER BY name"), ["name-Apple", "name-apple"])
        XCTAssertEqual(try ids("SELECT meta().id FROM _ WHERE name LIKE '%PIE'"), [])
        XCTAssertEqual(try ids("SELECT meta().id FROM _ WHERE (name LIKE 'apple%') COLLATE (UNICODE NOCASE) ORDER BY name"),
                       ["name-APPLE", "name-Apple", "name-apple"])
    }

    func testCollations() throws {
        // BINARY by default; COLLATE UNICODE = ICU order (a < b < B), NOCASE / UNICODE NOCASE fold case.
        XCTAssertEqual(try ids("SELECT meta().id FROM _ WHERE v IN ['a', 'b', 'B'] ORDER BY v"), ["mix-B", "mix-a", "mix-b"])
        XCTAssertEqual(try ids("SELECT meta().id FROM _ WHERE v IN ['a', 'b', 'B'] ORDER BY v COLLATE UNICODE"), ["mix-a", "mix-b", "mix-B"])
        XCTAssertEqual(try ids("SELECT meta().id FROM _ WHERE name LIKE '%' ORDER BY name COLLATE UNICODE"),
                       ["name-apple", "name-Apple", "name-APPLE"])
        XCTAssertEqual(try ids("SELECT meta().id FROM _ WHERE name = 'APPLE' ORDER BY meta().id"), [])
        XCTAssertEqual(try ids("SELECT meta().id FROM _ WHERE (name = 'APPLE') COLLATE NOCASE ORDER BY meta().id"), ["name-Apple", "name-apple"])
        XCTAssertEqual(try ids("SELECT meta().id FROM _ WHERE (name = 'APPLE') COLLATE (UNICODE NOCASE) ORDER BY meta().id"), ["name-Apple", "name-apple"])
        XCTAssertEqual(try ids("SELECT meta().id FROM _ WHERE v IN ['a', 'b', 'B'] AND (v < 'b' COLLATE UNICODE) ORDER BY meta().id"), ["mix-a"])
        let minmax = try db.createQuery("SELECT min(v COLLATE UNICODE), max(v COLLATE UNICODE), min(v), max(v) FROM _ WHERE v IN ['a', 'b', 'B']").execute().next()
        XCTAssertEqual(minmax?.toArray().map { $0 as? String }, ["a", "B", "B", "b"])
    }

    func testLiteralsInOrderAndGroupByAreValues() throws {
        // SQLite would read `ORDER BY 2` as "column 2"; N1QL means the constant.
        XCTAssertEqual(try ids("SELECT meta().id, v FROM _ WHERE v IN ['a', 'b', 'B'] ORDER BY 2, meta().id"), ["mix-B", "mix-a", "mix-b"])
        XCTAssertEqual(try db.createQuery("SELECT count(*) FROM _ WHERE v IN ['a', 'b', 'B'] GROUP BY 1").execute().next()?.int(at: 0), 3)
    }

    func testFixtureDataAndDeletedDocuments() throws {
        // The 2.8 fixture: doc-001…doc-050 live with {n, even}, doc-051…doc-100 deleted.
        XCTAssertEqual(try db.createQuery("SELECT count(*) FROM _ WHERE n IS VALUED").execute().next()?.int(at: 0), 50)
        let deleted = try db.createQuery("SELECT count(*) FROM _ WHERE meta().deleted").execute().next()?.int(at: 0)
        XCTAssertEqual(deleted, 50)
        // Mentioning meta().deleted anywhere (here only in ORDER BY) makes the query see deleted docs.
        XCTAssertEqual(try ids("SELECT meta().id FROM _ ORDER BY meta().deleted DESC, meta().id LIMIT 1"), ["doc-051"])
        XCTAssertEqual(try ids("SELECT meta().id FROM _ ORDER BY meta().id DESC LIMIT 1"), ["name-apple"])
    }

    func testThreeXLayoutMatchesDocumentAPI() throws {
        // 3.0 rows: Fleece body in `body`, rev tree in `extra`; 22 of 100 documents deleted.
        let fixtures = try QueryTestSupport.requireFixtures()
        let db3 = try QueryTestSupport.copyFixture(fixtures.appendingPathComponent("lite_dbs/db_3_0_0_names_100_with_deleted.cblite2"),
                                                    to: temp, name: "three")
        defer { try? db3.close() }
        XCTAssertEqual(try db3.createQuery("SELECT count(*) FROM _").execute().next()?.int(at: 0), 78)
        XCTAssertEqual(try db3.createQuery("SELECT count(*) FROM _ WHERE meta().deleted").execute().next()?.int(at: 0), 22)
        let rows = try db3.createQuery("SELECT meta().id, * FROM _ ORDER BY meta().id").execute().allResults()
        XCTAssertEqual(rows.count, 78)
        for row in rows {
            let id = try XCTUnwrap(row.string(at: 0))
            let doc = try XCTUnwrap(db3.document(withID: id))
            XCTAssertEqual(QueryTestSupport.canonical(row.dictionary(at: 1)?.toDictionary()),
                           QueryTestSupport.canonical(doc.toDictionary()), id)
        }
    }

    func testErrors() throws {
        XCTAssertThrowsError(try db.createQuery("SELECT FROM WHERE")) { error in
            XCTAssertEqual((error as? CouchbaseLiteError)?.code, .invalidQuery, "\(error)")
            XCTAssertTrue((error as? CouchbaseLiteError)?.message.contains("column") == true, "\(error)")
        }
        XCTAssertThrowsError(try db.createQuery(json: #"{"WHAT": [["frobnicate()", 1]]}"#)) { error in
            let e = error as? CouchbaseLiteError
            XCTAssertEqual(e?.code, .invalidQuery)
            XCTAssertTrue(e?.message.contains("frobnicate") == true, "\(error)")
        }
        XCTAssertThrowsError(try db.createQuery(json: #"{"WHAT": [["lower()", 1, 2]]}"#)) { error in
            XCTAssertTrue((error as? CouchbaseLiteError)?.message.contains("Wrong number of arguments") == true, "\(error)")
        }
        XCTAssertThrowsError(try db.createQuery("SELECT x.y FROM _ AS a JOIN _ AS b ON meta(c).id = 1"))
    }

    func testResultAccessorsAndDecodable() throws {
        struct Row: Decodable, Equatable { let id: String; let n: Int; let even: Bool }
        let rows = try db.createQuery("SELECT meta().id, n, even, {'n': n, 'm': nothing} AS d, [n, 'x'] AS a FROM _ WHERE n <= 2 ORDER BY n").execute().allResults()
        XCTAssertEqual(rows.count, 2)
        XCTAssertEqual(try rows[1].data(as: Row.self), Row(id: "doc-002", n: 2, even: true))
        XCTAssertEqual(rows[0].keyNames, ["id", "n", "even", "d", "a"])
        XCTAssertEqual(rows[0].int(forKey: "n"), 1)
        XCTAssertEqual(rows[0].boolean(at: 2), false)
        XCTAssertEqual(rows[0].dictionary(forKey: "d")?.toDictionary() as? [String: Int], ["n": 1])
        XCTAssertEqual(rows[0].array(at: 4)?.toArray().count, 2)
        XCTAssertEqual(rows[0].toJSON(), #"{"id":"doc-001","n":1,"even":false,"d":{"n":1},"a":[1,"x"]}"#)
    }

    func testComparisonResultsAreBooleans() throws {
        let r = try XCTUnwrap(db.createQuery("SELECT n > 1, n = 1 AND even, n + 1, {'big': n > 1}, missing_prop = 1 FROM _ WHERE n = 2").execute().next())
        XCTAssertEqual(r.toJSON(), #"{"$1":true,"$2":false,"$3":3,"$4":{"big":true}}"#)
    }

    func testExplainShowsSQL() throws {
        let text = try db.createQuery("SELECT n FROM _ WHERE even = true").explain()
        XCTAssertTrue(text.contains("fl_value(_doc.body, 'even')"), text)
        XCTAssertTrue(text.contains("kv_default"), text)
    }
}
