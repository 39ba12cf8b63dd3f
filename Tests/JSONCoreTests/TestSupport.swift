import Foundation
import XCTest
import JSONCore
import CBLTestSupport

/// Canonical encoding as a String (test convenience).
func canon(_ value: Any, file: StaticString = #filePath, line: UInt = #line) -> String {
    do {
        return String(decoding: try JSON.canonicalData(value), as: UTF8.self)
    } catch {
        XCTFail("canonicalData threw \(error)", file: file, line: line)
        return "<error>"
    }
}

/// Formats a double exactly as the writer does (iOS "%.16g" rule).
func formatDouble(_ d: Double) throws -> String {
    try String(decoding: JSON.canonicalData(d), as: UTF8.self)
}

/// Reference implementation of the iOS rule, written independently of JSONCore: the C
/// library's sprintf("%.16g") (or "%.6g" for floats), then ".0" appended when every character
/// is in "0123456789-" (the process runs in the C locale).
func referenceG(_ d: Double, precision p: Int) -> String {
    var buf = [CChar](repeating: 0, count: 64)
    _ = withVaList([d]) { va in
        buf.withUnsafeMutableBufferPointer { vsnprintf($0.baseAddress, 64, p == 16 ? "%.16g" : "%.6g", va) }
    }
    var s = String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    if s.allSatisfy({ "0123456789-".contains($0) }) { s += ".0" }
    return s
}

/// Structural equality of Foundation-style JSON values (Int and Double are distinct; NSNumber
/// values are compared by their JSON meaning).
func jsonEqual(_ a: Any, _ b: Any) -> Bool {
    switch (a, b) {
    case let (x as [String: Any], y as [String: Any]):
        guard x.count == y.count else { return false }
        for (k, v) in x {
            guard let w = y[k], jsonEqual(v, w) else { return false }
        }
        return true
    case let (x as [Any], y as [Any]):
        guard x.count == y.count else { return false }
        return zip(x, y).allSatisfy { jsonEqual($0, $1) }
    case let (x as String, y as String):
        return x == y
    case (is NSNull, is NSNull):
        return true
    default:
        // Scalars: compare canonical encodings (distinguishes true from 1, 1 from 1.0).
        guard let ea = try? JSON.canonicalData(a), let eb = try? JSON.canonicalData(b) else { return false }
        return ea == eb
    }
}


/// Minimal MD5 (RFC 1321), used to recompute Couchbase Lite revision IDs in the tests.
func md5Hex(_ message: [UInt8]) -> String {
    let s: [UInt32] = [7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
                       5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20,
                       4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
                       6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21]
    let k: [UInt32] = (0..<64).map { UInt32(truncatingIfNeeded: Int64(abs(sin(Double($0 + 1))) * 4294967296.0)) }
    var a0: UInt32 = 0x67452301, b0: UInt32 = 0xefcdab89, c0: UInt32 = 0x98badcfe, d0: UInt32 = 0x10325476
    var msg = message
    let bitLen = UInt64(message.count) &* 8
    msg.append(0x80)
    while msg.count % 64 != 56 { msg.append(0) }
    for i in 0..<8 { msg.append(UInt8(truncatingIfNeeded: bitLen >> (8 * UInt64(i)))) }
    for chunk in stride(from: 0, to: msg.count, by: 64) {
        var m = [UInt32](repeating: 0, count: 16)
        for i in 0..<16 {
            let j = chunk + i * 4
            m[i] = UInt32(msg[j]) | UInt32(msg[j + 1]) << 8 | UInt32(msg[j + 2]) << 16 | UInt32(msg[j + 3]) << 24
        }
        var a = a0, b = b0, c = c0, d = d0
        for i in 0..<64 {
            var f: UInt32
            var g: Int
            switch i {
            case 0..<16: f = (b & c) | (~b & d); g = i
            case 16..<32: f = (d & b) | (~d & c); g = (5 * i + 1) % 16
            case 32..<48: f = b ^ c ^ d; g = (3 * i + 5) % 16
            default: f = c ^ (b | ~d); g = (7 * i) % 16
            }
            f = f &+ a &+ k[i] &+ m[g]
            a = d; d = c; c = b
            b = b &+ ((f << s[i]) | (f >> (32 - s[i])))
        }
        a0 = a0 &+ a; b0 = b0 &+ b; c0 = c0 &+ c; d0 = d0 &+ d
    }
    var out = ""
    for v in [a0, b0, c0, d0] {
        for i in 0..<4 { out += String(format: "%02x", (v >> (8 * UInt32(i))) & 0xff) }
    }
    return out
}

/// Couchbase Lite iOS 1.1+ revision ID: MD5([len(parent) parent] deleted json).
func cblRevID(json: [UInt8], parent: String?, deleted: Bool) -> String {
    var input: [UInt8] = []
    var generation = 1
    if let parent, !parent.isEmpty {
        let bytes = Array(parent.utf8)
        input.append(UInt8(truncatingIfNeeded: bytes.count))
        input += bytes
        generation = Int(parent.split(separator: "-")[0])! + 1
    }
    input.append(deleted ? 1 : 0)
    input += json
    return "\(generation)-\(md5Hex(input))"
}

/// Stored bodies of the real 1.x fixtures, read from `<repo>/../shared/fixtures/cbl1/facts.json`
/// at run time (fixtures are never copied into the repo; tests skip on a fresh clone without them).
struct FixtureFacts {
    let fixture: String
    let docID: String
    let stored: String
    let revID: String
    let parentRevID: String?
    let deleted: Bool

    /// Producers whose encoder writes canonical JSON (sorted keys at every level): iOS 1.1+,
    /// .NET 1.2+, Android 1.4 (spec 2.6, 11). Older Android and .NET 1.1 did not.
    var canonicalProducer: Bool {
        let name = fixture
        if name.hasPrefix("ios1"), !name.hasPrefix("ios104") { return true }
        if name.hasPrefix("net12") || name.hasPrefix("net13") || name.hasPrefix("net14") { return true }
        return name.hasPrefix("android140")
    }

    /// Fixtures whose generation ≥ 2 rev IDs follow the current digest rule (spec 3.3).
    var iOSRevIDRule: Bool { canonicalProducer && RevisionIDGeneration(revID) >= 2 }

    static func winningBodies() throws -> [FixtureFacts] {
        let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let facts = repo.deletingLastPathComponent().appendingPathComponent("shared/fixtures/cbl1/facts.json")
        guard FileManager.default.fileExists(atPath: facts.path) else {
            throw XCTSkip("shared fixtures not present (fresh clone)")
        }
        let dbs = try JSONSerialization.jsonObject(with: Data(contentsOf: facts)) as! [[String: Any]]
        var out: [FixtureFacts] = []
        for db in dbs {
            let path = (db["db"] as! String).split(separator: "/")
            let fixture = String(path[1])
            for doc in db["docs"] as? [[String: Any]] ?? [] {
                guard let json = doc["json"] as? String else { continue }
                let history = doc["history"] as? [String] ?? []
                out.append(FixtureFacts(fixture: fixture, docID: doc["docID"] as! String, stored: json,
                                        revID: doc["winningRev"] as! String,
                                        parentRevID: history.count > 1 ? history[1] : nil,
                                        deleted: doc["deleted"] as? Bool ?? false))
            }
        }
        return out
    }
}

/// The generation of a revision ID (0 if invalid).
func RevisionIDGeneration(_ revID: String) -> Int {
    Int(revID.split(separator: "-", maxSplits: 1).first ?? "") ?? 0
}
