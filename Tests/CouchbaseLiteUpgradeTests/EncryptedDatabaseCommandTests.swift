import CBLTestSupport
import CouchbaseLite
import Foundation
import SQLiteKit
import XCTest
@testable import CouchbaseLiteSwift
@testable import CouchbaseLiteUpgrade

/// `cbl` on an encrypted 1.x database with encrypted attachments. `upgrade --password/--key-file`:
/// the 2.x blobs hold the plaintext, the summary says the output is not encrypted, and a wrong
/// key or `--refuse-unencrypted-output` is a one-line error (exit 2) that writes nothing.
/// `dump`/`check`/`info` read it with the key and tell a wrong or missing key from damage.
final class EncryptedDatabaseCommandTests: XCTestCase {
    private var scratch: Scratch!
    private let emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    private let photo = Data((0..<70_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) })

    override func setUpWithError() throws {
        try super.setUpWithError()
        guard SQLiteLibrary.isSQLCipherAvailable else { throw XCTSkip("libsqlcipher0 is not installed") }
        scratch = Scratch()
    }

    override func tearDown() {
        scratch = nil
        super.tearDown()
    }

    /// `v1/seekrit.cblite2`, encrypted with `key`, holding `doc-1` with two attachments.
    private func makeSource(key: Any = "letmein") throws -> URL {
        let bundle = try makeSourceAt(directory: scratch.path("v1"), key: key)
        // The 1.x store really encrypted the attachments: no blob file holds the plaintext.
        let attachments = bundle.appendingPathComponent("attachments")
        XCTAssertTrue(FileManager.default.fileExists(atPath: attachments.appendingPathComponent("_encryption").path))
        for name in try FileManager.default.contentsOfDirectory(atPath: attachments.path) where name.hasSuffix(".blob") {
            let stored = try Data(contentsOf: attachments.appendingPathComponent(name))
            XCTAssertNotEqual(stored, photo)
            XCTAssertNotEqual(stored, Data("meet at noon".utf8))
        }
        return bundle
    }

    private func run(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        try runCBL(arguments, in: scratch)
    }

    private func assertConvertedPlaintext(_ bundle: URL, file: StaticString = #filePath, line: UInt = #line) throws {
        let db = try openConverted(bundle)
        defer { try? db.close() }
        let doc = try XCTUnwrap(db.document(withID: "doc-1"), file: file, line: line)
        XCTAssertEqual(doc.string(forKey: "title"), "holiday", file: file, line: line)
        let attachments = doc.dictionary(forKey: "_attachments")
        XCTAssertEqual(attachments?.blob(forKey: "photo.bin")?.content, photo, file: file, line: line)
        XCTAssertEqual(attachments?.blob(forKey: "note.txt")?.content, Data("meet at noon".utf8), file: file, line: line)
        // The 2.x blob files are the plaintext, named by its SHA-1 (the 1.x digest).
        let blobs = try FileManager.default.contentsOfDirectory(at: bundle.appendingPathComponent("Attachments"), includingPropertiesForKeys: nil)
            .filter { $0.pathExtension == "blob" }
        XCTAssertEqual(Set(try blobs.map { try Data(contentsOf: $0) }), [photo, Data("meet at noon".utf8)], file: file, line: line)
    }

    func testLibraryDecryptsAttachmentsIntoPlainBlobs() throws {
        let bundle = try makeSource()
        let before = try checksums(bundle)
        var options = UpgradeOptions()
        options.encryptionKey = CBLSymmetricKey(password: "letmein")
        let destination = scratch.path("out/seekrit.cblite2")
        let report = try DatabaseUpgrader(source: bundle, destination: destination, options: options).run()
        XCTAssertTrue(report.sourceEncrypted)
        XCTAssertEqual(report.attachmentsCopied, 2)
        XCTAssertEqual(report.attachmentBytes, Int64(photo.count + 12))
        XCTAssertTrue(report.summary.hasPrefix("NOTE: the source was encrypted; the converted database is NOT encrypted\n"), report.summary)
        XCTAssertEqual(try checksums(bundle), before, "source unchanged")
        try assertConvertedPlaintext(destination)
    }

    func testPasswordUpgradesWithANoteThatTheOutputIsNotEncrypted() throws {
        let bundle = try makeSource()
        let result = try run(["upgrade", bundle.path, scratch.path("out").path, "--password", "letmein"])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout.split(separator: "\n").first, "NOTE: the source was encrypted; the converted database is NOT encrypted")
        XCTAssertTrue(result.stdout.contains("attachments: 2 copied"), result.stdout)
        try assertConvertedPlaintext(scratch.path("out/seekrit.cblite2"))
    }

    func testKeyFileForms() throws {
        // A password file (with its newline), a 64-hex-digit file, and a 32-byte raw key file.
        let bundle = try makeSource()
        let passwordFile = scratch.path("password.txt")
        try Data("letmein\n".utf8).write(to: passwordFile)
        var result = try run(["upgrade", bundle.path, scratch.path("a").path, "--key-file", passwordFile.path])
        XCTAssertEqual(result.status, 0, result.stderr)
        try assertConvertedPlaintext(scratch.path("a/seekrit.cblite2"))

        let raw = Data((0..<32).map { UInt8($0 * 5 + 1) })
        let rawBundle = try makeSourceAt(directory: scratch.path("raw"), key: raw)
        let hexFile = scratch.path("key.hex")
        try Data((raw.map { String(format: "%02x", $0) }.joined() + "\n").utf8).write(to: hexFile)
        result = try run(["upgrade", rawBundle.path, scratch.path("b").path, "--key-file", hexFile.path])
        XCTAssertEqual(result.status, 0, result.stderr)
        try assertConvertedPlaintext(scratch.path("b/seekrit.cblite2"))

        let rawFile = scratch.path("key.bin")
        try raw.write(to: rawFile)
        result = try run(["upgrade", rawBundle.path, scratch.path("c").path, "--key-file", rawFile.path])
        XCTAssertEqual(result.status, 0, result.stderr)
        try assertConvertedPlaintext(scratch.path("c/seekrit.cblite2"))
    }

    private func makeSourceAt(directory: URL, key: Any) throws -> URL {
        let manager = try CBLManager(directory: directory.path)
        let options = CBLDatabaseOptions()
        options.create = true
        options.encryptionKey = key
        let db = try manager.openDatabaseNamed("seekrit", with: options)
        let rev = db.document(withID: "doc-1")!.newRevision()
        rev["title"] = "holiday"
        rev.setAttachmentNamed("photo.bin", withContentType: "application/octet-stream", content: photo)
        rev.setAttachmentNamed("note.txt", withContentType: "text/plain", content: Data("meet at noon".utf8))
        try rev.save()
        try db.close()
        manager.close()
        return directory.appendingPathComponent("seekrit.cblite2")
    }

    func testWrongOrMissingPasswordIsOneLineErrorAndWritesNothing() throws {
        let bundle = try makeSource()
        for arguments in [["--password", "wrong"], []] {
            let result = try run(["upgrade", bundle.path, scratch.path("out").path] + arguments)
            XCTAssertEqual(result.status, 2, result.stderr)
            XCTAssertEqual(result.stdout, "")
            XCTAssertEqual(result.stderr.split(separator: "\n").count, 1, result.stderr)
            XCTAssertTrue(result.stderr.hasPrefix("cbl upgrade: error: "), result.stderr)
            XCTAssertTrue(result.stderr.contains(arguments.isEmpty ? "encrypted" : "wrong encryption key"), result.stderr)
            XCTAssertFalse(FileManager.default.fileExists(atPath: scratch.path("out/seekrit.cblite2").path))
        }
    }

    func testRefuseUnencryptedOutput() throws {
        let bundle = try makeSource()
        let result = try run(["upgrade", bundle.path, scratch.path("out").path, "--password", "letmein", "--refuse-unencrypted-output"])
        XCTAssertEqual(result.status, 2, result.stderr)
        XCTAssertEqual(result.stdout, "")
        XCTAssertEqual(result.stderr.split(separator: "\n").count, 1, result.stderr)
        XCTAssertTrue(result.stderr.contains("would NOT be encrypted"), result.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: scratch.path("out").path))
    }

    private func assertOneLineError(_ result: (status: Int32, stdout: String, stderr: String), _ command: String, _ expected: String,
                                    file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(result.status, 2, result.stderr, file: file, line: line)
        XCTAssertEqual(result.stdout, "", file: file, line: line)
        XCTAssertEqual(result.stderr.split(separator: "\n").count, 1, result.stderr, file: file, line: line)
        XCTAssertTrue(result.stderr.hasPrefix("cbl \(command): error: "), result.stderr, file: file, line: line)
        XCTAssertTrue(result.stderr.contains(expected), "'\(expected)' not in: \(result.stderr)", file: file, line: line)
    }

    func testDumpWithTheKeyAndWithoutIt() throws {
        let bundle = try makeSource()
        let before = try checksums(bundle)
        let dumped = try run(["dump", bundle.path, "--password", "letmein"])
        XCTAssertEqual(dumped.status, 0, dumped.stderr)
        let docs = dumped.stdout.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        XCTAssertEqual(docs.count, 1, dumped.stdout)
        XCTAssertEqual(docs.first?["_id"] as? String, "doc-1")
        XCTAssertEqual(docs.first?["title"] as? String, "holiday")
        let stub = (docs.first?["_attachments"] as? [String: Any])?["photo.bin"] as? [String: Any]
        XCTAssertEqual(stub?["length"] as? Int, photo.count)

        let keyFile = scratch.path("key.txt")
        try Data("letmein".utf8).write(to: keyFile)
        XCTAssertEqual(try run(["dump", bundle.path, "--key-file", keyFile.path]).stdout, dumped.stdout)

        assertOneLineError(try run(["dump", bundle.path]), "dump", "is encrypted and the key is missing")
        assertOneLineError(try run(["dump", bundle.path, "--password", "nope"]), "dump", "is encrypted and the key is wrong")
        assertOneLineError(try run(["info", bundle.path, "--password", "nope"]), "info", "is encrypted and the key is wrong")
        // The database and blobs are unchanged; SQLCipher's reader may leave an empty -wal and a -shm.
        let after = try checksums(bundle).filter { !$0.key.hasSuffix("-shm") && !($0.key.hasSuffix("-wal") && $0.value == emptySHA256) }
        XCTAssertEqual(after, before, "dump and info write nothing")
    }

    func testCheckTellsAWrongKeyFromDamage() throws {
        let bundle = try makeSource()
        let checked = try run(["check", bundle.path, "--password", "letmein"])
        XCTAssertEqual(checked.status, 0, checked.stdout + checked.stderr)
        XCTAssertTrue(checked.stdout.contains("integrity:       ok"), checked.stdout)
        XCTAssertTrue(checked.stdout.contains("documents:       1 live"), checked.stdout)
        XCTAssertTrue(checked.stdout.contains("size mismatches: none"), checked.stdout)
        XCTAssertTrue(checked.stdout.contains("result:          ok"), checked.stdout)

        assertOneLineError(try run(["check", bundle.path, "--password", "nope"]), "check", "is encrypted and the key is wrong")
        assertOneLineError(try run(["check", bundle.path]), "check", "is encrypted and the key is missing")

        // A plain database given a key is not "wrong key": it says the database is not encrypted.
        let manager = try CBLManager(directory: scratch.path("plain").path)
        _ = try manager.databaseNamed("plain").document(withID: "a")!.putProperties(["x": 1])
        manager.close()
        let plain = scratch.path("plain/plain.cblite2")
        assertOneLineError(try run(["check", plain.path, "--password", "letmein"]), "check", "is not encrypted")
        // (Damage keeps its own messages: CLICommandTests' truncated and garbage databases.)
    }

    func testInfoQueryAndCompactWithThePassword() throws {
        let bundle = try makeSource()
        let info = try run(["info", bundle.path, "--password", "letmein"])
        XCTAssertEqual(info.status, 0, info.stderr)
        XCTAssertTrue(info.stdout.contains("documents:       1"), info.stdout)
        let query = try run(["query", bundle.path, "--all-docs", "--password", "letmein"])
        XCTAssertEqual(query.status, 0, query.stderr)
        XCTAssertTrue(query.stdout.contains("doc-1"), query.stdout)
        let compact = try run(["compact", bundle.path, "--password", "letmein"])
        XCTAssertEqual(compact.status, 0, compact.stderr)
        // Still encrypted and readable with the key after compaction.
        assertOneLineError(try run(["dump", bundle.path]), "dump", "is encrypted and the key is missing")
        XCTAssertTrue(try run(["dump", bundle.path, "--password", "letmein"]).stdout.contains("holiday"))
    }
}
