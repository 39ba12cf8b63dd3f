import CouchbaseLite
import CouchbaseLiteListener
import Crypto
import Foundation
import XCTest

final class ListenerAttachmentTests: ListenerTestCase {
    override func setUpWithError() throws {
        try super.setUpWithError()
        try createDB()
    }

    func testStandaloneAttachmentLifecycle() throws {
        let rev1 = try putDoc("/db/doc1", ["n": 2])
        let put = try request("PUT", "/db/doc1/hello.txt?rev=\(rev1)", body: Array("Hello, attachment!".utf8),
                              headers: ["Content-Type": "text/plain"])
        expect(put, 201)
        let rev2 = try XCTUnwrap(put.dict["rev"] as? String)
        XCTAssertTrue(rev2.hasPrefix("2-"))
        XCTAssertTrue(jsonEqual(put.json, ["ok": true, "id": "doc1", "rev": rev2]))

        let got = try get("/db/doc1/hello.txt")
        expect(got, 200)
        XCTAssertEqual(got.text, "Hello, attachment!")
        XCTAssertEqual(got.header("content-type"), "text/plain")
        let etag = try XCTUnwrap(got.header("etag"))
        // CouchDB's attachment ETag: the base64 MD5 of the stored bytes (gzip for text/plain), quoted.
        let stored = try get("/db/doc1/hello.txt", headers: ["Accept-Encoding": "gzip"])
        XCTAssertEqual(stored.header("content-encoding"), "gzip")
        XCTAssertEqual(etag, "\"" + Data(Insecure.MD5.hash(data: Data(stored.body))).base64EncodedString() + "\"")
        XCTAssertEqual(try get("/db/doc1/hello.txt", headers: ["If-None-Match": etag]).status, 304)

        let doc = try get("/db/doc1").dict
        let stub = (doc["_attachments"] as? [String: Any])?["hello.txt"] as? [String: Any]
        XCTAssertEqual(stub?["stub"] as? Bool, true)
        XCTAssertEqual(stub?["length"] as? Int, 18)
        XCTAssertEqual(stub?["revpos"] as? Int, 2)
        XCTAssertEqual(stub?["content_type"] as? String, "text/plain")
        // The stub keeps 1.x's SHA-1 digest of the stored bytes.
        XCTAssertEqual(stub?["digest"] as? String, "sha1-" + Data(Insecure.SHA1.hash(data: Data(stored.body))).base64EncodedString())

        let inline = try get("/db/doc1?attachments=true").dict
        let meta = (inline["_attachments"] as? [String: Any])?["hello.txt"] as? [String: Any]
        XCTAssertEqual(meta?["data"] as? String, "SGVsbG8sIGF0dGFjaG1lbnQh")
        XCTAssertNil(meta?["stub"])
        let since = try get("/db/doc1?attachments=true&atts_since=%5B%22\(rev2)%22%5D").dict
        XCTAssertEqual(((since["_attachments"] as? [String: Any])?["hello.txt"] as? [String: Any])?["stub"] as? Bool, true)
        let sinceOld = try get("/db/doc1?attachments=true&atts_since=%5B%22\(rev1)%22%5D").dict
        XCTAssertNotNil(((sinceOld["_attachments"] as? [String: Any])?["hello.txt"] as? [String: Any])?["data"])

        expectError(try get("/db/doc1/nosuch.txt"), 404, "not_found", "Document is missing attachment")
        expectError(try get("/db/nodoc/hello.txt"), 404, "not_found", "missing")
        // A stale or missing rev conflicts.
        expectError(try request("PUT", "/db/doc1/other.txt?rev=\(rev1)", body: [1], headers: ["Content-Type": "application/octet-stream"]),
                    409, "conflict")
        expectError(try request("PUT", "/db/doc1/other.txt", body: [1]), 409, "conflict")
        expectError(try request("PUT", "/db/doc1/other.txt?rev=junk", body: [1]), 400, "bad_request", "Invalid rev format")

        // Old revisions keep their attachments; an update keeps the stub.
        let rev3 = try putDoc("/db/doc1", ["_rev": rev2, "n": 3, "_attachments": doc["_attachments"]!])
        XCTAssertEqual(try get("/db/doc1/hello.txt?rev=\(rev3)").text, "Hello, attachment!")

        let deleted = try request("DELETE", "/db/doc1/hello.txt?rev=\(rev3)")
        expect(deleted, 200)
        let rev4 = try XCTUnwrap(deleted.dict["rev"] as? String)
        XCTAssertTrue(rev4.hasPrefix("4-"))
        expectError(try get("/db/doc1/hello.txt"), 404, "not_found", "Document is missing attachment")
        XCTAssertNil(try get("/db/doc1").dict["_attachments"])
        XCTAssertEqual(try get("/db/doc1/hello.txt?rev=\(rev3)").text, "Hello, attachment!")
        expectError(try request("DELETE", "/db/doc1/hello.txt?rev=\(rev4)"), 404, "not_found", "Document is missing attachment")
        expectError(try request("DELETE", "/db/doc1/hello.txt"), 409, "conflict")
    }

