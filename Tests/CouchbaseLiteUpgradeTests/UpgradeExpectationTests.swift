import Foundation
import JSONCore
import SQLiteKit
import XCTest
@testable import CouchbaseLiteSwift
@testable import CouchbaseLiteUpgrade

/// The 1.x inputs of LiteCore's own upgrader tests convert to exactly what `UpgraderTest.cc`
/// asserts (fixtures/cbl2/expectations/upgrade_expectations.json), read back through our 2.x storage.
final class UpgradeExpectationTests: XCTestCase {
    func testEveryLiteCoreUpgradeInputMatchesExpectations() throws {
        let expectations = try SharedFixtures.json("cbl2/expectations/upgrade_expectations.json") as! [String: Any]
        let cases = (expectations["upgrade_1x"] as! [String: Any])["cases"] as! [[String: Any]]
        XCTAssertEqual(cases.count, 6)
        for testCase in cases {
            let input = testCase["input"] as! String
            let scratch = Scratch()
            let source = try scratch.copyFixture("cbl2/" + input)
            let before = try checksums(source)
            let (bundle, report) = try upgrade(source, in: scratch)
            XCTAssertEqual(try checksums(source), before, "\(input): the source must not change")
            XCTAssertEqual(report.sourceSchemaVersion, testCase["user_version"] as? Int, input)

            let docs = testCase["docs"] as! [[String: Any]]
            XCTAssertEqual(report.documentsConverted, docs.count, input)
            XCTAssertEqual(report.localDocumentsCopied, 0, "\(input): local docs are not migrated by default")
            XCTAssertEqual(report.skippedDocuments.count, 0, input)

            let db = try openConverted(bundle)
            XCTAssertEqual(db.count, UInt64(docs.count), input)
            for expected in docs {
                let docID = expected["docID"] as! String
                let doc = try XCTUnwrap(db.document(withID: docID), "\(input) \(docID)")
                let history = expected["rev_history_current_first"] as! [String]
                XCTAssertEqual(doc.revisionID, history.first, "\(input) \(docID)")
                let record = try XCTUnwrap(try db.record(forDocumentID: docID))
                XCTAssertEqual(record.tree.currentHistory, history, "\(input) \(docID): history")
                XCTAssertEqual(record.tree.revisions.count, history.count, "\(input) \(docID): no other revisions")
                XCTAssertTrue(record.flags.contains(.hasAttachments), "\(input) \(docID): HasAttachments flag (spec 1.1)")
                let body = try JSON.parse(Array((expected["body_json_exact"] as! String).utf8))
                XCTAssertJSONEqual(plainProperties(doc), body, "\(input) \(docID): body")
            }
            // Every blob the documents reference is in Attachments/ and readable through the 2.x API.
            for digest in testCase["blobs_present"] as! [String] {
                let url = try XCTUnwrap(BlobStore(directory: bundle.appendingPathComponent("Attachments")).url(forDigest: digest))
                let size = (try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? NSNumber)?.intValue ?? 0
                XCTAssertGreaterThan(size, 0, "\(input): blob \(digest)")
            }
            XCTAssertEqual(report.attachmentsCopied, (testCase["blobs_present"] as! [String]).count, input)
            try db.close()
        }
    }

    /// `document.dictionary(forKey: "_attachments")?.blob(forKey:)?.content`, as the 2.x docs show for upgraded attachments.
    func testUpgradedAttachmentContentThroughBlobAPI() throws {
        let scratch = Scratch()
        let source = try scratch.copyFixture("cbl2/cbl1_upgrade_inputs/ios130/iosdb.cblite2")
        let (bundle, _) = try upgrade(source, in: scratch)
        let db = try openConverted(bundle)
        let doc = try XCTUnwrap(db.document(withID: "doc1"))
        let blob = try XCTUnwrap(doc.dictionary(forKey: "_attachments")?.blob(forKey: "attach1"))
        XCTAssertEqual(blob.digest, "sha1-P1i5kI/sosq745/9BDR7kEghKps=")
        XCTAssertEqual(blob.contentType, "text/plain; charset=utf-8")
        XCTAssertEqual(blob.length, 7)
        let content = try XCTUnwrap(blob.content)
        XCTAssertEqual(content.count, 7)
        XCTAssertEqual(SHA1Digest.hash(content), BlobStore.key(fromDigest: "sha1-P1i5kI/sosq745/9BDR7kEghKps="))
        let original = try Data(contentsOf: source.appendingPathComponent("attachments/3F58B9908FECA2CABBE39FFD04347B9048212A9B.blob"))
        XCTAssertEqual(content, original)
        // The blob file name is the 2.x one: Base64 with '/' → '_' (spec 1.1).
        XCTAssertTrue(FileManager.default.fileExists(atPath: bundle.appendingPathComponent("Attachments/P1i5kI_sosq745_9BDR7kEghKps=.blob").path))
        // Typed accessors and the stream.
        XCTAssertEqual(doc.string(forKey: "foo"), "bar")
        XCTAssertEqual(doc.int(forKey: "number"), 1)
        XCTAssertTrue(doc.boolean(forKey: "boolean"))
        XCTAssertNotNil(doc.date(forKey: "date"))
        XCTAssertEqual(doc.date(forKey: "date")?.timeIntervalSince1970 ?? 0, 1_467_861_133.471, accuracy: 0.001)
        XCTAssertTrue(doc.contains(key: "type"))
        XCTAssertFalse(doc.contains(key: "_id"), "no _id/_rev at the top level (spec 3.5)")
        XCTAssertFalse(doc.contains(key: "_rev"))
        XCTAssertEqual(doc.sequence, 1)
        let stream = try XCTUnwrap(blob.contentStream)
        stream.open()
        var buffer = [UInt8](repeating: 0, count: 64)
        XCTAssertEqual(stream.read(&buffer, maxLength: 64), 7)
        stream.close()
        XCTAssertTrue(doc.toDictionary()["_attachments"].flatMap { ($0 as? [String: Any])?["attach1"] } is Blob)
    }

