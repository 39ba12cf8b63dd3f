import Crypto
import Foundation
import SQLiteKit
import XCTest
@testable import CouchbaseLite

/// Where the shared fixtures live: `<repo>/../shared/fixtures`. Nil on a fresh clone without them.
enum Fixtures {
    static let repoRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static var root: URL? {
        let url = repoRoot.deletingLastPathComponent().appendingPathComponent("shared/fixtures")
        return FileManager.default.fileExists(atPath: url.path) ? url : nil
    }

    /// The fixture root, or skips the test when it is absent.
    static func requireRoot(file: StaticString = #filePath, line: UInt = #line) throws -> URL {
        guard let root else { throw XCTSkip("shared fixtures not present (fresh clone)") }
        return root
    }

    /// `cbl1/facts.json`, parsed.
    static func facts() throws -> [[String: Any]] {
        let url = try requireRoot().appendingPathComponent("cbl1/facts.json")
        return try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as! [[String: Any]]
    }
}

/// A temporary directory removed when the object goes away.
final class TempDirectory {
    let url: URL

    init(_ prefix: String = "cbltest") {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    var path: String { url.path }

    /// Copies a fixture directory or file (never open fixtures in place: SQLite rewrites -wal/-shm).
    func copy(_ source: URL, as name: String? = nil) throws -> URL {
        let dest = url.appendingPathComponent(name ?? source.lastPathComponent)
        try FileManager.default.copyItem(at: source, to: dest)
        return dest
    }
}

/// Opens a raw SQLite connection on a database file with the 1.x collations registered.
func rawConnection(_ path: String, readOnly: Bool = false) throws -> SQLiteConnection {
    let connection = try SQLiteConnection(path: path, mode: .init(readOnly: readOnly, create: false))
    try SQLiteStore.registerCollations(on: connection)
    return connection
}

func sha1Hex(_ data: Data) -> String {
    Insecure.SHA1.hash(data: data).map { String(format: "%02x", $0) }.joined()
}

func sha256Hex(_ data: Data) -> String {
    SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
}

/// SHA-256 of every file under a directory, by relative path.
func directoryChecksums(_ url: URL) throws -> [String: String] {
    var out: [String: String] = [:]
    let fm = FileManager.default
    guard let e = fm.enumerator(at: url, includingPropertiesForKeys: [.isRegularFileKey]) else { return out }
    for case let file as URL in e {
        guard (try file.resourceValues(forKeys: [.isRegularFileKey])).isRegularFile == true else { continue }
        out[String(file.path.dropFirst(url.path.count))] = sha256Hex(try Data(contentsOf: file))
    }
    return out
}

/// Properties without the special `_id`/`_rev`/`_deleted` keys, for comparing with stored bodies.
func bodyProperties(_ props: [String: Any]?) -> [String: Any] {
    var p = props ?? [:]
    p["_id"] = nil
    p["_rev"] = nil
    p["_deleted"] = nil
    return p
}

func XCTAssertJSONEqual(_ a: Any?, _ b: Any?, _ message: String = "", file: StaticString = #filePath, line: UInt = #line) {
    let lhs = try? JSONSerialization.data(withJSONObject: ["v": a ?? NSNull()], options: [.sortedKeys])
    let rhs = try? JSONSerialization.data(withJSONObject: ["v": b ?? NSNull()], options: [.sortedKeys])
    XCTAssertEqual(lhs.map { String(decoding: $0, as: UTF8.self) }, rhs.map { String(decoding: $0, as: UTF8.self) },
                   message, file: file, line: line)
}

func XCTAssertThrowsStatus<T>(_ status: Int, _ expression: @autoclosure () throws -> T, _ message: String = "",
                              file: StaticString = #filePath, line: UInt = #line) {
    XCTAssertThrowsError(try expression(), message, file: file, line: line) { error in
        XCTAssertEqual((error as? CBLError)?.code, status, "wrong error: \(error)", file: file, line: line)
        XCTAssertEqual((error as NSError).code, status, file: file, line: line)
    }
}

/// A fresh manager in a temp directory.
func makeManager(_ dir: TempDirectory) throws -> CBLManager {
    try CBLManager(directory: dir.url.appendingPathComponent("manager").path)
}

/// A test case with a fresh manager directory and an open database `db`, removed afterwards.
class DatabaseTestCase: XCTestCase {
    var dir: TempDirectory!
    var manager: CBLManager!
    var db: CBLDatabase!

    /// The name of the database each test gets.
    var databaseName: String { "db" }

    override func setUpWithError() throws {
        dir = TempDirectory()
        manager = try makeManager(dir)
        db = try manager.databaseNamed(databaseName)
    }

    override func tearDown() {
        manager.close()
        dir = nil
    }
}

/// A test case with a fresh manager (in a temporary directory) and one database, `databaseName`.
class SingleDatabaseTestCase: XCTestCase {
    var databaseName: String { "db" }
    var dir: TempDirectory!
    var manager: CBLManager!
    var db: CBLDatabase!

    override func setUpWithError() throws {
        dir = TempDirectory()
        manager = try CBLManager(directory: dir.url.appendingPathComponent("m").path)
        db = try manager.databaseNamed(databaseName)
    }

    override func tearDown() {
        manager?.close()
        dir = nil
    }
}
