import Foundation
import XCTest
@testable import CouchbaseLiteSwift

/// Partial value indexes (3.2 `ValueIndexConfiguration(_:where:)`): `CREATE INDEX … WHERE …`,
/// recorded with their WHERE, and used by SQLite's planner for queries that imply it.
final class PartialIndexTests: XCTestCase {
    private var directory: URL?

    override func setUpWithError() throws {
        directory = try QueryTestSupport.temporaryDirectory()
    }

    override func tearDownWithError() throws {
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }

    private func accounts() throws -> Database {
        let db = try Database(name: "accounts", config: DatabaseConfiguration(directory: try XCTUnwrap(directory).path))
        try db.inBatch {
            for i in 0..<40 {
                try db.saveDocument(MutableDocument(id: String(format: "a%02d", i))
                    .setString(i % 4 == 0 ? "user" : "group", forKey: "type")
                    .setString("name\(i % 8)", forKey: "name"))
            }
        }
        return db
    }

    private func sqlite(_ db: Database, _ sql: String) throws -> [String] {
        try db.withOpenFile { try CollectionTestSupport.strings(sql, $0.connection) }
    }

    func testPartialValueIndexIsStoredAndUsed() throws {
        let db = try accounts()
        try db.createIndex(ValueIndexConfiguration(["name"], where: "type = 'user'"), name: "userNames")
        XCTAssertEqual(try sqlite(db, "SELECT sql FROM sqlite_master WHERE name = 'userNames'"),
                       [#"CREATE INDEX "userNames" ON "kv_default" (fl_value(body, 'name')) WHERE (fl_value(body, 'type') = 'user')"#])
        XCTAssertEqual(try sqlite(db, "SELECT expression FROM indexes"),
                       [#"{"WHAT":[[".name"]],"WHERE":["=",[".type"],"user"]}"#])
        // Only users are in the index.
        XCTAssertEqual(try sqlite(db, #"SELECT count(*) FROM kv_default INDEXED BY "userNames" WHERE fl_value(body, 'type') = 'user'"#), ["10"])

        let q = try db.createQuery("SELECT meta().id FROM _ WHERE type = 'user' AND name = 'name4' ORDER BY meta().id")
        let plan = try q.explain()
        XCTAssertTrue(plan.contains("USING INDEX userNames"), plan)
        XCTAssertEqual(try q.execute().map { $0.string(at: 0) ?? "" }, ["a04", "a12", "a20", "a28", "a36"])
        // Without the index's condition the planner cannot use it.
        let all = try db.createQuery("SELECT meta().id FROM _ WHERE name = 'name4'")
        XCTAssertFalse(try all.explain().contains("userNames"))
        XCTAssertEqual(try all.execute().allResults().count, 5)

        // Writes keep it right: a group becoming a user is found through the index.
        let a01 = try XCTUnwrap(db.document(withID: "a01")).toMutable()
        try db.saveDocument(a01.setString("user", forKey: "type").setString("name4", forKey: "name"))
        XCTAssertEqual(try q.execute().map { $0.string(at: 0) ?? "" }, ["a01", "a04", "a12", "a20", "a28", "a36"])

        // Same definition: kept; another WHERE: replaced.
        try db.createIndex(ValueIndexConfiguration(["name"], where: "type = 'user'"), name: "userNames")
        try db.createIndex(ValueIndexConfiguration(["name"], where: "type = 'group'"), name: "userNames")
        XCTAssertEqual(try sqlite(db, "SELECT sql FROM sqlite_master WHERE name = 'userNames'"),
                       [#"CREATE INDEX "userNames" ON "kv_default" (fl_value(body, 'name')) WHERE (fl_value(body, 'type') = 'group')"#])
        XCTAssertEqual(db.indexes, ["userNames"])
        XCTAssertThrowsError(try db.createIndex(ValueIndexConfiguration(["name"], where: "type ="), name: "bad"))
    }

    /// 3.3+ files (schema 503) have an `indexes.whereClause` column: the WHERE goes there.
    func testWhereClauseColumnOfSchema503() throws {
        var db = try accounts()
        try db.withOpenFile { try $0.connection.setUserVersion(503) }
        try db.close()
        db = try Database(name: "accounts", config: DatabaseConfiguration(directory: try XCTUnwrap(directory).path))
        try db.createIndex(ValueIndexConfiguration(["name"], where: "type = 'user'"), name: "userNames")
        XCTAssertEqual(try sqlite(db, "SELECT expression || ' ' || whereClause FROM indexes"),
                       [#"=j[[".name"]] =j["=",[".type"],"user"]"#])
        XCTAssertTrue(try db.createQuery("SELECT meta().id FROM _ WHERE type = 'user' AND name = 'name0'").explain()
            .contains("USING INDEX userNames"))
    }
}
