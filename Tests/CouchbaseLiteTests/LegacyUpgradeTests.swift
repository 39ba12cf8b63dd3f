import Crypto
import Foundation
import SQLiteKit
import XCTest
@testable import CouchbaseLite

/// The legacy single-file upgrader (spec 10.1), checked against every real 1.0.x/1.1.x fixture in
/// `../shared/fixtures/cbl1/legacy-cblite` with `facts.json` as the oracle. Fixtures are never
/// opened in place: each test copies the fixture folder to a temporary directory first.
final class LegacyUpgradeTests: XCTestCase {
    // MARK: Fixture plumbing

    private static let repoRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    private static let fixturesRoot = repoRoot.appendingPathComponent("../shared/fixtures/cbl1").standardizedFileURL
    private static let legacyRoot = fixturesRoot.appendingPathComponent("legacy-cblite")

    private var tempRoot: URL!

    override func setUpWithError() throws {
        tempRoot = FileManager.default.temporaryDirectory
            .appendingPathComponent("LegacyUpgradeTests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: tempRoot, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        if let tempRoot { try? FileManager.default.removeItem(at: tempRoot) }
    }

    private struct Fixture {
        let name: String          // folder name, e.g. "ios104"
        let fileName: String      // e.g. "iosdb.cblite"
        let facts: [String: Any]
        var dbBaseName: String { String(fileName.dropLast(".cblite".count)) }
    }

    private func loadFixtures() throws -> [Fixture] {
        let fm = FileManager.default
        guard fm.fileExists(atPath: Self.legacyRoot.path) else {
            throw XCTSkip("Legacy fixtures not found at \(Self.legacyRoot.path)")
        }
        let factsData = try Data(contentsOf: Self.fixturesRoot.appendingPathComponent("facts.json"))
        let allFacts = try XCTUnwrap(JSONSerialization.jsonObject(with: factsData) as? [[String: Any]])
        var byDB: [String: [String: Any]] = [:]
        for entry in allFacts { if let db = entry["db"] as? String { byDB[db] = entry } }

        var fixtures: [Fixture] = []
        for folder in try fm.contentsOfDirectory(atPath: Self.legacyRoot.path).sorted() {
            let dir = Self.legacyRoot.appendingPathComponent(folder)
            let files = try fm.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".cblite") }
            guard let file = files.first else { continue }
            let facts = try XCTUnwrap(byDB["legacy-cblite/\(folder)/\(file)"], "no facts for \(folder)/\(file)")
            fixtures.append(Fixture(name: folder, fileName: file, facts: facts))
        }
        XCTAssertFalse(fixtures.isEmpty)
        return fixtures
    }

    /// Copies a fixture folder's contents into `destination` (created), making everything writable.
    private func copyFixture(_ fixture: Fixture, into destination: URL) throws {
        let fm = FileManager.default
        try fm.createDirectory(at: destination, withIntermediateDirectories: true)
        let source = Self.legacyRoot.appendingPathComponent(fixture.name)
        for item in try fm.contentsOfDirectory(atPath: source.path) {
            try fm.copyItem(at: source.appendingPathComponent(item), to: destination.appendingPathComponent(item))
        }
        try makeWritable(destination)
    }

    private func makeWritable(_ dir: URL) throws {
        let fm = FileManager.default
        try fm.setAttributes([.posixPermissions: 0o755], ofItemAtPath: dir.path)
        guard let walker = fm.enumerator(atPath: dir.path) else { return }
        for case let rel as String in walker {
            let path = dir.appendingPathComponent(rel).path
            var isDir: ObjCBool = false
            _ = fm.fileExists(atPath: path, isDirectory: &isDir)
            try fm.setAttributes([.posixPermissions: isDir.boolValue ? 0o755 : 0o644], ofItemAtPath: path)
        }
    }

    /// Relative path → SHA-256 (hex) of every file under `dir`.
    private func fileHashes(_ dir: URL) throws -> [String: String] {
        let fm = FileManager.default
        var result: [String: String] = [:]
        guard let walker = fm.enumerator(atPath: dir.path) else { return result }
        for case let rel as String in walker {
            let url = dir.appendingPathComponent(rel)
            var isDir: ObjCBool = false
            _ = fm.fileExists(atPath: url.path, isDirectory: &isDir)
            if isDir.boolValue { result[rel + "/"] = "dir"; continue }
            let data = try Data(contentsOf: url)
            result[rel] = SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
        }
        return result
    }

    private func sha1Digest(_ data: Data) -> String {
        "sha1-" + Data(Insecure.SHA1.hash(data: data)).base64EncodedString()
    }

    private func parseJSONObject(_ text: String) throws -> [String: Any] {
        try XCTUnwrap(JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    /// The attachments folder next to a legacy file, in either layout (spec 1.4).
    private func attachmentsFolder(in dir: URL, base: String) -> URL? {
        let fm = FileManager.default
        let spaced = dir.appendingPathComponent(base + " attachments")
        if fm.fileExists(atPath: spaced.path) { return spaced }
        let nested = dir.appendingPathComponent(base).appendingPathComponent("attachments")
        if fm.fileExists(atPath: nested.path) { return nested }
        return nil
    }

    // MARK: Verification against facts.json

    private func verify(_ db: CBLDatabase, _ fixture: Fixture, replaced: Bool,
                        file: StaticString = #filePath, line: UInt = #line) throws {
        let tag = "[\(fixture.name)\(replaced ? " replace" : " scan")]"
        let facts = fixture.facts
        XCTAssertEqual(Int(db.documentCount), facts["doc_count"] as? Int, "\(tag) documentCount", file: file, line: line)

        let docs = try XCTUnwrap(facts["docs"] as? [[String: Any]], tag)
        for docFacts in docs {
            let docID = try XCTUnwrap(docFacts["docID"] as? String)
            let winningRev = try XCTUnwrap(docFacts["winningRev"] as? String)
            let deleted = docFacts["deleted"] as? Bool ?? false
            let dtag = "\(tag) \(docID)"
            guard let doc = db.document(withID: docID) else {
                XCTFail("\(dtag): no document", file: file, line: line); continue
            }
            let leaves = try doc.getLeafRevisions()
            XCTAssertEqual(Set(leaves.compactMap(\.revisionID)), Set(docFacts["leaves"] as? [String] ?? []),
                           "\(dtag) leaves", file: file, line: line)
            guard let winner = leaves.first else {
                XCTFail("\(dtag): no revisions", file: file, line: line); continue
            }
            XCTAssertEqual(winner.revisionID, winningRev, "\(dtag) winning rev", file: file, line: line)
            XCTAssertEqual(winner.isDeletion, deleted, "\(dtag) deletion", file: file, line: line)
            XCTAssertEqual(doc.isDeleted, deleted, "\(dtag) isDeleted", file: file, line: line)
            if deleted {
                XCTAssertNil(doc.currentRevision, dtag, file: file, line: line)
            } else {
                XCTAssertEqual(doc.currentRevisionID, winningRev, "\(dtag) currentRevisionID", file: file, line: line)
                let history = try doc.getRevisionHistory().compactMap(\.revisionID)
                XCTAssertEqual(Array(history.reversed()), docFacts["history"] as? [String], "\(dtag) history",
                               file: file, line: line)
            }
            XCTAssertEqual(Array(try winner.getHistory().compactMap(\.revisionID).reversed()),
                           docFacts["history"] as? [String], "\(dtag) winner history", file: file, line: line)

            // Body: facts' stored JSON vs properties, both without special keys and _attachments.
            var expected = try parseJSONObject(try XCTUnwrap(docFacts["json"] as? String, "\(dtag) json"))
            expected["_attachments"] = nil
            var actual = try XCTUnwrap(winner.properties, "\(dtag) properties", file: file, line: line)
            XCTAssertEqual(actual["_id"] as? String, docID, dtag, file: file, line: line)
            XCTAssertEqual(actual["_rev"] as? String, winningRev, dtag, file: file, line: line)
            for key in ["_id", "_rev", "_attachments", "_deleted"] { actual[key] = nil }
            XCTAssertEqual(NSDictionary(dictionary: actual), NSDictionary(dictionary: expected), "\(dtag) body",
                           file: file, line: line)

            // Attachments of the winner.
            let attFacts = docFacts["attachments"] as? [String: [String: Any]] ?? [:]
            XCTAssertEqual(Set(winner.attachmentNames ?? []), Set(attFacts.keys), "\(dtag) attachment names",
                           file: file, line: line)
            for (name, meta) in attFacts {
                let atag = "\(dtag)/\(name)"
                guard let att = winner.attachmentNamed(name) else {
                    XCTFail("\(atag): missing", file: file, line: line); continue
                }
                XCTAssertEqual(att.digest, meta["digest"] as? String, "\(atag) digest", file: file, line: line)
                XCTAssertEqual(Int(att.length), meta["length"] as? Int, "\(atag) length", file: file, line: line)
                XCTAssertEqual(att.revpos, meta["revpos"] as? Int, "\(atag) revpos", file: file, line: line)
                XCTAssertEqual(att.contentType, meta["content_type"] as? String, "\(atag) type", file: file, line: line)
                XCTAssertEqual(att.metadata["stub"] as? Bool, true, "\(atag) stub", file: file, line: line)
                let blobOK = (meta["blob"] as? [String: Any])?["sha1_ok"] as? Bool ?? false
                if blobOK {
                    let content = try XCTUnwrap(att.content, "\(atag) content", file: file, line: line)
                    XCTAssertEqual(content.count, meta["length"] as? Int, "\(atag) content length", file: file, line: line)
                    XCTAssertEqual(sha1Digest(content), meta["digest"] as? String, "\(atag) content SHA-1",
                                   file: file, line: line)
                } else {
                    XCTAssertNil(att.content, "\(atag) blob was never shipped", file: file, line: line)
                }
            }
        }

        // Local documents (replaceDatabase adds _local/CBL_LocalCheckpoint, spec 1.6).
        let info = facts["info"] as? [String: String] ?? [:]
        for local in facts["local_docs"] as? [[String: Any]] ?? [] {
            let id = try XCTUnwrap(local["docID"] as? String)
            guard var props = db.existingLocalDocument(withID: id) else {
                XCTFail("\(tag) local doc \(id) missing", file: file, line: line); continue
            }
            XCTAssertEqual(props["_id"] as? String, id, tag, file: file, line: line)
            XCTAssertEqual(props["_rev"] as? String, local["revID"] as? String, "\(tag) local rev", file: file, line: line)
            props["_id"] = nil
            props["_rev"] = nil
            let expected = try parseJSONObject(local["json"] as? String ?? "{}")
            XCTAssertEqual(NSDictionary(dictionary: props), NSDictionary(dictionary: expected), "\(tag) local \(id)",
                           file: file, line: line)
        }
        if replaced {
            let checkpoint = db.existingLocalDocument(withID: "CBL_LocalCheckpoint")
            XCTAssertEqual(checkpoint?["localUUID"] as? String, info["privateUUID"], "\(tag) localUUID", file: file, line: line)
            XCTAssertNotEqual(db.privateUUID, info["privateUUID"], "\(tag) re-keyed", file: file, line: line)
        } else {
            XCTAssertEqual(db.privateUUID, info["privateUUID"], "\(tag) privateUUID", file: file, line: line)
            XCTAssertEqual(db.publicUUID, info["publicUUID"], "\(tag) publicUUID", file: file, line: line)
        }
    }

    /// Raw checks on the closed `.cblite2` directory: integrity, schema version, info rows, local doc count, blob names.
    private func verifyFiles(_ dbDir: URL, _ fixture: Fixture, replaced: Bool,
                             file: StaticString = #filePath, line: UInt = #line) throws {
        let tag = "[\(fixture.name)\(replaced ? " replace" : " scan")]"
        let conn = try SQLiteConnection(path: dbDir.appendingPathComponent("db.sqlite3").path,
                                        mode: .init(readOnly: true, create: false))
        defer { conn.close() }
        try SQLiteStore.registerCollations(on: conn)
        XCTAssertEqual(try conn.integrityCheck(), "ok", "\(tag) integrity_check", file: file, line: line)
        XCTAssertEqual(try conn.scalarInt("PRAGMA user_version"), 102, tag, file: file, line: line)
        let facts = fixture.facts
        let docs = facts["docs"] as? [[String: Any]] ?? []
        XCTAssertEqual(try conn.scalarInt("SELECT count(*) FROM docs"), Int64(docs.count), "\(tag) docs rows",
                       file: file, line: line)
        let locals = (facts["local_docs"] as? [Any] ?? []).count + (replaced ? 1 : 0)
        XCTAssertEqual(try conn.scalarInt("SELECT count(*) FROM localdocs"), Int64(locals), "\(tag) localdocs",
                       file: file, line: line)
        for (key, value) in facts["info"] as? [String: String] ?? [:] {
            if replaced, key.hasSuffix("UUID") { continue }
            XCTAssertEqual(try conn.scalarString("SELECT value FROM info WHERE key=?", [.text(key)]), value,
                           "\(tag) info.\(key)", file: file, line: line)
        }
        // Every verified blob is present under its UPPERCASE name.
        let blobDir = dbDir.appendingPathComponent("attachments")
        let present = Set((try? FileManager.default.contentsOfDirectory(atPath: blobDir.path)) ?? [])
        for blob in facts["blob_files"] as? [[String: Any]] ?? [] where blob["name_matches_sha1"] as? Bool == true {
            let sha1 = try XCTUnwrap(blob["sha1"] as? String)
            XCTAssertTrue(present.contains(sha1.uppercased() + ".blob"), "\(tag) blob \(sha1)", file: file, line: line)
        }
        XCTAssertFalse(present.contains { $0.hasSuffix(".blobtmp") }, "\(tag) temp blobs left", file: file, line: line)
    }

    // MARK: Tests

    /// `replaceDatabaseNamed(_:withDatabaseFile:withAttachments:)` on every fixture; the source must stay byte-identical.
    func testReplaceDatabaseWithEveryLegacyFixture() throws {
        for fixture in try loadFixtures() {
            let src = tempRoot.appendingPathComponent("src-\(fixture.name)")
            try copyFixture(fixture, into: src)
            let before = try fileHashes(src)
            let managerDir = tempRoot.appendingPathComponent("mgr-\(fixture.name)")
            let manager = try CBLManager(directory: managerDir.path)
            defer { manager.close() }
            let attachments = attachmentsFolder(in: src, base: fixture.dbBaseName)
            do {
                try manager.replaceDatabaseNamed("replaced", withDatabaseFile: src.appendingPathComponent(fixture.fileName).path,
                                                 withAttachments: attachments?.path)
            } catch {
                XCTFail("[\(fixture.name)] replaceDatabase failed: \(error)")
                continue
            }
            XCTAssertEqual(try fileHashes(src), before, "[\(fixture.name)] source changed")
            XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: managerDir.path), ["replaced.cblite2"],
                           "[\(fixture.name)] leftovers in the manager directory")
            let db = try manager.existingDatabaseNamed("replaced")
            try verify(db, fixture, replaced: true)
            try db.close()
            try verifyFiles(managerDir.appendingPathComponent("replaced.cblite2"), fixture, replaced: true)
        }
    }

    /// A `.cblite` dropped in the manager directory is upgraded at startup and its files removed.
    func testStartupScanUpgradesEveryLegacyFixture() throws {
        let fm = FileManager.default
        for fixture in try loadFixtures() {
            let managerDir = tempRoot.appendingPathComponent("scan-\(fixture.name)")
            try copyFixture(fixture, into: managerDir)
            let manager = try CBLManager(directory: managerDir.path)
            defer { manager.close() }
            let base = fixture.dbBaseName
            let name = base.replacingOccurrences(of: ":", with: "/")
            XCTAssertEqual(manager.allDatabaseNames, [name], "[\(fixture.name)]")
            XCTAssertEqual(try fm.contentsOfDirectory(atPath: managerDir.path), ["\(base).cblite2"],
                           "[\(fixture.name)] legacy files and work directories must be gone")
            guard let db = try? manager.existingDatabaseNamed(name) else {
                XCTFail("[\(fixture.name)] upgraded database missing"); continue
            }
            try verify(db, fixture, replaced: false)
            try db.close()
            try verifyFiles(managerDir.appendingPathComponent("\(base).cblite2"), fixture, replaced: false)
        }
    }

    /// Garbage named `x.cblite`: a thrown 401-style error and nothing left behind, through both entry points.
    func testGarbageLegacyFileIsRefused() throws {
        let fm = FileManager.default
        let garbage = Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })

        // replaceDatabase: throws, leaves no database and no staging directory, source untouched.
        let srcDir = tempRoot.appendingPathComponent("garbage-src")
        try fm.createDirectory(at: srcDir, withIntermediateDirectories: true)
        let src = srcDir.appendingPathComponent("x.cblite")
        try garbage.write(to: src)
        let managerDir = tempRoot.appendingPathComponent("garbage-mgr")
        let manager = try CBLManager(directory: managerDir.path)
        XCTAssertThrowsError(try manager.replaceDatabaseNamed("x", withDatabaseFile: src.path, withAttachments: nil)) { error in
            XCTAssertEqual((error as? CBLError)?.code, 401, "\(error)")
        }
        XCTAssertEqual(try fm.contentsOfDirectory(atPath: managerDir.path), [])
        XCTAssertFalse(manager.databaseExistsNamed("x"))
        XCTAssertEqual(try Data(contentsOf: src), garbage)
        XCTAssertEqual(try fm.contentsOfDirectory(atPath: srcDir.path), ["x.cblite"])
        manager.close()

        // Direct call: same error, no destination.
        let dest = tempRoot.appendingPathComponent("direct/x.cblite2")
        XCTAssertThrowsError(try LegacyDatabaseUpgrader(legacyFile: src, attachmentsDirectory: nil)
            .upgrade(into: dest, deleteSource: true)) { error in
            XCTAssertEqual((error as? CBLError)?.code, 401, "\(error)")
        }
        XCTAssertFalse(fm.fileExists(atPath: dest.path))
        XCTAssertEqual(try fm.contentsOfDirectory(atPath: dest.deletingLastPathComponent().path), [])
        XCTAssertEqual(try Data(contentsOf: src), garbage, "a failed upgrade must not delete the source")

        // Startup scan: the manager still opens; the garbage stays where it was, nothing is created.
        let scanDir = tempRoot.appendingPathComponent("garbage-scan")
        try fm.createDirectory(at: scanDir, withIntermediateDirectories: true)
        try garbage.write(to: scanDir.appendingPathComponent("x.cblite"))
        let scanner = try CBLManager(directory: scanDir.path)
        XCTAssertEqual(scanner.allDatabaseNames, [])
        XCTAssertEqual(try fm.contentsOfDirectory(atPath: scanDir.path), ["x.cblite"])
        scanner.close()
    }

    /// An empty file or an SQLite file that is not a Couchbase Lite database: a clear 406, nothing left behind.
    func testNonCouchbaseSQLiteFileIsRefused() throws {
        let fm = FileManager.default
        let empty = tempRoot.appendingPathComponent("empty.cblite")
        try Data().write(to: empty)
        let other = tempRoot.appendingPathComponent("other.cblite")
        let conn = try SQLiteConnection(path: other.path)
        try conn.execute("CREATE TABLE t (a, b); INSERT INTO t VALUES (1, 2)")
        conn.close()
        for src in [empty, other] {
            let dest = tempRoot.appendingPathComponent("out/" + src.deletingPathExtension().lastPathComponent + ".cblite2")
            XCTAssertThrowsError(try LegacyDatabaseUpgrader(legacyFile: src, attachmentsDirectory: nil)
                .upgrade(into: dest, deleteSource: true)) { error in
                XCTAssertEqual((error as? CBLError)?.code, 406, "\(error)")
            }
            XCTAssertTrue(fm.fileExists(atPath: src.path))
            XCTAssertEqual((try? fm.contentsOfDirectory(atPath: dest.deletingLastPathComponent().path)) ?? [], [])
        }
        // A missing file is 404; an occupied destination is 412.
        XCTAssertThrowsError(try LegacyDatabaseUpgrader(legacyFile: tempRoot.appendingPathComponent("nope.cblite"),
                                                        attachmentsDirectory: nil)
            .upgrade(into: tempRoot.appendingPathComponent("nope.cblite2"), deleteSource: false)) { error in
            XCTAssertEqual((error as? CBLError)?.code, 404, "\(error)")
        }
    }

    /// A synthetic schema-9 file (before `no_attachments`; attachments table without the v5 encoding
    /// columns; lowercase blob name plus one blob whose content doesn't match its name) with a
    /// conflict and a NULL body: handled gracefully.
    func testSyntheticOldSchemaWithConflictAndNoAttachmentsColumn() throws {
        let fm = FileManager.default
        let dir = tempRoot.appendingPathComponent("synthetic")
        try fm.createDirectory(at: dir.appendingPathComponent("old attachments"), withIntermediateDirectories: true)
        let blob = Data("hello legacy".utf8)
        let blobHex = Insecure.SHA1.hash(data: blob).map { String(format: "%02x", $0) }.joined()
        try blob.write(to: dir.appendingPathComponent("old attachments/\(blobHex).blob"))   // lowercase name
        try Data("not matching".utf8).write(to: dir.appendingPathComponent("old attachments/\(String(repeating: "ab", count: 20)).blob"))
        let file = dir.appendingPathComponent("old.cblite")
        let conn = try SQLiteConnection(path: file.path)
        try SQLiteStore.registerCollations(on: conn)
        try conn.execute("""
            CREATE TABLE docs (doc_id INTEGER PRIMARY KEY, docid TEXT UNIQUE NOT NULL);
            CREATE TABLE revs (sequence INTEGER PRIMARY KEY AUTOINCREMENT,
                doc_id INTEGER NOT NULL REFERENCES docs(doc_id) ON DELETE CASCADE,
                revid TEXT NOT NULL COLLATE REVID, parent INTEGER REFERENCES revs(sequence) ON DELETE SET NULL,
                current BOOLEAN, deleted BOOLEAN DEFAULT 0, json BLOB);
            CREATE TABLE localdocs (docid TEXT UNIQUE NOT NULL, revid TEXT NOT NULL COLLATE REVID, json BLOB);
            CREATE TABLE attachments (sequence INTEGER NOT NULL REFERENCES revs(sequence) ON DELETE CASCADE,
                filename TEXT NOT NULL, key BLOB NOT NULL, type TEXT, length INTEGER NOT NULL, revpos INTEGER DEFAULT 0);
            CREATE TABLE info (key TEXT PRIMARY KEY, value TEXT);
            INSERT INTO info VALUES ('privateUUID', 'priv-1'), ('publicUUID', 'pub-1');
            INSERT INTO docs VALUES (1, 'conflicted'), (2, 'nobody');
            INSERT INTO revs VALUES (1, 1, '1-aaaa', NULL, 0, 0, '{"v":1}');
            INSERT INTO revs VALUES (2, 1, '2-bbbb', 1, 1, 0, '{"v":2,"type":"thing"}');
            INSERT INTO revs VALUES (3, 1, '2-cccc', 1, 1, 0, '{"v":3}');
            INSERT INTO revs VALUES (4, 2, '1-dddd', NULL, 1, 0, NULL);
            INSERT INTO localdocs VALUES ('_local/cp', '3-local', '{"seq":7}');
            PRAGMA user_version = 9;
            """)
        let key = Array(Insecure.SHA1.hash(data: blob))
        try conn.run("INSERT INTO attachments (sequence, filename, key, type, length, revpos) VALUES (3, 'a.txt', ?, 'text/plain', ?, 2)",
                     [.blob(key), .integer(Int64(blob.count))])
        conn.close()

        let managerDir = tempRoot.appendingPathComponent("synthetic-mgr")
        let manager = try CBLManager(directory: managerDir.path)
        defer { manager.close() }
        try manager.replaceDatabaseNamed("old", withDatabaseFile: file.path, withAttachments: nil)
        let db = try manager.existingDatabaseNamed("old")
        XCTAssertEqual(db.documentCount, 2)
        let doc = try XCTUnwrap(db.document(withID: "conflicted"))
        XCTAssertEqual(doc.currentRevisionID, "2-cccc")   // REVID order: cccc > bbbb
        XCTAssertEqual(Set(try doc.getConflictingRevisions().compactMap(\.revisionID)), ["2-bbbb", "2-cccc"])
        XCTAssertEqual(try doc.getRevisionHistory().compactMap(\.revisionID), ["1-aaaa", "2-cccc"])
        let other = try XCTUnwrap(doc.revision(withID: "2-bbbb"))
        XCTAssertEqual(other.properties?["type"] as? String, "thing")
        XCTAssertEqual(try other.getHistory().compactMap(\.revisionID), ["1-aaaa", "2-bbbb"])
        let att = try XCTUnwrap(doc.currentRevision?.attachmentNamed("a.txt"))
        XCTAssertEqual(att.content, blob)
        XCTAssertEqual(att.digest, sha1Digest(blob))
        XCTAssertNil(att.encoding)
        XCTAssertEqual(db.document(withID: "nobody")?.properties?.count, 2)   // NULL body → {} (+ _id, _rev)
        XCTAssertEqual(db.existingLocalDocument(withID: "cp")?["seq"] as? Int, 7)
        let blobs = try fm.contentsOfDirectory(atPath: db.directoryURL.appendingPathComponent("attachments").path)
        XCTAssertEqual(blobs, [blobHex.uppercased() + ".blob"], "the mismatching blob must be skipped")
        try db.close()
    }

    /// A synthetic schema-16 file (legacy DDL of spec 2.4) with a gzip-encoded attachment row and an
    /// Android-1.0-style `<name>/attachments/` folder, upgraded directly with `deleteSource`.
    func testSyntheticGzipAttachmentAndSourceDeletion() throws {
        let fm = FileManager.default
        let dir = tempRoot.appendingPathComponent("gz")
        let attDir = dir.appendingPathComponent("zipped/attachments")
        try fm.createDirectory(at: attDir, withIntermediateDirectories: true)
        let plain = Data(String(repeating: "compress me ", count: 100).utf8)
        let gz = try Gzip.compress(plain)
        let key = Array(Insecure.SHA1.hash(data: gz))
        try gz.write(to: attDir.appendingPathComponent(key.map { String(format: "%02x", $0) }.joined() + ".blob"))
        let file = dir.appendingPathComponent("zipped.cblite")
        let conn = try SQLiteConnection(path: file.path)
        try SQLiteStore.registerCollations(on: conn)
        try conn.execute("""
            CREATE TABLE docs (doc_id INTEGER PRIMARY KEY, docid TEXT UNIQUE NOT NULL);
            CREATE TABLE revs (sequence INTEGER PRIMARY KEY AUTOINCREMENT,
                doc_id INTEGER NOT NULL REFERENCES docs(doc_id) ON DELETE CASCADE,
                revid TEXT NOT NULL COLLATE REVID, parent INTEGER REFERENCES revs(sequence) ON DELETE SET NULL,
                current BOOLEAN, deleted BOOLEAN DEFAULT 0, json BLOB, no_attachments BOOLEAN);
            CREATE TABLE localdocs (docid TEXT UNIQUE NOT NULL, revid TEXT NOT NULL COLLATE REVID, json BLOB);
            CREATE TABLE attachments (sequence INTEGER NOT NULL REFERENCES revs(sequence) ON DELETE CASCADE,
                filename TEXT NOT NULL, key BLOB NOT NULL, type TEXT, length INTEGER NOT NULL,
                revpos INTEGER DEFAULT 0, encoding INTEGER DEFAULT 0, encoded_length INTEGER);
            CREATE TABLE info (key TEXT PRIMARY KEY, value TEXT);
            INSERT INTO info VALUES ('privateUUID', 'p1'), ('publicUUID', 'p2'), ('max_revs', '5');
            INSERT INTO docs VALUES (1, 'doc');
            INSERT INTO revs VALUES (1, 1, '1-aa', NULL, 1, 0, '{"b":2,"a":1}', 0);
            PRAGMA user_version = 16;
            """)
        try conn.run("INSERT INTO attachments VALUES (1, 'big.txt', ?, 'text/plain', ?, 1, 1, ?)",
                     [.blob(key), .integer(Int64(plain.count)), .integer(Int64(gz.count))])
        conn.close()

        let dest = tempRoot.appendingPathComponent("gz-out/zipped.cblite2")
        try LegacyDatabaseUpgrader(legacyFile: file, attachmentsDirectory: nil).upgrade(into: dest, deleteSource: true)
        XCTAssertEqual(try fm.contentsOfDirectory(atPath: dir.path), [], "legacy file and <name>/attachments removed")
        XCTAssertEqual(try fm.contentsOfDirectory(atPath: dest.deletingLastPathComponent().path), ["zipped.cblite2"])

        let manager = try CBLManager(directory: dest.deletingLastPathComponent().path)
        defer { manager.close() }
        let db = try manager.existingDatabaseNamed("zipped")
        XCTAssertEqual(db.privateUUID, "p1")
        XCTAssertEqual(db.maxRevTreeDepth, 5)
        let rev = try XCTUnwrap(db.document(withID: "doc")?.currentRevision)
        XCTAssertEqual(rev.revisionID, "1-aa")
        XCTAssertEqual(rev.properties?["a"] as? Int, 1)
        let att = try XCTUnwrap(rev.attachmentNamed("big.txt"))
        XCTAssertEqual(att.encoding, "gzip")
        XCTAssertEqual(att.length, UInt64(plain.count))
        XCTAssertEqual(att.encodedLength, UInt64(gz.count))
        XCTAssertEqual(att.digest, sha1Digest(gz))
        XCTAssertEqual(att.content, plain)
        try db.close()
    }
}
