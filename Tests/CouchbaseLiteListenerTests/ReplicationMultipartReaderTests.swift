import CouchbaseLite
import Crypto
import Foundation
import XCTest

/// The multipart reader the pull and the listener share (spec 9.4 "Multipart responses"):
/// CouchDB 3.4's recorded `open_revs` answers, and Sync-Gateway-shaped `_bulk_get` answers
/// built here the way Go's `mime/multipart` writes them.
final class ReplicationMultipartReaderTests: XCTestCase {
    // MARK: Recorded CouchDB answers

    /// The `open_revs` answers (`multipart/mixed`, one nested `multipart/related` per revision)
    /// CouchDB's source sent its replicator.
    private func recordedOpenRevsAnswers() throws -> [RecordedExchange] {
        let answers = try RecordedExchange.load("couchdb-pulls-from-couchdb.jsonl").filter {
            $0.path.contains("open_revs") && $0.status == 200
                && ($0.responseHeaders["Content-Type"] ?? "").hasPrefix("multipart/mixed")
        }
        XCTAssertEqual(answers.count, 3, "doc01, doc02 and doc03 carry attachments")
        return answers
    }

    func testCouchDBOpenRevsAnswersGiveTheDocumentsAndTheirAttachmentBytes() throws {
        var seen: [String: [String: [String: Any]]] = [:]
        for exchange in try recordedOpenRevsAnswers() {
            let contentType = try XCTUnwrap(exchange.responseHeaders["Content-Type"])
            let items = try MultipartDocument.items(body: exchange.responseBody, contentType: contentType)
            XCTAssertEqual(items.count, 1, exchange.label)
            guard case .document(let relatedItem)? = items.first, case let doc = relatedItem.foundation else { return XCTFail("not a document: \(exchange.label)") }

            // The document asked for, with its history.
            let docID = try XCTUnwrap(exchange.route.split(separator: "/").last.map(String.init))
            let query = try XCTUnwrap(URLComponents(string: exchange.path)?.queryItems)
            let asked = try XCTUnwrap(query.first { $0.name == "open_revs" }?.value)
            XCTAssertEqual(doc["_id"] as? String, docID)
            XCTAssertEqual(["\(doc["_rev"] as? String ?? "")"], try JSONSerialization.jsonObject(with: Data(asked.utf8)) as? [String])
            XCTAssertEqual((doc["_revisions"] as? [String: Any])?["start"] as? Int, 2)

            // Each attachment's body is the bytes of its part (found here by an independent
            // parser), and matches the MD5 digest CouchDB wrote.
            let outer = try MultipartBody.parts(exchange.responseBody, contentType: contentType)
            let related = try XCTUnwrap(outer.first).subparts()
            let announced = try XCTUnwrap(related.first?.dict["_attachments"] as? [String: [String: Any]])
            let attachments = try XCTUnwrap(doc["_attachments"] as? [String: [String: Any]])
            XCTAssertEqual(Set(attachments.keys), Set(announced.keys))
            for (name, meta) in attachments {
                let data = try XCTUnwrap(meta["data"] as? Data, "\(docID)/\(name) has its body")
                let part = try XCTUnwrap(related.first { $0.headers["content-disposition"]?.contains("\"\(name)\"") == true })
                XCTAssertEqual(data, Data(part.body), "\(docID)/\(name)")
                let digest = try XCTUnwrap(announced[name]?["digest"] as? String)
                XCTAssertEqual("md5-" + Data(Insecure.MD5.hash(data: data)).base64EncodedString(), digest)
                XCTAssertNil(meta["follows"])
                XCTAssertNil(meta["digest"], "the store computes its own SHA-1 digest")
            }
            seen[docID] = attachments
        }
        // README: doc01 21 bytes of text (CouchDB keeps it gzip-encoded, and says so), doc02
        // 120,000 bytes, doc03 3,000 bytes as image/png.
        let text = try XCTUnwrap(seen["doc01"]?["file0"])
        XCTAssertEqual(text["encoding"] as? String, "gzip", "an encoded part stays encoded when the metadata says so")
        XCTAssertEqual(try CBLDatabase.syncGunzip(try XCTUnwrap(text["data"] as? Data)), Data("plain text attachment".utf8))
        XCTAssertEqual(text["length"] as? Int, 21)
        XCTAssertEqual((seen["doc02"]?["file1"]?["data"] as? Data)?.count, 120_000)
        XCTAssertEqual((seen["doc03"]?["file2"]?["data"] as? Data)?.count, 3_000)
        XCTAssertEqual(seen["doc03"]?["file2"]?["content_type"] as? String, "image/png")
    }

