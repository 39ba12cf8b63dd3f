import CBLTestSupport
import Fleece
import Foundation
import XCTest
@testable import CouchbaseLiteSwift

/// No query may crash on any document shape: random documents (every Fleece type, nesting,
/// odd keys) and corrupt rows, queried with random expressions over the same paths. Errors
/// must be `CouchbaseLiteError`s; everything else must run.
final class QueryRobustnessTests: XCTestCase {
    private func randomValue(_ rng: inout SplitMix64, depth: Int) -> Any {
        switch Int.random(in: 0..<(depth > 3 ? 7 : 10), using: &rng) {
        case 0: return NSNull()
        case 1: return Bool.random(using: &rng)
        case 2: return Int.random(in: -3...3, using: &rng)
        case 3: return [Int.min, Int.max, 0, -1][Int.random(in: 0..<4, using: &rng)]
        case 4: return [0.5, -1e300, 1e-300, 3.25][Int.random(in: 0..<4, using: &rng)]
        case 5: return ["", "a", "B", "é", "%_\\", "12", "🙂", "a.b"][Int.random(in: 0..<8, using: &rng)]
        case 6: return Data([1, 2, 3])
        case 7, 8:
            return (0..<Int.random(in: 0..<4, using: &rng)).map { _ in randomValue(&rng, depth: depth + 1) }
        default:
            var d: [String: Any] = [:]
            for _ in 0..<Int.random(in: 0..<4, using: &rng) {
                d[["a", "b", "c", "likes", "x.y", "$z", ""][Int.random(in: 0..<7, using: &rng)]] = randomValue(&rng, depth: depth + 1)
            }
            return d
        }
    }

    func testRandomDocumentsAndQueriesNeverCrash() throws {
        let temp = try QueryTestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        var rng = SplitMix64(seed: 0x51ee_9e17)
        var docs: [(String, [String: Any])] = []
        for i in 0..<150 {
            var body: [String: Any] = [:]
            for key in ["a", "b", "c", "likes"] where Bool.random(using: &rng) { body[key] = randomValue(&rng, depth: 0) }
            docs.append((String(format: "doc-%03d", i), body))
        }
        let db = try QueryTestSupport.makeDatabase(name: "fuzz", in: temp, docs: docs)
        // Corrupt rows straight into the table: garbage, a truncated tree, a tree with a bad body.
        let bundle = temp.appendingPathComponent("fuzz.cblite2")
        try db.close()
        let file = try DataFile(directory: bundle, create: false)
        let corrupt: [[UInt8]] = [[0xFF, 0x00, 0x13], [], [0, 0, 0, 20, 0xFF, 0xFF, 0x82, 2, 1, 0xAB, 0, 0x70], [0, 0, 0, 12, 0xFF, 0xFF, 0x82, 2, 1, 0xAB, 0, 0x99, 0, 0, 0, 0]]
        let version = BinaryRevisionID.encode("1-abcd")!
        for (i, body) in corrupt.enumerated() {
            try Array("bad-\(i)".utf8).withUnsafeBytes { idp in
                try version.withUnsafeBytes { vp in try body.withUnsafeBytes { tp in _ = try file.insertRecord(docID: idp, flags: [], version: vp, tree: tp) } }
            }
        }
        file.close()
        var config = DatabaseConfiguration()
        config.directory = temp.path
        let db2 = try Database(name: "fuzz", config: config)
        defer { try? db2.close() }

        let operands = ["a", "b", "c", "a.b", "a[0]", "a[-1]", "likes", "b.a.c", "1", "'a'", "null", "missing", "true",
                        "meta().id", "[1, 'a']", "{'k': a}", "-a", "a + 1", "a || 'x'", "lower(a)", "length(b)",
                        "array_count(likes)", "ifmissingornull(a, b, 0)", "to_string(c)", "round(a, 99999999)",
                        "contains(a, 'a')", "abs(b)", "greatest(a, b)", "type(a)", "missingif(a, b)", "a / 0", "a % 0"]
        let templates = ["SELECT %1, %2 FROM _ WHERE %1 = %2", "SELECT %1 FROM _ ORDER BY %1, %2 DESC",
                         "SELECT %1 FROM _ WHERE %1 LIKE %2", "SELECT %1 FROM _ WHERE %1 IN [%2, 1]",
                         "SELECT %1 FROM _ WHERE %2 IN %1", "SELECT count(*), %1 FROM _ GROUP BY %1",
                         "SELECT %1 FROM _ WHERE ANY v IN %1 SATISFIES v = %2 END",
                         "SELECT %1 FROM _ WHERE EVERY v IN %2 SATISFIES v.a IS VALUED END",
                         "SELECT d.a, u FROM _ AS d UNNEST %1 AS u WHERE u < %2",
                         "SELECT %1 FROM _ WHERE %1 BETWEEN %2 AND 3 LIMIT 5 OFFSET 1",
                         "SELECT DISTINCT %1 FROM _ WHERE %2 IS NOT MISSING"]
        var ran = 0, rejected = 0
        for _ in 0..<600 {
            let t = templates[Int.random(in: 0..<templates.count, using: &rng)]
            let n1ql = t.replacingOccurrences(of: "%1", with: operands[Int.random(in: 0..<operands.count, using: &rng)])
                .replacingOccurrences(of: "%2", with: operands[Int.random(in: 0..<operands.count, using: &rng)])
            do {
                let rows = try db2.createQuery(n1ql).execute().allResults()
                for r in rows { _ = r.toJSON(); _ = r.toDictionary() }
                ran += 1
            } catch let e as CouchbaseLiteError {
                if rejected < 8 { print("  rejected: \(n1ql): \(e.message)") }
                rejected += 1
            }
        }
        print("robustness: \(ran) queries ran, \(rejected) rejected with CouchbaseLiteError")
        XCTAssertGreaterThan(ran, 400)
    }
}
