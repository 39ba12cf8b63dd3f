import CCollation
import CouchbaseLite
import Foundation
import SQLiteKit
import XCTest
@testable import CouchbaseLiteSwift
@testable import CouchbaseLiteUpgrade

/// Sources that cannot be converted are refused with a clear error; the source stays
/// byte-identical and nothing is left in the destination directory.
final class RefusalTests: XCTestCase {
    /// A small 1.x database made with our 1.x store, then edited with raw SQL.
    private func makeSource(_ scratch: Scratch, edit: String? = nil) throws -> URL {
        let manager = try CBLManager(directory: scratch.path("v1").path)
        let db = try manager.databaseNamed("src")
        try db.document(withID: "good")!.putProperties(["ok": true])
        try db.document(withID: "victim")!.putProperties(["ok": true])
        manager.close()
        let bundle = scratch.path("v1/src.cblite2")
        if let edit {
            let c = try SQLiteConnection(path: bundle.appendingPathComponent("db.sqlite3").path)
            try c.createCollation("REVID", cbl_sqlite_collate_revid)
            try c.execute(edit)
            try c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            c.close()
        }
        return bundle
    }

    private func assertRefused(_ source: URL, _ scratch: Scratch, code: CouchbaseLiteError.Code, mentioning words: [String],
                               file: StaticString = #filePath, line: UInt = #line) throws {
        let before = try checksums(source)
        XCTAssertThrowsError(try upgrade(source, in: scratch), file: file, line: line) { error in
            guard let e = error as? CouchbaseLiteError else { return XCTFail("\(error)", file: file, line: line) }
            XCTAssertEqual(e.code, code, e.message, file: file, line: line)
            for word in words { XCTAssertTrue(e.message.contains(word), "'\(word)' not in: \(e.message)", file: file, line: line) }
        }
        XCTAssertEqual(try checksums(source), before, "source unchanged", file: file, line: line)
        let out = (try? FileManager.default.contentsOfDirectory(atPath: scratch.path("out").path)) ?? []
        XCTAssertEqual(out, [], "nothing left behind", file: file, line: line)
    }

    func testInvalidJSONNamesTheDocument() throws {
        let scratch = Scratch()
        let source = try makeSource(scratch, edit: "UPDATE revs SET json='{\"ok\": tru' WHERE doc_id=(SELECT doc_id FROM docs WHERE docid='victim')")
        try assertRefused(source, scratch, code: .corruptRevisionData, mentioning: ["invalid JSON", "\"victim\""])
    }

    func testNonObjectBodyIsRefused() throws {
        let scratch = Scratch()
        let source = try makeSource(scratch, edit: "UPDATE revs SET json='[1,2]' WHERE doc_id=(SELECT doc_id FROM docs WHERE docid='victim')")
        try assertRefused(source, scratch, code: .corruptRevisionData, mentioning: ["\"victim\""])
    }

    func testUnparseableRevisionIDNamesTheDocument() throws {
        // LiteCore wants lower-case hex digests (spec 3.2).
        let scratch = Scratch()
        let source = try makeSource(scratch, edit: "UPDATE revs SET revid='1-ABCDEF' WHERE doc_id=(SELECT doc_id FROM docs WHERE docid='victim')")
        try assertRefused(source, scratch, code: .badRevisionID, mentioning: ["1-ABCDEF", "\"victim\""])
    }

    func testBlobNotMatchingItsDigestAbortsTheUpgrade() throws {
        let scratch = Scratch()
        let manager = try CBLManager(directory: scratch.path("v1").path)
        let rev = try manager.databaseNamed("src").document(withID: "a")!.newRevision()
        rev.setAttachmentNamed("f", withContentType: "text/plain", content: Data("original".utf8))
        try rev.save()
        manager.close()
        let bundle = scratch.path("v1/src.cblite2")
        let blob = try XCTUnwrap(try FileManager.default.contentsOfDirectory(atPath: bundle.appendingPathComponent("attachments").path).first)
        try Data("tampered".utf8).write(to: bundle.appendingPathComponent("attachments/\(blob)"))
        try assertRefused(bundle, scratch, code: .corruptData, mentioning: ["\"a\"", "digest"])
    }

    func testEncryptedOrGarbageFileIsRefused() throws {
        let scratch = Scratch()
        let bundle = scratch.path("enc.cblite2")
        try FileManager.default.createDirectory(at: bundle, withIntermediateDirectories: true)
        var rng = SystemRandomNumberGenerator()
        try Data((0..<8192).map { _ in UInt8.random(in: 0...255, using: &rng) }).write(to: bundle.appendingPathComponent("db.sqlite3"))
        try assertRefused(bundle, scratch, code: .notADatabaseFile, mentioning: ["encrypted"])
    }

    /// SQLCipher-encrypted databases (the real encrypted fixtures) cannot be read without the key.
    func testSQLCipherFilesAreRefused() throws {
        let scratch = Scratch()
        let encrypted = try scratch.copyFixture("cbl2/lite_dbs/encrypted/upgrade_2.7.cblite2")
        try assertRefused(encrypted, scratch, code: .notADatabaseFile, mentioning: ["encrypted"])
    }

    func testEncryptedAttachmentStoreIsRefused() throws {
        let scratch = Scratch()
        let source = try makeSource(scratch)
        try Data("AES".utf8).write(to: source.appendingPathComponent("attachments/_encryption"))
        try assertRefused(source, scratch, code: .notADatabaseFile, mentioning: ["encrypted"])
    }

    func testTwoXDatabaseAndUnknownSchemaAreRefused() throws {
        let scratch = Scratch()
        let twoX = try scratch.copyFixture("cbl2/lite_dbs/upgrade_2.8.cblite2")
        try assertRefused(twoX, scratch, code: .cantUpgradeDatabase, mentioning: ["already a 2.x"])
        let unknown = try makeSource(scratch, edit: "PRAGMA user_version=150")
        try assertRefused(unknown, scratch, code: .cantUpgradeDatabase, mentioning: ["150"])
    }

    func testExistingDestinationIsNeverOverwritten() throws {
        let scratch = Scratch()
        let source = try makeSource(scratch)
        let destination = scratch.path("taken.cblite2")
        try FileManager.default.createDirectory(at: destination, withIntermediateDirectories: true)
        try Data("keep".utf8).write(to: destination.appendingPathComponent("mine.txt"))
        XCTAssertThrowsError(try DatabaseUpgrader(source: source, destination: destination).run()) {
            XCTAssertEqual(($0 as? CouchbaseLiteError)?.code, .invalidParameter)
        }
        XCTAssertEqual(try String(contentsOf: destination.appendingPathComponent("mine.txt"), encoding: .utf8), "keep")
    }

    func testMissingSourceIsNotFound() throws {
        let scratch = Scratch()
        try assertRefused(scratch.path("nothing.cblite2"), scratch, code: .notFound, mentioning: ["nothing.cblite2"])
    }
}
