import Foundation
import XCTest
@testable import CouchbaseLite

final class ManagerTests: XCTestCase {
    func testDatabaseNameRules() {
        for good in ["a", "db", "foo/bar", "a0_$()+-/", String(repeating: "a", count: 239)] {
            XCTAssertTrue(CBLManager.isValidDatabaseName(good), good)
        }
        for bad in ["", "Db", "1db", "_replicator", "db.name", "db name", "dé", String(repeating: "a", count: 240)] {
            XCTAssertFalse(CBLManager.isValidDatabaseName(bad), bad)
        }
    }

    func testOpenCreateListAndIdentity() throws {
        let dir = TempDirectory()
        let manager = try makeManager(dir)
        XCTAssertThrowsStatus(404, try manager.existingDatabaseNamed("missing"))
        XCTAssertFalse(manager.databaseExistsNamed("missing"))
        XCTAssertThrowsStatus(400, try manager.databaseNamed("Bad Name"))

        let db = try manager.databaseNamed("foo/bar")
        XCTAssertTrue(db === (try manager.databaseNamed("foo/bar")), "same instance while open")
        XCTAssertEqual(db.directoryURL.lastPathComponent, "foo:bar.cblite2")
        XCTAssertTrue(manager.databaseExistsNamed("foo/bar"))
        _ = try manager.databaseNamed("alpha")
        XCTAssertEqual(manager.allDatabaseNames, ["alpha", "foo/bar"])

        try db.close()
        XCTAssertFalse(db.isOpen)
        let reopened = try manager.existingDatabaseNamed("foo/bar")
        XCTAssertFalse(db === reopened)
        try reopened.delete()
        XCTAssertFalse(manager.databaseExistsNamed("foo/bar"))
        XCTAssertEqual(manager.allDatabaseNames, ["alpha"])
        manager.close()
    }

    func testDefaultDirectoryFollowsXDG() {
        let dir = CBLManager.defaultDirectory()
        if let xdg = ProcessInfo.processInfo.environment["XDG_DATA_HOME"], !xdg.isEmpty {
            XCTAssertEqual(dir, xdg + "/CouchbaseLite")
        } else {
            XCTAssertTrue(dir.hasSuffix("/.local/share/CouchbaseLite"), dir)
        }
        XCTAssertTrue(CBLManager.sharedInstance() === CBLManager.sharedInstance())
    }

    func testOptionsStorageTypeEncryptionAndReadOnly() throws {
        let dir = TempDirectory()
        let manager = try makeManager(dir)
        let forest = CBLDatabaseOptions()
        forest.create = true
        forest.storageType = kCBLForestDBStorage
        XCTAssertThrowsStatus(406, try manager.openDatabaseNamed("f", with: forest))
        // A key that is neither a password, 32 bytes nor a CBLSymmetricKey is refused before anything
        // is created (encrypted databases themselves: EncryptionTests).
        let encrypted = CBLDatabaseOptions()
        encrypted.create = true
        encrypted.encryptionKey = 42
        XCTAssertThrowsError(try manager.openDatabaseNamed("e", with: encrypted)) {
            XCTAssertEqual(($0 as? CBLError)?.code, 400)
            XCTAssertTrue(($0 as? CBLError)?.message.contains("encryption key") ?? false)
        }
        XCTAssertFalse(manager.databaseExistsNamed("e"), "nothing created")

        let db = try manager.databaseNamed("ro")
        try db.document(withID: "d")!.putProperties(["a": 1])
        try db.close()
        var options = CBLManagerOptions(readOnly: true, fileProtection: .completeFileProtectionUntilFirstUserAuthentication)
        let roManager = try CBLManager(directory: manager.directory, options: &options)
        let ro = try roManager.existingDatabaseNamed("ro")
        XCTAssertEqual(ro.existingDocument(withID: "d")?["a"] as? Int, 1)
        XCTAssertThrowsStatus(403, try ro.document(withID: "x")!.putProperties(["a": 1]))
        roManager.close()
        manager.close()
    }

