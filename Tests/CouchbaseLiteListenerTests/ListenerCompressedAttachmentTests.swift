import CouchbaseLite
import CouchbaseLiteListener
import Crypto
import Foundation
import XCTest

/// Attachments stored gzip-encoded as CouchDB 3.4 stores them (`[attachments] compressible_types`,
/// `compression_level`), and attachment ETags as CouchDB forms them (the base64 MD5 of the stored
/// bytes). The expected values are the ones CouchDB 3.4.3 gave to the same requests.
final class ListenerCompressedAttachmentTests: ListenerTestCase {
    /// "This is a base64 encoded text", base64.
    private let text = "VGhpcyBpcyBhIGJhc2U2NCBlbmNvZGVkIHRleHQ="

    override func setUpWithError() throws {
        try super.setUpWithError()
        try createDB()
    }

    private func stub(_ doc: [String: Any], _ name: String) -> [String: Any] {
        (doc["_attachments"] as? [String: Any])?[name] as? [String: Any] ?? [:]
    }

    @discardableResult
    private func putTwoAttachments(_ docID: String = "d1") throws -> String {
        try putDoc("/db/\(docID)", ["_attachments": [
            "foo.txt": ["content_type": "text/plain", "data": text],
            "bin": ["content_type": "application/octet-stream", "data": text],
        ]])
    }

    func testTextAttachmentIsStoredGzippedAndServedDecoded() throws {
        try putTwoAttachments()
        // Encoding shown only when asked for, as CouchDB does.
        let plain = try get("/db/d1").dict
        XCTAssertNil(stub(plain, "foo.txt")["encoding"])
        XCTAssertNil(stub(plain, "foo.txt")["encoded_length"])
        let info = try get("/db/d1?att_encoding_info=true").dict
        XCTAssertEqual(stub(info, "foo.txt")["encoding"] as? String, "gzip")
        XCTAssertEqual(stub(info, "foo.txt")["encoded_length"] as? Int, 47)
        XCTAssertEqual(stub(info, "foo.txt")["length"] as? Int, 29)
        XCTAssertNil(stub(info, "bin")["encoding"])
        // 1.x's SHA-1 digest stays (CouchDB shows `md5-…` here).
        XCTAssertTrue((stub(info, "foo.txt")["digest"] as? String)?.hasPrefix("sha1-") ?? false)

        let got = try get("/db/d1/foo.txt")
        expect(got, 200)
        XCTAssertEqual(got.text, "This is a base64 encoded text")
        XCTAssertNil(got.header("content-encoding"))
        XCTAssertEqual(got.header("accept-ranges"), "none")
        XCTAssertEqual(got.header("etag"), "\"qUUYqS41RhwF0TrCsTAxFg==\"")

        // A client taking gzip gets the stored bytes.
        let gz = try get("/db/d1/foo.txt", headers: ["Accept-Encoding": "gzip"])
        expect(gz, 200)
        XCTAssertEqual(gz.header("content-encoding"), "gzip")
        XCTAssertEqual(gz.body.count, 47)
        XCTAssertEqual(Array(gz.body.prefix(2)), [0x1F, 0x8B])

        // Inline data decoded; with att_encoding_info the encoding shows beside it.
        let inline = try get("/db/d1?attachments=true").dict
        XCTAssertEqual(stub(inline, "foo.txt")["data"] as? String, text)
        XCTAssertNil(stub(inline, "foo.txt")["encoding"])
        let inlineInfo = try get("/db/d1?attachments=true&att_encoding_info=true").dict
        XCTAssertEqual(stub(inlineInfo, "foo.txt")["data"] as? String, text)
        XCTAssertEqual(stub(inlineInfo, "foo.txt")["encoding"] as? String, "gzip")

        // The 1.x API reads the decoded content.
        let attachment = try XCTUnwrap(manager.databaseNamed("db").existingDocument(withID: "d1")?
            .currentRevision?.attachmentNamed("foo.txt"))
        XCTAssertEqual(attachment.content, Data("This is a base64 encoded text".utf8))
    }

