import CouchbaseLite
import CouchbaseLiteListener
import Foundation
import XCTest

/// A real third-party client against the listener: couchdb-python (PyPI `CouchDB`), installed
/// with pip into a temporary directory. Skipped when Python or the package registry is not
/// reachable; fails when the client's script fails.
final class ListenerPythonClientTests: ListenerTestCase {
    /// Runs a program with a time limit; returns its exit status (nil on timeout) and output.
    private func run(_ arguments: [String], environment: [String: String] = [:], timeout: TimeInterval) throws -> (Int32?, String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("cbl-listener-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: log) }
        let handle = try FileHandle(forWritingTo: log)
        process.standardOutput = handle
        process.standardError = handle
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        var status: Int32?
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        } else {
            status = process.terminationStatus
        }
        try handle.close()
        let output = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        return (status, output)
    }

    func testCouchDBPythonClient() throws {
        let (pythonStatus, _) = try run(["python3", "--version"], timeout: 10)
        guard pythonStatus == 0 else { throw XCTSkip("python3 is not available") }

        // One install per machine is enough: reuse a previous one.
        let target = FileManager.default.temporaryDirectory.appendingPathComponent("cbl-listener-pip-couchdb")
        let marker = target.appendingPathComponent("couchdb/client.py")
        if !FileManager.default.fileExists(atPath: marker.path) {
            try? FileManager.default.removeItem(at: target)
            let (status, output) = try run(["python3", "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                                            "--no-input", "--target", target.path, "CouchDB"], timeout: 180)
            guard status == 0, FileManager.default.fileExists(atPath: marker.path) else {
                try? FileManager.default.removeItem(at: target)
                throw XCTSkip("pip could not install the CouchDB package (registry unreachable?): \(output.suffix(500))")
            }
        }

        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Resources/couchdb_python_client.py")
        let url = try XCTUnwrap(listener.url).absoluteString
        let (status, output) = try run(["python3", script.path, url], environment: ["PYTHONPATH": target.path], timeout: 60)
        XCTAssertEqual(status, 0, "couchdb-python script failed:\n\(output)")
        XCTAssertTrue(output.contains("all checks passed"), output)
        // What the client did is visible through the API too.
        XCTAssertFalse(manager.databaseExistsNamed("pyclient"))
    }
}
