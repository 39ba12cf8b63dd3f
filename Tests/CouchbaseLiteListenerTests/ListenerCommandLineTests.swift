import CBLTestSupport
import CouchbaseLite
import Foundation
import XCTest

/// `cbl serve`: prints its URL, serves until interrupted, then exits cleanly.
final class ListenerCommandLineTests: XCTestCase {
    private func serve(_ extra: [String], directory: URL) throws -> (Process, URL, URL) {
        try ServeProcess.start(extra, directory: directory)
    }

    private func stop(_ process: Process) -> Int32? { ServeProcess.stop(process) }

    func testServeAndInterrupt() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("cbl-listener-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }

        let (process, url, log) = try serve([], directory: dir)
        let port = try XCTUnwrap(url.port.map(UInt16.init))
        XCTAssertEqual(url.host, "127.0.0.1")
        let client = RawHTTPClient(port: port)
        XCTAssertEqual(try client.send("GET", "/").dict["couchdb"] as? String, "Welcome")
        XCTAssertEqual(try client.send("PUT", "/cli").status, 201)
        XCTAssertEqual(try client.send("PUT", "/cli/doc", headers: ["Content-Type": "application/json"],
                                       body: Array("{\"from\":\"cli\"}".utf8)).status, 201)
        XCTAssertEqual(stop(process), 0, (try? String(contentsOf: log, encoding: .utf8)) ?? "")

        // The data is in the directory, readable by the library.
        let manager = try CBLManager(directory: dir.appendingPathComponent("dbs").path)
        defer { manager.close() }
        XCTAssertEqual(try manager.existingDatabaseNamed("cli").existingDocument(withID: "doc")?["from"] as? String, "cli")
        manager.close()

        // --readonly refuses writes and serves reads.
        let (ro, roURL, roLog) = try serve(["--readonly"], directory: dir)
        let roClient = RawHTTPClient(port: UInt16(roURL.port ?? 0))
        XCTAssertEqual(try roClient.send("GET", "/cli/doc").dict["from"] as? String, "cli")
        XCTAssertEqual(try roClient.send("PUT", "/cli/doc2", headers: ["Content-Type": "application/json"], body: Array("{}".utf8)).status, 403)
        XCTAssertEqual(stop(ro), 0, (try? String(contentsOf: roLog, encoding: .utf8)) ?? "")
    }
}