    func testAttachmentETagIsCouchDBsMD5() throws {
        try putTwoAttachments()
        let got = try get("/db/d1/bin")
        XCTAssertEqual(got.text, "This is a base64 encoded text")
        XCTAssertEqual(got.header("etag"), "\"aEI7pOYCRBLTRQvvqYrrJQ==\"")
        XCTAssertEqual(got.header("accept-ranges"), "bytes")
        XCTAssertEqual(try get("/db/d1/bin", headers: ["If-None-Match": "\"aEI7pOYCRBLTRQvvqYrrJQ==\""]).status, 304)
        XCTAssertEqual(try get("/db/d1/foo.txt", headers: ["If-None-Match": "\"qUUYqS41RhwF0TrCsTAxFg==\""]).status, 304)
        let head = try request("HEAD", "/db/d1/bin")
        XCTAssertEqual(head.header("etag"), "\"aEI7pOYCRBLTRQvvqYrrJQ==\"")
        // The same bytes uploaded on their own: the same ETag.
        let put = try request("PUT", "/db/d2/raw", body: Array("This is a base64 encoded text".utf8),
                              headers: ["Content-Type": "application/octet-stream"])
        expect(put, 201)
        XCTAssertEqual(try get("/db/d2/raw").header("etag"), "\"aEI7pOYCRBLTRQvvqYrrJQ==\"")
    }

    func testChangesShowEncodingOnlyWithAttEncodingInfo() throws {
        try putTwoAttachments()
        let rows = { (query: String) throws -> [String: Any] in
            let results = try self.get("/db/_changes?\(query)").dict["results"] as? [[String: Any]]
            return results?.first?["doc"] as? [String: Any] ?? [:]
        }
        XCTAssertNil(stub(try rows("include_docs=true"), "foo.txt")["encoding"])
        let inline = stub(try rows("include_docs=true&attachments=true"), "foo.txt")
        XCTAssertEqual(inline["data"] as? String, text)
        XCTAssertNil(inline["encoding"])
        let info = stub(try rows("include_docs=true&att_encoding_info=true"), "foo.txt")
        XCTAssertEqual(info["encoding"] as? String, "gzip")
        XCTAssertEqual(info["encoded_length"] as? Int, 47)
    }

    func testConfigurationDecidesWhatIsCompressed() throws {
        expect(try request("PUT", "/_node/_local/_config/attachments/compressible_types", json: "text/plain",
                           headers: ["X-Couch-Persist": "false"]), 200)
        try putDoc("/db/a", ["_attachments": [
            "p.txt": ["content_type": "text/plain; charset=utf-8", "data": text],
            "j.json": ["content_type": "application/json", "data": text],
        ]])
        let a = try get("/db/a?att_encoding_info=true").dict
        XCTAssertEqual(stub(a, "p.txt")["encoding"] as? String, "gzip")
        XCTAssertNil(stub(a, "j.json")["encoding"])

        expect(try request("PUT", "/_node/_local/_config/attachments/compression_level", json: "0",
                           headers: ["X-Couch-Persist": "false"]), 200)
        try putDoc("/db/b", ["_attachments": ["p.txt": ["content_type": "text/plain", "data": text]]])
        XCTAssertNil(stub(try get("/db/b?att_encoding_info=true").dict, "p.txt")["encoding"])
    }

    func testStreamedTextUploadIsCompressedAsItArrives() throws {
        let body = Array(String(repeating: "This is plain text", count: 100).utf8)
        expect(try request("PUT", "/db/s/long.txt", body: body, headers: ["Content-Type": "text/plain"]), 201)
        let meta = stub(try get("/db/s?att_encoding_info=true").dict, "long.txt")
        XCTAssertEqual(meta["encoding"] as? String, "gzip")
        XCTAssertEqual(meta["length"] as? Int, 1800)
        let encodedLength = try XCTUnwrap(meta["encoded_length"] as? Int)
        XCTAssertLessThan(encodedLength, 100)
        XCTAssertEqual(try get("/db/s/long.txt").body, body)
        // Only the gzip body is in the store: the plain one never landed there.
        let blobs = try FileManager.default.contentsOfDirectory(
            at: directory.appendingPathComponent("db.cblite2/attachments"), includingPropertiesForKeys: [.fileSizeKey])
            .filter { $0.pathExtension == "blob" }
        XCTAssertEqual(blobs.count, 1)
        XCTAssertEqual(try blobs.first?.resourceValues(forKeys: [.fileSizeKey]).fileSize, encodedLength)
    }