    func testAttachmentOnNewDocumentAndUnusualNames() throws {
        let png = Data((0..<256).map { UInt8($0) })
        let put = try request("PUT", "/db/newdoc/dir/image.png", body: Array(png), headers: ["Content-Type": "image/png"])
        expect(put, 201)
        XCTAssertTrue((put.dict["rev"] as? String)?.hasPrefix("1-") ?? false)
        let got = try get("/db/newdoc/dir/image.png")
        XCTAssertEqual(Data(got.body), png)
        XCTAssertEqual(got.header("content-type"), "image/png")
        XCTAssertNotNil((try get("/db/newdoc").dict["_attachments"] as? [String: Any])?["dir/image.png"])

        // Names that look like paths are just names.
        let rev = try XCTUnwrap(put.dict["rev"] as? String)
        let evil = try request("PUT", "/db/newdoc/..%2F..%2Fescape.txt?rev=\(rev)", body: Array("x".utf8),
                               headers: ["Content-Type": "text/plain"])
        expect(evil, 201)
        XCTAssertEqual(try get("/db/newdoc/..%2F..%2Fescape.txt").text, "x")
        XCTAssertNotNil((try get("/db/newdoc").dict["_attachments"] as? [String: Any])?["../../escape.txt"])
        XCTAssertFalse(FileManager.default.fileExists(atPath: directory.deletingLastPathComponent().appendingPathComponent("escape.txt").path))
        let blobs = try FileManager.default.contentsOfDirectory(atPath: directory.appendingPathComponent("db.cblite2/attachments").path)
        XCTAssertTrue(blobs.allSatisfy { $0.hasSuffix(".blob") }, "\(blobs)")

        // Design documents have attachments too.
        let ddocRev = try putDoc("/db/_design/app", ["language": "javascript"])
        expect(try request("PUT", "/db/_design/app/index.html?rev=\(ddocRev)", body: Array("<h1>hi</h1>".utf8),
                           headers: ["Content-Type": "text/html"]), 201)
        XCTAssertEqual(try get("/db/_design/app/index.html").text, "<h1>hi</h1>")
    }

    func testInlineBase64Attachments() throws {
        let bytes = Data((0..<256).map { UInt8($0) })
        let put = try request("PUT", "/db/withatt", json: [
            "t": 1,
            "_attachments": ["a.bin": ["content_type": "application/octet-stream", "data": bytes.base64EncodedString()]],
        ])
        expect(put, 201)
        let stub = (try get("/db/withatt").dict["_attachments"] as? [String: Any])?["a.bin"] as? [String: Any]
        XCTAssertEqual(stub?["length"] as? Int, 256)
        XCTAssertEqual(stub?["revpos"] as? Int, 1)
        XCTAssertEqual(stub?["stub"] as? Bool, true)
        XCTAssertEqual(Data(try get("/db/withatt/a.bin").body), bytes)

        // gzip-encoded attachments are stored encoded and served decoded.
        let gz = Data(base64Encoded: "H4sIAAAAAAAAA8tIzcnJBwCGphA2BQAAAA==")!   // gzip("hello")
        expect(try request("PUT", "/db/gz", json: [
            "_attachments": ["h.txt": ["content_type": "text/plain", "encoding": "gzip", "data": gz.base64EncodedString()]],
        ]), 201)
        XCTAssertEqual(try get("/db/gz/h.txt").text, "hello")
        // How it is stored shows only with att_encoding_info, as in CouchDB.
        XCTAssertNil(((try get("/db/gz").dict["_attachments"] as? [String: Any])?["h.txt"] as? [String: Any])?["encoding"])
        let meta = (try get("/db/gz?att_encoding_info=true").dict["_attachments"] as? [String: Any])?["h.txt"] as? [String: Any]
        XCTAssertEqual(meta?["encoding"] as? String, "gzip")
        XCTAssertEqual(meta?["length"] as? Int, 5)
        let inline = (try get("/db/gz?attachments=true").dict["_attachments"] as? [String: Any])?["h.txt"] as? [String: Any]
        XCTAssertEqual(inline?["data"] as? String, Data("hello".utf8).base64EncodedString())

        expectError(try request("PUT", "/db/bad", json: ["_attachments": ["a": ["data": "!!!not base64!!!"]]]), 400, "bad_request")
        expectError(try request("PUT", "/db/bad", json: ["_attachments": ["a": ["stub": true, "digest": "sha1-AAAA"]]]), 400, "bad_request")
        expectError(try request("PUT", "/db/bad", json: ["_attachments": "nope"]), 400, "bad_request")
        expectError(try get("/db/bad"), 404, "not_found", "missing")
    }

