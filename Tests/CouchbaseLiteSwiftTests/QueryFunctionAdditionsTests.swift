import Foundation
import SQLiteKit
import XCTest
@testable import CouchbaseLiteSwift

/// The date, conversion and aggregate functions, the ICU Unicode collations, and the database
/// maintenance calls (copy, compact, performMaintenance), on a fresh database.
final class QueryFunctionAdditionsTests: XCTestCase {
    private var directory: URL!
    private var db: Database!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("cblfn-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        db = try Database(name: "fn", config: DatabaseConfiguration(directory: directory.path))
        try db.saveDocument(MutableDocument(id: "one").setInt(1, forKey: "n"))
    }

    override func tearDownWithError() throws {
        try? db?.close()
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }

    /// The first column of `SELECT expr FROM _ WHERE meta().id = 'one'`, as JSON-ish Swift.
    private func eval(_ expr: String, file: StaticString = #filePath, line: UInt = #line) throws -> Any? {
        let rows = try db.createQuery("SELECT \(expr) AS v FROM _ WHERE meta().id = 'one'").execute().allResults()
        XCTAssertEqual(rows.count, 1, file: file, line: line)
        switch rows.first?.value(forKey: "v") {
        case let a as ArrayObject: return a.toArray()
        case let d as DictionaryObject: return d.toDictionary()
        case let v: return v
        }
    }

    private func string(_ expr: String, file: StaticString = #filePath, line: UInt = #line) throws -> String? {
        try eval(expr, file: file, line: line) as? String
    }

    private func int(_ expr: String, file: StaticString = #filePath, line: UInt = #line) throws -> Int? {
        let v = try eval(expr, file: file, line: line); return (v as? Int) ?? (v as? NSNumber)?.intValue
    }

    func testMillisAndStringsConvertBothWays() throws {
        XCTAssertEqual(try string("millis_to_utc(1540319581000)"), "2018-10-23T18:33:01Z")
        XCTAssertEqual(try string("millis_to_utc(1540319581123)"), "2018-10-23T18:33:01.123Z")
        XCTAssertEqual(try string("millis_to_utc(0)"), "1970-01-01T00:00:00Z")
        XCTAssertEqual(try string("millis_to_utc(-1000)"), "1969-12-31T23:59:59Z")
        XCTAssertEqual(try string("millis_to_tz(1540319581000, -420)"), "2018-10-23T11:33:01-07:00")
        XCTAssertEqual(try string("millis_to_tz(1540319581000, 330)"), "2018-10-24T00:03:01+05:30")
        XCTAssertEqual(try int("str_to_millis('2018-10-23T18:33:01Z')"), 1_540_319_581_000)
        XCTAssertEqual(try int("str_to_millis('2018-10-23T11:33:01-07:00')"), 1_540_319_581_000)
        XCTAssertEqual(try int("str_to_millis('2018-10-23T11:33:01.5-0700')"), 1_540_319_581_500)
        XCTAssertEqual(try int("str_to_millis('2018-10-23 18:33Z')"), 1_540_319_580_000)
        XCTAssertEqual(try string("str_to_utc('2018-10-23T11:33:01-07:00')"), "2018-10-23T18:33:01Z")
        XCTAssertEqual(try string("str_to_tz('2018-10-23T18:33:01Z', 60)"), "2018-10-23T19:33:01+01:00")
        // A format example picks the parts printed.
        XCTAssertEqual(try string("millis_to_utc(1540319581123, '1111-11-11')"), "2018-10-23")
        XCTAssertEqual(try string("millis_to_utc(1540319581000, '1111-11-11T11:11:11.111Z')"), "2018-10-23T18:33:01.000Z")
        // Local time: the machine's zone, consistent with str_to_millis of a zone-less string.
        let local = try XCTUnwrap(try string("millis_to_str(1540319581000)"))
        XCTAssertEqual(try int("str_to_millis('\(local)')"), 1_540_319_581_000)
        // Not a date: null; MISSING stays MISSING.
        XCTAssertTrue(try eval("str_to_millis('2018-02-30')") is NSNull)
        XCTAssertTrue(try eval("str_to_millis('yesterday')") is NSNull)
        XCTAssertTrue(try eval("millis_to_utc('x')") is NSNull)
        XCTAssertNil(try eval("str_to_millis(nothing)"))
    }

