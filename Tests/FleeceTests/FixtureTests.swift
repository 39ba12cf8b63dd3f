import Foundation
import XCTest
import JSONCore
import SQLiteKit
@testable import Fleece

/// Real LiteCore-written databases (shared/fixtures/cbl2; copied before opening).
final class FixtureTests: XCTestCase {
    static let names3 = "lite_dbs/db_3_0_0_names_100_with_deleted.cblite2"

    private func namesLines() throws -> [[UInt8]] {
        let url = try requireFixtures().appendingPathComponent("query_data/names_100.json")
        let text = try Data(contentsOf: url)
        return text.split(separator: UInt8(ascii: "\n")).map { Array($0) }.filter { !$0.isEmpty }
    }

    /// §6.9: the 78 live bodies of the 3.0 database, re-encoded from names_100.json with that
    /// database's SharedKeys, are byte-identical. (The doc IDs there are random; the rows were
    /// imported in file order, so line N is the row with sequence N; deleted docs got new
    /// sequences above 100.)
    func testReencodesLiveNamesBodiesByteForByte() throws {
        let (db, tmp) = try openFixtureDatabase(FixtureTests.names3)
        defer { try? FileManager.default.removeItem(at: tmp) }
        let lines = try namesLines()
        XCTAssertEqual(lines.count, 100)
        let stored = try XCTUnwrap(try readInfo(db, "SharedKeys"))
        let sk = try SharedKeys(stateData: stored)
        let tableSize = sk.count
        XCTAssertEqual(hex(sk.stateData()), hex(stored), "SharedKeys record round trip")

        var encoder = FleeceEncoder(sharedKeys: sk)
        var live = 0
        for row in try readRows(db) where row.flags & 1 == 0 {
            XCTAssertLessThanOrEqual(row.sequence, 100)
            let line = lines[Int(row.sequence) - 1]
            try encoder.writeJSON(line)
            let out = try encoder.finish()
            XCTAssertEqual(hex(out), hex(row.body), "body of \(row.key) (sequence \(row.sequence))")
            live += 1
        }
        XCTAssertEqual(live, 78)
        XCTAssertEqual(sk.count, tableSize, "no new shared keys were needed")
    }

    /// Starting from an empty table and importing the file in order reproduces the stored
    /// SharedKeys record (codes in first-encounter order) and the live bodies.
    func testSharedKeysBuiltFromScratchMatchLiteCore() throws {
        let (db, tmp) = try openFixtureDatabase(FixtureTests.names3)
        defer { try? FileManager.default.removeItem(at: tmp) }
        let lines = try namesLines()
        let sk = SharedKeys()
        var encoder = FleeceEncoder(sharedKeys: sk)
        var bodies: [[UInt8]] = []
        for line in lines {
            try encoder.writeJSON(line)
            bodies.append(try encoder.finish())
        }
        XCTAssertEqual(hex(sk.stateData()), hex(try XCTUnwrap(try readInfo(db, "SharedKeys"))))
        for row in try readRows(db) where row.flags & 1 == 0 {
            XCTAssertEqual(bodies[Int(row.sequence) - 1], row.body, row.key)
        }
    }

    /// Every body (live and deleted) decodes, and live ones equal their JSON source.
    func testDecodesEveryNamesBody() throws {
        let (db, tmp) = try openFixtureDatabase(FixtureTests.names3)
        defer { try? FileManager.default.removeItem(at: tmp) }
        let lines = try namesLines()
        let sk = try SharedKeys(stateData: try XCTUnwrap(try readInfo(db, "SharedKeys")))
        let rows = try readRows(db)
        XCTAssertEqual(rows.count, 100)
        for row in rows {
            let doc = try FleeceDocument(bytes: row.body, sharedKeys: sk)
            if row.flags & 1 != 0 {
                XCTAssertEqual(doc.root.toJSON(), "{}")         // tombstone: empty dict
                continue
            }
            let source = try JSON.parse(lines[Int(row.sequence) - 1])
            XCTAssertTrue(jsonEqual(doc.root.toFoundation(), source), row.key)
            // toJSON output parses back to the same value; keys in stored order.
            let rendered = doc.root.toJSONBytes()
            XCTAssertTrue(jsonEqual(try JSON.parse(rendered), source), row.key)
            XCTAssertEqual(doc.root["name"]?["first"]?.stringValue,
                           ((source as? [String: Any])?["name"] as? [String: Any])?["first"] as? String)
            XCTAssertEqual(doc.root.dictValue?.keys.sorted(), (source as? [String: Any])?.keys.sorted())
        }
        // The `extra` column holds rev trees whose non-current revisions may carry bodies.
        let stmt = try db.prepare("SELECT extra FROM kv_default WHERE extra IS NOT NULL")
        try stmt.forEachRow { s in
            let tree = try XCTUnwrap(revTreeBodies(s.bytes(0) ?? []))
            for body in tree { XCTAssertNoThrow(try FleeceDocument(bytes: body, sharedKeys: sk)) }
        }
    }

