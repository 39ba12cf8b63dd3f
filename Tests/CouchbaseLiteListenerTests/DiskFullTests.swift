import CBLTestSupport
import CouchbaseLite
import CouchbaseLiteListener
import CouchbaseLiteSwift
import Foundation
import XCTest

/// Disk full (issue 21): on a small tmpfs made for the test, writes through the 1.x API, the 2.x
/// API, the listener and a pull go on until ENOSPC. The failure is a clear error (1.x status 507,
/// 2.x `.ioError` "Insufficient storage", HTTP 507 `insufficient_storage`); the database reopens
/// and passes `cbl check`; every acknowledged write is there with its attachments; no temporary
/// blob file is left; writing resumes once a filler file is deleted.
final class DiskFullTests: ReplicationTestCase {
    private var small: SmallFilesystem?

    override func tearDownWithError() throws {
        try super.tearDownWithError()
        small?.remove()
        small = nil
    }

    private func mountSmall(megabytes: Int, filler: Int) throws -> SmallFilesystem {
        let fs = try SmallFilesystem(megabytes: megabytes)
        small = fs
        try fs.addFiller(megabytes: filler)
        return fs
    }

    /// Text that differs per document (nothing on the way compresses it).
    private static func text(_ i: Int, _ count: Int) -> String {
        String(decoding: randomBytes(count, seed: UInt64(i) + 1000).map { 0x61 + $0 % 26 }, as: UTF8.self)
    }

    /// Attempts after the first failure: both kinds of write (a document alone, one with an
    /// attachment) meet the full disk, and each must either succeed or fail with the same error.
    private static let attemptsAfterFailure = 12
    private static let maxWrites = 3000

    // MARK: cbl check

