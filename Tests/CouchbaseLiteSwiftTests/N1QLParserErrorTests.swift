import CBLTestSupport
import Foundation
import JSONCore
import XCTest
@testable import CouchbaseLiteSwift

/// Syntax errors name the position and the expected token; no input crashes the parser.
final class N1QLParserErrorTests: XCTestCase {
    private func syntaxError(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> N1QLSyntaxError? {
        do {
            let tree = try N1QLParser.parse(text)
            XCTFail("accepted: \(text) → \(tree)", file: file, line: line)
        } catch let error as N1QLSyntaxError {
            return error
        } catch {
            XCTFail("unexpected error type \(error)", file: file, line: line)
        }
        return nil
    }

    func testUnbalancedParenthesisNamesPositionAndWhatCouldFollow() throws {
        let e = try XCTUnwrap(syntaxError("SELECT 3+4) from stuff"))
        XCTAssertEqual(e.offset, 10)
        XCTAssertEqual(e.line, 1)
        XCTAssertEqual(e.column, 11)
        XCTAssertEqual(e.found, "')'")
        XCTAssertTrue(e.expected.contains("FROM") && e.expected.contains("end of query"), e.expected)
        XCTAssertEqual(e.message, "N1QL syntax error at line 1, column 11 (offset 10): expected "
                       + "',', FROM, WHERE, GROUP BY, ORDER BY, LIMIT, OFFSET, end of query, found ')'")
    }

    func testPositionOnLaterLines() throws {
        let e = try XCTUnwrap(syntaxError("SELECT name\nFROM _\nWHERE name =\n  ORDER BY name"))
        XCTAssertEqual(e.line, 4)
        XCTAssertEqual(e.column, 3)
        XCTAssertEqual(e.expected, "an expression")
        XCTAssertEqual(e.found, "'ORDER'")
    }

    func testColumnCountsCharactersNotBytes() throws {
        let e = try XCTUnwrap(syntaxError("SELECT 'héllo' 'x'"))
        XCTAssertEqual(e.offset, 16)     // UTF-8 bytes, as LiteCore's errorPos
        XCTAssertEqual(e.column, 16)     // é is one character
    }

    func testReservedWordsNeedBackQuotes() throws {
        let e = try XCTUnwrap(syntaxError("SELECT from where true"))
        XCTAssertEqual(e.offset, 7)
        XCTAssertEqual(e.expected, "an expression")
        let alias = try XCTUnwrap(syntaxError("SELECT x FROM _ AS where"))
        XCTAssertEqual(alias.offset, 19)
        XCTAssertTrue(alias.expected.contains("back-quote"), alias.expected)
    }

    func testUnknownFunctionAndWrongArgumentCount() throws {
        let unknown = try XCTUnwrap(syntaxError("SELECT squee()"))
        XCTAssertEqual(unknown.offset, 7)
        XCTAssertTrue(unknown.message.contains("unknown function 'squee'"), unknown.message)
        let count = try XCTUnwrap(syntaxError("SELECT power(1)"))
        XCTAssertEqual(count.offset, 7)
        XCTAssertTrue(count.message.contains("takes 2 argument(s), got 1"), count.message)
    }

    func testExpectedTokenInsideConstructs() throws {
        XCTAssertEqual(syntaxError("SELECT CASE x WHEN 1 'one' END")?.expected, "THEN")
        XCTAssertEqual(syntaxError("SELECT ANY v IN xs v > 1 END")?.expected, "SATISFIES")
        XCTAssertEqual(syntaxError("SELECT [1, 2")?.expected, "',' or ']'")
        XCTAssertEqual(syntaxError("SELECT x WHERE a NOT 3")?.expected, "NULL, MISSING, VALUED, IN, LIKE or BETWEEN after NOT")
        XCTAssertEqual(syntaxError("SELECT 2 BETWEEN 1 OR 3")?.expected, "AND")
        XCTAssertEqual(syntaxError("SELECT (name = 'fred') COLLATE (NOCASE FRED)")?.found, "'FRED'")
        XCTAssertEqual(syntaxError("SELECT 1 WHERE MATCH('text', 'word')")?.offset, 21)
        XCTAssertTrue(syntaxError("SELECT x FROM a RIGHT JOIN b ON a.x = b.x")?.message.contains("RIGHT is not supported") ?? false)
        XCTAssertEqual(syntaxError("SELECT 'abc")?.expected, "closing quote")
        XCTAssertEqual(syntaxError("SELECT `abc")?.expected, "closing back-quote")
        XCTAssertEqual(syntaxError("")?.expected, "SELECT")
        XCTAssertEqual(syntaxError("SELECT x FROM _ ;;")?.offset, 17)
    }

    func testSyntaxErrorBecomesInvalidQuery() throws {
        let e = try XCTUnwrap(syntaxError("SELECT WHERE 10"))
        let cbl = CouchbaseLiteError(e)
        XCTAssertEqual(cbl.code, .invalidQuery)
        XCTAssertTrue(cbl.message.contains("column 8"), cbl.message)
    }

    // MARK: - Never crash

    func testDeepNestingIsRefusedNotACrash() throws {
        let depth = N1QLParser.maximumNesting + 50
        for (open, close) in [("(", ")"), ("[", "]"), ("-(", ")"), ("NOT (", ")")] {
            let text = "SELECT " + String(repeating: open, count: depth) + "1" + String(repeating: close, count: depth)
            let e = try XCTUnwrap(syntaxError(text))
            XCTAssertTrue(e.message.contains("nested more than"), e.message)
        }
        XCTAssertThrowsError(try N1QLParser.parse("SELECT " + String(repeating: "NOT ", count: 10_000) + "x"))
        XCTAssertThrowsError(try N1QLParser.parse("SELECT " + String(repeating: "{'a':", count: 10_000)))
        // Within the limit, nesting is fine.
        let ok = "SELECT " + String(repeating: "(", count: 60) + "1" + String(repeating: ")", count: 60)
        XCTAssertEqual(try N1QLParserFixtureTests.liteCoreForm(N1QLParser.parse(ok)), "{'WHAT':[1]}")
        // Long flat chains are not nesting: they build left-deep trees iteratively.
        let chain = "SELECT " + Array(repeating: "1", count: 5_000).joined(separator: " + ")
        XCTAssertNoThrow(try N1QLParser.parse(chain))
    }

    /// The nesting limit keeps the recursion within a small thread stack (512 KiB, a Foundation
    /// Thread's default on Darwin), not just the main thread's 8 MiB.
    func testMaximumNestingFitsASmallStack() throws {
        let depth = N1QLParser.maximumNesting - 1
        let text = "SELECT " + String(repeating: "(", count: depth) + "1" + String(repeating: ")", count: depth)
        let done = expectation(description: "parsed on a small stack")
        let thread = Thread {
            do {
                _ = try N1QLParser.parse(text)
            } catch {
                XCTFail("\(error)")
            }
            done.fulfill()
        }
        thread.stackSize = 512 * 1024
        thread.start()
        wait(for: [done], timeout: 30)
    }

    func testRandomAndMutatedInputNeverCrash() throws {
        var rng = SplitMix64(seed: 0x5EED_1234)
        let seeds = [
            "SELECT META(a).id, x.y[0] AS z FROM s.c a LEFT OUTER JOIN c b ON a.k = b.k UNNEST a.list l "
                + "WHERE ANY v IN a.xs SATISFIES v.n BETWEEN 1 AND $max END AND name NOT LIKE 'a%' "
                + "GROUP BY x HAVING count(*) > 1 ORDER BY z DESC LIMIT 10 OFFSET 2",
            "SELECT CASE WHEN a IS NOT VALUED THEN {'k': [1, -2.5e3, \"s\"]} ELSE MISSING END COLLATE (UNICODE:se NOCASE)",
            "SELECT EXISTS (SELECT 1 WHERE x IN (1, 2)), MATCH(idx, 'w'), RANK(idx), PREDICTION(m, {'a': b})",
        ]
        let alphabet = Array("SELECT FROM WHERE AND OR NOT IN ()[]{},.:;*+-/%|&=<>!'\"`$0123456789.eE abcxyz_\n\t\\é€")
        var parsed = 0, rejected = 0
        for round in 0..<6_000 {
            var text: String
            if round % 2 == 0 {
                // Random soup of grammar pieces.
                let n = Int(rng.next() % 60)
                text = String((0..<n).map { _ in alphabet[Int(rng.next() % UInt64(alphabet.count))] })
                if round % 4 == 0 { text = "SELECT " + text }
            } else {
                // A valid query with bytes replaced, deleted or duplicated.
                var chars = Array(seeds[Int(rng.next() % UInt64(seeds.count))])
                for _ in 0..<Int(1 + rng.next() % 4) {
                    let at = Int(rng.next() % UInt64(chars.count))
                    switch rng.next() % 3 {
                    case 0: chars[at] = alphabet[Int(rng.next() % UInt64(alphabet.count))]
                    case 1: chars.remove(at: at)
                    default: chars.insert(chars[at], at: at)
                    }
                }
                text = String(chars)
            }
            do {
                let tree = try N1QLParser.parse(text)
                XCTAssertTrue(JSON.isValid(tree), text)
                parsed += 1
            } catch let error as N1QLSyntaxError {
                XCTAssertTrue(error.offset >= 0 && error.offset <= text.utf8.count, "\(text): \(error)")
                XCTAssertGreaterThanOrEqual(error.line, 1)
                XCTAssertGreaterThanOrEqual(error.column, 1)
                rejected += 1
            }
        }
        XCTAssertGreaterThan(parsed, 0)
        XCTAssertGreaterThan(rejected, 0)
        for seed in seeds { XCTAssertNoThrow(try N1QLParser.parse(seed), seed) }
    }

    func testInvalidUTF8AndControlBytesAreErrors() throws {
        let bytes: [UInt8] = Array("SELECT ".utf8) + [0xFF, 0xFE, 0x00, 0x01]
        XCTAssertThrowsError(try N1QLParser.parse(String(decoding: bytes, as: UTF8.self)))
        XCTAssertThrowsError(try N1QLParser.parse("SELECT \u{0}"))
    }
}