    func testCopyAndBackgroundTell() throws {
        let dir = TempDirectory()
        let manager = try makeManager(dir)
        try manager.databaseNamed("shared").document(withID: "d")!.putProperties(["v": 1])
        let copy = manager.copy() as! CBLManager
        XCTAssertFalse(copy === manager)
        XCTAssertEqual(try copy.existingDatabaseNamed("shared").existingDocument(withID: "d")?["v"] as? Int, 1)
        let done = expectation(description: "background")
        manager.backgroundTellDatabaseNamed("shared") { db in
            XCTAssertEqual(db.documentCount, 1)
            done.fulfill()
        }
        wait(for: [done], timeout: 10)
        copy.close()
        manager.close()
    }

    func testLoggingTagsAreAccepted() {
        CBLManager.enableLogging("Sync")
        CBLManager.enableLogging("Sycn")   // typos are tolerated, as in 1.x
        XCTAssertTrue(CBLLog.isEnabled("sync"))
    }
}

/// Files that are not databases, truncated or encrypted: a clear error, never a crash, and the file untouched.
final class BadFileTests: XCTestCase {
    private func install(_ contents: Data, dir: TempDirectory) throws -> (CBLManager, URL) {
        let bundle = dir.url.appendingPathComponent("m/bad.cblite2")
        try FileManager.default.createDirectory(at: bundle.appendingPathComponent("attachments"), withIntermediateDirectories: true)
        try contents.write(to: bundle.appendingPathComponent("db.sqlite3"))
        return (try CBLManager(directory: dir.url.appendingPathComponent("m").path), bundle)
    }

    func testGarbageFileIs401AndUntouched() throws {
        let dir = TempDirectory()
        var rng = SystemRandomNumberGenerator()
        let garbage = Data((0..<8192).map { _ in UInt8.random(in: 0...255, using: &rng) })
        let (manager, bundle) = try install(garbage, dir: dir)
        let before = try directoryChecksums(bundle)
        XCTAssertThrowsStatus(401, try manager.existingDatabaseNamed("bad"))
        XCTAssertEqual(try directoryChecksums(bundle), before)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: bundle.path).sorted(), ["attachments", "db.sqlite3"])
    }

    func testTruncatedDatabaseGivesErrorNotCrash() throws {
        let dir = TempDirectory()
        let manager = try makeManager(dir)
        let db = try manager.databaseNamed("t")
        for i in 0..<300 { try db.document(withID: "d\(i)")!.putProperties(["i": i, "pad": String(repeating: "x", count: 200)]) }
        let file = db.directoryURL.appendingPathComponent("db.sqlite3")
        manager.close()
        let full = try Data(contentsOf: file)
        try? FileManager.default.removeItem(at: file.appendingPathExtension("wal"))
        for length in [50, 1000, full.count / 2] {
            let d2 = TempDirectory()
            let (m2, bundle) = try install(full.prefix(length), dir: d2)
            let before = try directoryChecksums(bundle)
            do {
                let opened = try m2.existingDatabaseNamed("bad")
                // If SQLite can open a truncated file, reads must fail cleanly rather than crash.
                _ = opened.documentCount
                for i in 0..<300 { _ = opened.existingDocument(withID: "d\(i)")?.properties }
            } catch {
                XCTAssertNotNil(error as? CBLError, "\(error)")
            }
            m2.close()
            if length < 100 { XCTAssertEqual(try directoryChecksums(bundle), before) }
        }
    }

    func testEncryptedAttachmentStoreIsRefusedWith401() throws {
        let dir = TempDirectory()
        let manager = try makeManager(dir)
        let db = try manager.databaseNamed("enc")
        try db.close()
        try Data("AES".utf8).write(to: db.directoryURL.appendingPathComponent("attachments/_encryption"))
        XCTAssertThrowsStatus(401, try manager.existingDatabaseNamed("enc"))
        manager.close()
    }

    func testTooNewSchemaIsRefused() throws {
        let dir = TempDirectory()
        let manager = try makeManager(dir)
        let db = try manager.databaseNamed("new")
        let file = db.directoryURL.appendingPathComponent("db.sqlite3").path
        try db.close()
        let raw = try rawConnection(file)
        try raw.setUserVersion(201)
        raw.close()
        XCTAssertThrowsStatus(406, try manager.existingDatabaseNamed("new"))
        manager.close()
    }
}

