import CBLTestSupport
import Foundation
import XCTest
@testable import CouchbaseLiteSwift
@testable import CouchbaseLiteUpgrade

/// `cbl upgrade`: converts, prints the summary, writes the JSON report; refusals exit non-zero.
final class UpgradeCommandTests: XCTestCase {
    private func run(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let r = try runCBL(arguments, in: Scratch())   // for its output files only
        return (r.status, r.stdout + r.stderr)
    }

    func testUpgradeCommandWritesDatabaseSummaryAndReport() throws {
        let scratch = Scratch()
        let source = try scratch.copyFixture("cbl2/cbl1_upgrade_inputs/net130/netdb.cblite2")
        let reportFile = scratch.path("report.json")
        let (status, output) = try run(["upgrade", source.path, scratch.path("out").path, "--name", "converted",
                                        "--report", reportFile.path])
        XCTAssertEqual(status, 0, output)
        XCTAssertTrue(output.contains("documents: 2 converted (0 tombstones)"), output)
        XCTAssertTrue(output.contains("attachments: 2 copied"), output)
        let report = try JSONDecoder().decode(UpgradeReport.self, from: Data(contentsOf: reportFile))
        XCTAssertEqual(report.documentsConverted, 2)
        XCTAssertEqual(report.sourceSchemaVersion, 102)
        let db = try openConverted(scratch.path("out/converted.cblite2"))
        XCTAssertEqual(db.document(withID: "doc1")?.string(forKey: "description"), "Jim's avatar")
        try db.close()

        // `cbl info` recognises the result as a 2.x database and reads it without writing.
        let converted = scratch.path("out/converted.cblite2")
        let before = try checksums(converted)
        let (infoStatus, info) = try run(["info", converted.path])
        XCTAssertEqual(infoStatus, 0, info)
        XCTAssertTrue(info.contains("schema 302, revision trees"), info)
        XCTAssertTrue(info.contains("documents:       2"), info)
        XCTAssertEqual(try checksums(converted), before)
    }

    func testRefusalExitsNonZeroWithTheReason() throws {
        let scratch = Scratch()
        let source = try scratch.copyFixture("cbl1/forestdb/net130-forestdb")
        let bundle = try XCTUnwrap(try FileManager.default.contentsOfDirectory(at: source, includingPropertiesForKeys: nil).first)
        let (status, output) = try run(["upgrade", bundle.path, scratch.path("out").path])
        XCTAssertNotEqual(status, 0)
        XCTAssertTrue(output.contains("ForestDB"), output)
        XCTAssertFalse(FileManager.default.fileExists(atPath: scratch.path("out/\(bundle.lastPathComponent)").path))
    }
}
