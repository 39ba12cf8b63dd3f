import Crypto
import Foundation
import JSONCore
import XCTest
@testable import CouchbaseLite

/// Real 1.2–1.4 databases (`shared/fixtures/cbl1/sqlite-cblite2`) open, read back exactly what
/// `facts.json` records, and stay valid after we write to them.
final class FixtureCompatibilityTests: XCTestCase {
    private func cblite2Facts() throws -> [[String: Any]] {
        try Fixtures.facts().filter { ($0["db"] as! String).hasPrefix("sqlite-cblite2/") }
    }

    /// Copies the fixture's `.cblite2` folder into a manager directory as `fixture.cblite2`.
    private func open(_ facts: [String: Any], in dir: TempDirectory) throws -> (CBLManager, CBLDatabase, URL) {
        let root = try Fixtures.requireRoot()
        let dbFile = root.appendingPathComponent("cbl1").appendingPathComponent(facts["db"] as! String)
        let managerDir = dir.url.appendingPathComponent("m")
        try FileManager.default.createDirectory(at: managerDir, withIntermediateDirectories: true)
        let bundle = managerDir.appendingPathComponent("fixture.cblite2")
        try FileManager.default.copyItem(at: dbFile.deletingLastPathComponent(), to: bundle)
        let manager = try CBLManager(directory: managerDir.path)
        return (manager, try manager.existingDatabaseNamed("fixture"), bundle)
    }

    func testEveryFixtureReadsBackItsRecordedFacts() throws {
        let all = try cblite2Facts()
        XCTAssertGreaterThanOrEqual(all.count, 13)
        for facts in all {
            let name = facts["db"] as! String
            let dir = TempDirectory()
            let (manager, db, _) = try open(facts, in: dir)
            XCTAssertEqual(db.documentCount, UInt(facts["doc_count"] as! Int), name)
            XCTAssertEqual(db.lastSequenceNumber, Int64(facts["last_sequence"] as! Int), name)
            XCTAssertEqual(db.privateUUID, (facts["info"] as! [String: String])["privateUUID"], name)

            for docFacts in facts["docs"] as! [[String: Any]] {
                let docID = docFacts["docID"] as! String
                let doc = try XCTUnwrap(db.document(withID: docID), name)
                let deleted = docFacts["deleted"] as! Bool
                XCTAssertEqual(doc.isDeleted, deleted, "\(name) \(docID)")
                if deleted { continue }
                XCTAssertEqual(doc.currentRevisionID, docFacts["winningRev"] as? String, "\(name) \(docID)")
                let stored = try JSONSerialization.jsonObject(with: Data((docFacts["json"] as! String).utf8))
                XCTAssertJSONEqual(bodyProperties(doc.properties), stored, "\(name) \(docID) body")
                let history = try doc.getRevisionHistory().map { $0.revisionID! }
                XCTAssertEqual(Array(history.reversed()), docFacts["history"] as! [String], "\(name) \(docID) history")
                XCTAssertEqual(try doc.getLeafRevisions().map { $0.revisionID! }.sorted(),
                               (docFacts["leaves"] as! [String]).sorted(), "\(name) \(docID) leaves")

                for (attName, value) in docFacts["attachments"] as? [String: [String: Any]] ?? [:] {
                    let attachment = try XCTUnwrap(doc.currentRevision?.attachmentNamed(attName), "\(name) \(docID) \(attName)")
                    XCTAssertEqual(attachment.length, UInt64(value["length"] as! Int))
                    XCTAssertEqual(attachment.contentType, value["content_type"] as? String)
                    let content = try XCTUnwrap(attachment.content, "\(name) \(docID) \(attName) content")
                    XCTAssertFalse(content.isEmpty)
                    let digest = value["digest"] as! String
                    XCTAssertEqual("sha1-" + Data(Insecure_SHA1(content)).base64EncodedString(), digest)
                    XCTAssertNotNil(attachment.contentURL)
                }
            }
            for local in facts["local_docs"] as? [[String: Any]] ?? [] {
                let id = local["docID"] as! String
                let props = try XCTUnwrap(db.existingLocalDocument(withID: String(id.dropFirst("_local/".count))), "\(name) \(id)")
                XCTAssertEqual(props["_rev"] as? String, local["revID"] as? String)
                let stored = try JSONSerialization.jsonObject(with: Data((local["json"] as! String).utf8))
                XCTAssertJSONEqual(bodyProperties(props), stored)
            }
            manager.close()
        }
    }