final class LocalDocumentAndExpirationTests: XCTestCase {
    func testLocalDocuments() throws {
        let dir = TempDirectory()
        let manager = try makeManager(dir)
        let db = try manager.databaseNamed("db")
        XCTAssertNil(db.existingLocalDocument(withID: "cfg"))
        try db.putLocalDocument(["theme": "dark"], withID: "cfg")
        XCTAssertEqual(db.existingLocalDocument(withID: "cfg")?["theme"] as? String, "dark")
        XCTAssertEqual(db.existingLocalDocument(withID: "cfg")?["_rev"] as? String, "1-local")
        XCTAssertEqual(db.existingLocalDocument(withID: "cfg")?["_id"] as? String, "_local/cfg")
        try db.putLocalDocument(["theme": "light"], withID: "cfg")
        XCTAssertEqual(db.existingLocalDocument(withID: "cfg")?["_rev"] as? String, "2-local")
        XCTAssertEqual(db.documentCount, 0, "local docs are not documents")
        XCTAssertEqual(db.lastSequenceNumber, 0)
        XCTAssertThrowsStatus(409, try db.putLocalDocument(["x": 1], withID: "cfg", prevRevID: "1-local", checkRev: true))
        try db.deleteLocalDocument(withID: "cfg")
        XCTAssertNil(db.existingLocalDocument(withID: "cfg"))
        XCTAssertThrowsStatus(404, try db.deleteLocalDocument(withID: "cfg"))
        let raw = try rawConnection(db.directoryURL.appendingPathComponent("db.sqlite3").path, readOnly: true)
        XCTAssertEqual(try raw.scalarInt("SELECT count(*) FROM localdocs"), 0)
        raw.close()
        manager.close()
    }

    func testExpirationStoresSecondsAndPurges() throws {
        let dir = TempDirectory()
        let manager = try makeManager(dir)
        let db = try manager.databaseNamed("db")
        let doc = db.document(withID: "temp")!
        try doc.putProperties(["a": 1])
        let when = Date(timeIntervalSince1970: 4_102_444_800)   // 2100-01-01
        doc.expirationDate = when
        XCTAssertEqual(doc.expirationDate, when)
        let raw = try rawConnection(db.directoryURL.appendingPathComponent("db.sqlite3").path, readOnly: true)
        XCTAssertEqual(try raw.scalarInt("SELECT expiry_timestamp FROM docs WHERE docid='temp'"), 4_102_444_800)
        raw.close()
        doc.expirationDate = nil
        XCTAssertNil(doc.expirationDate)

        // Expiring soon: the timer purges it.
        let purged = expectation(description: "purged")
        let token = db.addChangeListener { changes in
            if changes.contains(where: { $0.documentID == "temp" && $0.isPurge }) { purged.fulfill() }
        }
        doc.expirationDate = Date().addingTimeInterval(1)
        wait(for: [purged], timeout: 10)
        db.removeChangeListener(token)
        XCTAssertNil(db.existingDocument(withID: "temp"))

        // Already expired when the database opens: purged on open.
        try db.document(withID: "old")!.putProperties(["a": 1])
        let raw2 = try rawConnection(db.directoryURL.appendingPathComponent("db.sqlite3").path)
        try raw2.run("UPDATE docs SET expiry_timestamp=1 WHERE docid='old'")
        raw2.close()
        try db.close()
        let reopened = try manager.existingDatabaseNamed("db")
        XCTAssertNil(reopened.existingDocument(withID: "old"))
        manager.close()
    }
}
