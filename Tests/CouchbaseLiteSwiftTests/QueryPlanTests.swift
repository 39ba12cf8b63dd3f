import Foundation
import XCTest
@testable import CouchbaseLiteSwift

/// The SQL the translator writes for the benchmark's seven question shapes (issue 20) lets SQLite's
/// planner use the value indexes as it does for LiteCore's SQL: `explain()` shows the index, no
/// sort when the index gives the order, and the rows are the right ones.
final class QueryPlanTests: XCTestCase {
    private var directory: URL!
    private var db: Database!

    private struct Person {
        let id: String, name: String, age: Int, city: String, tags: [String], active: Bool, score: Int
    }

    private var people: [Person] = []

    override func setUpWithError() throws {
        directory = try QueryTestSupport.temporaryDirectory()
        db = try Database(name: "plans", config: DatabaseConfiguration(directory: directory.path))
        for i in 0..<2000 {
            people.append(Person(id: String(format: "doc%05d", i), name: "name\(i)", age: i % 80, city: "city\(i % 50)",
                                 tags: ["t\(i % 5)", "t\((i + 1) % 7)", "x"], active: i % 3 == 0, score: (i * 37) % 1000))
        }
        try db.inBatch {
            for p in people {
                try db.saveDocument(MutableDocument(id: p.id)
                    .setString("person", forKey: "type").setString(p.name, forKey: "name").setInt(p.age, forKey: "age")
                    .setString(p.city, forKey: "city").setValue(p.tags, forKey: "tags")
                    .setBoolean(p.active, forKey: "active").setInt(p.score, forKey: "score"))
            }
        }
        for key in ["name", "age", "city"] {
            try db.createIndex(ValueIndexConfiguration([key]), name: "by_\(key)")
        }
    }

    override func tearDownWithError() throws {
        try? db?.close()
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }

    /// The EXPLAIN QUERY PLAN rows of `q` (after the SQL and a blank line in `explain()`).
    private func plan(_ q: Query) throws -> String {
        let text = try q.explain()
        return text.components(separatedBy: "\n\n").dropFirst().joined(separator: "\n\n")
    }

    private func assertIndexed(_ q: Query, _ index: String, sorted: Bool = false,
                               file: StaticString = #filePath, line: UInt = #line) throws {
        let p = try plan(q), full = try q.explain()
        XCTAssertTrue(p.contains("USING INDEX \(index)") || p.contains("USING COVERING INDEX \(index)"),
                      "no \(index) in:\n\(full)", file: file, line: line)
        if !sorted {
            XCTAssertFalse(p.contains("TEMP B-TREE"), "sorts instead of walking \(index):\n\(full)", file: file, line: line)
        }
    }

    func testEqualityOnAnIndexedPropertySearchesTheIndex() throws {
        let q = try db.createQuery("SELECT meta().id, age FROM _ WHERE name = $x")
        q.parameters = Parameters(["x": "name1234"])
        try assertIndexed(q, "by_name")
        let rows = try q.execute().allResults()
        XCTAssertEqual(rows.map { $0.string(at: 0) }, ["doc01234"])
        XCTAssertEqual(rows.map { $0.int(at: 1) }, [1234 % 80])
    }

    func testRangeOrderedByTheIndexedKeyWalksTheIndex() throws {
        let q = try db.createQuery("SELECT name, age FROM _ WHERE age BETWEEN 30 AND 32 ORDER BY age, name LIMIT 20")
        // The index gives `age` order; only `name` within one age is sorted.
        try assertIndexed(q, "by_age", sorted: true)
        let full = try q.explain(), sql = try q.translation.sql
        XCTAssertFalse(try plan(q).contains("USE TEMP B-TREE FOR ORDER BY"), full)
        XCTAssertTrue(sql.hasSuffix(" LIMIT 20"), sql)
        let expected = people.filter { (30...32).contains($0.age) }.sorted { ($0.age, $0.name) < ($1.age, $1.name) }.prefix(20)
        let rows = try q.execute().allResults()
        XCTAssertEqual(rows.map { $0.string(at: 0) ?? "" }, expected.map(\.name))
        XCTAssertEqual(rows.map { $0.int(at: 1) }, expected.map(\.age))
    }

    func testGroupByAnIndexedPropertyReadsTheIndexInOrder() throws {
        let q = try db.createQuery("SELECT city, count(*) FROM _ GROUP BY city ORDER BY city")
        try assertIndexed(q, "by_city")
        let rows = try q.execute().allResults()
        let cities = Dictionary(grouping: people, by: \.city).mapValues(\.count).sorted { $0.key < $1.key }
        XCTAssertEqual(rows.map { $0.string(at: 0) ?? "" }, cities.map(\.key))
        XCTAssertEqual(rows.map { $0.int(at: 1) }, cities.map(\.value))
    }

    func testCountOverAFullScan() throws {
        let q = try db.createQuery("SELECT count(*) FROM _ WHERE score > 500")
        XCTAssertEqual(try q.execute().allResults().map { $0.int(at: 0) }, [people.filter { $0.score > 500 }.count])
    }