    /// The 1.x docs' replace-database check: doc1/doc2 exist, attachments non-empty, `_local/local1` exists.
    func testReplaceDatabaseInstallsFixtureAndRekeysUUIDs() throws {
        let root = try Fixtures.requireRoot()
        let dir = TempDirectory()
        let manager = try makeManager(dir)
        let source = try dir.copy(root.appendingPathComponent("cbl1/sqlite-cblite2/ios140/iosdb.cblite2"))
        let before = try directoryChecksums(source)
        try manager.replaceDatabaseNamed("replaced", withDatabaseDir: source.path)
        XCTAssertEqual(try directoryChecksums(source), before, "source must be untouched")
        let db = try manager.existingDatabaseNamed("replaced")
        XCTAssertEqual(db.documentCount, 2)
        XCTAssertNotNil(db.existingDocument(withID: "doc1"))
        XCTAssertFalse(db.existingDocument(withID: "doc2")!.currentRevision!.attachmentNamed("attach2")!.content!.isEmpty)
        XCTAssertNotNil(db.existingLocalDocument(withID: "local1"))
        XCTAssertNotEqual(db.privateUUID, "-1tmcVaqY63nmSUeR7v_hhU")
        XCTAssertEqual(db.existingLocalDocument(withID: "CBL_LocalCheckpoint")?["localUUID"] as? String,
                       "-1tmcVaqY63nmSUeR7v_hhU")
        XCTAssertTrue(manager.allDatabaseNames.contains("replaced"))
    }

    func testWritingToFixturesKeepsIntegrityAndUpgradesSchema() throws {
        for facts in try cblite2Facts() {
            let name = facts["db"] as! String
            let dir = TempDirectory()
            let (manager, db, bundle) = try open(facts, in: dir)
            // New doc with an attachment, an update of an existing doc, a deletion.
            let fresh = db.document(withID: "added")!
            let rev = fresh.newRevision()
            rev["title"] = "hello"
            rev.setAttachmentNamed("note.txt", withContentType: "text/plain", content: Data("note".utf8))
            try rev.save()
            let firstID = (facts["docs"] as! [[String: Any]]).first { !($0["deleted"] as! Bool) }!["docID"] as! String
            let existing = db.document(withID: firstID)!
            try existing.update { $0["edited"] = true; return true }
            try existing.delete()
            XCTAssertTrue(existing.isDeleted)
            try db.compact()
            manager.close()

            let raw = try rawConnection(bundle.appendingPathComponent("db.sqlite3").path)
            XCTAssertEqual(try raw.integrityCheck(), "ok", name)
            XCTAssertEqual(raw.userVersion, 102, name)
            XCTAssertTrue(try raw.columns(of: "docs").contains("expiry_timestamp"), name)
            raw.close()

            let reopened = try CBLManager(directory: bundle.deletingLastPathComponent().path)
            let db2 = try reopened.existingDatabaseNamed("fixture")
            XCTAssertEqual(db2.existingDocument(withID: "added")?.currentRevision?.attachmentNamed("note.txt")?.content,
                           Data("note".utf8), name)
            XCTAssertNil(db2.existingDocument(withID: firstID), name)
            XCTAssertEqual(db2.documentCount, UInt(facts["doc_count"] as! Int), name)
            reopened.close()
        }
    }

