import Foundation
import JSONCore
import XCTest
@testable import CouchbaseLiteSwift

/// `QueryBuilder` queries that ask the same question as a fixture query
/// (fixtures/cbl2/expectations/query_expectations.json) give the same rows on the same data,
/// and the fixture's expected rows.
final class QueryBuilderFixtureTests: XCTestCase {
    private var temp: URL!
    private var db: Database!
    private var cases: [String: [String: Any]] = [:]

    override func setUpWithError() throws {
        let fixtures = try QueryTestSupport.requireFixtures()
        temp = try QueryTestSupport.temporaryDirectory()
        let docs = try QueryTestSupport.jsonLines(fixtures.appendingPathComponent("query_data/names_100.json"))
        db = try QueryTestSupport.makeDatabase(name: "names", in: temp, docs: docs)
        let data = try Data(contentsOf: fixtures.appendingPathComponent("expectations/query_expectations.json"))
        let root = try JSONSerialization.jsonObject(with: data) as! [String: Any]
        for c in root["cases"] as! [[String: Any]] { cases[c["name"] as! String] = c }
    }

    override func tearDownWithError() throws {
        try db?.close()
        if let temp { try? FileManager.default.removeItem(at: temp) }
    }

    private func rows(_ query: Query) throws -> [String] {
        try query.execute().map { r in r.toArray().map { QueryTestSupport.canonical($0) }.joined(separator: "|") }
    }

    /// Runs `builder` and the fixture case `name` (with its parameters) and compares them.
    private func assertSame(_ name: String, _ builder: Query, file: StaticString = #filePath, line: UInt = #line) throws {
        let c = try XCTUnwrap(cases[name], "no fixture case '\(name)'", file: file, line: line)
        let fixture: Query = c["language"] as? String == "n1ql"
            ? try db.createQuery(c["query"] as! String) : try db.createQuery(tree: JSONValue(foundation: c["query"]!))
        if let params = c["params"] as? [String: Any] {
            fixture.parameters = Parameters(params)
            builder.parameters = Parameters(params)
        }
        let expected = try rows(fixture)
        let got = try rows(builder)
        XCTAssertEqual(got, expected, "\(name): builder tree \(builder.tree.jsonText)", file: file, line: line)
        if let ids = c["expected_rows"] as? [String] {
            XCTAssertEqual(got, ids.map { QueryTestSupport.canonical($0) }, name, file: file, line: line)
        } else if let n = c["expected_count"] as? Int {
            XCTAssertEqual(got.count, n, name, file: file, line: line)
        }
    }

    private var source: DataSourceAs { DataSource.database(db) }
    private func ids(where condition: ExpressionProtocol) -> Where {
        QueryBuilder.select(SelectResult.expression(Meta.id)).from(source).where(condition)
    }
    private var state: ExpressionProtocol { Expression.property("contact.address.state") }
    private var first: ExpressionProtocol { Expression.property("name.first") }

    func testComparisonsAndParameters() throws {
        try assertSame("basic equality", ids(where: state.equalTo(Expression.string("CA"))))
        try assertSame("offset/limit via params", ids(where: state.equalTo(Expression.string("CA")))
            .limit(Expression.parameter("limit"), offset: Expression.parameter("offset")))
        try assertSame("named parameter", ids(where: state.equalTo(Expression.parameter("state"))))
        try assertSame("ORDER BY string (binary collation)", ids(where: state.equalTo(Expression.string("CA")))
            .orderBy(Ordering.property("name.last")))
        try assertSame("length() expression", ids(where: Function.length(first).equalTo(Expression.int(9))))
        try assertSame("N1QL != ", ids(where: Function.length(first).equalTo(Expression.int(9))
            .and(Expression.property("gender").notEqualTo(Expression.string("male")))))
        try assertSame("IS MISSING on array index past end", ids(where: Expression.property("contact.phone[0]").isNotValued())
            .limit(Expression.parameter("limit"), offset: Expression.parameter("offset")))
    }

    func testLikeContainsAndCollation() throws {
        try assertSame("LIKE uppercase J", ids(where: first.like(Expression.string("%J%"))))
        try assertSame("LIKE lowercase j (case-sensitive)", ids(where: first.like(Expression.string("%j%"))))
        try assertSame("LIKE underscore 3", ids(where: first.like(Expression.string("J_ne"))))
        try assertSame("LIKE collate case-insensitive", ids(where: first.like(Expression.string("jen%"))
            .collate(Collation.unicode().ignoreCase(true))))
        try assertSame("LIKE collate diacritic-insensitive", ids(where: first.like(Expression.string("Jén%"))
            .collate(Collation.unicode().ignoreAccents(true))))
        try assertSame("LIKE collate all-insensitive", ids(where: first.like(Expression.string("jén%"))
            .collate(Collation.unicode().ignoreCase(true).ignoreAccents(true))))
        try assertSame("CONTAINS", ids(where: Function.contains(first, substring: Expression.string("Jen"))))
        try assertSame("CONTAINS collate all-insensitive", ids(where: Function.contains(first, substring: Expression.string("jén"))
            .collate(Collation.unicode().ignoreCase(true).ignoreAccents(true))))
    }

    func testInAndArrayPredicates() throws {
        try assertSame("IN with literal list", ids(where: first.in([Expression.string("Eddie"), Expression.string("Verna")])))
        try assertSame("IN with array-valued RHS (array_contains)",
                       ids(where: ArrayFunction.contains(Expression.property("likes"), value: Expression.string("reading"))))
        let like = ArrayExpression.variable("like")
        try assertSame("ANY", ids(where: ArrayExpression.any(like).in(Expression.property("likes"))
            .satisfies(like.equalTo(Expression.string("climbing")))))
        try assertSame("EVERY (empty arrays satisfy)", ids(where: ArrayExpression.every(like).in(Expression.property("likes"))
            .satisfies(like.equalTo(Expression.string("taxes")))))
        try assertSame("ANY AND EVERY with LIKE", ids(where: ArrayExpression.anyAndEvery(like).in(Expression.property("likes"))
            .satisfies(like.like(Expression.string("%l%")))))
        let n = ArrayExpression.variable("n")
        try assertSame("ANY over dict values contains()", ids(where: ArrayExpression.any(n).in(Expression.property("name"))
            .satisfies(Function.contains(n, substring: Expression.string("V")))))
    }

    func testResultsAggregatesAndGrouping() throws {
        try assertSame("WHAT two columns ordered", QueryBuilder
            .select(SelectResult.property("name.first"), SelectResult.property("name.last"))
            .from(source)
            .where(Function.length(first).greaterThanOrEqualTo(Expression.int(9)))
            .orderBy(Ordering.property("name.first")))
        try assertSame("aggregate min/max over strings", QueryBuilder
            .select(SelectResult.expression(Function.min(Expression.property("name.last"))),
                    SelectResult.expression(Function.max(Expression.property("name.last"))))
            .from(source))
        let groupBy = QueryBuilder
            .select(SelectResult.property("contact.address.state"),
                    SelectResult.expression(Function.min(Expression.property("name.last"))),
                    SelectResult.expression(Function.max(Expression.property("name.last"))))
            .from(source)
            .groupBy(state)
        try assertSame("GROUP BY (first 4 of 42 rows)", groupBy)
        XCTAssertEqual(try groupBy.columnNames, ["state", "$2", "$3"], "LiteCore numbers unnamed columns by position")
        try assertSame("LIMIT only", QueryBuilder.select(SelectResult.all()).from(source).limit(Expression.int(10)))
    }
}
