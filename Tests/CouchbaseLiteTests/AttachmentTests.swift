import Foundation
import XCTest
@testable import CouchbaseLite

final class AttachmentTests: DatabaseTestCase {

    private var blobDirectory: URL { db.directoryURL.appendingPathComponent("attachments") }

    private func blobFiles() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: blobDirectory.path).filter { $0.hasSuffix(".blob") }.sorted()
    }

    func testSetAttachmentStoresSHA1BlobAndStub() throws {
        let doc = db.document(withID: "a")!
        let rev = doc.newRevision()
        rev["title"] = "with attachment"
        rev.setAttachmentNamed("attach1", withContentType: "text/plain; charset=utf-8", content: Data("attach1".utf8))
        XCTAssertEqual(rev.attachmentNamed("attach1")?.content, Data("attach1".utf8))
        let saved = try rev.save()
        // The same blob file and digest as the real fixtures (spec 4.1/4.2).
        XCTAssertEqual(try blobFiles(), ["3F58B9908FECA2CABBE39FFD04347B9048212A9B.blob"])
        let meta = saved.properties?["_attachments"] as? [String: [String: Any]]
        XCTAssertEqual(meta?["attach1"]?["digest"] as? String, "sha1-P1i5kI/sosq745/9BDR7kEghKps=")
        XCTAssertEqual(meta?["attach1"]?["length"] as? Int, 7)
        XCTAssertEqual(meta?["attach1"]?["revpos"] as? Int, 1)
        XCTAssertEqual(meta?["attach1"]?["stub"] as? Bool, true)
        let att = try XCTUnwrap(doc.currentRevision?.attachmentNamed("attach1"))
        XCTAssertEqual(att.length, 7)
        XCTAssertEqual(att.encodedLength, 7)
        XCTAssertEqual(att.contentType, "text/plain; charset=utf-8")
        XCTAssertEqual(att.contentURL?.lastPathComponent, "3F58B9908FECA2CABBE39FFD04347B9048212A9B.blob")
        XCTAssertEqual(att.document, doc)
        XCTAssertEqual(doc.currentRevision?.attachmentNames, ["attach1"])
        let stream = try XCTUnwrap(att.openContentStream())
        stream.open()
        var buffer = [UInt8](repeating: 0, count: 16)
        XCTAssertEqual(stream.read(&buffer, maxLength: 16), 7)
        stream.close()

        // Stubs carry over unchanged (revpos stays 1); an identical body elsewhere is deduplicated.
        let r2 = try doc.update { $0["title"] = "edited"; return true }
        XCTAssertEqual((r2.properties?["_attachments"] as? [String: [String: Any]])?["attach1"]?["revpos"] as? Int, 1)
        let other = db.document(withID: "b")!.newRevision()
        other.setAttachmentNamed("copy", withContentType: "text/plain", content: Data("attach1".utf8))
        try other.save()
        XCTAssertEqual(try blobFiles().count, 1)

        // Removing an attachment.
        let r3 = doc.newRevision()
        r3.removeAttachmentNamed("attach1")
        XCTAssertNil(try r3.save().attachmentNamed("attach1"))
    }

    func testInlineBase64AndGzipEncodedAttachments() throws {
        let plain = Data(String(repeating: "compress me ", count: 100).utf8)
        let gz = try Gzip.compress(plain)
        let doc = db.document(withID: "inline")!
        try doc.putProperties([
            "_attachments": [
                "hello.txt": ["content_type": "text/plain", "data": Data("hello".utf8).base64EncodedString()],
                "big.txt": ["content_type": "text/plain", "encoding": "gzip", "data": gz.base64EncodedString()],
            ],
        ])
        let hello = try XCTUnwrap(doc.currentRevision?.attachmentNamed("hello.txt"))
        XCTAssertEqual(hello.content, Data("hello".utf8))
        let big = try XCTUnwrap(doc.currentRevision?.attachmentNamed("big.txt"))
        XCTAssertEqual(big.encoding, "gzip")
        XCTAssertEqual(big.length, UInt64(plain.count))
        XCTAssertEqual(big.encodedLength, UInt64(gz.count))
        XCTAssertEqual(big.content, plain, "gzip-encoded attachments decode on read")
        XCTAssertNil(big.contentURL, "the blob file holds gzip bytes")
        XCTAssertEqual(try blobFiles().count, 2)
    }

    func testLargeAttachmentFromFileIsStreamed() throws {
        let source = dir.url.appendingPathComponent("big.bin")
        var bytes = Data(count: 3 * 1024 * 1024 + 17)
        bytes.withUnsafeMutableBytes { buf in for i in 0..<buf.count { buf[i] = UInt8(truncatingIfNeeded: i &* 31) } }
        try bytes.write(to: source)
        let rev = db.document(withID: "file")!.newRevision()
        rev.setAttachmentNamed("big.bin", withContentType: "application/octet-stream", contentURL: source)
        let saved = try rev.save()
        let att = try XCTUnwrap(saved.attachmentNamed("big.bin"))
        XCTAssertEqual(att.length, UInt64(bytes.count))
        XCTAssertEqual(att.digest, "sha1-" + Data(Insecure_SHA1(bytes)).base64EncodedString())
        XCTAssertEqual(att.content, bytes)
        XCTAssertEqual(try blobFiles(), [sha1Hex(bytes).uppercased() + ".blob"])
        XCTAssertFalse(try FileManager.default.contentsOfDirectory(atPath: blobDirectory.path).contains { $0.hasSuffix(".blobtmp") })
    }

    func testBadAttachmentsAreRefused() throws {
        let doc = db.document(withID: "bad")!
        XCTAssertThrowsStatus(400, try doc.putProperties(["_attachments": "nope"]))
        XCTAssertThrowsStatus(400, try doc.putProperties(["_attachments": ["x": ["data": "***not base64***"]]]))
        XCTAssertThrowsStatus(400, try doc.putProperties(["_attachments": ["x": ["stub": true, "digest": "sha1-AAAAAAAAAAAAAAAAAAAAAAAAAAA="]]]))
        XCTAssertThrowsStatus(400, try doc.putProperties(["_attachments": ["x": ["follows": true]]]))
        XCTAssertThrowsStatus(400, try doc.putProperties(["_attachments": ["x": ["content_type": "text/plain"]]]))
        XCTAssertNil(doc.currentRevision)
    }

    func testCompactDropsOldBodiesAndOrphanBlobs() throws {
        let doc = db.document(withID: "c")!
        let rev = doc.newRevision()
        rev.setAttachmentNamed("old", withContentType: "text/plain", content: Data("old body".utf8))
        let r1 = try rev.save()
        let r2 = doc.newRevision()
        r2.removeAttachmentNamed("old")
        r2.setAttachmentNamed("new", withContentType: "text/plain", content: Data("new body".utf8))
        try r2.save()
        XCTAssertEqual(try blobFiles().count, 2)
        XCTAssertTrue(db.document(withID: "c")!.revision(withID: r1.revisionID!)!.propertiesAvailable)
        try db.compact()
        XCTAssertEqual(try blobFiles(), [sha1Hex(Data("new body".utf8)).uppercased() + ".blob"])
        XCTAssertFalse(doc.revision(withID: r1.revisionID!)!.propertiesAvailable, "non-leaf bodies are dropped")
        XCTAssertEqual(doc.currentRevision?.attachmentNamed("new")?.content, Data("new body".utf8))
        let raw = try rawConnection(db.directoryURL.appendingPathComponent("db.sqlite3").path, readOnly: true)
        XCTAssertEqual(try raw.integrityCheck(), "ok")
        raw.close()
    }

    func testLowercaseBlobNamesFromOldBuildsAreFound() throws {
        let data = Data("legacy".utf8)
        let doc = db.document(withID: "l")!
        let rev = doc.newRevision()
        rev.setAttachmentNamed("f", withContentType: nil, content: data)
        try rev.save()
        let upper = blobDirectory.appendingPathComponent(sha1Hex(data).uppercased() + ".blob")
        try FileManager.default.moveItem(at: upper, to: blobDirectory.appendingPathComponent(sha1Hex(data) + ".blob"))
        XCTAssertEqual(doc.currentRevision?.attachmentNamed("f")?.content, data)
    }
}