    /// Stored bodies reproduce their stored generation-2 revision IDs with our digest, both from
    /// the stored bytes and (for canonical files) re-encoded by our canonical JSON writer.
    func testFixtureBodiesReproduceStoredRevisionIDs() throws {
        var checked = 0
        for facts in try cblite2Facts() {
            let name = facts["db"] as! String
            let dir = TempDirectory()
            let (manager, _, bundle) = try open(facts, in: dir)
            manager.close()
            let raw = try rawConnection(bundle.appendingPathComponent("db.sqlite3").path, readOnly: true)
            let stmt = try raw.prepare(
                "SELECT c.revid, c.json, c.deleted, p.revid FROM revs c JOIN revs p ON c.parent = p.sequence WHERE c.json IS NOT NULL")
            try stmt.forEachRow { row in
                let revID = row.string(0)!, body = row.bytes(1)!, deleted = row.bool(2), parent = row.string(3)!
                XCTAssertEqual(try RevisionID.generate(json: body, deleted: deleted, parent: parent), revID, name)
                // Re-encoding must be byte-identical wherever the producer wrote canonical JSON.
                if !name.contains("android120") && !name.contains("android130") {
                    let reencoded = try JSON.canonicalData(try JSON.parse(body))
                    XCTAssertEqual(String(decoding: reencoded, as: UTF8.self), String(decoding: body, as: UTF8.self), name)
                    XCTAssertEqual(try RevisionID.generate(json: reencoded, deleted: deleted, parent: parent), revID, name)
                }
                checked += 1
            }
            raw.close()
        }
        XCTAssertGreaterThanOrEqual(checked, 20)
    }

    func testForestDBFixturesAreRefusedWith406() throws {
        let root = try Fixtures.requireRoot().appendingPathComponent("cbl1/forestdb")
        let fixtures = try FileManager.default.contentsOfDirectory(atPath: root.path)
        XCTAssertFalse(fixtures.isEmpty)
        for fixture in fixtures {
            let inner = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent(fixture).path)
                .first { $0.hasSuffix(".cblite2") }!
            let dir = TempDirectory()
            let managerDir = dir.url.appendingPathComponent("m")
            try FileManager.default.createDirectory(at: managerDir, withIntermediateDirectories: true)
            let bundle = managerDir.appendingPathComponent("forest.cblite2")
            try FileManager.default.copyItem(at: root.appendingPathComponent(fixture).appendingPathComponent(inner), to: bundle)
            let before = try directoryChecksums(bundle)
            let manager = try CBLManager(directory: managerDir.path)
            XCTAssertThrowsStatus(406, try manager.existingDatabaseNamed("forest"), fixture)
            XCTAssertEqual(try directoryChecksums(bundle), before, "ForestDB bundle must be untouched")
        }
    }

    /// A database we create has exactly the tables, indexes, DDL and user_version of a real 1.4 file.
    func testNewDatabaseSchemaMatchesRealFile() throws {
        let root = try Fixtures.requireRoot()
        let dir = TempDirectory()
        let real = try dir.copy(root.appendingPathComponent("cbl1/sqlite-cblite2/ios140/iosdb.cblite2"), as: "real.cblite2")
        let manager = try makeManager(dir)
        let db = try manager.databaseNamed("ours")
        let ours = db.directoryURL
        manager.close()

        func schema(_ bundle: URL) throws -> ([String: String], Int, [String]) {
            let raw = try rawConnection(bundle.appendingPathComponent("db.sqlite3").path, readOnly: true)
            defer { raw.close() }
            var entries: [String: String] = [:]
            try raw.prepare("SELECT type, name, tbl_name, sql FROM sqlite_master").forEachRow { row in
                entries["\(row.string(0)!) \(row.string(1)!) on \(row.string(2)!)"] = row.string(3) ?? ""
            }
            var keys: [String] = []
            try raw.prepare("SELECT key FROM info ORDER BY key").forEachRow { keys.append($0.string(0)!) }
            return (entries, raw.userVersion, keys)
        }
        let (realSchema, realVersion, realKeys) = try schema(real)
        let (ourSchema, ourVersion, ourKeys) = try schema(ours)
        XCTAssertEqual(ourVersion, realVersion)
        XCTAssertEqual(ourVersion, 102)
        XCTAssertEqual(ourSchema, realSchema)
        XCTAssertEqual(ourKeys, realKeys)
        XCTAssertTrue(FileManager.default.fileExists(atPath: ours.appendingPathComponent("attachments").path))
    }
}

func Insecure_SHA1(_ data: Data) -> [UInt8] {
    Array(Insecure.SHA1.hash(data: data))
}