    /// Byte-level: our rows equal those of the reference converter, whose Fleece and rev-tree
    /// encoders were validated byte-for-byte against LiteCore (spec 4, 6.9).
    func testRowsAreByteIdenticalToTheReferenceOutputs() throws {
        for name in ["ios130", "net120"] {
            let scratch = Scratch()
            let input = name == "ios130" ? "ios130/iosdb.cblite2" : "net120/netdb.cblite2"
            let source = try scratch.copyFixture("cbl2/cbl1_upgrade_inputs/" + input)
            let reference = try scratch.copyFixture("cbl2/spec_reference_outputs/\(name).cblite2", as: "reference.cblite2")
            let (bundle, _) = try upgrade(source, in: scratch)
            let ours = try SQLiteConnection(path: bundle.appendingPathComponent("db.sqlite3").path, mode: .init(readOnly: true))
            let theirs = try SQLiteConnection(path: reference.appendingPathComponent("db.sqlite3").path, mode: .init(readOnly: true))
            func rows(_ c: SQLiteConnection, _ sql: String) throws -> [[SQLiteValue]] {
                let stmt = try c.prepare(sql)
                var out: [[SQLiteValue]] = []
                while try stmt.step() { out.append((0..<stmt.columnCount).map { stmt.value($0) }) }
                return out
            }
            let docs = "SELECT key, sequence, flags, version, body FROM kv_default ORDER BY sequence"
            XCTAssertEqual(try rows(ours, docs), try rows(theirs, docs), "\(name): kv_default rows")
            let shared = "SELECT body FROM kv_info WHERE key='SharedKeys'"
            XCTAssertEqual(try rows(ours, shared), try rows(theirs, shared), "\(name): SharedKeys record")
            XCTAssertEqual(try rows(ours, "SELECT * FROM kvmeta ORDER BY name"), try rows(theirs, "SELECT * FROM kvmeta ORDER BY name"))
            let blobs = try FileManager.default.contentsOfDirectory(atPath: bundle.appendingPathComponent("Attachments").path).sorted()
            let refBlobs = try FileManager.default.contentsOfDirectory(atPath: reference.appendingPathComponent("Attachments").path).sorted()
            XCTAssertEqual(blobs, refBlobs, name)
        }
    }

    /// Schema, pragmas and `kv_info` records have exactly the shape of the real 2.8 fixture (spec 2, 4).
    func testSchemaAndInfoRecordsMatchTheReal28File() throws {
        let scratch = Scratch()
        let source = try scratch.copyFixture("cbl2/cbl1_upgrade_inputs/android130/androiddb.cblite2")
        let real = try scratch.copyFixture("cbl2/lite_dbs/upgrade_2.8.cblite2", as: "real.cblite2")
        let (bundle, _) = try upgrade(source, in: scratch)
        let ours = try SQLiteConnection(path: bundle.appendingPathComponent("db.sqlite3").path, mode: .init(readOnly: true))
        let theirs = try SQLiteConnection(path: real.appendingPathComponent("db.sqlite3").path, mode: .init(readOnly: true))
        func master(_ c: SQLiteConnection) throws -> [String] {
            let stmt = try c.prepare("SELECT type || '|' || name || '|' || tbl_name || '|' || sql FROM sqlite_master ORDER BY name")
            var out: [String] = []
            while try stmt.step() { out.append(stmt.string(0) ?? "") }
            return out
        }
        XCTAssertEqual(try master(ours), try master(theirs))
        XCTAssertEqual(ours.userVersion, 302)
        XCTAssertEqual(ours.userVersion, theirs.userVersion)
        func infoShape(_ c: SQLiteConnection) throws -> [String] {
            let stmt = try c.prepare("SELECT key, sequence, flags, typeof(version), length(body) FROM kv_info ORDER BY sequence")
            var out: [String] = []
            while try stmt.step() {
                let key = stmt.string(0) ?? ""
                // SharedKeys differs in content (other keys); its presence and position are the shape.
                let length = key == "SharedKeys" ? "*" : String(stmt.int(4))
                out.append("\(key)|\(stmt.int(1))|\(stmt.int(2))|\(stmt.string(3) ?? "")|\(length)")
            }
            return out
        }
        XCTAssertEqual(try infoShape(ours), try infoShape(theirs))
        XCTAssertEqual(try ours.scalarInt("SELECT lastSeq FROM kvmeta WHERE name='info'"), 4)
        XCTAssertEqual(try ours.scalarInt("SELECT lastSeq FROM kvmeta WHERE name='default'"), 2)
        XCTAssertEqual(try ours.scalarString("PRAGMA journal_mode"), "wal")
        XCTAssertEqual(try ours.scalarInt("PRAGMA auto_vacuum"), 2, "incremental (spec 2.1)")
        XCTAssertEqual(try ours.integrityCheck(), "ok")
        // No WAL left behind: the file is checkpointed (spec 4).
        let wal = bundle.appendingPathComponent("db.sqlite3-wal").path
        let walSize = (try? FileManager.default.attributesOfItem(atPath: wal)[.size] as? NSNumber)?.intValue ?? 0
        XCTAssertEqual(walSize, 0)
        // Nothing but the bundle in the output directory (the work directory is gone).
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: bundle.deletingLastPathComponent().path), ["converted.cblite2"])
    }
}