    func testAnyEqualityIsAContainsTestAsInLiteCore() throws {
        let q = try db.createQuery("SELECT count(*) FROM _ WHERE ANY x IN tags SATISFIES x = 't3' END")
        let sql = try q.translation.sql
        // An array answers from fl_contains; the subquery is only read for a dict or a non-array.
        XCTAssertTrue(sql.contains("CASE fl_contains(_doc.body, 'tags', 't3') WHEN 1 THEN 1 WHEN 0 THEN 0 ELSE EXISTS"), sql)
        XCTAssertEqual(try q.execute().allResults().map { $0.int(at: 0) }, [people.filter { $0.tags.contains("t3") }.count])

        // Any other predicate still iterates the array.
        let other = try db.createQuery("SELECT count(*) FROM _ WHERE ANY x IN tags SATISFIES x > 't5' END")
        XCTAssertTrue(try other.translation.sql.contains("EXISTS (SELECT 1 FROM fl_each(_doc.body, 'tags')"))
        XCTAssertEqual(try other.execute().allResults().map { $0.int(at: 0) }, [people.filter { $0.tags.contains { $0 > "t5" } }.count])
    }

    func testLikeWithALiteralPrefixSearchesTheIndex() throws {
        let q = try db.createQuery("SELECT name FROM _ WHERE name LIKE 'name123%' ORDER BY name")
        try assertIndexed(q, "by_name")
        // SQLite's LIKE optimization: a range on the index key, the LIKE then checks each row in it.
        let full = try q.explain()
        XCTAssertTrue(try plan(q).contains(">? AND"), full)
        let expected = people.map(\.name).filter { $0.hasPrefix("name123") }.sorted()
        XCTAssertEqual(try q.execute().allResults().map { $0.string(at: 0) ?? "" }, expected)
        XCTAssertEqual(expected.count, 11)

        // N1QL's LIKE stays case-sensitive, with `_` and `\` escapes.
        let upper = try db.createQuery("SELECT count(*) FROM _ WHERE name LIKE 'NAME1%'")
        XCTAssertEqual(try upper.execute().allResults().map { $0.int(at: 0) }, [0])
        let one = try db.createQuery(#"SELECT name FROM _ WHERE name LIKE 'name12_' ORDER BY name"#)
        XCTAssertEqual(try one.execute().allResults().map { $0.string(at: 0) ?? "" }, (120...129).map { "name\($0)" })
        let escaped = try db.createQuery(#"SELECT count(*) FROM _ WHERE name LIKE 'name\_%'"#)
        XCTAssertEqual(try escaped.execute().allResults().map { $0.int(at: 0) }, [0])

        // Under a case-insensitive collation it is LiteCore's fl_like, which the index cannot serve.
        let folded = try db.createQuery(json: #"{"WHAT": [["count()", ["."]]], "WHERE": ["COLLATE", {"CASE": false}, ["LIKE", [".name"], "NAME123%"]]}"#)
        let foldedSQL = try folded.translation.sql
        XCTAssertTrue(foldedSQL.contains("fl_like("), foldedSQL)
        XCTAssertEqual(try folded.execute().allResults().map { $0.int(at: 0) }, [11])
    }

    func testTopNOnAnIndexedKeyWalksTheIndexBackwards() throws {
        try db.createIndex(ValueIndexConfiguration(["score"]), name: "by_score")
        let q = try db.createQuery("SELECT name, score FROM _ WHERE active = true ORDER BY score DESC LIMIT 10")
        try assertIndexed(q, "by_score")
        let expected = people.filter(\.active).sorted { ($0.score, $1.name) > ($1.score, $0.name) }.prefix(10)
        let rows = try q.execute().allResults()
        XCTAssertEqual(rows.map { $0.int(at: 1) }, expected.map(\.score))
        XCTAssertEqual(Set(rows.map { $0.string(at: 0) ?? "" }).count, 10)
        XCTAssertEqual(Set(rows.map { $0.string(at: 0) ?? "" }).isSubset(of: Set(people.filter(\.active).map(\.name))), true)
    }

    func testLimitAndOffsetLiteralsAreWrittenAsNumbers() throws {
        let q = try db.createQuery("SELECT name FROM _ ORDER BY name LIMIT 3 OFFSET 2")
        let sql = try q.translation.sql
        XCTAssertTrue(sql.hasSuffix(" LIMIT 3 OFFSET 2"), sql)
        XCTAssertEqual(try q.execute().allResults().map { $0.string(at: 0) ?? "" }, Array(people.map(\.name).sorted()[2..<5]))
        let negative = try db.createQuery("SELECT name FROM _ ORDER BY name LIMIT -1")
        XCTAssertEqual(try negative.execute().allResults().count, 0)
        let param = try db.createQuery("SELECT name FROM _ ORDER BY name LIMIT $n")
        param.parameters = Parameters(["n": 2])
        XCTAssertEqual(try param.execute().allResults().count, 2)
    }
}
