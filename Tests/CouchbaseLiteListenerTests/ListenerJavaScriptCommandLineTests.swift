import CBLTestSupport
import CouchbaseLiteJavaScript
import Foundation
import SQLiteKit
import XCTest

/// JavaScriptCore is loaded at run time: `cbl serve` on a machine without it (simulated with
/// `CBL_JAVASCRIPTCORE_LOAD` naming a missing file) serves as usual and answers JavaScript design
/// documents with CouchDB's `unknown_query_language`, naming the Debian package; `cbl doctor` says
/// which optional libraries are installed and which package enables what.
final class ListenerJavaScriptCommandLineTests: XCTestCase {
    static let missingLibrary = "/nonexistent/libjavascriptcoregtk.so"
    static let withoutJavaScriptCore = ["CBL_JAVASCRIPTCORE_LOAD": missingLibrary]
    static let json = ["Content-Type": "application/json"]

    private func temporaryDirectory() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("cbl-jsc-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }

    private func put(_ client: RawHTTPClient, _ path: String, _ body: String) throws -> HTTPResult {
        try client.send("PUT", path, headers: Self.json, body: Array(body.utf8))
    }

    private func assertUnknownQueryLanguage(_ r: HTTPResult, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(r.status, 500, r.text, file: file, line: line)
        XCTAssertEqual(r.dict["error"] as? String, "unknown_query_language", r.text, file: file, line: line)
        let reason = r.dict["reason"] as? String ?? ""
        XCTAssertTrue(reason.contains("install libjavascriptcoregtk-4.1-0"), reason, file: file, line: line)
        XCTAssertTrue(reason.contains("\(Self.missingLibrary): cannot open shared object file"), reason, file: file, line: line)
    }

    func testServeWithoutJavaScriptCoreServesDatabasesAndRefusesJavaScript() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (process, url, log) = try ServeProcess.start([], directory: dir, environment: Self.withoutJavaScriptCore)
        defer { if process.isRunning { _ = ServeProcess.stop(process) } }
        let client = RawHTTPClient(port: try XCTUnwrap(url.port.map(UInt16.init)))

        // A plain database and its documents need no JavaScript.
        XCTAssertEqual(try client.send("PUT", "/plain").status, 201)
        XCTAssertEqual(try put(client, "/plain/doc", #"{"n":1}"#).status, 201)
        XCTAssertEqual(try client.send("GET", "/plain/doc").dict["n"] as? Int, 1)
        XCTAssertEqual(try client.send("GET", "/plain/_all_docs").dict["total_rows"] as? Int, 1)

        // Design documents are stored; their JavaScript cannot run: CouchDB's answer for a
        // language no query server runs, with what to install.
        XCTAssertEqual(try put(client, "/plain/_design/app", """
            {"views": {"byN": {"map": "function(doc) { emit(doc.n, null); }"}},
             "filters": {"even": "function(doc, req) { return doc.n % 2 == 0; }"}}
            """).status, 201)
        assertUnknownQueryLanguage(try client.send("GET", "/plain/_design/app/_view/byN"))
        assertUnknownQueryLanguage(try client.send("GET", "/plain/_changes?filter=app/even"))
        // A validate_doc_update that cannot run refuses writes rather than letting them through
        // unchecked; its design document itself stays writable, so it can be removed.
        let guardDoc = try put(client, "/plain/_design/guard",
                               #"{"validate_doc_update": "function(newDoc) { if (!newDoc.n) throw({forbidden: 'n'}); }"}"#)
        XCTAssertEqual(guardDoc.status, 201, guardDoc.text)
        assertUnknownQueryLanguage(try put(client, "/plain/doc2", #"{"n":2}"#))
        let guardRev = try XCTUnwrap(guardDoc.dict["rev"] as? String)
        XCTAssertEqual(try client.send("DELETE", "/plain/_design/guard?rev=\(guardRev)").status, 200)
        XCTAssertEqual(try put(client, "/plain/doc2", #"{"n":2}"#).status, 201)

        XCTAssertEqual(ServeProcess.stop(process), 0)
        // One warning at start, naming the package.
        let text = try String(contentsOf: log, encoding: .utf8)
        let warnings = text.split(separator: "\n").filter { $0.hasPrefix("cbl serve: warning: ") }
        XCTAssertEqual(warnings.count, 1, text)
        XCTAssertTrue(warnings.first?.contains("install libjavascriptcoregtk-4.1-0") == true, text)
    }

    func testNoJavaScriptIsUnchangedWithoutJavaScriptCore() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (process, url, log) = try ServeProcess.start(["--no-javascript"], directory: dir,
                                                         environment: Self.withoutJavaScriptCore)
        defer { if process.isRunning { _ = ServeProcess.stop(process) } }
        let client = RawHTTPClient(port: try XCTUnwrap(url.port.map(UInt16.init)))
        XCTAssertEqual(try client.send("PUT", "/plain").status, 201)
        XCTAssertEqual(try put(client, "/plain/_design/app", #"{"views": {"all": {"map": "function(doc) { emit(doc._id, null); }"}}}"#).status, 201)
        let view = try client.send("GET", "/plain/_design/app/_view/all")
        XCTAssertEqual(view.status, 501, view.text)
        XCTAssertEqual(view.dict["error"] as? String, "not_implemented")
        XCTAssertEqual(ServeProcess.stop(process), 0)
        // JavaScript was not asked for: nothing to warn about.
        let text = try String(contentsOf: log, encoding: .utf8)
        XCTAssertFalse(text.contains("warning"), text)
    }

    func testDoctorNamesEachOptionalLibraryAndItsPackage() throws {
        guard let cbl = BuiltExecutable.find("cbl") else { throw XCTSkip("cbl executable not found; build with `swift build --build-tests`") }
        func doctor(_ environment: [String: String]) throws -> [String] {
            let run = try runChildProcess(cbl, ["doctor"], timeout: 60, environment: environment)
            XCTAssertFalse(run.timedOut)
            XCTAssertEqual(run.status, 0, run.output)
            return run.output.split(separator: "\n").map(String.init)
        }

        XCTAssertEqual(try doctor(["CBL_JAVASCRIPTCORE_LOAD": Self.missingLibrary,
                                   "CBL_SQLCIPHER_LIBRARY": "/nonexistent/libsqlcipher.so.0"]), [
            "JavaScriptCore: not found; install libjavascriptcoregtk-4.1-0 to run JavaScript design documents "
                + "(/nonexistent/libjavascriptcoregtk.so: cannot open shared object file: No such file or directory)",
            "SQLCipher: not found; install libsqlcipher0 to open encrypted databases "
                + "(/nonexistent/libsqlcipher.so.0: cannot open shared object file: No such file or directory)",
        ])
        // A library that loads but is not JavaScriptCore.
        XCTAssertEqual(try doctor(["CBL_JAVASCRIPTCORE_LOAD": "libz.so.1"]).first,
                       "JavaScriptCore: not found; install libjavascriptcoregtk-4.1-0 to run JavaScript design documents "
                           + "(libz.so.1 is not a usable JavaScriptCore library: JSContextGroupCreate is missing)")

        // This machine's own libraries (the test process has loaded them too, if they are installed).
        let installed = try doctor([:])
        XCTAssertEqual(installed.count, 2, "\(installed)")
        if CBLJSRuntime.isAvailable {
            let line = installed.first ?? ""
            let pattern = #"^JavaScriptCore: found (libjavascriptcoregtk-4\.1\.so\.0|libjavascriptcoregtk-4\.0\.so\.18) at (/\S+); JavaScript design documents run$"#
            let match = try XCTUnwrap(line.wholeMatch(of: try Regex(pattern)), line)
            XCTAssertTrue(FileManager.default.fileExists(atPath: String(try XCTUnwrap(match.output[2].substring))), line)
        }
        if SQLiteLibrary.isSQLCipherAvailable {
            let line = installed.last ?? ""
            let match = try XCTUnwrap(line.wholeMatch(of: try Regex(#"^SQLCipher: found libsqlcipher\.so\.0 at (/\S+); encrypted databases open$"#)), line)
            XCTAssertTrue(FileManager.default.fileExists(atPath: String(try XCTUnwrap(match.output[1].substring))), line)
        }
    }
}