    /// What the reader gives is what a database stores: the revisions go in with their history
    /// and their attachments read back intact (the encoded one too).
    func testCouchDBOpenRevsDocumentsInsertIntoADatabase() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cbl-mp-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let manager = try CBLManager(directory: directory.path)
        defer { manager.close() }
        let db = try manager.databaseNamed("pulled")
        for exchange in try recordedOpenRevsAnswers() {
            let items = try MultipartDocument.items(body: exchange.responseBody,
                                                    contentType: try XCTUnwrap(exchange.responseHeaders["Content-Type"]))
            guard case .document(let related)? = items.first, case let doc = related.foundation else { return XCTFail(exchange.label) }
            try db.syncInsertRevision(docID: try XCTUnwrap(doc["_id"] as? String), body: doc)
        }
        let text = try XCTUnwrap(db.existingDocument(withID: "doc01")?.currentRevision?.attachmentNamed("file0"))
        XCTAssertEqual(text.content, Data("plain text attachment".utf8))
        XCTAssertEqual(text.encoding, "gzip")
        XCTAssertEqual(db.existingDocument(withID: "doc02")?.currentRevision?.attachmentNamed("file1")?.length, 120_000)
        XCTAssertEqual(db.existingDocument(withID: "doc03")?.currentRevision?.attachmentNamed("file2")?.content?.count, 3_000)
        XCTAssertEqual(try db.existingDocument(withID: "doc02")?.getRevisionHistory().count, 2)
    }

    func testACutAnswerIsAClearErrorWhereverItIsCut() throws {
        let answers = try recordedOpenRevsAnswers()   // skips (outside XCTUnwrap) when the fixtures are absent
        let exchange = try XCTUnwrap(answers.first { $0.path.contains("doc02") })
        let body = exchange.responseBody
        let contentType = try XCTUnwrap(exchange.responseHeaders["Content-Type"])
        XCTAssertNoThrow(try MultipartDocument.items(body: body, contentType: contentType))
        // In the part headers, in the JSON, in the attachment, in the inner and outer closing delimiters.
        for cut in [40, 300, body.count / 2, body.count - 45, body.count - 20, body.count - 2] {
            XCTAssertThrowsError(try MultipartDocument.items(body: Array(body.prefix(cut)), contentType: contentType), "cut at \(cut)") { error in
                let e = error as? MultipartError
                XCTAssertEqual(e?.kind, .truncated, "cut at \(cut): \(error)")
                XCTAssertTrue(e?.message.hasPrefix("Truncated multipart body") == true, "\(error)")
            }
        }
    }

    func testACorruptedAttachmentFailsItsRevisionOnly() throws {
        let answers = try recordedOpenRevsAnswers()   // skips (outside XCTUnwrap) when the fixtures are absent
        let exchange = try XCTUnwrap(answers.first { $0.path.contains("doc02") })
        var body = exchange.responseBody
        body[body.count - 1000] ^= 0xFF
        let items = try MultipartDocument.items(body: body, contentType: try XCTUnwrap(exchange.responseHeaders["Content-Type"]))
        guard case .unreadable(let docID, let revID, let error)? = items.first else { return XCTFail("\(items)") }
        XCTAssertEqual(docID, "doc02")
        XCTAssertEqual(revID, "2-ab60d15fccd6a51d696ca98951478f2c")
        XCTAssertEqual(error.kind, .digestMismatch)
    }

    // MARK: Sync Gateway's `_bulk_get` shape

    /// A multipart body as Go's `mime/multipart` writes it (Sync Gateway): each part opened by
    /// `--boundary`, closed by CRLF; `--boundary--` and a CRLF at the end.
    static func multipart(_ parts: [([(String, String)], [UInt8])], boundary: String) -> [UInt8] {
        var out: [UInt8] = []
        for (index, (headers, body)) in parts.enumerated() {
            out += Array("\(index == 0 ? "" : "\r\n")--\(boundary)\r\n".utf8)
            for (name, value) in headers { out += Array("\(name): \(value)\r\n".utf8) }
            out += Array("\r\n".utf8) + body
        }
        return out + Array("\r\n--\(boundary)--\r\n".utf8)
    }

    static func json(_ value: Any) -> [UInt8] { Array(try! JSONSerialization.data(withJSONObject: value, options: [.sortedKeys])) }
    static func sha1(_ data: Data) -> String { "sha1-" + Data(Insecure.SHA1.hash(data: data)).base64EncodedString() }

    func testSyncGatewayShapedBulkGetAnswer() throws {
        let text = Data(String(repeating: "compressible ", count: 300).utf8)
        // Binary bodies that hold CRLFs and pieces of both delimiters (never a whole one: RFC
        // 2046 forbids that).
        var first = ReplicationTestCase.randomBytes(5_000, seed: 1)
        first.replaceSubrange(100..<130, with: Data("\r\n--inner-boun\r\nx--inner-bound--".utf8))
        let second = Data("\r\n--outer-boun".utf8) + ReplicationTestCase.randomBytes(7_000, seed: 2)
        let stored = try gzip(Data(String(repeating: "kept encoded ", count: 100).utf8))
        let related = Self.multipart([
            ([("Content-Type", "application/json"), ("Content-Encoding", "gzip")], Array(try gzip(Data(Self.json([
                "_id": "withatts", "_rev": "2-b", "_revisions": ["start": 2, "ids": ["b", "a"]],
                "_attachments": [
                    "a.txt": ["content_type": "text/plain", "digest": Self.sha1(text), "length": text.count, "follows": true, "revpos": 2],
                    "b.bin": ["digest": Self.sha1(first), "length": first.count, "follows": true, "revpos": 2],
                    "c.bin": ["digest": Self.sha1(second), "length": second.count, "follows": true, "revpos": 2],
                    "z.txt": ["digest": Self.sha1(stored), "encoding": "gzip", "length": 1300, "encoded_length": stored.count,
                              "follows": true, "revpos": 2],
                    "old.txt": ["stub": true, "revpos": 1, "digest": "sha1-AAAAAAAAAAAAAAAAAAAAAAAAAAA=", "length": 3],
                ],
            ]))))),
            ([("Content-Disposition", "attachment; filename=\"a.txt\""), ("Content-Type", "text/plain"), ("Content-Encoding", "gzip")],
             Array(try gzip(text))),
            // No filename: found by digest, although the names' order would pair them the other way.
            ([("Content-Type", "application/octet-stream")], Array(second)),
            ([("Content-Type", "application/octet-stream")], Array(first)),
            ([("Content-Disposition", "attachment; filename=\"z.txt\""), ("Content-Encoding", "gzip")], Array(stored)),
        ], boundary: "inner-bound")
        let badBody = Data("not what the digest says".utf8)
        let bad = Self.multipart([
            ([("Content-Type", "application/json")], Self.json([
                "_id": "bad", "_rev": "1-c",
                "_attachments": ["x": ["digest": Self.sha1(Data("something else".utf8)), "follows": true]],
            ])),
            ([("Content-Disposition", "attachment; filename=\"x\"")], Array(badBody)),
        ], boundary: "bad-bound")
        let garbled = Self.multipart([([("Content-Type", "application/json")], Array("{\"_id\": oops".utf8))], boundary: "g-bound")
        let body = Self.multipart([
            ([("Content-Type", "application/json")], Self.json(["_id": "plain", "_rev": "1-a", "n": 1])),
            ([("Content-Type", "multipart/related; boundary=\"inner-bound\""), ("X-Doc-Id", "withatts"), ("X-Rev-Id", "2-b")], related),
            ([("Content-Type", "application/json; error=\"true\"")],
             Self.json(["error": "not_found", "id": "gone", "reason": "missing", "rev": "1-dead", "status": 404])),
            ([("Content-Type", "multipart/related; boundary=bad-bound")], bad),
            ([("Content-Type", "application/json")], Self.json(["_id": "nobody", "_rev": "1-d", "_attachments": ["y": ["follows": true]]])),
            ([("Content-Type", "multipart/related; boundary=g-bound"), ("X-Doc-Id", "garbled"), ("X-Rev-Id", "1-e")], garbled),
        ], boundary: "outer-bound")

        let items = try MultipartDocument.items(body: body, contentType: "multipart/mixed; boundary=outer-bound")
        XCTAssertEqual(items.count, 6)
        guard items.count == 6 else { return }

        guard case .document(let plainDocument) = items[0], case let plain = plainDocument.foundation else { return XCTFail("\(items[0])") }
        XCTAssertEqual(plain["_id"] as? String, "plain")
        XCTAssertEqual(plain["n"] as? Int, 1)

        guard case .document(let related) = items[1], case let doc = related.foundation else { return XCTFail("\(items[1])") }
        XCTAssertEqual(doc["_rev"] as? String, "2-b", "the gzip-encoded JSON part is inflated")
        let atts = try XCTUnwrap(doc["_attachments"] as? [String: [String: Any]])
        XCTAssertEqual(atts["a.txt"]?["data"] as? Data, text, "a gzip part is inflated when the metadata has no encoding")
        XCTAssertEqual(atts["b.bin"]?["data"] as? Data, first, "matched by digest")
        XCTAssertEqual(atts["c.bin"]?["data"] as? Data, second, "matched by digest")
        XCTAssertEqual(atts["z.txt"]?["data"] as? Data, stored, "kept encoded: the metadata says encoding gzip")
        XCTAssertEqual(atts["z.txt"]?["encoding"] as? String, "gzip")
        XCTAssertEqual(atts["old.txt"]?["stub"] as? Bool, true, "stubs are left alone")
        XCTAssertNil(atts["old.txt"]?["data"])

        guard case .peerError(let error) = items[2] else { return XCTFail("\(items[2])") }
        XCTAssertEqual(error["id"]?.stringValue, "gone")
        XCTAssertEqual(error["status"]?.intValue, 404)

        guard case .unreadable(let badID, let badRev, let mismatch) = items[3] else { return XCTFail("\(items[3])") }
        XCTAssertEqual([badID, badRev], ["bad", "1-c"])
        XCTAssertEqual(mismatch.kind, .digestMismatch)

        guard case .unreadable(let noneID, _, let missing) = items[4] else { return XCTFail("\(items[4])") }
        XCTAssertEqual(noneID, "nobody")
        XCTAssertEqual(missing.kind, .missingAttachment)

        guard case .unreadable(let garbledID, let garbledRev, let badJSON) = items[5] else { return XCTFail("\(items[5])") }
        XCTAssertEqual([garbledID, garbledRev], ["garbled", "1-e"], "named by the part's X-Doc-Id/X-Rev-Id")
        XCTAssertEqual(badJSON.kind, .badContent)
    }

    func testANestedDocumentWithoutItsClosingDelimiterIsTruncated() throws {
        let inner = Array("--in\r\nContent-Type: application/json\r\n\r\n{\"_id\":\"a\",\"_rev\":\"1-a\"}".utf8)
        let body = Self.multipart([([("Content-Type", "multipart/related; boundary=in")], inner)], boundary: "out")
        XCTAssertThrowsError(try MultipartDocument.items(body: body, contentType: "multipart/mixed; boundary=out")) {
            XCTAssertEqual(($0 as? MultipartError)?.kind, .truncated)
        }
    }

    func testWhatIsNotAMultipartBodyIsMalformed() {
        for (body, type) in [("{}", "application/json"), ("--x\r\n\r\n{}\r\n--x--", "multipart/mixed"),
                             ("just text, no delimiter", "multipart/mixed; boundary=x")] {
            XCTAssertThrowsError(try MultipartDocument.items(body: Array(body.utf8), contentType: type), type) {
                XCTAssertEqual(($0 as? MultipartError)?.kind, .malformed, "\(type): \($0)")
            }
        }
    }

    /// Bodies of every size come out byte for byte, including ones that hold pieces of the
    /// delimiter (a CR, `\r\n--`, the boundary without its leading CRLF).
    func testLargeBodiesAndDelimiterLookalikes() throws {
        for size in [0, 1, 65_536 - 5, 3 * 65_536 + 17, 2_500_000] {
            var blob = Array(ReplicationTestCase.randomBytes(size, seed: UInt64(size)))
            if size > 1000 { blob.replaceSubrange(500..<540, with: Array("\r\r\n--b0undar\r\n-\r\nx--b0undary--\r\n--b0undarX".utf8)) }
            let body = Self.multipart([([("Content-Type", "application/octet-stream")], blob),
                                       ([("Content-Type", "text/plain")], Array("tail".utf8))], boundary: "b0undary")
            let parts = try MultipartReader.parts(of: body, contentType: "multipart/mixed; boundary=\"b0undary\"")
            XCTAssertEqual(parts.count, 2, "\(size)")
            XCTAssertEqual(parts.first?.bodyBytes, blob, "\(size)")
            XCTAssertEqual(parts.last?.bodyBytes, Array("tail".utf8))
        }
    }

    /// Bytes a header name may not hold are a malformed body (MultipartKit 4.7.1's parser
    /// traps on a byte ≥ 0x80 there, which is why it is not used).
    func testHostileHeaderBytesAreMalformedNotACrash() {
        var body = Array("--x\r\n".utf8) + [0xC3, 0xBC] + Array("-Name: v\r\n\r\nbody\r\n--x\r\nNo colon here\r\n\r\nb\r\n--x--".utf8)
        XCTAssertThrowsError(try MultipartReader.parts(of: body, contentType: "multipart/mixed; boundary=x")) {
            XCTAssertEqual(($0 as? MultipartError)?.kind, .malformed, "\($0)")
        }
        body = Array("--x\r\n".utf8) + [0xC3, 0xBC] + Array("-Name: \u{FF}v\r\n\r\nbody\r\n--x--".utf8)
        XCTAssertEqual(try MultipartReader.parts(of: body, contentType: "multipart/mixed; boundary=x").first?.bodyBytes,
                       Array("body".utf8))
    }

    func testHeaderParameters() {
        XCTAssertEqual(MIMEHeader.parameter("filename", in: #"attachment; filename="a;b "c".txt""#), #"a;b "c".txt"#)
        XCTAssertEqual(MIMEHeader.parameter("boundary", in: "multipart/related; Boundary=xyz ; charset=utf-8"), "xyz")
        XCTAssertEqual(MIMEHeader.mediaType("Multipart/Related ; boundary=x"), "multipart/related")
        XCTAssertNil(MIMEHeader.parameter("boundary", in: "multipart/related"))
    }
}
