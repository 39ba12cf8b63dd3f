import CBLTestSupport
import Fleece
import Foundation
import SQLiteKit
import XCTest
@testable import CouchbaseLiteSwift

/// The C Fleece functions (CFleeceSQL) against the Swift reading of the same bodies: for random
/// documents (every Fleece type, nesting, shared and long string keys) and paths (indexes,
/// escapes, non-ASCII, malformed), `fl_value`, `fl_exists`, `fl_count`, `fl_result` and `fl_each`
/// give exactly what `FleeceBodyDecoder` + `PropertyPath` + `QueryValue` say.
final class FleeceSQLFunctionTests: XCTestCase {
    private func randomValue(_ rng: inout SplitMix64, depth: Int) -> Any {
        switch Int.random(in: 0..<(depth > 2 ? 8 : 11), using: &rng) {
        case 0: return NSNull()
        case 1: return Bool.random(using: &rng)
        case 2: return Int.random(in: -3000...3000, using: &rng)
        case 3: return [Int.min, Int.max, 0, -1, 1 << 40][Int.random(in: 0..<5, using: &rng)]
        case 4: return [0.5, -1e300, 1e-300, 3.25, 0.1][Int.random(in: 0..<5, using: &rng)]
        case 5: return ["", "a", "é", "%_\\", "a string longer than fifteen bytes", "🙂"][Int.random(in: 0..<6, using: &rng)]
        case 6: return Data([1, 2, 3])
        case 7: return UInt64.max
        case 8, 9:
            return (0..<Int.random(in: 0..<4, using: &rng)).map { _ in randomValue(&rng, depth: depth + 1) }
        default:
            var d: [String: Any] = [:]
            for _ in 0..<Int.random(in: 0..<4, using: &rng) {
                d[Self.keys[Int.random(in: 0..<Self.keys.count, using: &rng)]] = randomValue(&rng, depth: depth + 1)
            }
            return d
        }
    }

    private static let keys = ["a", "b", "c", "x.y", "$z", "", "é", "a_key_longer_than_16_bytes"]
    private static let paths = ["a", "b", "c", "a.b", "a[0]", "a[-1]", "a[1].b", "b.a.c", "x\\.y", "$z", "$.a", ".b",
                                "é", "a.é", "a_key_longer_than_16_bytes", "c.a_key_longer_than_16_bytes", "nope",
                                "a[x]", "a[", "b[+1]", "a..b"]

    /// What SQLite should return for a value read by the Swift functions.
    private func expected(_ v: FleeceValue?) -> SQLiteValue {
        guard let v else { return .null }
        switch QueryValue(v) {
        case .missing: return .null
        case .null: return .blob([])
        case .bool(let b): return .integer(b ? 1 : 0)
        case .int(let i): return .integer(i)
        case .double(let d): return .real(d)
        case .string(let s): return .text(s)
        case .data(let d): return .blob(d)
        case .fleece(let c): return .blob(QueryValue.encodeStandalone(c))
        }
    }

