import Foundation
import JSONCore
import XCTest
@testable import CouchbaseLiteSwift

/// The 212 cases of LiteCore's N1QLParserTest.cc (fixtures/cbl2/expectations/n1ql_parser_cases.json):
/// each text parses to exactly the tree LiteCore produces, or is rejected where LiteCore rejects it.
final class N1QLParserFixtureTests: XCTestCase {
    /// Cases whose expectation cannot be right, with the reason. The extraction also took assertions
    /// that are commented out in N1QLParserTest.cc; this one expects a tree with no WHERE at all
    /// (MATCH is not an infix operator in the grammar), so we reject the text instead.
    static let fixtureDefects: [String: String] = [
        "SELECT 1 WHERE 'text' NOT MATCH 'word'":
            "commented-out assertion in N1QLParserTest.cc; its expected tree drops the WHERE clause",
    ]

    func testEveryLiteCoreParserCase() throws {
        let cases = try Self.loadCases()
        XCTAssertEqual(cases.count, 212)
        var matched = 0, rejected = 0, defects = 0
        var failures: [String] = []
        for testCase in cases {
            let text = testCase["n1ql"] as! String
            if Self.fixtureDefects[text] != nil {
                XCTAssertThrowsError(try N1QLParser.parse(text), text)
                defects += 1
                continue
            }
            if testCase["parse_error"] as? Bool == true {
                do {
                    let tree = try N1QLParser.parse(text)
                    failures.append("\(text)\n   accepted, but LiteCore rejects it; got \(try Self.liteCoreForm(tree))")
                } catch let error as N1QLSyntaxError {
                    XCTAssertTrue(error.message.contains("line \(error.line), column \(error.column)"), error.message)
                    XCTAssertTrue(error.offset >= 0 && error.offset <= text.utf8.count, text)
                    rejected += 1
                }
                continue
            }
            let expected = testCase["expected_json5"] as! String
            do {
                let actual = try Self.liteCoreForm(try N1QLParser.parse(text))
                if actual == expected {
                    matched += 1
                } else {
                    failures.append("\(text)\n   expected \(expected)\n   got      \(actual)")
                }
            } catch {
                failures.append("\(text)\n   expected \(expected)\n   threw    \(error)")
            }
        }
        print("N1QL parser fixture: \(matched) trees equal, \(rejected) rejected as LiteCore does, "
              + "\(defects) fixture defect(s), \(failures.count) failing, of \(cases.count)")
        XCTAssertEqual(failures, [], failures.joined(separator: "\n"))
        XCTAssertEqual(matched + rejected + defects, cases.count)
    }

    /// How LiteCore's test helper prints a tree: canonical JSON (sorted keys), every `"` made `'`.
    static func liteCoreForm(_ tree: Any) throws -> String {
        String(decoding: try JSON.canonicalData(tree), as: UTF8.self).replacingOccurrences(of: "\"", with: "'")
    }

    static func loadCases() throws -> [[String: Any]] {
        let repoRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let url = repoRoot.deletingLastPathComponent()
            .appendingPathComponent("shared/fixtures/cbl2/expectations/n1ql_parser_cases.json")
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw XCTSkip("shared fixtures not present (fresh clone)")
        }
        let root = try JSON.parse(Data(contentsOf: url)) as! [String: Any]
        return root["cases"] as! [[String: Any]]
    }
}
