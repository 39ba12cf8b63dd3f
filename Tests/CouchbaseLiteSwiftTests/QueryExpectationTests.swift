import Foundation
import JSONCore
import XCTest
@testable import CouchbaseLiteSwift

/// The 90 cases of fixtures/cbl2/expectations/query_expectations.json (transcribed from
/// LiteCore's tests), run against databases built from query_data / copied from lite_dbs.
/// A case the engine does not support yet (it throws `.unimplemented`) is counted and listed;
/// every other case must give exactly the expected results.
final class QueryExpectationTests: XCTestCase {
    private var temp: URL!
    private var databases: [String: Database] = [:]

    override func tearDownWithError() throws {
        for db in databases.values { try? db.close() }
        if let temp { try? FileManager.default.removeItem(at: temp) }
    }

    private func database(for dataset: Any, fixtures: URL) throws -> Database {
        let key = QueryTestSupport.canonical(dataset)
        if let db = databases[key] { return db }
        let name = "db\(databases.count)"
        let data = fixtures.appendingPathComponent("query_data")
        let db: Database
        if let s = dataset as? String {
            if s.hasPrefix("lite_dbs/") {
                let bundle = String(s.dropFirst("lite_dbs/".count).prefix { $0 != " " })
                db = try QueryTestSupport.copyFixture(fixtures.appendingPathComponent("lite_dbs/\(bundle)"), to: temp, name: name)
            } else if s.contains("+") {
                var docs = try QueryTestSupport.jsonLines(data.appendingPathComponent("names_100.json"))
                let states = try JSONSerialization.jsonObject(with: Data(contentsOf: data.appendingPathComponent("states_titlecase.json"))) as! [[String: Any]]
                for (i, st) in states.enumerated() { docs.append((String(format: "state-%03d", i + 1), st)) }
                db = try QueryTestSupport.makeDatabase(name: name, in: temp, docs: docs)
            } else {
                db = try QueryTestSupport.makeDatabase(name: name, in: temp, docs: try QueryTestSupport.jsonLines(data.appendingPathComponent(s)))
            }
        } else if let d = dataset as? [String: Any], let inline = d["inline_docs"] as? [[String: Any]] {
            db = try QueryTestSupport.makeDatabase(name: name, in: temp, docs: inline.enumerated().map { (String(format: "%07d", $0.offset + 1), $0.element) })
        } else if let d = dataset as? [String: Any], let inline = d["inline_docs_with_ids"] as? [[String: Any]] {
            db = try QueryTestSupport.makeDatabase(name: name, in: temp, docs: inline.map { doc in
                var body = doc
                let id = body.removeValue(forKey: "_id") as! String
                return (id, body)
            })
        } else {
            throw XCTSkip("unknown dataset \(dataset)")
        }
        databases[key] = db
        return db
    }

    func testQueryExpectations() throws {
        let fixtures = try QueryTestSupport.requireFixtures()
        temp = try QueryTestSupport.temporaryDirectory()
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: fixtures.appendingPathComponent("expectations/query_expectations.json"))) as! [String: Any]
        let cases = json["cases"] as! [[String: Any]]
        var passed: [String] = []
        var unsupported: [(String, String)] = []
        var failed: [(String, String)] = []
        for c in cases {
            let name = c["name"] as! String
            do {
                let db = try database(for: c["dataset"]!, fixtures: fixtures)
                let query: Query
                if (c["language"] as? String) == "n1ql" {
                    query = try db.createQuery(c["query"] as! String)
                } else {
                    query = try db.createQuery(tree: JSONValue(foundation: c["query"]!))
                }
                if let params = c["params"] as? [String: Any] { query.parameters = Parameters(params) }
                let rows = try query.execute().allResults()
                if let problem = check(c, rows: rows, titles: try query.columnNames) {
                    failed.append((name, problem + "\n    SQL: " + ((try? query.translation.sql) ?? "?")))
                } else {
                    passed.append(name)
                }
            } catch let e as CouchbaseLiteError where e.code == .unimplemented {
                unsupported.append((name, e.message))
            } catch {
                failed.append((name, "\(error)"))
            }
        }
        print("QUERY EXPECTATIONS: \(passed.count)/\(cases.count) passed, \(unsupported.count) unsupported, \(failed.count) failed")
        for (n, why) in unsupported { print("  unsupported: \(n): \(why)") }
        for (n, why) in failed { print("  FAILED: \(n): \(why)") }
        XCTAssertTrue(failed.isEmpty, "failed: \(failed.map(\.0))")
    }

    /// nil when the rows match every expectation the case states.
    private func check(_ c: [String: Any], rows: [Result], titles: [String]) -> String? {
        let canon = QueryTestSupport.canonical
        let checks = ["expected_count", "expected_column_titles", "expected_first_row", "expected_first_rows",
                      "expected_missing_columns_mask", "expected_sum_of_column0", "expected_first_row_json5"]
        guard c["expected_rows"] is [Any] || checks.contains(where: { c[$0] != nil }) else { return "case states no expectation this test knows" }
        if let expected = c["expected_rows"] as? [Any] {
            let rowsAreArrays = expected.first is [Any]
            let got: [String] = rows.map { rowsAreArrays ? canon($0.toArray()) : canon($0.toArray().first ?? nil) }
            let want = expected.map { canon($0) }
            if got != want { return "rows \(got) != expected \(want)" }
        }
        if let n = c["expected_count"] as? Int, rows.count != n { return "count \(rows.count) != \(n)" }
        if let t = c["expected_column_titles"] as? [String], titles != t { return "titles \(titles) != \(t)" }
        if let first = c["expected_first_row"] {
            guard let r = rows.first, canon(r.toArray().first ?? nil) == canon(first) else { return "first row \(rows.first.map { canon($0.toArray()) } ?? "none") != \(canon(first))" }
        }
        if let firsts = c["expected_first_rows"] as? [Any] {
            let got = rows.prefix(firsts.count).map { canon($0.toArray()) }
            if got != firsts.map({ canon($0) }) { return "first rows \(got) != \(firsts.map { canon($0) })" }
        }
        if let mask = c["expected_missing_columns_mask"] as? Int {
            guard let r = rows.first else { return "no rows" }
            var got = 0
            for (i, v) in r.toArray().enumerated() where v == nil { got |= 1 << i }
            if got != mask { return "missing mask \(got) != \(mask)" }
        }
        if let sum = c["expected_sum_of_column0"] as? Int {
            let got = rows.reduce(0) { $0 + $1.int(at: 0) }
            if got != sum { return "sum \(got) != \(sum)" }
        }
        if let json5 = c["expected_first_row_json5"] as? String {
            // The fixture writes JSON5 with bare keys: quote them to read it as JSON.
            let quoted = json5.replacingOccurrences(of: #"([{,])([A-Za-z_][A-Za-z0-9_]*):"#, with: "$1\"$2\":", options: .regularExpression)
            guard let want = try? JSONSerialization.jsonObject(with: Data(quoted.utf8)), let r = rows.first else { return "bad json5 or no rows" }
            if canon(r.value(at: 0)) != canon(want) { return "first row \(canon(r.value(at: 0))) != \(canon(want))" }
        }
        return nil
    }
}