    func testMultipartRelatedPutAndGet() throws {
        let boundary = "abc123"
        let json = #"{"title":"mp","_attachments":{"b.txt":{"follows":true,"content_type":"text/plain","length":3},"a.bin":{"follows":true,"content_type":"application/octet-stream","length":4}}}"#
        var body = "--\(boundary)\r\nContent-Type: application/json\r\n\r\n\(json)\r\n"
        body += "--\(boundary)\r\nContent-Disposition: attachment; filename=\"a.bin\"\r\n\r\nAAAA\r\n"
        body += "--\(boundary)\r\nContent-Disposition: attachment; filename=\"b.txt\"\r\n\r\nBBB\r\n"
        body += "--\(boundary)--"
        let put = try request("PUT", "/db/mp", body: Array(body.utf8),
                              headers: ["Content-Type": "multipart/related; boundary=\"\(boundary)\""])
        expect(put, 201)
        XCTAssertEqual(try get("/db/mp/a.bin").text, "AAAA")
        XCTAssertEqual(try get("/db/mp/b.txt").text, "BBB")

        // Unnamed parts follow the attachments in the order the JSON lists them, as CouchDB matches them.
        let unnamed = "--X\r\nContent-Type: application/json\r\n\r\n{\"_attachments\":{\"z\":{\"follows\":true},\"y\":{\"follows\":true}}}\r\n--X\r\n\r\nfor-z\r\n--X\r\n\r\nfor-y\r\n--X--\r\n"
        expect(try request("PUT", "/db/mp2", body: Array(unnamed.utf8), headers: ["Content-Type": "multipart/related; boundary=X"]), 201)
        XCTAssertEqual(try get("/db/mp2/y").text, "for-y")
        XCTAssertEqual(try get("/db/mp2/z").text, "for-z")
        expectError(try request("PUT", "/db/mp3", body: Array("--X\r\nnothing".utf8), headers: ["Content-Type": "multipart/related; boundary=X"]),
                    400, "bad_request")
        let missingPart = "--X\r\nContent-Type: application/json\r\n\r\n{\"_attachments\":{\"z\":{\"follows\":true}}}\r\n--X--"
        expectError(try request("PUT", "/db/mp3", body: Array(missingPart.utf8), headers: ["Content-Type": "multipart/related; boundary=X"]),
                    400, "bad_request")

        // GET with Accept: multipart/related returns the JSON part then the attachments.
        let got = try get("/db/mp?attachments=true", headers: ["Accept": "multipart/related"])
        expect(got, 200)
        let contentType = try XCTUnwrap(got.header("content-type"))
        XCTAssertTrue(contentType.hasPrefix("multipart/related"), contentType)
        let gotBoundary = try XCTUnwrap(contentType.components(separatedBy: "boundary=\"").last?.dropLast())
        let parts = got.text.components(separatedBy: "--\(gotBoundary)")
        // preamble, json, b.txt, a.bin (the order the document gave them, as CouchDB keeps it), closing
        XCTAssertEqual(parts.count, 5, got.text)
        XCTAssertTrue(parts[1].contains("\"follows\":true"))
        // b.txt (text/plain) is stored gzip-encoded: CouchDB sends it as stored, and says so.
        XCTAssertTrue(parts[2].contains("filename=\"b.txt\"") && parts[2].contains("Content-Encoding: gzip"), parts[2])
        XCTAssertTrue(parts[3].contains("filename=\"a.bin\"") && parts[3].contains("AAAA"), parts[3])
        XCTAssertTrue(parts[1].contains("\"encoding\":\"gzip\""), parts[1])
        // Without attachments=true it is plain JSON.
        XCTAssertEqual(try get("/db/mp", headers: ["Accept": "multipart/related"]).header("content-type"), "application/json")
    }
}
