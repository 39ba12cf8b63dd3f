import Foundation
import XCTest
import SQLiteKit
@testable import Fleece

/// Hex with no spaces, upper case ("4366 6F6F" style input is also accepted by `bytes`).
func hex(_ bytes: [UInt8]) -> String {
    bytes.map { String(format: "%02X", $0) }.joined()
}

/// Parses hex, ignoring spaces, `|` and newlines.
func bytes(_ hexString: String) -> [UInt8] {
    let digits = hexString.filter { $0.isHexDigit }
    var result: [UInt8] = []
    var i = digits.startIndex
    while i < digits.endIndex {
        let j = digits.index(i, offsetBy: 2)
        result.append(UInt8(digits[i..<j], radix: 16)!)
        i = j
    }
    return result
}

/// Structural equality of Foundation value trees as JSON sees them (numbers by value).
func jsonEqual(_ a: Any, _ b: Any) -> Bool {
    switch (a, b) {
    case let (x as [String: Any], y as [String: Any]):
        guard x.count == y.count else { return false }
        for (k, v) in x {
            guard let w = y[k], jsonEqual(v, w) else { return false }
        }
        return true
    case let (x as [Any], y as [Any]):
        return x.count == y.count && zip(x, y).allSatisfy { jsonEqual($0, $1) }
    case let (x as String, y as String):
        return x == y
    case let (x as Bool, y as Bool):
        return x == y
    case (is NSNull, is NSNull):
        return true
    case let (x as Data, y as Data):
        return x == y
    default:
        guard let x = numericValue(a), let y = numericValue(b) else { return false }
        switch (x, y) {
        case let (.int(i), .int(j)): return i == j
        case let (.uint(i), .uint(j)): return i == j
        case let (.int(i), .uint(j)), let (.uint(j), .int(i)): return i >= 0 && UInt64(i) == j
        default: return x.double == y.double
        }
    }
}

enum Num {
    case int(Int64), uint(UInt64), double(Double)
    var double: Double {
        switch self {
        case .int(let i): return Double(i)
        case .uint(let u): return Double(u)
        case .double(let d): return d
        }
    }
}

func numericValue(_ v: Any) -> Num? {
    if v is Bool { return nil }
    switch v {
    case let i as Int: return .int(Int64(i))
    case let i as Int64: return .int(i)
    case let u as UInt64: return .uint(u)
    case let d as Double: return .double(d)
    case let f as Float: return .double(Double(f))
    default: return nil
    }
}

/// The fixtures folder: `<repo>/../shared/fixtures/cbl2`, located from this file.
func fixturesDirectory(file: String = #filePath) -> URL? {
    let repo = URL(fileURLWithPath: file).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
    let dir = repo.deletingLastPathComponent().appendingPathComponent("shared/fixtures/cbl2")
    return FileManager.default.fileExists(atPath: dir.path) ? dir : nil
}

func requireFixtures() throws -> URL {
    guard let dir = fixturesDirectory() else { throw XCTSkip("shared/fixtures is not present") }
    return dir
}

/// Copies a whole `.cblite2` bundle to a temporary directory (fixtures are never opened in
/// place) and opens its database.
func openFixtureDatabase(_ relativePath: String) throws -> (SQLiteConnection, URL) {
    let source = try requireFixtures().appendingPathComponent(relativePath)
    let tmp = FileManager.default.temporaryDirectory
        .appendingPathComponent("fleece-tests-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: tmp, withIntermediateDirectories: true)
    let copy = tmp.appendingPathComponent(source.lastPathComponent)
    try FileManager.default.copyItem(at: source, to: copy)
    // The fixtures are read-only; SQLite wants to be able to write -shm/-wal next to a copy.
    if let e = FileManager.default.enumerator(atPath: copy.path) {
        for case let name as String in e {
            try FileManager.default.setAttributes([.posixPermissions: 0o755],
                                                  ofItemAtPath: copy.appendingPathComponent(name).path)
        }
    }
    try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: copy.path)
    let db = try SQLiteConnection(path: copy.appendingPathComponent("db.sqlite3").path,
                                  mode: .init(readOnly: false, create: false))
    return (db, tmp)
}

/// One row of a LiteCore key-store table.
struct KVRow {
    var key: String
    var sequence: Int64
    var flags: Int64
    var body: [UInt8]
}

func readRows(_ db: SQLiteConnection, table: String = "kv_default") throws -> [KVRow] {
    var rows: [KVRow] = []
    let stmt = try db.prepare("SELECT key, sequence, flags, body FROM \(table) ORDER BY sequence")
    try stmt.forEachRow { s in
        rows.append(KVRow(key: s.string(0) ?? "", sequence: s.int64(1), flags: s.int64(2),
                          body: s.bytes(3) ?? []))
    }
    return rows
}

func readInfo(_ db: SQLiteConnection, _ key: String) throws -> [UInt8]? {
    let stmt = try db.prepare("SELECT body FROM kv_info WHERE key = ?")
    try stmt.bind(key, at: 1)
    return try stmt.step() ? stmt.bytes(0) : nil
}

/// The bodies stored in a 2.x "RawRevTree" row (cbl2-format.md §3.3), current revision first.
func revTreeBodies(_ data: [UInt8]) -> [[UInt8]]? {
    var bodies: [[UInt8]] = []
    var pos = 0
    while pos + 4 <= data.count {
        let size = Int(data[pos]) << 24 | Int(data[pos + 1]) << 16 | Int(data[pos + 2]) << 8 | Int(data[pos + 3])
        if size == 0 { return bodies }
        guard size >= 8, pos + size <= data.count else { return nil }
        let flags = data[pos + 6]
        let revIDLength = Int(data[pos + 7])
        var i = pos + 8 + revIDLength
        while i < pos + size && data[i] & 0x80 != 0 { i += 1 }   // sequence varint
        i += 1
        if flags & 0x80 != 0 { bodies.append(Array(data[i..<(pos + size)])) }
        pos += size
    }
    return nil
}