    /// `cbl check --json PATH` passes (exit 0): integrity ok, schema ok, no missing or mismatched
    /// blob. Right after the failures (`orphansAllowed`) there may be orphaned blobs — complete
    /// blob files of a save that failed after its attachment was stored (1.x and 2.x store
    /// attachment bodies first, content-addressed) — which `cbl check` lists but does not count
    /// as problems (compaction removes them, spec 4.2); after a compaction there must be none.
    /// Returns how many orphans there were.
    @discardableResult
    private func check(_ path: String, orphansAllowed: Bool = false,
                       file: StaticString = #filePath, line: UInt = #line) throws -> Int {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("cbl-diskfull-check-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        guard let run = try BuiltExecutable.run("cbl", ["check", path, "--json"], scratch: scratch) else {
            throw XCTSkip("cbl executable not found; build with `swift build --build-tests`")
        }
        XCTAssertFalse(run.timedOut, "cbl check did not finish", file: file, line: line)
        let report = (try? JSONSerialization.jsonObject(with: Data(run.stdout.utf8))) as? [String: Any] ?? [:]
        let orphans = (report["orphanedBlobs"] as? [Any])?.count ?? 0
        XCTAssertEqual(report["integrity"] as? String, "ok", run.stdout + run.stderr, file: file, line: line)
        XCTAssertEqual(report["schemaOK"] as? Bool, true, run.stdout, file: file, line: line)
        XCTAssertEqual((report["missingBlobs"] as? [Any])?.count, 0, run.stdout, file: file, line: line)
        XCTAssertEqual((report["sizeMismatches"] as? [Any])?.count ?? 0, 0, run.stdout, file: file, line: line)
        XCTAssertEqual(run.status, 0, run.stdout + run.stderr, file: file, line: line)
        XCTAssertEqual(report["ok"] as? Bool, true, run.stdout, file: file, line: line)
        XCTAssertEqual(report["problems"] as? Int, 0, run.stdout, file: file, line: line)
        if !orphansAllowed { XCTAssertEqual(orphans, 0, run.stdout, file: file, line: line) }
        return orphans
    }

    /// No temporary blob file (`*.blobtmp`, `.tmp-*`) is left anywhere under `directory`.
    private func assertNoTemporaryBlobs(_ directory: URL, file: StaticString = #filePath, line: UInt = #line) {
        let names = FileManager.default.enumerator(atPath: directory.path)?.compactMap { $0 as? String } ?? []
        let temps = names.filter { $0.hasSuffix(".blobtmp") || ($0 as NSString).lastPathComponent.hasPrefix(".tmp-") }
        XCTAssertEqual(temps, [], file: file, line: line)
    }

    // MARK: 1.x API

    func testOneXSavesUntilDiskFull() throws {
        let started = Date()
        let fs = try mountSmall(megabytes: 8, filler: 2)
        let directory = try fs.directory("one")
        var manager: CBLManager? = try CBLManager(directory: directory.path)
        var db = try XCTUnwrap(manager).databaseNamed("full")

        var acknowledged: [String: (i: Int, attachment: Data?)] = [:]
        var errors: [NSError] = []
        var i = 0
        while i < Self.maxWrites && errors.count <= Self.attemptsAfterFailure {
            let id = String(format: "doc-%05d", i)
            let attachment = i % 3 == 0 ? Self.randomBytes(40_000, seed: UInt64(i)) : nil
            do {
                let rev = try XCTUnwrap(db.document(withID: id)).newRevision()
                rev.userProperties = ["i": i, "text": Self.text(i, 1500)]
                if let attachment {
                    rev.setAttachmentNamed("data.bin", withContentType: "application/octet-stream", content: attachment)
                }
                _ = try rev.save()
                acknowledged[id] = (i, attachment)
            } catch {
                errors.append(error as NSError)
            }
            i += 1
        }
        // Documents without attachments then fill what is left: SQLite itself meets the full disk.
        var sqliteFull: NSError?
        while i < 2 * Self.maxWrites && sqliteFull == nil {
            let id = String(format: "doc-%05d", i)
            do {
                _ = try XCTUnwrap(db.document(withID: id)).putProperties(["i": i, "text": Self.text(i, 1500)])
                acknowledged[id] = (i, nil)
            } catch {
                sqliteFull = error as NSError
                errors.append(error as NSError)
            }
            i += 1
        }
        XCTAssertTrue(sqliteFull?.localizedDescription.contains("database or disk is full") == true, "\(String(describing: sqliteFull))")
        XCTAssertFalse(errors.isEmpty, "the 8 MB filesystem never filled up after \(i) writes")
        for e in errors {
            XCTAssertEqual(e.domain, CBLHTTPErrorDomain, "\(e)")
            XCTAssertEqual(e.code, 507, "\(e)")
            XCTAssertTrue(e.localizedDescription.contains("Insufficient storage"), e.localizedDescription)
        }
        assertNoTemporaryBlobs(directory)

        // Close on the full disk, reopen on the full disk: every acknowledged write is there.
        manager?.close()
        manager = nil
        manager = try CBLManager(directory: directory.path)
        db = try XCTUnwrap(manager).existingDatabaseNamed("full")
        XCTAssertEqual(Int(db.documentCount), acknowledged.count)
        for (id, expected) in acknowledged {
            let doc = try XCTUnwrap(db.existingDocument(withID: id), id)
            XCTAssertEqual(doc["i"] as? Int, expected.i, id)
            XCTAssertEqual(doc["text"] as? String, Self.text(expected.i, 1500), id)
            XCTAssertEqual(doc.currentRevision?.attachmentNamed("data.bin")?.content, expected.attachment, id)
        }
        manager?.close()
        manager = nil
        let orphans = try check(directory.appendingPathComponent("full.cblite2").path, orphansAllowed: true)

        // Space freed: writing resumes.
        try fs.freeFiller()
        manager = try CBLManager(directory: directory.path)
        db = try XCTUnwrap(manager).existingDatabaseNamed("full")
        let after = Self.randomBytes(40_000, seed: 99_999)
        let rev = try XCTUnwrap(db.document(withID: "after")).newRevision()
        rev.userProperties = ["after": true]
        rev.setAttachmentNamed("data.bin", withContentType: "application/octet-stream", content: after)
        _ = try rev.save()
        XCTAssertEqual(db.existingDocument(withID: "after")?.currentRevision?.attachmentNamed("data.bin")?.content, after)
        try db.compact()
        manager?.close()
        manager = nil
        try check(directory.appendingPathComponent("full.cblite2").path)
        print("disk full, 1.x: \(acknowledged.count) acknowledged writes, \(orphans) orphaned blobs, \(errors.count) failed (\(Set(errors.map(\.localizedDescription)).sorted())), \(String(format: "%.1f", Date().timeIntervalSince(started))) s")
    }

    // MARK: 2.x API

    func testTwoXSavesUntilDiskFull() throws {
        let started = Date()
        let fs = try mountSmall(megabytes: 8, filler: 2)
        let directory = try fs.directory("two")
        let config = DatabaseConfiguration(directory: directory.path)
        var db = try Database(name: "full", config: config)

        var acknowledged: [String: (i: Int, attachment: Data?)] = [:]
        var errors: [Error] = []
        var i = 0
        while i < Self.maxWrites && errors.count <= Self.attemptsAfterFailure {
            let id = String(format: "doc-%05d", i)
            let attachment = i % 3 == 0 ? Self.randomBytes(40_000, seed: UInt64(i)) : nil
            let doc = MutableDocument(id: id, data: ["i": i, "text": Self.text(i, 1500)])
            if let attachment { doc.setBlob(Blob(contentType: "application/octet-stream", data: attachment), forKey: "data") }
            do {
                try db.saveDocument(doc)
                acknowledged[id] = (i, attachment)
            } catch {
                errors.append(error)
            }
            i += 1
        }
        XCTAssertFalse(errors.isEmpty, "the 8 MB filesystem never filled up after \(i) writes")
        for e in errors {
            let error = e as? CouchbaseLiteError
            XCTAssertEqual(error?.code, .ioError, "\(e)")
            XCTAssertTrue(error?.message.hasPrefix("Insufficient storage: the disk is full") == true, "\(e)")
        }
        assertNoTemporaryBlobs(directory)

        try db.close()
        db = try Database(name: "full", config: config)
        XCTAssertEqual(Int(db.count), acknowledged.count)
        for (id, expected) in acknowledged {
            let doc = try XCTUnwrap(db.document(withID: id), id)
            XCTAssertEqual(doc.int(forKey: "i"), expected.i, id)
            XCTAssertEqual(doc.string(forKey: "text"), Self.text(expected.i, 1500), id)
            XCTAssertEqual(doc.blob(forKey: "data")?.content, expected.attachment, id)
        }
        try db.close()
        let orphans = try check(directory.appendingPathComponent("full.cblite2").path, orphansAllowed: true)

        try fs.freeFiller()
        db = try Database(name: "full", config: config)
        let after = Self.randomBytes(40_000, seed: 99_999)
        let doc = MutableDocument(id: "after", data: ["after": true])
        doc.setBlob(Blob(contentType: "application/octet-stream", data: after), forKey: "data")
        try db.saveDocument(doc)
        XCTAssertEqual(db.document(withID: "after")?.blob(forKey: "data")?.content, after)
        try db.compact()
        try db.close()
        try check(directory.appendingPathComponent("full.cblite2").path)
        print("disk full, 2.x: \(acknowledged.count) acknowledged writes, \(orphans) orphaned blobs, \(errors.count) failed (\(Set(errors.map { "\($0)" }).sorted())), \(String(format: "%.1f", Date().timeIntervalSince(started))) s")
    }

    // MARK: Listener

    func testListenerWritesUntilDiskFull() throws {
        let started = Date()
        let fs = try mountSmall(megabytes: 8, filler: 2)
        let directory = try fs.directory("listener")
        var fullManager: CBLManager? = try CBLManager(directory: directory.path)
        var fullListener: CBLListener? = CBLListener(manager: try XCTUnwrap(fullManager), port: 0)
        fullListener?.bindAddress = "127.0.0.1"
        try XCTUnwrap(fullListener).start()
        var http = RawHTTPClient(port: try XCTUnwrap(fullListener).port)
        defer { fullListener?.stop(); fullManager?.close() }
        XCTAssertEqual(try http.send("PUT", "/full").status, 201)

        var acknowledged: [String: (i: Int, attachment: Data?)] = [:]
        var failures: [HTTPResult] = []
        var i = 0
        while i < Self.maxWrites && failures.count <= Self.attemptsAfterFailure {
            let id = String(format: "doc-%05d", i)
            let body = Array(#"{"i":\#(i),"text":"\#(Self.text(i, 1500))"}"#.utf8)
            let put = try http.send("PUT", "/full/\(id)", headers: ["Content-Type": "application/json"], body: body)
            i += 1
            guard put.status == 201, let rev = put.dict["rev"] as? String else { failures.append(put); continue }
            acknowledged[id] = (i - 1, nil)
            guard (i - 1) % 3 == 0 else { continue }
            let attachment = Self.randomBytes(40_000, seed: UInt64(i - 1))
            let attach = try http.send("PUT", "/full/\(id)/data.bin?rev=\(rev)",
                                       headers: ["Content-Type": "application/octet-stream"], body: Array(attachment))
            if attach.status == 201 { acknowledged[id] = (i - 1, attachment) } else { failures.append(attach) }
        }
        XCTAssertFalse(failures.isEmpty, "the 8 MB filesystem never filled up after \(i) writes")
        for failure in failures {
            XCTAssertEqual(failure.status, 507, failure.text)
            XCTAssertEqual(failure.header("Content-Type"), "application/json", failure.text)
            XCTAssertEqual(failure.dict["error"] as? String, "insufficient_storage", failure.text)
            XCTAssertTrue((failure.dict["reason"] as? String)?.hasPrefix("Insufficient storage: the disk is full") == true, failure.text)
            XCTAssertEqual(Set(failure.dict.keys), ["error", "reason"], failure.text)
        }
        assertNoTemporaryBlobs(directory)

        // Still serving reads on the full disk; then close and check.
        for (id, expected) in acknowledged {
            let got = try http.send("GET", "/full/\(id)")
            XCTAssertEqual(got.dict["i"] as? Int, expected.i, got.text)
            if let attachment = expected.attachment {
                XCTAssertEqual(try http.send("GET", "/full/\(id)/data.bin").body, Array(attachment), id)
            } else {
                XCTAssertNil(got.dict["_attachments"], got.text)
            }
        }
        fullListener?.stop()
        fullListener = nil
        fullManager?.close()
        fullManager = nil
        let reopened = try CBLManager(directory: directory.path)
        let db = try reopened.existingDatabaseNamed("full")
        XCTAssertEqual(Int(db.documentCount), acknowledged.count)
        for (id, expected) in acknowledged {
            XCTAssertEqual(db.existingDocument(withID: id)?["text"] as? String, Self.text(expected.i, 1500), id)
        }
        reopened.close()
        let orphans = try check(directory.appendingPathComponent("full.cblite2").path, orphansAllowed: true)

        try fs.freeFiller()
        fullManager = try CBLManager(directory: directory.path)
        fullListener = CBLListener(manager: try XCTUnwrap(fullManager), port: 0)
        fullListener?.bindAddress = "127.0.0.1"
        try XCTUnwrap(fullListener).start()
        http = RawHTTPClient(port: try XCTUnwrap(fullListener).port)
        let put = try http.send("PUT", "/full/after", headers: ["Content-Type": "application/json"], body: Array(#"{"after":true}"#.utf8))
        XCTAssertEqual(put.status, 201, put.text)
        let rev = put.dict["rev"] as? String ?? ""
        let attachment = Self.randomBytes(40_000, seed: 99_999)
        XCTAssertEqual(try http.send("PUT", "/full/after/data.bin?rev=\(rev)", headers: ["Content-Type": "application/octet-stream"],
                                     body: Array(attachment)).status, 201)
        XCTAssertEqual(try http.send("GET", "/full/after/data.bin").body, Array(attachment))
        XCTAssertEqual(try http.send("POST", "/full/_compact", headers: ["Content-Type": "application/json"]).status, 202)
        fullListener?.stop()
        fullListener = nil
        fullManager?.close()
        fullManager = nil
        try check(directory.appendingPathComponent("full.cblite2").path)
        print("disk full, listener: \(acknowledged.count) acknowledged documents, \(orphans) orphaned blobs, \(failures.count) answered \(failures[0].status) (\(Set(failures.map { $0.dict["reason"] as? String ?? "" }).sorted())), \(String(format: "%.1f", Date().timeIntervalSince(started))) s")
    }

    // MARK: Pull

    func testPullIntoAFullDisk() throws {
        let started = Date()
        // The source (on the normal disk) holds about 7 MB: more than the 6 MB left by the filler,
        // less than the 12 MB once it is gone.
        let source = try createDB("source")
        var expected: [String: (i: Int, attachment: Data?)] = [:]
        _ = try source.inTransaction {
            for i in 0..<300 {
                let id = String(format: "doc-%05d", i)
                let rev = try XCTUnwrap(source.document(withID: id)).newRevision()
                rev.userProperties = ["i": i, "text": Self.text(i, 1500)]
                let attachment = i % 2 == 0 ? Self.randomBytes(40_000, seed: UInt64(i)) : nil
                if let attachment {
                    rev.setAttachmentNamed("data.bin", withContentType: "application/octet-stream", content: attachment)
                }
                _ = try rev.save()
                expected[id] = (i, attachment)
            }
            return true
        }

        let fs = try mountSmall(megabytes: 12, filler: 6)
        let directory = try fs.directory("pull")
        var local: CBLManager? = try CBLManager(directory: directory.path)
        var db = try XCTUnwrap(local).databaseNamed("copy")
        let pull = db.createPullReplication(remoteURL("source"))
        // Pages of 50 revisions (1 MB of attachments each): the first pages commit before the disk fills.
        pull.tuning.changesPageSize = 50
        runToCompletion(pull, timeout: 120)
        let error = try XCTUnwrap(pull.lastError as NSError?, "the pull into a full disk reported no error")
        XCTAssertEqual(error.code, 507, "\(error)")
        XCTAssertTrue(error.localizedDescription.contains("Insufficient storage"), error.localizedDescription)
        assertNoTemporaryBlobs(directory)

        local?.close()
        local = nil
        local = try CBLManager(directory: directory.path)
        db = try XCTUnwrap(local).existingDatabaseNamed("copy")
        let pulled = Int(db.documentCount)
        XCTAssertGreaterThan(pulled, 0)
        XCTAssertLessThan(pulled, expected.count)
        let rows = try db.createAllDocumentsQuery().run().allObjects
        for row in rows {
            let id = try XCTUnwrap(row.documentID)
            let want = try XCTUnwrap(expected[id], id)
            let doc = try XCTUnwrap(db.existingDocument(withID: id), id)
            XCTAssertEqual(doc["text"] as? String, Self.text(want.i, 1500), id)
            XCTAssertEqual(doc.currentRevision?.attachmentNamed("data.bin")?.content, want.attachment, id)
        }
        local?.close()
        local = nil
        let orphans = try check(directory.appendingPathComponent("copy.cblite2").path, orphansAllowed: true)

        // Space freed: the pull runs again and completes.
        try fs.freeFiller()
        local = try CBLManager(directory: directory.path)
        db = try XCTUnwrap(local).existingDatabaseNamed("copy")
        let again = db.createPullReplication(remoteURL("source"))
        runToCompletion(again, timeout: 120)
        XCTAssertNil(again.lastError)
        XCTAssertEqual(Int(db.documentCount), expected.count)
        for (id, want) in expected {
            let doc = try XCTUnwrap(db.existingDocument(withID: id), id)
            XCTAssertEqual(doc["text"] as? String, Self.text(want.i, 1500), id)
            XCTAssertEqual(doc.currentRevision?.attachmentNamed("data.bin")?.content, want.attachment, id)
        }
        try db.compact()
        local?.close()
        local = nil
        try check(directory.appendingPathComponent("copy.cblite2").path)
        print("disk full, pull: \(orphans) orphaned blobs; \(pulled) of \(expected.count) documents before \(error.code) (\(error.localizedDescription)); rerun after freeing space: \(expected.count), \(String(format: "%.1f", Date().timeIntervalSince(started))) s")
    }
}
