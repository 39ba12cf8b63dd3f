import CouchbaseLiteSwift
import Foundation
import SQLiteKit
import XCTest
@testable import CouchbaseLite

/// The read-only tools' view of a bundle (`cbl check`, `cbl dump`…): ``StorageProbe`` tells what a
/// `.cblite2` holds, ``StoreAudit`` checks a 1.x store's blobs against its revisions.
final class StoreAuditTests: DatabaseTestCase {
    private var bundle: URL { db.directoryURL }
    private var attachments: URL { bundle.appendingPathComponent("attachments") }

    private func saveDocument(_ id: String, attachment name: String, content: String) throws {
        let rev = try XCTUnwrap(db.document(withID: id)).newRevision()
        rev["type"] = "note"
        rev.setAttachmentNamed(name, withContentType: "text/plain", content: Data(content.utf8))
        try rev.save()
    }

    func testAuditFindsMissingOrphanedAndMismatchedBlobs() throws {
        try saveDocument("a", attachment: "x.txt", content: "hello world")
        try saveDocument("b", attachment: "y.txt", content: "second")
        manager.close()

        let clean = try StoreAudit.run(bundle: bundle, encryptionKey: nil)
        XCTAssertEqual(clean.integrity, ["ok"])
        XCTAssertEqual(clean.liveDocuments, 2)
        XCTAssertEqual(clean.blobFiles, 2)
        XCTAssertEqual(clean.referencedBlobs, 2)
        XCTAssertTrue(clean.missing.isEmpty && clean.orphans.isEmpty && clean.mismatched.isEmpty)

        // a's blob gone, b's cut short, a stray file no revision names.
        let aFile = BlobKey(content: Data("hello world".utf8)).fileName
        let bFile = BlobKey(content: Data("second".utf8)).fileName
        try FileManager.default.removeItem(at: attachments.appendingPathComponent(aFile))
        try Data("sec".utf8).write(to: attachments.appendingPathComponent(bFile))
        let stray = String(repeating: "AB", count: 20) + ".blob"
        try Data("stray".utf8).write(to: attachments.appendingPathComponent(stray))

        let audit = try StoreAudit.run(bundle: bundle, encryptionKey: nil)
        XCTAssertEqual(audit.integrity, ["ok"])
        XCTAssertEqual(audit.blobFiles, 2)
        XCTAssertEqual(audit.referencedBlobs, 2)
        XCTAssertEqual(audit.missing.map(\.file), [aFile])
        XCTAssertEqual(audit.missing.first?.digest, BlobKey(content: Data("hello world".utf8)).digest)
        XCTAssertEqual(audit.missing.first?.references.map { "\($0.documentID) \($0.attachment ?? "-")" }, ["a x.txt"])
        XCTAssertEqual(audit.orphans.map(\.file), [stray])
        XCTAssertEqual(audit.orphans.map(\.size), [5])
        XCTAssertEqual(audit.mismatched.map(\.file), [bFile])
        XCTAssertEqual(audit.mismatched.first?.size, 3)
        XCTAssertEqual(audit.mismatched.first?.expectedSize, 6)
        XCTAssertEqual(audit.mismatched.first?.reference.documentID, "b")
    }

    func testEncryptedBlobFileSizeIsIVPlusPaddedBlocks() {
        XCTAssertEqual(StoreAudit.encryptedFileSize(ofContentLength: 0), 32)
        XCTAssertEqual(StoreAudit.encryptedFileSize(ofContentLength: 15), 32)
        XCTAssertEqual(StoreAudit.encryptedFileSize(ofContentLength: 16), 48)
    }

    func testProbeRecognisesBothGenerations() throws {
        try saveDocument("a", attachment: "x.txt", content: "hello")
        manager.close()
        let oneX = try StorageProbe(bundle: bundle, encryptionKey: nil)
        XCTAssertEqual(oneX.generation, .sqlite1x)
        XCTAssertEqual(oneX.schemaVersion, 102)

        var config = DatabaseConfiguration(directory: dir.url.appendingPathComponent("two").path)
        config.readOnly = false
        let twoXDatabase = try Database(name: "app", config: config)
        try twoXDatabase.close()
        let twoX = try StorageProbe(bundle: dir.url.appendingPathComponent("two/app.cblite2"), encryptionKey: nil)
        XCTAssertEqual(twoX.generation, .liteCore)
        XCTAssertTrue((201...599).contains(twoX.schemaVersion), "\(twoX.schemaVersion)")
    }

