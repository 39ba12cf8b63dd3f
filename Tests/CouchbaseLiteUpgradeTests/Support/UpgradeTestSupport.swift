import CBLTestSupport
import Crypto
import Foundation
import JSONCore
import SQLiteKit
import XCTest
@testable import CouchbaseLiteSwift
@testable import CouchbaseLiteUpgrade

/// `<repo>/../shared/fixtures`, or a skip on a fresh clone without it.
enum SharedFixtures {
    static let repoRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func root() throws -> URL {
        let url = repoRoot.deletingLastPathComponent().appendingPathComponent("shared/fixtures")
        guard FileManager.default.fileExists(atPath: url.path) else { throw XCTSkip("shared fixtures not present (fresh clone)") }
        return url
    }

    static func json(_ relativePath: String) throws -> Any {
        try JSONSerialization.jsonObject(with: Data(contentsOf: root().appendingPathComponent(relativePath)))
    }
}

/// A scratch directory for one test; fixtures are copied into it, never opened in place.
final class Scratch {
    let url: URL

    init() {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("cblupgrade-\(UUID().uuidString)")
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    /// Copies a fixture bundle (with any -wal/-shm inside it) into the scratch directory.
    func copyFixture(_ relativePath: String, as name: String? = nil) throws -> URL {
        let source = try SharedFixtures.root().appendingPathComponent(relativePath)
        let dest = url.appendingPathComponent(name ?? source.lastPathComponent)
        try FileManager.default.copyItem(at: source, to: dest)
        // Fixtures are read-only files; the copies must be writable like a user's.
        if let e = FileManager.default.enumerator(atPath: dest.path) {
            for case let file as String in e {
                try? FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: dest.appendingPathComponent(file).path)
            }
        }
        try? FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: dest.path)
        return dest
    }

    func path(_ name: String) -> URL { url.appendingPathComponent(name) }
}

/// SHA-256 of every file under `url`, by relative path (proves a source was not modified).
func checksums(_ url: URL) throws -> [String: String] {
    var out: [String: String] = [:]
    guard let e = FileManager.default.enumerator(at: url, includingPropertiesForKeys: [.isRegularFileKey]) else { return out }
    for case let file as URL in e where (try file.resourceValues(forKeys: [.isRegularFileKey])).isRegularFile == true {
        out[String(file.path.dropFirst(url.path.count))] = SHA256.hash(data: try Data(contentsOf: file)).map { String(format: "%02x", $0) }.joined()
    }
    return out
}

/// Compares JSON-like values as parsed JSON (numbers by value, dicts unordered).
func XCTAssertJSONEqual(_ a: Any?, _ b: Any?, _ message: String = "", file: StaticString = #filePath, line: UInt = #line) {
    let ja = a.flatMap { try? JSON.string($0, sortedKeys: true) }
    let jb = b.flatMap { try? JSON.string($0, sortedKeys: true) }
    XCTAssertEqual(ja, jb, message, file: file, line: line)
}

/// The JSON-compatible form of a 2.x document's properties (blobs as their metadata dicts).
func plainProperties(_ doc: DictionaryObject) -> [String: Any] {
    func plain(_ v: Any) -> Any {
        switch v {
        case let b as Blob: return b.properties
        case let d as [String: Any]: return d.mapValues(plain)
        case let a as [Any]: return a.map(plain)
        default: return v
        }
    }
    return doc.toDictionary().mapValues(plain)
}

/// Runs the upgrader from `source` into `<scratch>/out/<name>.cblite2`.
@discardableResult
func upgrade(_ source: URL, in scratch: Scratch, name: String = "converted", options: UpgradeOptions = UpgradeOptions()) throws -> (URL, UpgradeReport) {
    let destination = scratch.path("out").appendingPathComponent("\(name).cblite2")
    let report = try DatabaseUpgrader(source: source, destination: destination, options: options).run()
    return (destination, report)
}

/// Opens a converted bundle through the 2.x API.
func openConverted(_ bundle: URL) throws -> Database {
    try Database(name: bundle.deletingPathExtension().lastPathComponent,
                 config: DatabaseConfiguration(directory: bundle.deletingLastPathComponent().path))
}

/// The built `cbl`, run to its end in `scratch` (``BuiltExecutable/run(_:_:scratch:timeout:)``);
/// skips the calling test when it is not built, fails it when it does not finish.
func runCBL(_ arguments: [String], in scratch: Scratch, timeout: TimeInterval = 120,
            file: StaticString = #filePath, line: UInt = #line) throws -> (status: Int32, stdout: String, stderr: String) {
    guard let output = try BuiltExecutable.run("cbl", arguments, scratch: scratch.url, timeout: timeout) else {
        throw XCTSkip("cbl executable not found; build with `swift build --build-tests`")
    }
    if output.timedOut { XCTFail("cbl \(arguments) did not finish in \(Int(timeout)) s", file: file, line: line) }
    return (output.status, output.stdout, output.stderr)
}

/// A headless Chromium for checking the HTML reports as a browser draws them; ``find()`` skips
/// the calling test where none is installed.
struct HeadlessChromium {
    let executable: URL

    static func find() throws -> HeadlessChromium {
        let candidates = ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome", "/usr/bin/headless_shell"]
        guard let path = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw XCTSkip("Chromium is not installed (apt install chromium); the HTML was checked as text only")
        }
        return HeadlessChromium(executable: URL(fileURLWithPath: path))
    }

    /// Runs it headless with `arguments`; its standard output (`--dump-dom` prints the DOM there).
    func run(_ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = executable
        process.arguments = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"] + arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return text
    }
}