    func testDateDifferencesAndAdditionsFollowTheFieldRule() throws {
        XCTAssertEqual(try int("date_diff_str('2018-01-01T00:00:00Z', '2017-12-31T23:59:59Z', 'year')"), 1)
        XCTAssertEqual(try int("date_diff_str('2017-12-31T00:00:00Z', '2018-01-01T00:00:00Z', 'day')"), -1)
        XCTAssertEqual(try int("date_diff_str('2020-03-01T00:00:00Z', '2019-03-01T00:00:00Z', 'day')"), 366)
        XCTAssertEqual(try int("date_diff_str('2018-05-31T00:00:00Z', '2018-01-15T00:00:00Z', 'month')"), 4)
        XCTAssertEqual(try int("date_diff_str('2018-05-31T00:00:00Z', '2018-01-15T00:00:00Z', 'quarter')"), 1)
        XCTAssertEqual(try int("date_diff_millis(1540319581000, 1540319580000, 'millisecond')"), 1000)
        XCTAssertEqual(try int("date_diff_millis(1540319581000, 1540233181000, 'hour')"), 24)
        XCTAssertEqual(try int("date_diff_millis(1540319581000, 1539714781000, 'week')"), 1)
        XCTAssertEqual(try string("date_add_str('2018-01-31T00:00:00Z', 1, 'month')"), "2018-03-03T00:00:00Z")
        XCTAssertEqual(try string("date_add_str('2018-10-23T18:33:01Z', -2, 'day')"), "2018-10-21T18:33:01Z")
        XCTAssertEqual(try string("date_add_str('2018-10-23', 1, 'year', '1111-11-11')"), "2019-10-23")
        XCTAssertEqual(try int("date_add_millis(1540319581000, 3, 'second')"), 1_540_319_584_000)
        XCTAssertEqual(try int("date_add_millis(0, 1, 'decade')"), 315_532_800_000)
        XCTAssertTrue(try eval("date_add_millis(0, 1, 'fortnight')") is NSNull)
    }

    func testConversionFunctions() throws {
        XCTAssertEqual(try eval("to_array(5)") as? [Int], [5])
        XCTAssertEqual(try eval("toarray([1, 2])") as? [Int], [1, 2])
        XCTAssertTrue(try eval("to_array(null)") is NSNull)
        XCTAssertEqual(try eval("to_atom([[7]])") as? Int, 7)
        XCTAssertEqual(try eval("to_atom({'a': 'x'})") as? String, "x")
        XCTAssertTrue(try eval("to_atom([1, 2])") is NSNull)
        XCTAssertEqual((try eval("to_object('s')") as? [String: Any])?.count, 0)
        XCTAssertEqual((try eval("to_object({'k': 1})") as? [String: Any])?["k"] as? Int, 1)
        XCTAssertNil(try eval("to_object(nothing)"))
    }

    func testArrayAggCollectsEachGroupsValues() throws {
        try db.inBatch {
            for (id, kind, n) in [("a", "x", 1), ("b", "y", 2), ("c", "x", 3), ("d", "y", 4), ("e", "x", 5)] {
                try db.saveDocument(MutableDocument(id: id).setString(kind, forKey: "kind").setInt(n, forKey: "n"))
            }
            try db.saveDocument(MutableDocument(id: "f").setString("y", forKey: "kind"))   // n MISSING: skipped
        }
        let rows = try db.createQuery("SELECT kind, array_agg(n) AS ns FROM _ WHERE kind IS VALUED GROUP BY kind ORDER BY kind")
            .execute().allResults()
        XCTAssertEqual(rows.map { $0.string(forKey: "kind") }, ["x", "y"])
        XCTAssertEqual(rows.map { ($0.array(forKey: "ns")?.toArray() as? [Int]).map { $0.sorted() } }, [[1, 3, 5], [2, 4]])
        let none = try db.createQuery("SELECT array_agg(n) AS ns FROM _ WHERE kind = 'zzz'").execute().allResults()
        XCTAssertEqual(none.first?.array(forKey: "ns")?.count, 0, "no rows: an empty array")
    }

    func testResultAliasesMeanTheirColumnsInWhereAndOrderBy() throws {
        try db.inBatch {
            for (id, first, last) in [("a", "Zoe", "Adams"), ("b", "Al", "Young"), ("c", "Mo", "Lee")] {
                try db.saveDocument(MutableDocument(id: id).setDictionary(MutableDictionaryObject(data: ["first": first, "last": last]), forKey: "name"))
            }
        }
        let byAlias = try db.createQuery("SELECT meta().id AS id, name.last AS key FROM _ WHERE key IS VALUED ORDER BY key DESC")
            .execute().map { $0.string(forKey: "id") ?? "?" }
        XCTAssertEqual(byAlias, ["b", "c", "a"], "key means the column name.last, not a property 'key'")
        let nested = try db.createQuery("SELECT name AS n FROM _ WHERE n.first = 'Mo'").execute().allResults()
        XCTAssertEqual(nested.first?.dictionary(forKey: "n")?.string(forKey: "last"), "Lee")
        let explicitSource = try db.createQuery("SELECT d.name.first AS name FROM _ AS d WHERE d.name.last = 'Adams'").execute().allResults()
        XCTAssertEqual(explicitSource.map { $0.string(forKey: "name") }, ["Zoe"], "a source-qualified path is the document's")
    }

