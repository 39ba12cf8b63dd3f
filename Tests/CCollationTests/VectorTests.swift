import CCollation
import XCTest

/// The shared test vectors (spec 6.7): ordered lists, pairwise JSON cases and
/// pairwise REVID cases.
final class VectorTests: XCTestCase {

    private func mode(named name: String) throws -> Mode {
        guard let m = Mode(rawValue: name) else {
            XCTFail("unknown collation \(name)")
            throw XCTSkip("unknown collation")
        }
        return m
    }

    /// Every order_*.json: for all i < j, values[i] < values[j]; and v == v.
    func testOrderedLists() throws {
        let files = try Fixtures.orderFiles()
        XCTAssertEqual(files.count, 5, "expected the five order_*.json files")
        var pairs = 0
        for file in files {
            let doc = try Fixtures.load(file)
            let m = try mode(named: try XCTUnwrap(doc["collation"]?.stringValue, file))
            let texts = try XCTUnwrap(doc["values"]?.arrayValue, file).map(CompactJSON.compact)
            XCTAssertGreaterThan(texts.count, 1, file)
            for i in texts.indices {
                XCTAssertEqual(collate(m, texts[i], texts[i]), 0, "\(file): \(show(texts[i])) == itself")
                for j in texts.indices where j > i {
                    pairs += 1
                    XCTAssertEqual(collate(m, texts[i], texts[j]), -1,
                                   "\(file) [\(i)] \(show(texts[i])) < [\(j)] \(show(texts[j]))")
                    XCTAssertEqual(collate(m, texts[j], texts[i]), 1,
                                   "\(file) [\(j)] \(show(texts[j])) > [\(i)] \(show(texts[i]))")
                }
            }
        }
        XCTAssertGreaterThan(pairs, 3000)
    }

    /// The encoding the order tests rely on: compact, key order kept, raw UTF-8.
    func testCompactEncoderKeepsKeyOrderAndNumberText() throws {
        let v = try JSONParser.parse("{ \"b\": 2, \"a\": [3.0, -0.0001, 5e-324, \"é/\\\"\"] }")
        XCTAssertEqual(show(CompactJSON.compact(v)), "{\"b\":2,\"a\":[3.0,-0.0001,5e-324,\"é/\\\"\"]}")
    }

    /// The PouchDB list is documented as JSON_ASCII only: under JSON (Unicode)
    /// exactly one adjacent pair flips ("1" vs "[]": punctuation before digits).
    func testPouchDBListUnderUnicodeDiffersOnlyAtDocumentedPair() throws {
        let doc = try Fixtures.load("order_ascii_pouchdb.json")
        let texts = try XCTUnwrap(doc["values"]?.arrayValue).map(CompactJSON.compact)
        var flipped: [String] = []
        for i in 1..<texts.count where collate(.unicode, texts[i - 1], texts[i]) != -1 {
            flipped.append("\(show(texts[i - 1])) / \(show(texts[i]))")
        }
        XCTAssertEqual(flipped, ["\"20\" / \"[]\""])
        XCTAssertEqual(collate(.unicode, "\"[]\"", "\"1\""), -1)
    }

    func testPairwiseJSON() throws {
        let doc = try Fixtures.load("pairwise_json.json")
        let cases = try XCTUnwrap(doc["cases"]?.arrayValue)
        XCTAssertEqual(cases.count, 107)
        for (n, c) in cases.enumerated() {
            let m = try mode(named: try XCTUnwrap(c["collation"]?.stringValue))
            let a = try XCTUnwrap(c["a"]?.stringValue), b = try XCTUnwrap(c["b"]?.stringValue)
            let expected = try XCTUnwrap(c["expected"]?.intValue)
            let limit = c["arrayLimit"]?.intValue ?? 0
            let label = "case \(n) [\(m.rawValue), limit \(limit)] \(a) vs \(b)"
            XCTAssertEqual(collate(m, a, b, arrayLimit: limit), expected, label)
            XCTAssertEqual(collate(m, b, a, arrayLimit: limit), -expected, "reversed " + label)
        }
    }

    func testPairwiseRevID() throws {
        let doc = try Fixtures.load("pairwise_revid.json")
        let cases = try XCTUnwrap(doc["cases"]?.arrayValue)
        XCTAssertEqual(cases.count, 17)
        for c in cases {
            let a = try XCTUnwrap(c["a"]?.stringValue), b = try XCTUnwrap(c["b"]?.stringValue)
            let expected = try XCTUnwrap(c["expected"]?.intValue)
            XCTAssertEqual(collateRevID(a, b), expected, "\(a) vs \(b)")
            XCTAssertEqual(collateRevID(b, a), -expected, "\(b) vs \(a)")
            // The SQLite callback must agree.
            let ba = Array(a.utf8), bb = Array(b.utf8)
            let viaSQLite = ba.withUnsafeBytes { pa in
                bb.withUnsafeBytes { pb in
                    cbl_sqlite_collate_revid(nil, Int32(pa.count), pa.baseAddress, Int32(pb.count), pb.baseAddress)
                }
            }
            XCTAssertEqual(Int(viaSQLite), expected, "sqlite callback \(a) vs \(b)")
        }
    }
}

func show(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }
