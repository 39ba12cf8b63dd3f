import CouchbaseLite
import Foundation
import XCTest

/// The pull on the multipart path (spec 9.4), end to end through the listener: with
/// `preferMultipart` it asks for `multipart/related` alone, as 1.x did, so the listener answers
/// `_bulk_get` as multipart (and single GETs as `multipart/related`) like Sync Gateway and
/// CouchDB 1.x would. A recording proxy in between shows which form travelled.
final class ReplicationMultipartPullTests: ReplicationTestCase {
    var proxy: FaultProxy!
    let ids = ["p0", "p1", "p2", "p3", "small", "large", "zipped", "gone", "conflicted"]
    let large = ReplicationTestCase.randomBytes(150_000, seed: 42)
    let branch = ReplicationTestCase.randomBytes(3_000, seed: 43)
    let compressible = Data(String(repeating: "stored gzip-encoded ", count: 400).utf8)

    override func tearDownWithError() throws {
        proxy?.stop()
        try super.tearDownWithError()
    }

    func proxiedURL(_ db: String) -> URL { URL(string: "\(proxy.url)/\(db)")! }

    /// Plain documents, a small, a 150 KB and a gzip-stored attachment, a deletion, and a
    /// conflict whose branches carry different attachments.
    func makeSource() throws -> CBLDatabase {
        let server = try createDB("src")
        for i in 0..<4 { try server.document(withID: "p\(i)")!.putProperties(["i": i, "text": "plain \(i)"]) }
        try server.document(withID: "small")!.update { rev in
            rev["kind"] = "small"
            rev.setAttachmentNamed("note.txt", withContentType: "text/plain", content: Data("hello, attachment".utf8))
            return true
        }
        try server.document(withID: "large")!.update { rev in
            rev["kind"] = "large"
            rev.setAttachmentNamed("big.bin", withContentType: "application/octet-stream", content: large)
            return true
        }
        try server.document(withID: "zipped")!.putProperties([
            "_attachments": ["z.txt": ["content_type": "text/plain", "encoding": "gzip",
                                       "data": try gzip(compressible).base64EncodedString()]],
        ])
        try server.document(withID: "gone")!.putProperties(["doomed": true])
        try server.document(withID: "gone")!.delete()
        try server.syncInsertRevision(docID: "conflicted", body: ["_rev": "1-base", "v": 0])
        try server.syncInsertRevision(docID: "conflicted", body: [
            "_rev": "2-aaa", "_revisions": ["start": 2, "ids": ["aaa", "base"]], "side": "a",
        ])
        try server.syncInsertRevision(docID: "conflicted", body: [
            "_rev": "2-bbb", "_revisions": ["start": 2, "ids": ["bbb", "base"]], "side": "b",
            "_attachments": ["branch.bin": ["content_type": "application/octet-stream", "data": branch.base64EncodedString()]],
        ])
        XCTAssertEqual(server.existingDocument(withID: "zipped")?.currentRevision?.attachmentNamed("z.txt")?.encoding, "gzip")
        return server
    }

    func pull(_ db: CBLDatabase, _ remote: URL) -> CBLReplication {
        let pull = db.createPullReplication(remote)
        pull.tuning.preferMultipart = true
        runToCompletion(pull)
        return pull
    }

    /// Every revision of every leaf the same on both sides: properties (attachment metadata
    /// with digests, lengths, encodings and revpos included), history and attachment bytes.
    func assertSameDatabase(_ source: CBLDatabase, _ copy: CBLDatabase, file: StaticString = #filePath, line: UInt = #line) throws {
        for id in ids {
            let a = try XCTUnwrap(source.document(withID: id), id, file: file, line: line)
            let b = try XCTUnwrap(copy.document(withID: id), id, file: file, line: line)
            XCTAssertEqual(a.currentRevisionID, b.currentRevisionID, id, file: file, line: line)
            XCTAssertEqual(a.isDeleted, b.isDeleted, id, file: file, line: line)
            let leavesA = try a.getLeafRevisions().sorted { ($0.revisionID ?? "") < ($1.revisionID ?? "") }
            let leavesB = try b.getLeafRevisions().sorted { ($0.revisionID ?? "") < ($1.revisionID ?? "") }
            XCTAssertEqual(leavesA.map(\.revisionID), leavesB.map(\.revisionID), "leaves of \(id)", file: file, line: line)
            for (ra, rb) in zip(leavesA, leavesB) {
                let label = "\(id) \(ra.revisionID ?? "?")"
                XCTAssertTrue(jsonEqual(ra.properties, rb.properties), "\(label): \(ra.properties ?? [:]) vs \(rb.properties ?? [:])",
                              file: file, line: line)
                XCTAssertEqual(try ra.getRevisionHistory().map(\.revisionID), try rb.getRevisionHistory().map(\.revisionID),
                               label, file: file, line: line)
                for name in ra.attachmentNames ?? [] {
                    XCTAssertEqual(ra.attachmentNamed(name)?.content, rb.attachmentNamed(name)?.content, "\(label)/\(name)",
                                   file: file, line: line)
                }
            }
        }
    }

    func bulkGetAnswerTypes() -> [String] {
        proxy.seen.filter { $0.path.contains("/_bulk_get") }.map { $0.responseContentType ?? "none" }
    }

    // MARK: Tests

    func testPullOverMultipartBulkGetReproducesTheSource() throws {
        let server = try makeSource()
        proxy = try FaultProxy(upstreamPort: listener.port) { _, _, _ in .pass }
        let local = try clientManager.databaseNamed("local")

        let first = pull(local, proxiedURL("src"))
        XCTAssertNil(first.lastError)
        XCTAssertFalse(bulkGetAnswerTypes().isEmpty)
        XCTAssertTrue(bulkGetAnswerTypes().allSatisfy { $0.hasPrefix("multipart/") }, "\(bulkGetAnswerTypes())")
        try assertSameDatabase(server, local)
        let zipped = local.existingDocument(withID: "zipped")?.currentRevision?.attachmentNamed("z.txt")
        XCTAssertEqual(zipped?.encoding, "gzip", "the gzip part was stored as it was stored at the source")
        XCTAssertEqual(zipped?.content, compressible)
        XCTAssertEqual(local.existingDocument(withID: "large")?.currentRevision?.attachmentNamed("big.bin")?.content, large)
        XCTAssertEqual(try local.existingDocument(withID: "conflicted")?.getConflictingRevisions().count, 2)

        // An edit that keeps the 150 KB attachment (a stub since the local revision, via
        // atts_since), a new attachment, a new deletion: the second run carries only those.
        try server.existingDocument(withID: "large")!.update { rev in rev["kind"] = "still large"; return true }
        try server.existingDocument(withID: "small")!.update { rev in
            rev.setAttachmentNamed("more.bin", withContentType: "application/octet-stream", content: self.branch)
            return true
        }
        try server.existingDocument(withID: "p0")!.delete()
        let second = pull(local, proxiedURL("src"))
        XCTAssertNil(second.lastError)
        XCTAssertEqual(second.completedChangesCount, 3)
        try assertSameDatabase(server, local)
        XCTAssertEqual(local.existingDocument(withID: "large")?.currentRevision?.attachmentNamed("big.bin")?.revpos,
                       server.existingDocument(withID: "large")?.currentRevision?.attachmentNamed("big.bin")?.revpos)
    }

    /// A peer without `_bulk_get` (CouchDB 1.x): single GETs, answered `multipart/related`
    /// for the revisions with attachments.
    func testPullOverMultipartRelatedGetsReproducesTheSource() throws {
        let server = try makeSource()
        proxy = try FaultProxy(upstreamPort: listener.port) { _, _, path in
            path.contains("/_bulk_get") ? .status(404) : .pass
        }
        let local = try clientManager.databaseNamed("local")
        let run = pull(local, proxiedURL("src"))
        XCTAssertNil(run.lastError)
        let gets = proxy.seen.filter { $0.method == "GET" && $0.path.contains("rev=") }
        let related = gets.filter { $0.responseContentType?.hasPrefix("multipart/related") == true }.map(\.path)
        XCTAssertTrue(related.contains { $0.hasPrefix("/src/large?") }, "\(gets)")
        XCTAssertTrue(related.contains { $0.hasPrefix("/src/zipped?") }, "\(gets)")
        try assertSameDatabase(server, local)
    }

