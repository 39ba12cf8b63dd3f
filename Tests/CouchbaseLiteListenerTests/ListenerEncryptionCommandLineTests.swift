import CBLTestSupport
import CouchbaseLite
import Foundation
import SQLiteKit
import XCTest

/// `cbl serve --encryption-key NAME=PASSWORD` / `--encryption-key-file NAME=FILE`: the keys are
/// registered before the listener starts, so an encrypted 1.x database is served like a plain one;
/// without its key it cannot be opened.
final class ListenerEncryptionCommandLineTests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        try super.setUpWithError()
        guard SQLiteLibrary.isSQLCipherAvailable else { throw XCTSkip("libsqlcipher0 is not installed") }
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("cbl-serve-keys-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        // Two encrypted databases made through the 1.x API.
        let manager = try CBLManager(directory: directory.appendingPathComponent("dbs").path)
        for (name, password) in [("vault", "letmein"), ("ledger", "from a file")] {
            let options = CBLDatabaseOptions()
            options.create = true
            options.encryptionKey = password
            let db = try manager.openDatabaseNamed(name, with: options)
            _ = try db.document(withID: "secret")!.putProperties(["code": "\(name)-1234"])
            try db.close()
        }
        manager.close()
    }

    override func tearDown() {
        if let directory { try? FileManager.default.removeItem(at: directory) }
        super.tearDown()
    }

    private func serve(_ extra: [String]) throws -> (Process, UInt16, URL) {
        let (process, url, log) = try ServeProcess.start(["--no-javascript"] + extra, directory: directory)
        return (process, UInt16(url.port ?? 0), log)
    }

    private func stop(_ process: Process) -> Int32? { ServeProcess.stop(process) }

    func testServesEncryptedDatabasesWithRegisteredKeys() throws {
        let keyFile = directory.appendingPathComponent("ledger.key")
        try Data("from a file\n".utf8).write(to: keyFile)
        let (process, port, log) = try serve(["--encryption-key", "vault=letmein", "--encryption-key-file", "ledger=\(keyFile.path)"])
        let client = RawHTTPClient(port: port)
        XCTAssertEqual(try client.send("GET", "/vault/secret").dict["code"] as? String, "vault-1234")
        XCTAssertEqual(try client.send("GET", "/ledger/secret").dict["code"] as? String, "ledger-1234")
        XCTAssertEqual(try client.send("GET", "/vault").dict["doc_count"] as? Int, 1)
        XCTAssertEqual(stop(process), 0, (try? String(contentsOf: log, encoding: .utf8)) ?? "")
    }

    func testWithoutItsKeyAnEncryptedDatabaseIsNotServed() throws {
        let (process, port, log) = try serve(["--encryption-key", "vault=wrong"])
        let client = RawHTTPClient(port: port)
        let response = try client.send("GET", "/vault/secret")
        XCTAssertNotEqual(response.status, 200)
        XCTAssertNil(response.dict["code"])
        XCTAssertEqual(stop(process), 0, (try? String(contentsOf: log, encoding: .utf8)) ?? "")
    }

    func testMalformedEncryptionKeyOptionIsAnError() throws {
        guard let cbl = BuiltExecutable.find("cbl") else { throw XCTSkip("cbl executable not found") }
        let process = Process()
        process.executableURL = cbl
        process.arguments = ["serve", "--port", "0", "--directory", directory.appendingPathComponent("dbs").path, "--encryption-key", "nopassword"]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 2, output)
        XCTAssertTrue(output.contains("NAME=PASSWORD"), output)
    }
}