    func testExistsSubqueriesAsLiteCoreRunsThem() throws {
        try db.inBatch {
            try db.saveDocument(MutableDocument(id: "cfg").setString("config", forKey: "type").setBoolean(true, forKey: "enabled"))
            try db.saveDocument(MutableDocument(id: "t1").setString("task", forKey: "type"))
        }
        func ids(_ n1ql: String, _ p: Parameters? = nil) throws -> [String] {
            let q = try db.createQuery(n1ql)
            if let p { q.parameters = p }
            return try q.execute().map { $0.string(at: 0) ?? "?" }
        }
        // Uncorrelated, as LiteCore's nested parser makes them.
        XCTAssertEqual(try ids("SELECT meta().id FROM _ WHERE type = 'task' AND EXISTS (SELECT 1 FROM _ WHERE type = 'config' AND enabled)"),
                       ["t1"])
        XCTAssertEqual(try ids("SELECT meta().id FROM _ WHERE type = 'task' AND EXISTS (SELECT 1 FROM _ WHERE type = $t)",
                               Parameters().setString("nothing", forName: "t")), [], "the subquery's parameters are bound")
        XCTAssertEqual(try ids("SELECT meta().id FROM _ WHERE type = 'task' AND NOT EXISTS (SELECT 1 FROM _ WHERE type = 'nothing')"),
                       ["t1"])
    }

    func testUnicodeCollationsUseICU() throws {
        try db.inBatch {
            for (i, name) in ["b", "B", "a", "á", "A", "Ä", "c"].enumerated() {
                try db.saveDocument(MutableDocument(id: "w\(i)").setString(name, forKey: "w"))
            }
        }
        func order(_ collate: String) throws -> [String] {
            try db.createQuery("SELECT w FROM _ WHERE w IS VALUED ORDER BY w \(collate), meta().id").execute()
                .map { $0.string(forKey: "w") ?? "?" }
        }
        XCTAssertEqual(try order(""), ["A", "B", "a", "b", "c", "Ä", "á"], "BINARY by default")
        XCTAssertEqual(try order("COLLATE UNICODE"), ["a", "A", "á", "Ä", "b", "B", "c"], "ICU tertiary: lower first, accents after")
        // Case-insensitive: a and A tie, as do b and B (then document-ID order: w2 'a' before w4 'A', w0 'b' before w1 'B').
        XCTAssertEqual(try order("COLLATE (UNICODE NOCASE)"), ["a", "A", "á", "Ä", "b", "B", "c"])
        // Accent-insensitive too: a, á, A, Ä all tie; document-ID order breaks the tie.
        XCTAssertEqual(try order("COLLATE (UNICODE NOCASE NODIAC)"), ["a", "á", "A", "Ä", "b", "B", "c"])
        let equal = try db.createQuery("SELECT count(*) AS c FROM _ WHERE (w COLLATE (UNICODE NOCASE NODIAC)) = 'a'").execute()
        XCTAssertEqual(equal.allResults().first?.int(forKey: "c"), 4)
    }