    /// An attachment damaged in transit fails its revision, not the others and not the
    /// process; the next run fetches it again.
    func testADamagedAttachmentFailsItsRevisionAndTheNextRunRecovers() throws {
        let server = try makeSource()
        let marker = Array("filename=\"big.bin\"".utf8)
        proxy = try FaultProxy(upstreamPort: listener.port) { _, _, path in
            guard path.contains("/_bulk_get") else { return .pass }
            return .rewrite { answer in
                guard let at = RawHTTPClient.find(marker, in: answer),
                      let start = RawHTTPClient.find([13, 10, 13, 10], in: answer, from: at) else { return answer }
                var damaged = answer
                damaged[start + 4 + 70_000] ^= 0x55
                return damaged
            }
        }
        let local = try clientManager.databaseNamed("local")
        let first = pull(local, proxiedURL("src"))
        let error = try XCTUnwrap(first.lastError as NSError?)
        XCTAssertTrue(error.localizedDescription.contains("large") && error.localizedDescription.contains("digest"),
                      error.localizedDescription)
        XCTAssertNil(local.existingDocument(withID: "large"), "the damaged revision is not stored")
        XCTAssertNotNil(local.existingDocument(withID: "small"), "the rest of the answer is")
        XCTAssertNotNil(local.existingDocument(withID: "p3"))

        proxy.setDecision { _, _, _ in .pass }
        let second = pull(local, proxiedURL("src"))
        XCTAssertNil(second.lastError)
        try assertSameDatabase(server, local)
    }

    /// The listener's multipart answers, with and without `X-Accept-Part-Encoding: gzip`:
    /// what the reader accepts (each part matches its digest), the gzip-stored attachment sent
    /// as stored either way, as CouchDB sends it.
    func testListenerMultipartAnswersMatchTheirDigests() throws {
        let server = try makeSource()
        let rev = try XCTUnwrap(server.existingDocument(withID: "zipped")?.currentRevisionID)
        for gzipParts in [true, false] {
            var headers = ["Accept": "multipart/related"]
            if gzipParts { headers["X-Accept-Part-Encoding"] = "gzip" }
            let answer = try get("/src/zipped?rev=\(rev)&revs=true&attachments=true", headers: headers)
            expect(answer, 200)
            let type = try XCTUnwrap(answer.header("content-type"))
            XCTAssertTrue(type.hasPrefix("multipart/related"), type)
            let items = try MultipartDocument.items(body: answer.body, contentType: type, answering: .document)
            guard case .document(let related)? = items.first, case let doc = related.foundation else { return XCTFail("\(items)") }
            let meta = try XCTUnwrap((doc["_attachments"] as? [String: [String: Any]])?["z.txt"])
            let data = try XCTUnwrap(meta["data"] as? Data)
            XCTAssertEqual(meta["encoding"] as? String, "gzip")
            XCTAssertEqual(try CBLDatabase.syncGunzip(data), compressible)
        }
    }

    /// Without `preferMultipart` the same pull keeps CouchDB's and the listener's JSON answer.
    func testTheDefaultAcceptKeepsTheJSONAnswer() throws {
        let server = try makeSource()
        proxy = try FaultProxy(upstreamPort: listener.port) { _, _, _ in .pass }
        let local = try clientManager.databaseNamed("local")
        let run = local.createPullReplication(proxiedURL("src"))
        runToCompletion(run)
        XCTAssertNil(run.lastError)
        XCTAssertFalse(bulkGetAnswerTypes().isEmpty)
        XCTAssertTrue(bulkGetAnswerTypes().allSatisfy { $0.hasPrefix("application/json") }, "\(bulkGetAnswerTypes())")
        XCTAssertEqual(local.existingDocument(withID: "large")?.currentRevision?.attachmentNamed("big.bin")?.content, large)
        XCTAssertEqual(local.documentCount, server.documentCount)
    }
}