    func testProbeSaysWhatABundleHoldsInstead() throws {
        let fm = FileManager.default
        func bundle(_ name: String, _ files: [String: Data]) throws -> URL {
            let url = dir.url.appendingPathComponent("\(name).cblite2")
            try fm.createDirectory(at: url.appendingPathComponent("attachments"), withIntermediateDirectories: true)
            for (file, data) in files { try data.write(to: url.appendingPathComponent(file)) }
            return url
        }
        func failure(_ url: URL) -> StorageProbe.Failure? {
            do {
                _ = try StorageProbe(bundle: url, encryptionKey: nil)
                return nil
            } catch {
                return error as? StorageProbe.Failure
            }
        }
        XCTAssertEqual(failure(try bundle("forest", ["db.forest.0": Data("x".utf8)])), .forestDB)
        XCTAssertEqual(failure(try bundle("nothing", [:])), .noDatabaseFile)
        XCTAssertEqual(failure(try bundle("locked", ["db.sqlite3": Data(), "attachments/_encryption": Data("AES".utf8)])),
                       .encryptedWithoutKey)
        XCTAssertEqual(failure(try bundle("empty", ["db.sqlite3": Data()])), .unknownFormat(schemaVersion: 0, tables: []))
        let garbage = Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
        XCTAssertEqual(failure(try bundle("garbage", ["db.sqlite3": garbage])), .notADatabase(plainSQLiteHeader: false))

        let foreign = try bundle("foreign", [:])
        let connection = try SQLiteConnection(path: foreign.appendingPathComponent("db.sqlite3").path)
        try connection.execute("CREATE TABLE notes (body TEXT); PRAGMA user_version = 7")
        connection.close()
        XCTAssertEqual(failure(foreign), .unknownFormat(schemaVersion: 7, tables: ["notes"]))
    }

    /// The 2.x mirror: a blob a document names but no file holds, and a file no document names.
    func testDataFileAuditFindsMissingAndOrphanedBlobs() throws {
        var config = DatabaseConfiguration(directory: dir.url.appendingPathComponent("two").path)
        config.readOnly = false
        let twoX = try Database(name: "app", config: config)
        try twoX.saveDocument(MutableDocument(id: "kept").setBlob(Blob(contentType: "text/plain", data: Data("kept".utf8)), forKey: "file"))
        try twoX.saveDocument(MutableDocument(id: "lost").setBlob(Blob(contentType: "text/plain", data: Data("lost".utf8)), forKey: "file"))
        try twoX.saveDocument(MutableDocument(id: "plain").setString("x", forKey: "v"))
        try twoX.close()
        let bundle = dir.url.appendingPathComponent("two/app.cblite2")
        let blobs = bundle.appendingPathComponent("Attachments")

        let clean = try DataFileAudit.run(bundle: bundle)
        XCTAssertEqual(clean.integrity, ["ok"])
        XCTAssertEqual(clean.liveDocuments, 3)
        XCTAssertEqual(clean.blobFiles, 2)
        XCTAssertEqual(clean.referencedBlobs, 2)
        XCTAssertTrue(clean.missing.isEmpty && clean.orphans.isEmpty)

        let lostDigest = try XCTUnwrap(Blob(contentType: "text/plain", data: Data("lost".utf8)).digest)
        let lostFile = try XCTUnwrap(BlobStore.key(fromDigest: lostDigest).map(BlobStore.fileName(forKey:)))
        try FileManager.default.removeItem(at: blobs.appendingPathComponent(lostFile))
        let strayDigest = try XCTUnwrap(Blob(contentType: "text/plain", data: Data("stray".utf8)).digest)
        let stray = try XCTUnwrap(BlobStore.key(fromDigest: strayDigest).map(BlobStore.fileName(forKey:)))
        try Data("stray".utf8).write(to: blobs.appendingPathComponent(stray))

        let audit = try DataFileAudit.run(bundle: bundle)
        XCTAssertEqual(audit.integrity, ["ok"])
        XCTAssertEqual(audit.blobFiles, 2)
        XCTAssertEqual(audit.referencedBlobs, 2)
        XCTAssertEqual(audit.missing.map(\.digest), [lostDigest])
        XCTAssertEqual(audit.missing.map(\.file), [lostFile])
        XCTAssertEqual(audit.missing.first?.references.map(\.documentID), ["lost"])
        XCTAssertEqual(audit.missing.first?.references.map(\.collection), [nil])
        XCTAssertEqual(audit.orphans.map(\.file), [stray])
        XCTAssertEqual(audit.orphans.map(\.size), [5])
    }
}
