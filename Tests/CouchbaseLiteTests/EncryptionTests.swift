import Foundation
import SQLiteKit
import XCTest
@testable import CouchbaseLite

/// Encrypted databases as 1.x wrote them (SQLCipher 3, raw key from `CBLSymmetricKey`), checked
/// against Debian's `sqlcipher` shell. Skipped when libsqlcipher0 or the shell is not installed.
final class EncryptionTests: XCTestCase {
    var dir: TempDirectory!

    override func setUpWithError() throws {
        guard SQLiteLibrary.isSQLCipherAvailable else {
            throw XCTSkip("libsqlcipher0 is not installed (apt-get install libsqlcipher0)")
        }
        dir = TempDirectory("cbl-encryption")
    }

    override func tearDown() {
        dir = nil
    }

    // MARK: Helpers

    static let shellPath: String? = ["/usr/bin/sqlcipher", "/usr/local/bin/sqlcipher"]
        .first { FileManager.default.isExecutableFile(atPath: $0) }

    func requireShell() throws -> String {
        guard let shell = Self.shellPath else { throw XCTSkip("the sqlcipher shell is not installed (apt-get install sqlcipher)") }
        return shell
    }

    /// Runs the sqlcipher shell on `file` with `script` on stdin; returns (exit status, stdout + stderr).
    func runShell(_ file: String, _ script: String) throws -> (Int32, String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try requireShell())
        process.arguments = ["-batch", file]
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = output
        try process.run()
        input.fileHandleForWriting.write(Data(script.utf8))
        try input.fileHandleForWriting.close()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    func options(key: Any?, create: Bool = true) -> CBLDatabaseOptions {
        let options = CBLDatabaseOptions()
        options.create = create
        options.encryptionKey = key
        return options
    }

    func fileContains(_ path: String, _ text: String) throws -> Bool {
        var all = try Data(contentsOf: URL(fileURLWithPath: path))
        for suffix in ["-wal"] where FileManager.default.fileExists(atPath: path + suffix) {
            all.append(try Data(contentsOf: URL(fileURLWithPath: path + suffix)))
        }
        return all.range(of: Data(text.utf8)) != nil
    }

    func makeDocuments(_ db: CBLDatabase, count: Int, marker: String) throws {
        try db.inTransaction {
            for i in 0..<count {
                _ = try db.document(withID: String(format: "doc-%03d", i))!
                    .putProperties(["marker": "\(marker)-\(i)", "n": i])
            }
            return true
        }
    }

    func assertDocuments(_ db: CBLDatabase, count: Int, marker: String, total: Int? = nil,
                         file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(db.documentCount, UInt(total ?? count), file: file, line: line)
        for i in 0..<count {
            let props = db.existingDocument(withID: String(format: "doc-%03d", i))?.properties
            XCTAssertEqual(props?["marker"] as? String, "\(marker)-\(i)", file: file, line: line)
        }
    }

    // MARK: Interoperability with the sqlcipher shell

    func testShellReadsDatabaseEncryptedHere() throws {
        _ = try requireShell()
        let manager = try makeManager(dir)
        let key = CBLSymmetricKey(password: "letmein")
        let db = try manager.openDatabaseNamed("seekrit", with: options(key: "letmein"))
        try makeDocuments(db, count: 20, marker: "swift-secret")
        let path = db.directoryURL.appendingPathComponent("db.sqlite3").path
        try db.close()

        XCTAssertFalse(try fileContains(path, "swift-secret"), "plaintext of a document in the encrypted file")
        XCTAssertFalse(try fileContains(path, "SQLite format 3"), "an encrypted file has no SQLite header")

        let (status, out) = try runShell(path, """
            PRAGMA key = "x'\(key.hexData)'";
            PRAGMA cipher_page_size;
            SELECT count(*) FROM docs;
            SELECT docid FROM docs NOT INDEXED ORDER BY doc_id LIMIT 2;
            SELECT CAST(json AS TEXT) FROM revs NOT INDEXED WHERE current = 1 ORDER BY sequence LIMIT 1;
            PRAGMA user_version;
            """)
        XCTAssertEqual(status, 0, out)
        let lines = out.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.first, "1024", "SQLCipher 3's page size: \(out)")
        XCTAssertTrue(lines.contains("20"), out)
        XCTAssertTrue(lines.contains("doc-000") && lines.contains("doc-001"), out)
        XCTAssertTrue(out.contains("\"marker\":\"swift-secret-0\""), out)
        XCTAssertTrue(lines.contains("102"), out)