    /// A multipart answer lists attachments, and sends their parts, in the order they were given
    /// (CouchDB's), names each following part by `md5-`; `open_revs` takes `*/*` for multipart/mixed.
    func testMultipartAnswerKeepsAttachmentOrder() throws {
        let doc = """
        {"_attachments":{"zeta":{"follows":true,"content_type":"application/test","length":4},        "alpha":{"follows":true,"content_type":"application/test","length":5}}}
        """
        let body = "--B\r\ncontent-type: application/json\r\n\r\n" + doc + "\r\n--B\r\n\r\nzzzz\r\n--B\r\n\r\naaaaa\r\n--B--"
        let put = try request("PUT", "/db/ord", body: Array(body.utf8), headers: ["Content-Type": "multipart/related;boundary=\"B\""])
        expect(put, 201)
        let got = try get("/db/ord?attachments=true", headers: ["Accept": "multipart/related"])
        let text = got.text
        let zeta = try XCTUnwrap(text.range(of: "\"zeta\"")), alpha = try XCTUnwrap(text.range(of: "\"alpha\""))
        XCTAssertLessThan(zeta.lowerBound, alpha.lowerBound, text)
        let zetaPart = try XCTUnwrap(text.range(of: "\r\n\r\nzzzz\r\n")), alphaPart = try XCTUnwrap(text.range(of: "\r\n\r\naaaaa\r\n"))
        XCTAssertLessThan(zetaPart.lowerBound, alphaPart.lowerBound, text)
        // md5("zzzz"), as CouchDB names the part.
        XCTAssertTrue(text.contains("\"digest\":\"md5-" + Data(Insecure.MD5.hash(data: Data("zzzz".utf8))).base64EncodedString() + "\""), text)
        let rev = try XCTUnwrap(put.dict["rev"] as? String)
        let mixed = try get("/db/ord?open_revs=%5B%22\(rev)%22%5D", headers: ["Accept": "multipart/related,*/*;"])
        XCTAssertTrue(mixed.header("content-type")?.hasPrefix("multipart/mixed") ?? false, mixed.text)
        XCTAssertEqual(try get("/db/ord?open_revs=%5B%22\(rev)%22%5D").header("content-type"), "application/json")
    }

    func testGzipUploadIsKeptEncoded() throws {
        try putTwoAttachments()
        let gz = try get("/db/d1/foo.txt", headers: ["Accept-Encoding": "gzip"]).body
        let put = try request("PUT", "/db/up/up.txt", body: gz,
                              headers: ["Content-Type": "text/plain", "Content-Encoding": "gzip"])
        expect(put, 201)
        let meta = stub(try get("/db/up?att_encoding_info=true").dict, "up.txt")
        XCTAssertEqual(meta["encoding"] as? String, "gzip")
        XCTAssertEqual(meta["encoded_length"] as? Int, 47)
        // The decoded length, as 1.x keeps it (CouchDB repeats the encoded length here).
        XCTAssertEqual(meta["length"] as? Int, 29)
        let got = try get("/db/up/up.txt")
        XCTAssertEqual(got.text, "This is a base64 encoded text")
        XCTAssertEqual(got.header("etag"), "\"qUUYqS41RhwF0TrCsTAxFg==\"")
        expectError(try request("PUT", "/db/up2/x.txt", body: Array("x".utf8), headers: ["Content-Encoding": "br"]),
                    415, "bad_content_type", "Only gzip and identity content-encodings are supported")
    }

    func testMultipartUploadAndEncodedParts() throws {
        let doc = """
        {"_attachments":{"baz.txt":{"follows":true,"content_type":"text/plain","length":19},\
        "data.bin":{"follows":true,"content_type":"application/binary","length":11}}}
        """
        let body = "--abc123\r\ncontent-type: application/json\r\n\r\n" + doc
            + "\r\n--abc123\r\n\r\nthis is 19 chars lo\r\n--abc123\r\n\r\nhello world\r\n--abc123--"
        let put = try request("PUT", "/db/mp", body: Array(body.utf8),
                              headers: ["Content-Type": "multipart/related;boundary=\"abc123\""])
        expect(put, 201)
        let rev = try XCTUnwrap(put.dict["rev"] as? String)
        XCTAssertEqual(try get("/db/mp/baz.txt").text, "this is 19 chars lo")
        let info = try get("/db/mp?att_encoding_info=true").dict
        XCTAssertEqual(stub(info, "baz.txt")["encoding"] as? String, "gzip")
        XCTAssertNil(stub(info, "data.bin")["encoding"])

        // CouchDB sends gzip-stored attachments as stored in multipart answers, and says so.
        let mixed = try get("/db/mp?open_revs=%5B%22\(rev)%22%5D", headers: ["Accept": "multipart/mixed"])
        expect(mixed, 200)
        let text = String(decoding: mixed.body, as: UTF8.self)
        XCTAssertTrue(text.contains("\"encoding\":\"gzip\""), text)
        XCTAssertTrue(text.lowercased().contains("content-encoding: gzip"), text)
        XCTAssertFalse(text.contains("this is 19 chars lo"))
        XCTAssertTrue(text.contains("hello world"))

        // new_edits=false with a multipart body, repeated.
        for _ in 0..<3 {
            expect(try request("PUT", "/db/mp?new_edits=false&rev=\(rev)", body: Array(body.utf8),
                               headers: ["Content-Type": "multipart/related;boundary=\"abc123\""]), 201)
        }
    }
}
