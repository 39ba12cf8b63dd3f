import Foundation
import XCTest
@testable import CouchbaseLiteSwift

/// A `Query` keeps its compiled statement between runs: every run must still see the current
/// parameters, documents and indexes.
final class QueryReuseTests: XCTestCase {
    func testRerunsSeeNewParametersWritesAndIndexes() throws {
        let temp = try QueryTestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        let docs: [(String, [String: Any])] = (0..<20).map {
            (String(format: "p%02d", $0), ["name": ["first": "n\($0 % 4)", "last": "l\($0)"], "n": $0])
        }
        let db = try QueryTestSupport.makeDatabase(name: "reuse", in: temp, docs: docs)
        defer { try? db.close() }
        let q = try db.createQuery("SELECT meta().id, name.last, n FROM _ WHERE name.first = $f ORDER BY n")
        func run(_ first: String?) throws -> [String] {
            q.parameters = first.map { Parameters().setString($0, forName: "f") }
            return try q.execute().map { "\($0.string(at: 0) ?? "-")/\($0.string(at: 1) ?? "-")/\($0.int(at: 2))" }
        }
        XCTAssertEqual(try run("n1"), ["p01/l1/1", "p05/l5/5", "p09/l9/9", "p13/l13/13", "p17/l17/17"])
        XCTAssertEqual(try run("n2").count, 5)
        XCTAssertEqual(try run(nil), [])                       // unset parameter: MISSING
        try db.saveDocument(MutableDocument(id: "new", data: ["name": ["first": "n1", "last": "zz"], "n": 99]))
        try db.deleteDocument(try XCTUnwrap(db.document(withID: "p05")))
        XCTAssertEqual(try run("n1"), ["p01/l1/1", "p09/l9/9", "p13/l13/13", "p17/l17/17", "new/zz/99"])
        try db.createIndex(ValueIndexConfiguration(["name.first"]), name: "first")
        XCTAssertTrue(try q.explain().contains("USING INDEX first"))
        XCTAssertEqual(try run("n1"), ["p01/l1/1", "p09/l9/9", "p13/l13/13", "p17/l17/17", "new/zz/99"])
        // Another query with the same SQL shares the statement; results are independent.
        let q2 = try db.createQuery("SELECT meta().id, name.last, n FROM _ WHERE name.first = $f ORDER BY n")
        q2.parameters = Parameters().setString("n3", forName: "f")
        let r2 = try q2.execute().allResults()
        XCTAssertEqual(try run("n0").count, 5)
        XCTAssertEqual(r2.map { $0.int(at: 2) }, [3, 7, 11, 15, 19])
    }

    func testCountStarCountsRows() throws {
        let temp = try QueryTestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        let docs: [(String, [String: Any])] = (0..<10).map { (String(format: "d%d", $0), ["g": $0 % 3]) }
        let db = try QueryTestSupport.makeDatabase(name: "count", in: temp, docs: docs)
        defer { try? db.close() }
        let q = try db.createQuery("SELECT g, count(*) AS c FROM _ GROUP BY g ORDER BY g")
        XCTAssertEqual(try q.execute().map { "\($0.int(at: 0)):\($0.int(forKey: "c"))" }, ["0:4", "1:3", "2:3"])
        XCTAssertEqual(try db.createQuery("SELECT count(*) FROM _").execute().next()?.int(at: 0), 10)
    }
}