    /// 2.8 rev-tree rows written by LiteCore: bodies {n, even}.
    func testDecodesUpgrade28Bodies() throws {
        for name in ["lite_dbs/upgrade_2.7.cblite2", "lite_dbs/upgrade_2.8.cblite2"] {
            let (db, tmp) = try openFixtureDatabase(name)
            defer { try? FileManager.default.removeItem(at: tmp) }
            let sk = try SharedKeys(stateData: try XCTUnwrap(try readInfo(db, "SharedKeys")))
            XCTAssertEqual(sk.allKeys(), ["n", "even"])
            var checked = 0
            for row in try readRows(db) {
                let bodies = try XCTUnwrap(revTreeBodies(row.body), row.key)
                for body in bodies {
                    let doc = try FleeceDocument(bytes: body, sharedKeys: sk)
                    let n = try XCTUnwrap(doc.root["n"]?.intValue)
                    XCTAssertEqual(row.key, String(format: "doc-%03d", n))
                    XCTAssertEqual(doc.root["even"]?.boolValue, n % 2 == 0)
                    // Re-encoding reproduces LiteCore's bytes.
                    var e = FleeceEncoder(sharedKeys: sk)
                    try e.writeJSON(Array(doc.root.toJSONBytes()))
                    XCTAssertEqual(try e.finish(), body)
                    checked += 1
                }
            }
            XCTAssertEqual(checked, 100, name)     // deleted docs keep their last body
        }
    }

    /// The research prototype's converted 1.x databases: current bodies equal what LiteCore's
    /// upgrader test expects.
    func testDecodesSpecReferenceOutputs() throws {
        let expectationsURL = try requireFixtures().appendingPathComponent("expectations/upgrade_expectations.json")
        let expectations = try XCTUnwrap(try JSON.parse(Data(contentsOf: expectationsURL)) as? [String: Any])
        let cases = try XCTUnwrap((expectations["upgrade_1x"] as? [String: Any])?["cases"] as? [[String: Any]])
        for (name, input) in [("ios130", "cbl1_upgrade_inputs/ios130/iosdb.cblite2"),
                              ("net120", "cbl1_upgrade_inputs/net120/netdb.cblite2")] {
            let c = try XCTUnwrap(cases.first { $0["input"] as? String == input })
            let docs = try XCTUnwrap(c["docs"] as? [[String: Any]])
            let (db, tmp) = try openFixtureDatabase("spec_reference_outputs/\(name).cblite2")
            defer { try? FileManager.default.removeItem(at: tmp) }
            let sk = try SharedKeys(stateData: try XCTUnwrap(try readInfo(db, "SharedKeys")))
            XCTAssertEqual(hex(sk.stateData()), hex(try XCTUnwrap(try readInfo(db, "SharedKeys"))))
            for row in try readRows(db) {
                let bodies = try XCTUnwrap(revTreeBodies(row.body))
                let current = try FleeceDocument(bytes: try XCTUnwrap(bodies.first), sharedKeys: sk)
                let expected = try XCTUnwrap(docs.first { $0["docID"] as? String == row.key }?["body_json_exact"] as? String)
                XCTAssertTrue(jsonEqual(current.root.toFoundation(), try JSON.parse(expected)), "\(name) \(row.key)")
                XCTAssertTrue(jsonEqual(try JSON.parse(current.root.toJSONBytes()), try JSON.parse(expected)))
            }
        }
    }
}
