import Foundation
import JSONCore
import XCTest
@testable import CouchbaseLiteSwift

/// The translator's tables (operators, functions) and its query tree: every library function has
/// both a row and an implementation, arity errors come from the row, and JSON queries are read by
/// JSONCore into the same tree a N1QL query builds.
final class QueryTranslatorTableTests: XCTestCase {
    private var directory: URL!
    private var db: Database!

    override func setUpWithError() throws {
        directory = try QueryTestSupport.temporaryDirectory()
        db = try Database(name: "tables", config: DatabaseConfiguration(directory: directory.path))
        try db.saveDocument(MutableDocument(id: "a").setString("Ann", forKey: "name").setInt(3, forKey: "n")
            .setValue(["x": "Arturo"], forKey: "d").setValue(["t1", "t2"], forKey: "tags"))
        try db.saveDocument(MutableDocument(id: "b").setString("Bob", forKey: "name").setDouble(2.5, forKey: "n"))
    }

    override func tearDownWithError() throws {
        try? db?.close()
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }

    func testEveryLibraryRowHasAnImplementationAndEveryImplementationARow() {
        let names = Set(N1QLFunctions.names)
        for name in names {
            guard let row = N1QLFunctions.row(name), case .library = row.writer else { continue }
            XCTAssertNotNil(row.implementation(name), "\(name)() has no implementation")
        }
        for name in N1QLFunctionTable.functions.keys {
            XCTAssertTrue(names.contains(name), "\(name)() is implemented but has no row")
        }
        XCTAssertTrue(N1QLFunctions.row("count")?.isAggregate == true)
        XCTAssertTrue(N1QLFunctions.row("array_agg")?.isAggregate == true)
        XCTAssertFalse(N1QLFunctions.row("abs")?.isAggregate ?? true)
    }

    func testArityComesFromTheRowForN1QLAndJSONAlike() throws {
        XCTAssertThrowsError(try db.createQuery("SELECT abs(1, 2) FROM _"))
        XCTAssertThrowsError(try db.createQuery(json: #"{"WHAT": [["abs()", 1, 2]]}"#)) { error in
            XCTAssertTrue((error as? CouchbaseLiteError)?.message.contains("expected 1") == true, "\(error)")
        }
        XCTAssertThrowsError(try db.createQuery(json: #"{"WHAT": [["BETWEEN", 1, 2]]}"#)) { error in
            XCTAssertEqual((error as? CouchbaseLiteError)?.code, .invalidQuery)
        }
        XCTAssertThrowsError(try db.createQuery(json: #"{"WHAT": [["NO SUCH OP", 1]]}"#)) { error in
            XCTAssertTrue((error as? CouchbaseLiteError)?.message.contains("Unknown operator") == true, "\(error)")
        }
        XCTAssertThrowsError(try db.createQuery(json: #"{"WHAT": [["prediction()", "m", {}]]}"#)) { error in
            XCTAssertEqual((error as? CouchbaseLiteError)?.code, .unimplemented)
        }
    }

    func testJSONQueriesAreReadByJSONCoreIntoTheSameTree() throws {
        let json = try db.createQuery(json: #"["SELECT", {"WHAT": [["._id"], [".n"]], "WHERE": ["AND", ["IS VALUED", [".name"]], [">", [".n"], 1.5]], "ORDER_BY": [["DESC", [".n"]]], "LIMIT": 5}]"#)
        let n1ql = try db.createQuery("SELECT meta().id, n FROM _ WHERE name IS VALUED AND n > 1.5 ORDER BY n DESC LIMIT 5")
        XCTAssertEqual(try json.execute().allResults().map { $0.string(at: 0) ?? "" }, ["a", "b"])
        XCTAssertEqual(try n1ql.execute().allResults().map { $0.string(at: 0) ?? "" }, ["a", "b"])
        XCTAssertTrue(try json.translation.sql.contains("> 1.5"))
        XCTAssertTrue(try json.translation.sql.hasSuffix(" LIMIT 5"))
        XCTAssertThrowsError(try db.createQuery(json: "{\"WHAT\": [")) { error in
            XCTAssertEqual((error as? CouchbaseLiteError)?.code, .invalidQuery)
        }
        // The tree is a value: the same query text gives equal trees.
        XCTAssertEqual(try QueryTree(queryJSON: #"{"WHAT": [[".n"]], "LIMIT": 2}"#), try QueryTree(queryJSON: #"{"LIMIT": 2, "WHAT": [[".n"]]}"#))
        XCTAssertEqual(try QueryTree(queryValue: ["=", [".n"], 1, true, NSNull()] as [Any]),
                       .operationNode("=", [.operationNode(".n"), .int(1), .bool(true), .null]))
        // A Foundation boolean stays a boolean and a Foundation 1 a number (never each other).
        XCTAssertEqual(try QueryTree(queryValue: [NSNumber(value: true), NSNumber(value: 1), NSNumber(value: 1.5)] as [Any]),
                       .array([.bool(true), .int(1), .double(1.5)]))
        XCTAssertNotEqual(QueryTree.bool(true), .int(1))
    }

    func testAnyEqualityLooksIntoDictValuesToo() throws {
        // LiteCore's fl_contains looks in a dict's values; ours falls back to fl_each for a dict.
        let q = try db.createQuery("SELECT meta().id FROM _ WHERE ANY v IN d SATISFIES v = 'Arturo' END")
        XCTAssertEqual(try q.execute().allResults().map { $0.string(at: 0) ?? "" }, ["a"])
        let arrays = try db.createQuery("SELECT meta().id FROM _ WHERE ANY v IN tags SATISFIES v = 't2' END")
        XCTAssertEqual(try arrays.execute().allResults().map { $0.string(at: 0) ?? "" }, ["a"])
        let every = try db.createQuery("SELECT meta().id FROM _ WHERE ANY AND EVERY v IN tags SATISFIES v LIKE 't%' END")
        XCTAssertTrue(try every.translation.sql.contains("fl_count(_doc.body, 'tags') > 0"))
        XCTAssertEqual(try every.execute().allResults().map { $0.string(at: 0) ?? "" }, ["a"])
    }
}