    func testCFunctionsMatchTheSwiftReading() throws {
        let temp = try QueryTestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        var rng = SplitMix64(seed: 0xF1EE_CE5C)
        var docs: [(String, [String: Any])] = []
        for i in 0..<120 {
            var body: [String: Any] = [:]
            for key in Self.keys where Bool.random(using: &rng) { body[key] = randomValue(&rng, depth: 0) }
            docs.append((String(format: "doc-%03d", i), body))
        }
        let db = try QueryTestSupport.makeDatabase(name: "cfleece", in: temp, docs: docs)
        defer { try? db.close() }
        try db.withOpenFile { file in
            try QueryFunctions.register(on: file)
            let decoder = FleeceBodyDecoder { file.sharedKeys }
            var bodies: [[UInt8]] = []
            try file.connection.prepare("SELECT body FROM kv_default").forEachRow { bodies.append($0.bytes(0) ?? []) }
            XCTAssertEqual(bodies.count, docs.count)
            var checked = 0
            for path in Self.paths {
                let compiled = (try? PropertyPath(parsing: path)).map(CompiledPropertyPath.init)
                let stmt = try file.connection.prepare(
                    "SELECT body, fl_value(body, ?1), fl_exists(body, ?1), fl_count(body, ?1), fl_result(fl_value(body, ?1)) FROM kv_default")
                try stmt.bind(path, at: 1)
                try stmt.forEachRow { row in
                    let body = row.bytes(0) ?? []
                    let v = body.withUnsafeBytes { decoder.root(of: $0) }.flatMap { root in compiled?.evaluate(root) }
                    XCTAssertEqual(row.value(1), expected(v), "fl_value(\(path)) of \(body)")
                    XCTAssertEqual(row.value(2), .integer(v == nil ? 0 : 1), "fl_exists(\(path))")
                    let count: SQLiteValue = v.map { v in (v.arrayValue?.count ?? v.dictValue?.count).map { .integer(Int64($0)) } ?? .blob([]) } ?? .null
                    XCTAssertEqual(row.value(3), count, "fl_count(\(path))")
                    let result: SQLiteValue
                    switch v.map(QueryValue.init) {
                    case .bool(let b)?:
                        var enc = FleeceEncoder()
                        enc.writeBool(b)
                        result = .blob((try? enc.finish()) ?? [])
                    case .data(let d)?:
                        var enc = FleeceEncoder()
                        enc.writeData(d)
                        result = .blob((try? enc.finish()) ?? [])
                    default: result = expected(v)
                    }
                    XCTAssertEqual(row.value(4), result, "fl_result(fl_value(\(path)))")
                    checked += 1
                }
                // fl_each over the same property, one body at a time.
                let each = try file.connection.prepare("SELECT value, key, idx FROM fl_each(?1, ?2)")
                for body in bodies {
                    try each.bindBlob(body, at: 1)
                    try each.bind(path, at: 2)
                    var rows: [[SQLiteValue]] = []
                    try each.forEachRow { rows.append([$0.value(0), $0.value(1), $0.value(2)]) }
                    each.reset()
                    let v = body.withUnsafeBytes { decoder.root(of: $0) }.flatMap { root in compiled?.evaluate(root) }
                    var want: [[SQLiteValue]] = []
                    if let v, let array = v.arrayValue {
                        for (i, item) in array.enumerated() { want.append([expected(item), .null, .integer(Int64(i))]) }
                    } else if let v, let dict = v.dictValue {
                        for (i, pair) in dict.enumerated() { want.append([expected(pair.value), .text(pair.key), .integer(Int64(i))]) }
                    } else if let v, v.type != .null, v.type != .undefined {
                        want = [[expected(v), .null, 0]]
                    }
                    XCTAssertEqual(rows, want, "fl_each(\(path)) of \(body)")
                }
            }
            XCTAssertEqual(checked, docs.count * Self.paths.count)
        }
    }

    /// Malformed bodies never crash the C functions and read as MISSING, like the Swift ones.
    func testMalformedBodiesAreMissing() throws {
        let temp = try QueryTestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temp) }
        let db = try QueryTestSupport.makeDatabase(name: "bad", in: temp, docs: [("d", ["a": 1])])
        defer { try? db.close() }
        let bad: [[UInt8]] = [[], [0x70], [0x70, 0x01], [0x80, 0x03], [0x70, 0x05, 0x80, 0x02], [0x00, 0xFF, 0x80, 0x7F],
                              [0x6F, 0xFF, 0xFF, 0xFF, 0x80, 0x02],
                              [0, 0, 0, 12, 0xFF, 0xFF, 0x82, 2, 1, 0xAB, 0, 0x99, 0, 0, 0, 0]]
        try db.withOpenFile { file in
            try QueryFunctions.register(on: file)
            let stmt = try file.connection.prepare("SELECT fl_value(?1, 'a'), fl_exists(?1, 'a'), fl_count(?1, 'a'), (SELECT count(*) FROM fl_each(?1, 'a')), (SELECT count(*) FROM fl_each(?1, ''))")
            for bytes in bad {
                try stmt.bindBlob(bytes, at: 1)
                XCTAssertTrue(try stmt.step(), "\(bytes)")
                XCTAssertEqual(stmt.value(0), .null, "\(bytes)")
                XCTAssertEqual(stmt.value(1), .integer(0), "\(bytes)")
                XCTAssertEqual(stmt.value(2), .null, "\(bytes)")
                XCTAssertEqual(stmt.value(3), .integer(0), "\(bytes)")
                stmt.reset()
            }
        }
    }
}