    func testCompactDeletesOnlyUnreferencedBlobs() throws {
        let kept = Blob(contentType: "text/plain", data: Data("keep me".utf8))
        let dropped = Blob(contentType: "text/plain", data: Data("drop me".utf8))
        try db.saveDocument(MutableDocument(id: "k").setBlob(kept, forKey: "file"))
        try db.saveDocument(MutableDocument(id: "d").setBlob(dropped, forKey: "file"))
        let attachments = URL(fileURLWithPath: try XCTUnwrap(db.path)).appendingPathComponent("Attachments")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: attachments.path).count, 2)
        try db.purgeDocument(withID: "d")
        try db.compact()
        let left = try FileManager.default.contentsOfDirectory(atPath: attachments.path)
        XCTAssertEqual(left.count, 1)
        XCTAssertEqual(db.document(withID: "k")?.blob(forKey: "file")?.content, Data("keep me".utf8))
        try db.performMaintenance(type: .integrityCheck)
        try db.performMaintenance(type: .reindex)
        try db.performMaintenance(type: .optimize)
        try db.performMaintenance(type: .fullOptimize)
    }

    func testCopyMakesAFreshDatabaseWithNewUUIDs() throws {
        try db.saveDocument(MutableDocument(id: "copied").setString("yes", forKey: "v"))
        let sourcePath = try XCTUnwrap(db.path)
        let config = DatabaseConfiguration(directory: directory.appendingPathComponent("copies").path)
        try Database.copy(fromPath: sourcePath, toDatabase: "twin", withConfig: config)
        XCTAssertTrue(Database.exists(withName: "twin", inDirectory: config.directory))
        let twin = try Database(name: "twin", config: config)
        defer { try? twin.close() }
        XCTAssertEqual(twin.document(withID: "copied")?.string(forKey: "v"), "yes")
        XCTAssertEqual(twin.count, db.count)
        func uuid(_ bundle: String) throws -> [UInt8]? {
            let c = try SQLiteConnection(path: bundle + "/db.sqlite3", mode: .init(readOnly: true, create: false))
            defer { c.close() }
            let s = try c.prepare("SELECT body FROM kv_info WHERE key='privateUUID'")
            return try s.step() ? s.bytes(0) : nil
        }
        XCTAssertNotEqual(try uuid(sourcePath), try uuid(try XCTUnwrap(twin.path)))
        XCTAssertThrowsError(try Database.copy(fromPath: sourcePath, toDatabase: "twin", withConfig: config)) { error in
            XCTAssertEqual((error as? CouchbaseLiteError)?.code, .conflict)
        }
        XCTAssertThrowsError(try Database.copy(fromPath: directory.appendingPathComponent("nope.cblite2").path,
                                               toDatabase: "other", withConfig: config))
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: config.directory).sorted(), ["twin.cblite2"],
                       "a failed copy leaves nothing behind")
    }
}

/// The 2.x subscript spelling: `doc["name"].string`, `mdoc["name"].value = …`, `result["x"].int`, `db["id"].exists`.
final class FragmentTests: XCTestCase {
    func testSubscriptsReadAndWriteThroughFragments() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cblfrag-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let db = try Database(name: "frag", config: DatabaseConfiguration(directory: directory.path))
        defer { try? db.close() }
        let mdoc = MutableDocument(id: "p1")
        mdoc["name"].value = "Ann"
        mdoc["age"].int = 41
        mdoc["address"].value = ["city": "Oslo", "zip": "0150"]
        mdoc["tags"].value = ["a", "b"]
        mdoc["address"]["city"].string = "Bergen"
        mdoc["tags"][1].value = "B"
        mdoc["tags"][9].value = "ignored"           // out of range: no effect
        mdoc["since"].date = Date(timeIntervalSince1970: 0)
        XCTAssertEqual(mdoc["address"]["city"].string, "Bergen")
        try db.saveDocument(mdoc)

        let doc = try XCTUnwrap(db.document(withID: "p1"))
        XCTAssertEqual(doc["name"].string, "Ann")
        XCTAssertEqual(doc["age"].int, 41)
        XCTAssertEqual(doc["age"].double, 41)
        XCTAssertEqual(doc["address"]["city"].string, "Bergen")
        XCTAssertEqual(doc["address"]["zip"].string, "0150")
        XCTAssertEqual(doc["tags"][1].string, "B")
        XCTAssertEqual(doc["tags"].array?.count, 2)
        XCTAssertEqual(doc["since"].date, Date(timeIntervalSince1970: 0))
        XCTAssertFalse(doc["nope"].exists)
        XCTAssertEqual(doc["nope"].int, 0)
        XCTAssertNil(doc["tags"][5].value)
        XCTAssertNil(doc["name"]["x"].value, "a string has no keys")

        XCTAssertTrue(db["p1"].exists)
        XCTAssertEqual(db["p1"]["name"].string, "Ann")
        XCTAssertFalse(db["p2"].exists)

        let row = try XCTUnwrap(db.createQuery("SELECT name, age, address FROM _").execute().allResults().first)
        XCTAssertEqual(row["name"].string, "Ann")
        XCTAssertEqual(row[1].int, 41)
        XCTAssertEqual(row["address"]["city"].string, "Bergen")
        XCTAssertFalse(row["zzz"].exists)
        XCTAssertFalse(row[7].exists)

        let edit = doc.toMutable()
        edit["age"].value = nil                      // nil stores null
        XCTAssertTrue(edit["age"].exists)
        XCTAssertTrue(edit["age"].value is NSNull)
    }
}
