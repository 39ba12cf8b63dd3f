import Foundation
import JSONCore
import XCTest
@testable import CouchbaseLiteSwift
@testable import CouchbaseLiteUpgrade

/// Every real 1.x fixture converts, and the result holds what `cbl1/facts.json` says the source holds.
final class FixtureUpgradeTests: XCTestCase {
    private func facts() throws -> [[String: Any]] {
        try SharedFixtures.json("cbl1/facts.json") as! [[String: Any]]
    }

    func testEverySQLiteFixtureConvertsWithItsFacts() throws {
        let all = try facts().filter { ($0["db"] as! String).hasPrefix("sqlite-cblite2/") }
        XCTAssertEqual(all.count, 13)
        for fixture in all {
            let dbPath = fixture["db"] as! String
            let bundlePath = (dbPath as NSString).deletingLastPathComponent
            let scratch = Scratch()
            let source = try scratch.copyFixture("cbl1/" + bundlePath)
            let before = try checksums(source)
            let (bundle, report) = try upgrade(source, in: scratch)
            XCTAssertEqual(try checksums(source), before, "\(bundlePath): source unchanged")

            let docs = (fixture["docs"] as! [[String: Any]]).filter { !($0["docID"] as! String).hasPrefix("_") }
            XCTAssertEqual(report.documentsConverted, docs.count, bundlePath)
            let db = try openConverted(bundle)
            for expected in docs {
                let docID = expected["docID"] as! String
                let doc = try XCTUnwrap(try db.documentIncludingDeleted(withID: docID), "\(bundlePath) \(docID)")
                XCTAssertEqual(doc.revisionID, expected["winningRev"] as? String, "\(bundlePath) \(docID)")
                XCTAssertEqual(doc.isDeleted, expected["deleted"] as? Bool, "\(bundlePath) \(docID)")
                let history = Array((expected["history"] as! [String]).prefix(20))
                XCTAssertEqual(try db.record(forDocumentID: docID)?.tree.currentHistory, history, "\(bundlePath) \(docID)")
                if let json = expected["json"] as? String {
                    XCTAssertJSONEqual(plainProperties(doc), try JSON.parse(Array(json.utf8)), "\(bundlePath) \(docID)")
                }
                for (name, meta) in (expected["attachments"] as? [String: [String: Any]]) ?? [:] {
                    guard let blobFacts = meta["blob"] as? [String: Any], blobFacts["sha1_ok"] as? Bool == true else { continue }
                    let blob = try XCTUnwrap(doc.dictionary(forKey: "_attachments")?.blob(forKey: name), "\(bundlePath) \(docID) \(name)")
                    XCTAssertEqual(blob.content?.count, blobFacts["size"] as? Int, "\(bundlePath) \(docID) \(name)")
                }
            }
            try db.close()
        }
    }

    func testForestDBBundlesAreRefusedAndUntouched() throws {
        let scratch = Scratch()
        let source = try scratch.copyFixture("cbl1/forestdb/ios130-forestdb")
        let bundle = try XCTUnwrap(try FileManager.default.contentsOfDirectory(at: source, includingPropertiesForKeys: nil)
            .first { $0.pathExtension == "cblite2" })
        let before = try checksums(bundle)
        XCTAssertThrowsError(try upgrade(bundle, in: scratch)) { error in
            let e = error as? CouchbaseLiteError
            XCTAssertEqual(e?.code, .wrongFormat)
            XCTAssertTrue(e?.message.contains("ForestDB") ?? false, "\(error)")
        }
        XCTAssertEqual(try checksums(bundle), before)
        XCTAssertFalse(FileManager.default.fileExists(atPath: scratch.path("out/converted.cblite2").path))
        XCTAssertEqual((try? FileManager.default.contentsOfDirectory(atPath: scratch.path("out").path)) ?? [], [], "no temp left behind")
    }

    /// Beyond 2.x: the legacy single-file `.cblite` databases go through our 1.x schema upgrade first.
    func testLegacySingleFileDatabasesConvertWithTheOption() throws {
        let legacy = try facts().filter { ($0["db"] as! String).hasPrefix("legacy-cblite/") }
        XCTAssertGreaterThan(legacy.count, 10)
        var converted = 0, refused = 0
        defer { XCTAssertGreaterThan(converted, 5, "most legacy fixtures convert (\(refused) refused)") }
        for fixture in legacy {
            let dbPath = fixture["db"] as! String
            let components = dbPath.split(separator: "/")
            let scratch = Scratch()
            let folder = try scratch.copyFixture("cbl1/legacy-cblite/\(components[1])")
            let file = folder.appendingPathComponent(components.dropFirst(2).joined(separator: "/"))
            XCTAssertThrowsError(try upgrade(file, in: scratch), "\(dbPath): needs the option") {
                XCTAssertEqual(($0 as? CouchbaseLiteError)?.code, .wrongFormat)
            }
            let before = try checksums(folder)
            let docs = (fixture["docs"] as! [[String: Any]]).filter { !($0["docID"] as! String).hasPrefix("_") }
            let options = UpgradeOptions(allowLegacySingleFile: true)
            // Android 1.0 made UUID revision IDs (`1-2af12f1a-db33-…`), which 2.x's binary revision IDs
            // cannot hold (spec 3.2): LiteCore would refuse them, and so do we, naming the document.
            let unparseable = docs.contains { doc in (doc["history"] as! [String]).contains { BinaryRevisionID.encode($0) == nil } }
            if unparseable {
                XCTAssertThrowsError(try upgrade(file, in: scratch, options: options), dbPath) { error in
                    XCTAssertEqual((error as? CouchbaseLiteError)?.code, .badRevisionID, "\(error)")
                }
                XCTAssertEqual(try checksums(folder), before, "\(dbPath): source unchanged")
                XCTAssertEqual((try? FileManager.default.contentsOfDirectory(atPath: scratch.path("out").path)) ?? [], [])
                refused += 1
                continue
            }
            let (bundle, report) = try upgrade(file, in: scratch, options: options)
            XCTAssertEqual(try checksums(folder), before, "\(dbPath): source unchanged")
            XCTAssertEqual(report.documentsConverted, docs.count, dbPath)
            let db = try openConverted(bundle)
            for expected in docs {
                let docID = expected["docID"] as! String
                let doc = try XCTUnwrap(try db.documentIncludingDeleted(withID: docID), "\(dbPath) \(docID)")
                XCTAssertEqual(doc.revisionID, expected["winningRev"] as? String, "\(dbPath) \(docID)")
            }
            converted += 1
            try db.close()
        }
    }
}