        // Without the key, and with another, the shell cannot read it either.
        let (_, noKey) = try runShell(path, "SELECT count(*) FROM docs;\n")
        XCTAssertTrue(noKey.contains("file is encrypted or is not a database"), noKey)
        let other = CBLSymmetricKey(password: "wrong")
        let (_, wrongKey) = try runShell(path, "PRAGMA key = \"x'\(other.hexData)'\";\nSELECT count(*) FROM docs;\n")
        XCTAssertTrue(wrongKey.contains("file is encrypted or is not a database"), wrongKey)
    }

    /// A 1.x database written entirely by the sqlcipher shell (schema DDL exactly as 1.4 files hold it,
    /// rows as 1.x stores them), then opened here with the same raw key.
    func testOpensDatabaseTheShellCreated() throws {
        _ = try requireShell()
        let keyBytes = Data((0..<32).map { UInt8($0 * 7 & 0xFF) })
        let key = try XCTUnwrap(CBLSymmetricKey(keyData: keyBytes))
        let bundle = URL(fileURLWithPath: dir.path).appendingPathComponent("manager/shell.cblite2")
        try FileManager.default.createDirectory(at: bundle.appendingPathComponent("attachments"), withIntermediateDirectories: true)
        let path = bundle.appendingPathComponent("db.sqlite3").path

        // The shell has no REVID collation: tables are created without it, then sqlite_master gets
        // the exact 1.x DDL (the collation changes no stored byte of these one-revision documents).
        let plainDDL = Schema.createStatements.map { $0.replacingOccurrences(of: " COLLATE REVID", with: "") }
        func hex(_ s: String) -> String { Array(s.utf8).map { String(format: "%02X", $0) }.joined() }
        let script = """
            PRAGMA key = "x'\(key.hexData)'";
            \(plainDDL.map { $0 + ";" }.joined(separator: "\n"))
            PRAGMA writable_schema = ON;
            UPDATE sqlite_master SET sql = '\(Schema.createRevs)' WHERE type = 'table' AND name = 'revs';
            UPDATE sqlite_master SET sql = '\(Schema.createLocalDocs)' WHERE type = 'table' AND name = 'localdocs';
            PRAGMA writable_schema = OFF;
            PRAGMA user_version = 102;
            INSERT INTO info (key, value) VALUES ('privateUUID', '-shellPrivateUUID00000a'), ('publicUUID', '-shellPublicUUID000000b'), ('pruned', 'true');
            INSERT INTO docs (doc_id, docid) VALUES (1, 'shell-1'), (2, 'shell-2');
            INSERT INTO revs (sequence, doc_id, revid, parent, current, deleted, json, no_attachments)
              VALUES (1, 1, '1-6d6f7265', NULL, 1, 0, X'\(hex("{\"from\":\"shell-secret-1\",\"n\":1}"))', 1),
                     (2, 2, '1-7465787430', NULL, 1, 0, X'\(hex("{\"from\":\"shell-secret-2\",\"n\":2}"))', 1);
            SELECT 'ok';
            """
        let (status, out) = try runShell(path, script)
        XCTAssertEqual(status, 0, out)
        XCTAssertTrue(out.contains("ok"), out)
        XCTAssertFalse(try fileContains(path, "shell-secret"), "the shell's file holds plaintext rows")

        let manager = try makeManager(dir)
        XCTAssertThrowsStatus(401, try manager.openDatabaseNamed("shell", with: self.options(key: nil, create: false)))
        let db = try manager.openDatabaseNamed("shell", with: options(key: keyBytes, create: false))
        XCTAssertEqual(db.documentCount, 2)
        XCTAssertEqual(db.existingDocument(withID: "shell-1")?.properties?["from"] as? String, "shell-secret-1")
        XCTAssertEqual(db.existingDocument(withID: "shell-2")?.currentRevisionID, "1-7465787430")
        XCTAssertEqual(db.privateUUID, "-shellPrivateUUID00000a")
        // Writable: a new revision, still encrypted.
        _ = try db.existingDocument(withID: "shell-1")!.update { $0["from"] = "swift-secret-3"; return true }
        try db.close()
        XCTAssertFalse(try fileContains(path, "swift-secret-3"))
        let (status2, out2) = try runShell(path, """
            PRAGMA key = "x'\(key.hexData)'";
            SELECT count(*) FROM revs NOT INDEXED;
            """)
        XCTAssertEqual(status2, 0, out2)
        XCTAssertTrue(out2.split(separator: "\n").contains("3"), out2)
    }

    // MARK: Keys

    func testWrongOrMissingKeyIs401AndLeavesFileUntouched() throws {
        let manager = try makeManager(dir)
        let db = try manager.openDatabaseNamed("seekrit", with: options(key: "letmein"))
        try makeDocuments(db, count: 3, marker: "m")
        let bundle = db.directoryURL
        try db.close()
        let before = try directoryChecksums(bundle)
        XCTAssertFalse(FileManager.default.fileExists(atPath: bundle.appendingPathComponent("db.sqlite3-wal").path))

        for key in ["wrong", nil] as [String?] {
            XCTAssertThrowsError(try manager.openDatabaseNamed("seekrit", with: options(key: key, create: false))) { error in
                XCTAssertEqual((error as? CBLError)?.code, 401, "\(error)")
                let message = (error as? CBLError)?.message ?? ""
                XCTAssertTrue(message.contains(key == nil ? "no encryption key" : "wrong encryption key"), message)
            }
            XCTAssertThrowsStatus(401, try manager.openDatabaseNamed("seekrit", with: self.options(key: key, create: true)))
        }
        let readOnly = options(key: "wrong", create: false)
        readOnly.readOnly = true
        XCTAssertThrowsStatus(401, try manager.openDatabaseNamed("seekrit", with: readOnly))
        XCTAssertEqual(try directoryChecksums(bundle), before, "a failed open changed the files")
        XCTAssertFalse(FileManager.default.fileExists(atPath: bundle.appendingPathComponent("db.sqlite3-wal").path))
        XCTAssertFalse(FileManager.default.fileExists(atPath: bundle.appendingPathComponent("db.sqlite3-shm").path))

        // A plain database refuses a key, as 1.x did (401), and opens without one.
        let plain = try manager.databaseNamed("plain")
        try makeDocuments(plain, count: 1, marker: "p")
        try plain.close()
        XCTAssertThrowsStatus(401, try manager.openDatabaseNamed("plain", with: self.options(key: "letmein", create: false)))
        XCTAssertEqual(try manager.existingDatabaseNamed("plain").documentCount, 1)

        // Something that is no key at all is a bad request.
        XCTAssertThrowsStatus(400, try manager.openDatabaseNamed("seekrit", with: self.options(key: 42, create: false)))
        XCTAssertThrowsStatus(400, try manager.openDatabaseNamed("seekrit", with: self.options(key: Data([1, 2, 3]), create: false)))
    }

    func testPasswordRawKeyAndKeyObjectAreTheSameKey() throws {
        let manager = try makeManager(dir)
        let db = try manager.openDatabaseNamed("seekrit", with: options(key: "correct horse"))
        try makeDocuments(db, count: 5, marker: "pw")
        try db.close()
        let key = CBLSymmetricKey(password: "correct horse")
        for option in [key.keyData as Any, key as Any, "correct horse" as Any] {
            let reopened = try manager.openDatabaseNamed("seekrit", with: options(key: option, create: false))
            assertDocuments(reopened, count: 5, marker: "pw")
            XCTAssertEqual(reopened.encryptionKey?.keyData, key.keyData)
            try reopened.close()
        }
        // Read-only, as `cbl` and the listener's --readonly open files.
        let readOnly = options(key: key, create: false)
        readOnly.readOnly = true
        let ro = try manager.openDatabaseNamed("seekrit", with: readOnly)
        assertDocuments(ro, count: 5, marker: "pw")
        DispatchQueue.concurrentPerform(iterations: 4) { _ in XCTAssertEqual(ro.documentCount, 5) }
        XCTAssertThrowsStatus(403, try ro.document(withID: "x")!.putProperties(["a": 1]))
        try ro.close()
    }

    func testRegisteredKeyIsUsedByDatabaseNamedAndForgottenOnDelete() throws {
        let manager = try makeManager(dir)
        XCTAssertFalse(manager.registerEncryptionKey(3.14, forDatabaseNamed: "seekrit"))
        XCTAssertTrue(manager.registerEncryptionKey("letmein", forDatabaseNamed: "seekrit"))
        let db = try manager.databaseNamed("seekrit")
        try makeDocuments(db, count: 4, marker: "reg")
        XCTAssertNotNil(db.encryptionKey)
        try db.close()

        let other = try CBLManager(directory: manager.directory)
        XCTAssertThrowsStatus(401, try other.existingDatabaseNamed("seekrit"))
        other.registerEncryptionKey(CBLSymmetricKey(password: "letmein"), forDatabaseNamed: "seekrit")
        let reopened = try other.existingDatabaseNamed("seekrit")
        assertDocuments(reopened, count: 4, marker: "reg")
        // 1.x test04: deleting forgets the key; the name then makes a plain database.
        try reopened.delete()
        let fresh = try other.databaseNamed("seekrit")
        XCTAssertNil(fresh.encryptionKey)
        XCTAssertEqual(fresh.documentCount, 0)
    }

    func testReaderPoolAndCompactionWorkOnEncryptedDatabase() throws {
        let manager = try makeManager(dir)
        let db = try manager.openDatabaseNamed("seekrit", with: options(key: "letmein"))
        try makeDocuments(db, count: 30, marker: "pool")
        // Reads from several threads check out reader connections (SQLCipher ones, keyed).
        DispatchQueue.concurrentPerform(iterations: 6) { _ in
            XCTAssertEqual(db.documentCount, 30)
            XCTAssertNotNil(db.existingDocument(withID: "doc-007"))
        }
        XCTAssertGreaterThan(db.pool.openReaderCount, 0)
        let view = db.viewNamed("byN")
        _ = view.setMapBlock({ doc, emit in if let n = doc["n"] { emit(n, nil) } }, version: "1")
        XCTAssertEqual(try view.createQuery().run().count, 30)
        _ = try db.existingDocument(withID: "doc-001")!.update { $0["n"] = 100; return true }
        try db.compact()
        try db.close()
        let reopened = try manager.openDatabaseNamed("seekrit", with: options(key: "letmein", create: false))
        XCTAssertEqual(reopened.existingDocument(withID: "doc-001")?.properties?["n"] as? Int, 100)
    }

    // MARK: changeEncryptionKey

    func testChangeEncryptionKeyPlainToEncryptedToRekeyedToPlain() throws {
        let manager = try makeManager(dir)
        let db = try manager.databaseNamed("rekey")
        try makeDocuments(db, count: 50, marker: "rk")
        let view = db.viewNamed("byN")
        _ = view.setMapBlock({ doc, emit in if let n = doc["n"] { emit(n, nil) } }, version: "1")
        XCTAssertEqual(try view.createQuery().run().count, 50)
        let lastSequence = db.lastSequenceNumber
        let path = db.directoryURL.appendingPathComponent("db.sqlite3").path

        // Plain → encrypted: the same object stays usable.
        try db.changeEncryptionKey("first")
        XCTAssertEqual(db.encryptionKey?.keyData, CBLSymmetricKey(password: "first").keyData)
        assertDocuments(db, count: 50, marker: "rk")
        XCTAssertEqual(db.lastSequenceNumber, lastSequence, "sqlite_sequence survives the export")
        XCTAssertEqual(try view.createQuery().run().count, 50)
        _ = try db.document(withID: "after-1")!.putProperties(["marker": "new-1"])
        XCTAssertEqual(db.lastSequenceNumber, lastSequence + 1)
        try db.close()
        XCTAssertFalse(try fileContains(path, "rk-1"))
        XCTAssertThrowsStatus(401, try CBLManager(directory: manager.directory).existingDatabaseNamed("rekey"))

        // The manager remembers the new key for the name (1.x registers it).
        let db2 = try manager.existingDatabaseNamed("rekey")
        assertDocuments(db2, count: 50, marker: "rk", total: 51)
        XCTAssertEqual(db2.documentCount, 51)

        // Encrypted → re-keyed.
        try db2.changeEncryptionKey(CBLSymmetricKey(password: "second"))
        try db2.close()
        XCTAssertThrowsStatus(401, try manager.openDatabaseNamed("rekey", with: self.options(key: "first", create: false)))
        let db3 = try manager.openDatabaseNamed("rekey", with: options(key: "second", create: false))
        XCTAssertEqual(db3.existingDocument(withID: "after-1")?.properties?["marker"] as? String, "new-1")
        XCTAssertEqual(db3.documentCount, 51)

        // Encrypted → plain.
        try db3.changeEncryptionKey(nil)
        XCTAssertNil(db3.encryptionKey)
        try db3.close()
        XCTAssertTrue(try fileContains(path, "SQLite format 3"))
        let plain = try rawConnection(path, readOnly: true)
        XCTAssertEqual(try plain.scalarInt("SELECT count(*) FROM docs"), 51)
        XCTAssertEqual(plain.userVersion, 102)
        plain.close()
        let db4 = try manager.openDatabaseNamed("rekey", with: options(key: nil, create: false))
        assertDocuments(db4, count: 50, marker: "rk", total: 51)
        XCTAssertEqual(db4.lastSequenceNumber, lastSequence + 1)
        XCTAssertFalse(FileManager.default.fileExists(atPath: db4.directoryURL.appendingPathComponent(DatabaseRekey.stagedFileName).path))
        XCTAssertFalse(FileManager.default.fileExists(atPath: db4.directoryURL.appendingPathComponent(DatabaseRekey.commitMarkerName).path))
    }

    /// Attachments of an encrypted database: encrypted in the blob store with the database's key,
    /// re-keyed with it by `changeEncryptionKey`, readable after each step and after reopening.
    func testAttachmentsFollowTheDatabaseKey() throws {
        let manager = try makeManager(dir)
        let secret = String(repeating: "attachment-plaintext-", count: 200)
        let db = try manager.openDatabaseNamed("atts", with: options(key: "pw1"))
        let rev = try db.document(withID: "a")!.putProperties(["title": "with attachment"])
        let unsaved = rev.createRevision()
        unsaved.setAttachmentNamed("note.txt", withContentType: "text/plain", content: Data(secret.utf8))
        _ = try unsaved.save()
        let attachments = db.directoryURL.appendingPathComponent("attachments")

        func blobFilesContain(_ text: String) throws -> Bool {
            let files = try FileManager.default.contentsOfDirectory(atPath: attachments.path).filter { $0.hasSuffix(".blob") }
            XCTAssertEqual(files.count, 1)
            return try files.contains { try Data(contentsOf: attachments.appendingPathComponent($0)).range(of: Data(text.utf8)) != nil }
        }
        func content(_ db: CBLDatabase) -> String? {
            db.existingDocument(withID: "a")?.currentRevision?.attachmentNamed("note.txt")?.content.map { String(decoding: $0, as: UTF8.self) }
        }
        XCTAssertEqual(content(db), secret)
        XCTAssertFalse(try blobFilesContain("attachment-plaintext"))
        XCTAssertEqual(try String(contentsOf: attachments.appendingPathComponent("_encryption"), encoding: .utf8), "AES")

        try db.changeEncryptionKey("pw2")
        XCTAssertEqual(content(db), secret)
        try db.close()
        XCTAssertThrowsStatus(401, try CBLManager(directory: manager.directory)
            .openDatabaseNamed("atts", with: self.options(key: "pw1", create: false)))
        let reopened = try manager.openDatabaseNamed("atts", with: options(key: "pw2", create: false))
        XCTAssertEqual(content(reopened), secret)
        XCTAssertFalse(try blobFilesContain("attachment-plaintext"))

        try reopened.changeEncryptionKey(nil)
        XCTAssertEqual(content(reopened), secret)
        XCTAssertTrue(try blobFilesContain("attachment-plaintext"), "decrypted: blobs are plain again, as 1.x leaves them")
        XCTAssertFalse(FileManager.default.fileExists(atPath: attachments.appendingPathComponent("_encryption").path))
        for leftover in ["attachments.rekey-new", "attachments.rekey-old"] {
            XCTAssertFalse(FileManager.default.fileExists(atPath: reopened.directoryURL.appendingPathComponent(leftover).path))
        }
    }

    func testChangeEncryptionKeyRefusals() throws {
        let manager = try makeManager(dir)
        let db = try manager.databaseNamed("rekey")
        XCTAssertThrowsStatus(400, try db.changeEncryptionKey(Data([1])))
        XCTAssertThrowsError(try db.inTransaction {
            try db.changeEncryptionKey("x")
            return true
        }) { XCTAssertEqual(($0 as? CBLError)?.code, 409, "\($0)") }
        XCTAssertNil(db.encryptionKey)
        try makeDocuments(db, count: 2, marker: "ok")
        try db.close()
        let readOnly = CBLDatabaseOptions()
        readOnly.readOnly = true
        let ro = try manager.openDatabaseNamed("rekey", with: readOnly)
        XCTAssertThrowsStatus(403, try ro.changeEncryptionKey("x"))
    }
}
