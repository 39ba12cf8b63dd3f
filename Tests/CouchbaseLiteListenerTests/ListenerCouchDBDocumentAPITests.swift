import CouchbaseLite
import CouchbaseLiteListener
import Foundation
import XCTest

/// The document API as CouchDB 3.4 answers it (issue 18, part B, items 1–7), each expectation
/// taken from CouchDB's own HTTP tests (test/elixir/test/*.exs) or chttpd_db.erl, against a
/// real listener on 127.0.0.1.
final class ListenerCouchDBDocumentAPITests: ListenerTestCase {
    private func ids(_ result: HTTPResult) -> [String] {
        (result.dict["rows"] as? [[String: Any]] ?? []).map { ($0["id"] ?? $0["key"]) as? String ?? "?" }
    }

    private func bulk(_ docs: [[String: Any]], db: String = "db") throws {
        expect(try request("POST", "/\(db)/_bulk_docs", json: ["docs": docs]), 201)
    }

    // MARK: B1 _all_docs, _design_docs, _local_docs, _all_dbs

    /// view_multi_key_all_docs, all_docs "POST with keys and limit": `keys` with `limit`,
    /// `skip`, `descending`, in the keys' order; non-string keys answer not_found rows.
    func testB1AllDocsKeysWithLimitSkipDescending() throws {
        try createDB()
        try bulk((0..<100).map { ["_id": String($0), "integer": $0] })
        let keys = ["10", "15", "30", "37", "50"]
        XCTAssertEqual(ids(try request("POST", "/db/_all_docs", json: ["keys": keys])), keys)
        XCTAssertEqual(ids(try request("POST", "/db/_all_docs?limit=1", json: ["keys": keys])), ["10"])
        XCTAssertEqual(ids(try request("POST", "/db/_all_docs?skip=2", json: ["keys": keys])), ["30", "37", "50"])
        XCTAssertEqual(ids(try request("POST", "/db/_all_docs?descending=true", json: ["keys": keys])), keys.reversed())
        XCTAssertEqual(ids(try request("POST", "/db/_all_docs", json: ["keys": keys, "descending": "true", "skip": 3, "limit": 1])), ["15"])
        let encoded = "%5B%2210%22%2C%2215%22%2C%2230%22%2C%2237%22%2C%2250%22%5D"
        XCTAssertEqual(ids(try get("/db/_all_docs?limit=1&keys=\(encoded)")), ["10"])
        XCTAssertEqual(ids(try get("/db/_all_docs?skip=2&descending=true&keys=\(encoded)")), ["30", "15", "10"])
        // The URL's limit wins over the body's.
        XCTAssertEqual(ids(try request("POST", "/db/_all_docs?limit=1", json: ["keys": keys, "limit": 2])), ["10"])

        let mixed = try request("POST", "/db/_all_docs", json: ["keys": [1, "10", NSNull(), "nope"], "limit": 3])
        expect(mixed, 200)
        XCTAssertTrue(jsonEqual(mixed.dict["rows"], [
            ["key": 1, "error": "not_found"],
            ["id": "10", "key": "10", "value": ["rev": (try get("/db/10").dict["_rev"] as? String) ?? ""]],
            ["key": NSNull(), "error": "not_found"],
        ]))
        XCTAssertTrue(mixed.dict["offset"] is NSNull)
    }

    /// design_docs_query: `total_rows` counts design documents; `inclusive_end=false`, also
    /// descending; `keys` and `limit`; POST.
    func testB1DesignDocs() throws {
        try createDB()
        try bulk((1...5).map { ["_id": "doc\($0)"] })
        try bulk((1...5).map { ["_id": "_design/ddoc0\($0)", "views": ["testing": ["map": "function(){emit(1,1)}"]]] })
        let all = try get("/db/_design_docs")
        expect(all, 200)
        XCTAssertEqual(all.dict["total_rows"] as? Int, 5)
        XCTAssertEqual(ids(all), (1...5).map { "_design/ddoc0\($0)" })
        XCTAssertEqual(ids(try get("/db/_design_docs?end_key=%22_design/ddoc03%22&inclusive_end=false")),
                       ["_design/ddoc01", "_design/ddoc02"])
        XCTAssertEqual(ids(try get("/db/_design_docs?end_key=%22_design/ddoc03%22&inclusive_end=false&descending=true")),
                       ["_design/ddoc05", "_design/ddoc04"])
        XCTAssertEqual(ids(try get("/db/_design_docs?end_key=%22_design/ddoc03%22")),
                       ["_design/ddoc01", "_design/ddoc02", "_design/ddoc03"])
        XCTAssertEqual(ids(try get("/db/_design_docs?start_key=%22_design/ddoc03%22")),
                       ["_design/ddoc03", "_design/ddoc04", "_design/ddoc05"])
        XCTAssertEqual(ids(try get("/db/_design_docs?descending=true")).first, "_design/ddoc05")
        XCTAssertEqual(ids(try get("/db/_design_docs?end_key=%22_design/ddoc05%22&skip=2")),
                       ["_design/ddoc03", "_design/ddoc04", "_design/ddoc05"])
        XCTAssertEqual(ids(try request("POST", "/db/_design_docs", json: ["keys": ["_design/ddoc02", "_design/ddoc03"], "limit": 1])),
                       ["_design/ddoc02"])
        XCTAssertEqual(ids(try request("POST", "/db/_design_docs?limit=0", json: ["keys": ["_design/ddoc02"], "limit": 2])), [])
        XCTAssertNotNil(try get("/db/_design_docs?update_seq=true").dict["update_seq"])
    }

    /// local_docs_test: the local documents as rows, with `keys`, `limit`, POST.
    func testB1LocalDocs() throws {
        try createDB()
        let rev = try putDoc("/db/_local/foo", ["bar": "baz"])
        try putDoc("/db/_local/foo2", ["bar": "baz2"])
        let all = try get("/db/_local_docs")
        expect(all, 200)
        XCTAssertTrue(jsonEqual(all.json, ["total_rows": NSNull(), "offset": NSNull(), "rows": [
            ["id": "_local/foo", "key": "_local/foo", "value": ["rev": rev]],
            ["id": "_local/foo2", "key": "_local/foo2", "value": ["rev": "1-local"]],
        ]]))
        XCTAssertEqual(ids(try get("/db/_local_docs?keys=%5B%22_local/foo%22,%22_local/foo2%22%5D")), ["_local/foo", "_local/foo2"])
        XCTAssertEqual(ids(try request("POST", "/db/_local_docs", json: [String: Any]())).count, 2)
        XCTAssertEqual(ids(try request("POST", "/db/_local_docs", json: ["keys": ["_local/foo", "_local/foo2"], "limit": 1])), ["_local/foo"])
        XCTAssertEqual(ids(try request("POST", "/db/_local_docs?limit=0", json: ["keys": ["_local/foo"], "limit": 2])), [])
        XCTAssertEqual(ids(try get("/db/_local_docs?descending=true&include_docs=true")), ["_local/foo2", "_local/foo"])
        let withDocs = try get("/db/_local_docs?include_docs=true&limit=1").dict["rows"] as? [[String: Any]]
        XCTAssertTrue(jsonEqual(withDocs?.first?["doc"], ["_id": "_local/foo", "_rev": rev, "bar": "baz"]))
        // Local documents are not documents.
        XCTAssertEqual(try get("/db/_all_docs").dict["total_rows"] as? Int, 0)
    }

    /// basics_test "Limit and skip should work in _all_dbs", plus the key range options.
    func testB1AllDbsOptions() throws {
        for name in ["alpha", "beta", "gamma", "delta"] { try createDB(name) }
        XCTAssertEqual(try get("/_all_dbs").array as? [String], ["alpha", "beta", "delta", "gamma"])
        XCTAssertEqual(try get("/_all_dbs?limit=0").array.count, 0)
        XCTAssertEqual(try get("/_all_dbs?limit=1").array as? [String], ["alpha"])
        XCTAssertEqual(try get("/_all_dbs?skip=1").array as? [String], ["beta", "delta", "gamma"])
        XCTAssertEqual(try get("/_all_dbs?descending=true&limit=2").array as? [String], ["gamma", "delta"])
        XCTAssertEqual(try get("/_all_dbs?start_key=%22beta%22&limit=1").array as? [String], ["beta"])
        XCTAssertEqual(try get("/_all_dbs?startkey=%22b%22&endkey=%22delta%22").array as? [String], ["beta", "delta"])
        XCTAssertEqual(try get("/_all_dbs?startkey=%22delta%22&descending=true").array as? [String], ["delta", "beta", "alpha"])
        XCTAssertEqual(try get("/_all_dbs?endkey=%22delta%22&inclusive_end=false").array as? [String], ["alpha", "beta"])
        expectError(try get("/_all_dbs?limit=x"), 400, "query_parse_error")
    }

    // MARK: B2 Status codes, error names and reasons

    /// basics_test "DELETE'ing a non-existent doc should 404": a write to a document that does
    /// not exist is a 404, not a 409.
    func testB2WriteToMissingDocumentIs404() throws {
        try createDB()
        expectError(try request("DELETE", "/db/doc-does-not-exist"), 404, "not_found", "missing")
        expectError(try request("DELETE", "/db/doc-does-not-exist?rev=1-abc"), 404, "not_found", "missing")
        let rev = try putDoc("/db/gone", ["v": 1])
        let deleted = try request("DELETE", "/db/gone?rev=\(rev)")
        expect(deleted, 200)
        expectError(try request("DELETE", "/db/gone?rev=\(deleted.dict["rev"] as? String ?? "")"), 404, "not_found", "deleted")
        // An existing document without a revision is still a conflict.
        try putDoc("/db/here", ["v": 1])
        expectError(try request("DELETE", "/db/here"), 409, "conflict")
        // attachments_test "delete attachment": an unknown revision is 409 not_found/missing_rev.
        expectError(try request("DELETE", "/db/here/att.txt?rev=4-garbage"), 409, "not_found", "missing_rev")
        expectError(try request("PUT", "/db/here/att.txt?rev=1-adae8575ecea588919bd08eb020c708e", body: Array("x".utf8),
                                headers: ["Content-Type": "text/plain"]), 409, "not_found", "missing_rev")
        expectError(try request("PUT", "/db/here/att.txt", body: Array("x".utf8), headers: ["Content-Type": "text/plain"]),
                    409, "conflict")
    }

    /// invalid_docids_test and couch_doc:validate_docid: each invalid ID with CouchDB's reason.
    func testB2InvalidDocumentIDs() throws {
        try createDB()
        let underscore = "Only reserved document ids may start with underscore."
        expectError(try request("PUT", "/db/_foo", json: ["x": 1]), 400, "illegal_docid", underscore)
        expectError(try request("PUT", "/db/_other", json: [String: Any]()), 400, "illegal_docid", underscore)
        expectError(try request("PUT", "/db/_tmp_view", json: [String: Any]()), 400, "illegal_docid", underscore)
        expectError(try request("POST", "/db", json: ["_id": "_invalid"]), 400, "illegal_docid", underscore)
        expectError(try request("POST", "/db", json: ["_id": 1]), 400, "illegal_docid", "Document id must be a string")
        expectError(try request("POST", "/db", json: ["_id": ""]), 400, "illegal_docid", "Document id must not be empty")
        expectError(try request("POST", "/db", json: ["_id": "_design/"]), 400, "illegal_docid", "Illegal document id `_design/`")
        expectError(try request("POST", "/db", json: ["_id": "_local/"]), 400, "illegal_docid", "Illegal document id `_local/`")
        expectError(try request("PUT", "/db/_design%2F", json: [String: Any]()), 400, "illegal_docid", "Illegal document id `_design/`")
        expectError(try request("PUT", "/db/caf%E9", json: [String: Any]()), 400, "illegal_docid", "Document id must be valid UTF-8")
        for path in ["/db/_local", "/db/_local/", "/db/_local%2F", "/db/_local/foo/bar"] {
            let r = try request("PUT", path, json: [String: Any]())
            XCTAssertEqual(r.status, 400, path)
            XCTAssertEqual(r.dict["error"] as? String, "bad_request", path)
        }
        expectError(try request("POST", "/db/_bulk_docs", json: ["docs": [["_id": "_invalid"]]]), 400, "illegal_docid", underscore)
        // Reserved prefixes are fine in _bulk_docs: a design and a local document.
        expect(try request("POST", "/db/_bulk_docs", json: ["docs": [["_id": "_design/foo"], ["_id": "_local/bar"]]]), 201)
        XCTAssertEqual(try get("/db/_design/foo").dict["_id"] as? String, "_design/foo")
        XCTAssertEqual(try get("/db/_local/bar").dict["_id"] as? String, "_local/bar")
    }

    /// couch_mrview_http: bad row options are `400 query_parse_error` with CouchDB's reasons.
    func testB2BadViewOptionsAreQueryParseErrors() throws {
        let db = try createDB()
        _ = db.viewNamed("d/v").setMapBlock({ doc, emit in emit(doc["n"] as Any, nil) }, version: "1")
        try putDoc("/db/a", ["n": 1])
        expectError(try get("/db/_all_docs?limit=abc"), 400, "query_parse_error", "Invalid value for integer: \"abc\"")
        expectError(try get("/db/_all_docs?limit=-1"), 400, "query_parse_error", "Invalid value for positive integer: \"-1\"")
        expectError(try get("/db/_all_docs?skip=x"), 400, "query_parse_error")
        expectError(try get("/db/_all_docs?descending=maybe"), 400, "query_parse_error", "Invalid boolean parameter: \"maybe\"")
        expectError(try get("/db/_all_docs?include_docs=2"), 400, "query_parse_error")
        expectError(try request("POST", "/db/_all_docs?key=%22a%22", json: ["keys": ["a", "b"]]), 400, "query_parse_error",
                    "`keys` is incompatible with `key`, `start_key` and `end_key`")
        // One key is a range of its own: CouchDB 3.4 answers it beside `key`.
        expect(try request("POST", "/db/_all_docs?key=%22a%22", json: ["keys": ["a"]]), 200)
        expectError(try get("/db/_all_docs?startkey=%22b%22&endkey=%22a%22"), 400, "query_parse_error",
                    "No rows can match your key range, reverse your start_key and end_key or set descending=true")
        expectError(try get("/db/_design/d/_view/v?limit=abc"), 400, "query_parse_error")
        expectError(try get("/db/_design/d/_view/v?inclusive_end=yes"), 400, "query_parse_error")
        expectError(try get("/db/_design/d/_view/v?group_level=-2"), 400, "query_parse_error")
        expect(try get("/db/_design/d/_view/v?limit=1&descending=true"), 200)
    }

    // MARK: B3 Endpoints

    /// rev_stemming_test: `_revs_limit` reads and sets 1.x's maxRevTreeDepth, and edits prune to it.
    func testB3RevsLimit() throws {
        let db = try createDB()
        XCTAssertEqual(try get("/db/_revs_limit").json as? Int, 20)
        var rev = try putDoc("/db/foo", ["count": 0])
        for i in 1..<8 { rev = try putDoc("/db/foo", ["_rev": rev, "count": i]) }
        XCTAssertEqual(((try get("/db/foo?revs=true").dict["_revisions"] as? [String: Any])?["ids"] as? [Any])?.count, 8)

        let set = try request("PUT", "/db/_revs_limit", body: Array("5".utf8), headers: ["Content-Type": "application/json"])
        expect(set, 200)
        XCTAssertTrue(jsonEqual(set.json, ["ok": true]))
        XCTAssertEqual(try get("/db/_revs_limit").json as? Int, 5)
        XCTAssertEqual(db.maxRevTreeDepth, 5)
        rev = try putDoc("/db/foo", ["_rev": rev, "count": 8])
        XCTAssertEqual(((try get("/db/foo?revs=true").dict["_revisions"] as? [String: Any])?["ids"] as? [Any])?.count, 5)
        expectError(try request("PUT", "/db/_revs_limit", body: Array("\"x\"".utf8), headers: ["Content-Type": "application/json"]),
                    400, "bad_request")
        expectError(try request("PUT", "/db/_revs_limit", body: Array("0".utf8), headers: ["Content-Type": "application/json"]),
                    400, "bad_request")
        expectError(try request("POST", "/db/_revs_limit", json: 5), 405, "method_not_allowed")
    }

    /// purge_test, compact_test: `_purge`'s CouchDB 3 shape, `_compact` 202, `_ensure_full_commit`
    /// 201 with `instance_start_time` "0"; database info sizes distinct and plausible.
    func testB3PurgeCompactEnsureFullCommitAndSizes() throws {
        try createDB()
        try bulk((0..<20).map { ["_id": "d\($0)", "text": String(repeating: "x", count: 200)] })
        let att = Data(String(repeating: "This is plain text", count: 100).utf8).base64EncodedString()
        try putDoc("/db/att_doc", ["_attachments": ["foo.txt": ["content_type": "text/plain", "data": att]]])
        let info = try get("/db").dict
        let sizes = try XCTUnwrap(info["sizes"] as? [String: Int])
        let (file, active, external) = (sizes["file"] ?? 0, sizes["active"] ?? 0, sizes["external"] ?? 0)
        // The text attachment counts as stored, gzip-encoded (CouchDB 3.4.3: 54 bytes of it).
        XCTAssertGreaterThan(external, 20 * 200 + 54)
        XCTAssertGreaterThan(active, external)
        XCTAssertGreaterThan(file, active)
        XCTAssertEqual(info["data_size"] as? Int, active)
        XCTAssertEqual(info["disk_size"] as? Int, file)

        let d1 = try XCTUnwrap(try get("/db/d1").dict["_rev"] as? String)
        let purge = try request("POST", "/db/_purge", json: ["d1": [d1], "nosuch": ["1-abc"]])
        expect(purge, 201)
        XCTAssertTrue(jsonEqual(purge.json, ["purge_seq": NSNull(), "purged": ["d1": [d1], "nosuch": [String]()]]))
        expectError(try get("/db/d1"), 404, "not_found", "missing")
        expectError(try request("GET", "/db/_purge"), 405, "method_not_allowed")

        let compact = try request("POST", "/db/_compact", json: [String: Any]())
        expect(compact, 202)
        XCTAssertTrue(jsonEqual(compact.json, ["ok": true]))
        let commit = try request("POST", "/db/_ensure_full_commit", json: [String: Any]())
        expect(commit, 201)
        XCTAssertTrue(jsonEqual(commit.json, ["ok": true, "instance_start_time": "0"]))
        expectError(try get("/db/_ensure_full_commit"), 405, "method_not_allowed")
        XCTAssertEqual(try get("/db/att_doc/foo.txt").text, String(repeating: "This is plain text", count: 100))
    }

    // MARK: B4 Request forms

    /// copy_doc_test.
    func testB4CopyWithDestination() throws {
        try createDB()
        try putDoc("/db/doc_to_be_copied", ["v": 1, "_attachments": ["a.txt": ["content_type": "text/plain",
                                                                              "data": Data("hello".utf8).base64EncodedString()]]])
        let copied = try request("COPY", "/db/doc_to_be_copied", headers: ["Destination": "doc_that_was_copied"])
        expect(copied, 201)
        XCTAssertEqual(copied.dict["ok"] as? Bool, true)
        XCTAssertEqual(copied.dict["id"] as? String, "doc_that_was_copied")
        XCTAssertEqual(copied.header("etag"), "\"\(copied.dict["rev"] as? String ?? "")\"")
        XCTAssertTrue(copied.header("location")?.hasSuffix("/db/doc_that_was_copied") ?? false)
        XCTAssertEqual(try get("/db/doc_that_was_copied").dict["v"] as? Int, 1)
        XCTAssertEqual(try get("/db/doc_that_was_copied/a.txt").text, "hello")

        try putDoc("/db/doc_to_be_copied2", ["v": 1])
        let rev = try putDoc("/db/doc_to_be_overwritten", ["v": 2])
        expectError(try request("COPY", "/db/doc_to_be_copied2", headers: ["Destination": "doc_to_be_overwritten"]), 409, "conflict")
        expectError(try request("COPY", "/db/doc_to_be_copied2"), 400, "bad_request", "Destination header is mandatory for COPY.")
        expectError(try request("COPY", "/db/doc_to_be_copied2", headers: ["Destination": "http://localhost:5984/db/x"]),
                    400, "bad_request", "Destination URL must be relative.")
        expectError(try request("COPY", "/db/doc_to_be_copied2", headers: ["Destination": "_invalid_doc_id?rev=\(rev)"]),
                    400, "illegal_docid", "Only reserved document ids may start with underscore.")
        expect(try request("COPY", "/db/doc_to_be_copied2", headers: ["Destination": "doc_to_be_overwritten?rev=\(rev)"]), 201)
        let overwritten = try get("/db/doc_to_be_overwritten").dict
        XCTAssertNotEqual(overwritten["_rev"] as? String, rev)
        XCTAssertEqual(overwritten["v"] as? Int, 1)
        expectError(try request("COPY", "/db/nosuch", headers: ["Destination": "x"]), 404, "not_found")
    }

    /// method_override_test.
    func testB4MethodOverride() throws {
        try createDB()
        expect(try request("POST", "/db/fnord", json: ["bob": "connie"], headers: ["X-HTTP-Method-Override": "PUT"]), 201)
        let doc = try get("/db/fnord")
        XCTAssertEqual(doc.dict["bob"] as? String, "connie")
        let rev = doc.dict["_rev"] as? String ?? ""
        expect(try request("POST", "/db/fnord?rev=\(rev)", headers: ["X-HTTP-Method-Override": "DELETE"]), 200)
        expectError(try get("/db/fnord"), 404, "not_found", "deleted")
        // Only a POST is overridden.
        expectError(try request("GET", "/db/fnord2", headers: ["X-HTTP-Method-Override": "PUT"]), 404, "not_found")
    }

    /// attachments_test "attachment via multipart/form-data" and form_submit_test.
    func testB4FormDataUpload() throws {
        try createDB()
        let rev = try putDoc("/db/form_data_doc", ["_id": "form_data_doc", "keep": true])
        let body = "------TF\r\n" +
            "Content-Disposition: form-data; name=\"_rev\"\r\n\r\n" + rev + "\r\n" +
            "------TF\r\n" +
            "Content-Disposition: form-data; name=\"_attachments\"; filename=\"file.txt\"\r\n" +
            "Content-Type: text/plain\r\n\r\n" +
            "contents of file.txt\r\n\r\n" + "------TF--"
        let referer = "http://127.0.0.1:\(listener.port)"
        let posted = try request("POST", "/db/form_data_doc", body: Array(body.utf8),
                                 headers: ["Referer": referer, "Content-Type": "multipart/form-data; boundary=----TF"])
        expect(posted, 201)
        XCTAssertEqual(posted.dict["ok"] as? Bool, true)
        let newRev = try XCTUnwrap(posted.dict["rev"] as? String)
        XCTAssertTrue(newRev.hasPrefix("2-"))
        XCTAssertEqual(posted.header("etag"), "\"\(newRev)\"")
        let doc = try get("/db/form_data_doc").dict
        XCTAssertEqual(doc["keep"] as? Bool, true)
        let meta = (doc["_attachments"] as? [String: Any])?["file.txt"] as? [String: Any]
        XCTAssertEqual(meta?["length"] as? Int, 22)
        XCTAssertEqual(meta?["content_type"] as? String, "text/plain")
        XCTAssertEqual(try get("/db/form_data_doc/file.txt").text, "contents of file.txt\r\n")

        expectError(try request("POST", "/db/baz", json: [String: Any](),
                                headers: ["Referer": referer, "Content-Type": "application/x-www-form-urlencoded"]),
                    415, "bad_content_type", "Content-Type must be multipart/form-data")
        expectError(try request("POST", "/db/form_data_doc", body: Array(body.utf8),
                                headers: ["Content-Type": "multipart/form-data; boundary=----TF"]),
                    400, "bad_request", "Referer header required.")
        expectError(try request("POST", "/db/form_data_doc", body: Array(body.utf8),
                                headers: ["Referer": "http://evil.example/", "Content-Type": "multipart/form-data; boundary=----TF"]),
                    400, "bad_request", "Referer header must match host.")
    }

    // MARK: B5 Headers

    /// basics_test: every answer carries `X-Couch-Request-ID` (the client's when given) and
    /// `X-CouchDB-Body-Time`; a 304 has `Content-Length: 0`; weak `If-None-Match` matches.
    func testB5RequestIDAndConditionalGets() throws {
        try createDB()
        let rev = try putDoc("/db/foo", ["a": 1])
        for result in [try get("/"), try get("/db/foo"), try get("/db/nosuch"), try request("HEAD", "/db/foo?open_revs=all")] {
            let id = try XCTUnwrap(result.header("x-couch-request-id"))
            XCTAssertEqual(id.count, 10)
            XCTAssertNotNil(result.header("x-couchdb-body-time"))
        }
        let uuid = "E7498DE1-B661-42FA-943D-17F890143068"
        XCTAssertEqual(try get("/", headers: ["X-Couch-Request-ID": uuid]).header("x-couch-request-id"), uuid)

        let etag = "\"\(rev)\""
        let notModified = try get("/db/foo", headers: ["If-None-Match": etag])
        XCTAssertEqual(notModified.status, 304)
        // CouchDB sends `Content-Length: 0` (put back below SwiftNIO's encoder, which drops it).
        XCTAssertEqual(notModified.header("content-length"), "0")
        XCTAssertEqual(notModified.body, [])
        XCTAssertEqual(notModified.header("etag"), etag)
        let raw = try client.exchange(Array("GET /db/foo HTTP/1.1\r\nHost: 127.0.0.1\r\nIf-None-Match: \(etag)\r\nConnection: close\r\n\r\n".utf8),
                                      timeout: 10)
        let head = String(decoding: raw, as: UTF8.self).lowercased()
        XCTAssertTrue(head.hasPrefix("http/1.1 304 not modified\r\n"), head)
        XCTAssertEqual(head.components(separatedBy: "\r\ncontent-length: 0\r\n").count - 1, 1, head)
        XCTAssertTrue(head.hasSuffix("\r\n\r\n"), head)
        XCTAssertEqual(try get("/db/foo", headers: ["If-None-Match": "W/\(etag)"]).status, 304)
        XCTAssertEqual(try get("/db/foo", headers: ["If-None-Match": "\"other\", W/\(etag)"]).status, 304)
        XCTAssertEqual(try get("/db/foo", headers: ["If-None-Match": "s"]).status, 200)
        XCTAssertEqual(try request("HEAD", "/db/foo", headers: ["If-None-Match": "s"]).header("etag"), etag)
    }

    /// http_test "location header should include X-Forwarded-Host".
    func testB5ForwardedHostInLocation() throws {
        try createDB()
        let created = try request("PUT", "/db/test2", json: [String: Any](), headers: ["X-Forwarded-Host": "mysite.com"])
        expect(created, 201)
        XCTAssertEqual(created.header("location"), "http://mysite.com/db/test2")
        XCTAssertEqual(try request("PUT", "/db/test3", json: [String: Any]()).header("location"),
                       "http://127.0.0.1:\(listener.port)/db/test3")
    }

    /// uuids_test "cache busting headers are set": one `Cache-Control`, `Pragma`, an ETag.
    func testB5UUIDsCacheHeaders() throws {
        let raw = try client.exchange(Array("GET /_uuids?count=2 HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".utf8),
                                      timeout: 10)
        let head = String(decoding: raw, as: UTF8.self).components(separatedBy: "\r\n\r\n")[0].lowercased()
        XCTAssertEqual(head.components(separatedBy: "\r\ncache-control:").count - 1, 1, head)
        let uuids = try get("/_uuids?count=2")
        XCTAssertEqual(uuids.header("cache-control"), "no-cache")
        XCTAssertEqual(uuids.header("pragma"), "no-cache")
        XCTAssertFalse(uuids.header("etag")?.isEmpty ?? true)
        XCTAssertEqual((uuids.dict["uuids"] as? [String])?.count, 2)
        expectError(try get("/_uuids?count=1001"), 400, "bad_request", "count parameter too large")
        expectError(try request("POST", "/_uuids"), 405, "method_not_allowed")
    }

    /// attachment_ranges_test, and the attachment ETag of attachments_test.
    func testB5AttachmentRangesAndETag() throws {
        try createDB()
        try putDoc("/db/bin_doc", ["_attachments": ["foo.txt": ["content_type": "application/octet-stream",
                                                               "data": "VGhpcyBpcyBhIGJhc2U2NCBlbmNvZGVkIHRleHQ="]]])
        func range(_ value: String) throws -> HTTPResult { try get("/db/bin_doc/foo.txt", headers: ["Range": value]) }
        var r = try range("bytes=0-28")
        XCTAssertEqual(r.status, 206)
        XCTAssertEqual(r.text, "This is a base64 encoded text")
        XCTAssertEqual(r.header("content-range"), "bytes 0-28/29")
        XCTAssertEqual(r.header("content-length"), "29")
        r = try range("bytes=0-")
        XCTAssertEqual(r.status, 200)
        XCTAssertNil(r.header("content-range"))
        XCTAssertEqual(r.header("content-length"), "29")
        XCTAssertEqual(try range("bytes=0-,0-,0-").status, 200)
        XCTAssertEqual(try range("bytes:0-").status, 200)
        r = try range("bytes=2-")
        XCTAssertEqual(r.status, 206)
        XCTAssertEqual(r.text, "is is a base64 encoded text")
        XCTAssertEqual(r.header("content-range"), "bytes 2-28/29")
        r = try range("bytes=10-15")
        XCTAssertEqual(r.text, "base64")
        XCTAssertEqual(r.header("content-range"), "bytes 10-15/29")
        r = try range("bytes=-3")
        XCTAssertEqual(r.text, "ext")
        XCTAssertEqual(r.header("content-range"), "bytes 26-28/29")
        expectError(try range("bytes=5-3"), 416, "requested_range_not_satisfiable", "Requested range not satisfiable")
        XCTAssertEqual(try range("bytes=300-310").status, 416)
        XCTAssertEqual(try range("bytes=0-1,0-1,0-1,0-1,0-1,0-1,0-1,0-1,0-1,0-1").status, 200)

        r = try range("bytes=0-3,10-15")
        XCTAssertEqual(r.status, 206)
        let type = try XCTUnwrap(r.header("content-type"))
        XCTAssertTrue(type.hasPrefix("multipart/byteranges; boundary="), type)
        let boundary = type.components(separatedBy: "boundary=")[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))
        XCTAssertEqual(r.text, "--\(boundary)\r\nContent-Type: application/octet-stream\r\nContent-Range: bytes 0-3/29\r\n\r\nThis\r\n--\(boundary)"
                       + "\r\nContent-Type: application/octet-stream\r\nContent-Range: bytes 10-15/29\r\n\r\nbase64\r\n--\(boundary)--")

        // CouchDB's ETag is the quoted base64 MD5 of the attachment (1.x's digests stay SHA-1).
        let etag = try XCTUnwrap(try get("/db/bin_doc/foo.txt").header("etag"))
        XCTAssertEqual(etag, "\"aEI7pOYCRBLTRQvvqYrrJQ==\"")
        XCTAssertEqual(try get("/db/bin_doc/foo.txt", headers: ["If-None-Match": etag]).status, 304)
        XCTAssertEqual(try get("/db/bin_doc/foo.txt", headers: ["If-None-Match": "W/\(etag)"]).status, 304)
        XCTAssertEqual(try get("/db/bin_doc/foo.txt").header("accept-ranges"), "bytes")
    }

    // MARK: B6 Attachments

    /// attachments_test "errors for bad attachment", "COUCHDB-809", "implicit doc creation ...
    /// reserved id".
    func testB6AttachmentErrors() throws {
        try createDB()
        expectError(try request("PUT", "/db/bad_doc", json: ["_attachments": ["foo.txt": ["content_type": "text/plain",
                                                                                         "data": "notBase64Encoded="]]]),
                    400, "bad_request", "Invalid attachment data for foo.txt")
        XCTAssertEqual(try get("/db/bad_doc").status, 404)

        let data = "VGhpcyBpcyBhIGJhc2U2NCBlbmNvZGVkIHRleHQ="
        var rev = try putDoc("/db/stub_doc", ["_attachments": ["foo.txt": ["content_type": "text/plain", "data": data]]])
        rev = try putDoc("/db/stub_doc", ["_rev": rev, "_attachments": ["foo.txt": ["stub": true]]])
        expectError(try request("PUT", "/db/stub_doc", json: ["_rev": rev, "_attachments": ["foo.txt": ["stub": true, "revpos": 10]]]),
                    412, "missing_stub", "Invalid attachment stub in stub_doc for foo.txt")
        expect(try request("PUT", "/db/stub_doc", json: ["_rev": rev, "_attachments": ["foo.txt": ["stub": true, "revpos": 1]]]), 201)

        expectError(try request("PUT", "/db/_nonexistant/attachment.txt", body: Array("ATTACHMENT INFO".utf8),
                                headers: ["Content-Type": "text/plain;charset=utf-8"]),
                    400, "illegal_docid", "Only reserved document ids may start with underscore.")
        XCTAssertEqual(try get("/db/_nonexistant/attachment.txt").status, 404)

        // attachment_names_test: names starting with `_` are refused.
        let reason = "Attachment name '_foo.txt' starts with prohibited character '_'"
        expectError(try request("PUT", "/db/bin_doc2", json: ["_attachments": ["_foo.txt": ["content_type": "text/plain", "data": data]]]),
                    400, "bad_request", reason)
        expectError(try request("POST", "/db", json: ["_id": "bin_doc2", "_attachments": ["_foo.txt": ["data": data]]]),
                    400, "bad_request", reason)
        expectError(try request("PUT", "/db/bin_doc3/_foo.txt", body: Array("x".utf8), headers: ["Content-Type": "text/plain"]),
                    400, "bad_request", reason)
        XCTAssertEqual(try get("/db/bin_doc2/_foo.txt").status, 404)
    }

    /// attachments_multipart_test: parts without names go to the `follows` attachments in the
    /// order the JSON lists them, also with `new_edits=false`.
    func testB6MultipartRelatedFollowsJSONOrder() throws {
        try createDB()
        let document = """
        {"body": "This is a body.", "_attachments": {
          "foo.txt": {"follows": true, "content_type": "application/test", "length": 21},
          "bar.txt": {"follows": true, "content_type": "application/test", "length": 20},
          "baz.txt": {"follows": true, "content_type": "text/plain", "length": 19}}}
        """
        let body = "--abc123\r\ncontent-type: application/json\r\n\r\n" + document +
            "\r\n--abc123\r\n\r\nthis is 21 chars long" +
            "\r\n--abc123\r\n\r\nthis is 20 chars lon" +
            "\r\n--abc123\r\n\r\nthis is 19 chars lo\r\n--abc123--epilogue"
        let put = try request("PUT", "/db/multipart", body: Array(body.utf8),
                              headers: ["Content-Type": "multipart/related;boundary=\"abc123\""])
        expect(put, 201)
        XCTAssertEqual(try get("/db/multipart/foo.txt").text, "this is 21 chars long")
        XCTAssertEqual(try get("/db/multipart/bar.txt").text, "this is 20 chars lon")
        XCTAssertEqual(try get("/db/multipart/baz.txt").text, "this is 19 chars lo")

        let replicated = """
        {"_id": "mp2", "_rev": "2-bbb", "_revisions": {"start": 2, "ids": ["bbb", "aaa"]}, "_attachments": {
          "z.txt": {"follows": true, "content_type": "text/plain", "length": 5, "revpos": 2},
          "a.txt": {"follows": true, "content_type": "text/plain", "length": 3, "revpos": 1}}}
        """
        let body2 = "--xyz\r\nContent-Type: application/json\r\n\r\n" + replicated +
            "\r\n--xyz\r\n\r\nzzzzz\r\n--xyz\r\n\r\naaa\r\n--xyz--"
        expect(try request("PUT", "/db/mp2?new_edits=false", body: Array(body2.utf8),
                           headers: ["Content-Type": "multipart/related; boundary=xyz"]), 201)
        XCTAssertEqual(try get("/db/mp2/z.txt").text, "zzzzz")
        XCTAssertEqual(try get("/db/mp2/a.txt").text, "aaa")
        XCTAssertEqual(try get("/db/mp2").dict["_rev"] as? String, "2-bbb")
    }

    // MARK: B7 _bulk_docs

    /// bulk_docs_test, invalid_docids_test, batch_save_test.
    func testB7BulkDocs() throws {
        try createDB()
        expectError(try request("POST", "/db/_bulk_docs", json: ["docs": [], "new_edits": 0]), 400, "bad_request",
                    "`new_edits` parameter must be a boolean.")
        expectError(try request("POST", "/db/_bulk_docs", json: ["docs": "foo"]), 400, "bad_request", "`docs` parameter must be an array.")
        expectError(try request("POST", "/db/_bulk_docs", json: ["doc": []]), 400, "bad_request", "POST body must include `docs` parameter.")

        let saved = try request("POST", "/db/_bulk_docs", json: ["docs": [["_id": "a"], ["_id": "b"]]])
        expect(saved, 201)
        XCTAssertEqual(saved.array.count, 2)
        let aRev = try XCTUnwrap((saved.array.first as? [String: Any])?["rev"] as? String)
        // all_or_nothing: CouchDB 3 refuses it (417, every document not_implemented), saving none.
        let failed = try request("POST", "/db/_bulk_docs", json: ["all_or_nothing": true, "docs": [
            ["_id": "c"], ["_id": "a", "_rev": aRev, "v": 2]]])
        expect(failed, 417)
        XCTAssertTrue(jsonEqual(failed.json, [
            ["id": "c", "rev": "0-", "error": "not_implemented", "reason": "all_or_nothing is not supported"],
            ["id": "a", "rev": aRev, "error": "not_implemented", "reason": "all_or_nothing is not supported"],
        ]))
        XCTAssertEqual(try get("/db/c").status, 404)
        XCTAssertEqual(try get("/db/a").dict["_rev"] as? String, aRev)

        // _local/ documents are saved as local documents.
        let local = try request("POST", "/db/_bulk_docs", json: ["docs": [["_id": "_local/bar", "v": 1]]])
        expect(local, 201)
        XCTAssertTrue(jsonEqual(local.json, [["ok": true, "id": "_local/bar", "rev": "1-local"]]))
        XCTAssertEqual(try get("/db/_local/bar").dict["v"] as? Int, 1)
        XCTAssertEqual(try get("/db/_all_docs").dict["total_rows"] as? Int, 2)
        let stale = try request("POST", "/db/_bulk_docs", json: ["docs": [["_id": "_local/bar", "_rev": "9-local", "v": 2]]])
        XCTAssertEqual((stale.array.first as? [String: Any])?["error"] as? String, "conflict")
        let removed = try request("POST", "/db/_bulk_docs", json: ["docs": [["_id": "_local/bar", "_rev": "1-local", "_deleted": true]]])
        XCTAssertTrue(jsonEqual(removed.json, [["ok": true, "id": "_local/bar", "rev": "0-0"]]))
        expectError(try get("/db/_local/bar"), 404, "not_found")
    }

    /// batch_save_test: `batch=ok` answers 202 `{"ok":true,"id":…}`, and a batch write that
    /// conflicts is dropped rather than becoming a conflict.
    func testB7BatchOK() throws {
        try createDB()
        for i in 1...5 {
            let r = try request("PUT", "/db/doc\(i)?batch=ok", json: ["a": i])
            expect(r, 202)
            XCTAssertTrue(jsonEqual(r.json, ["ok": true, "id": "doc\(i)"]))
        }
        let posted = try request("POST", "/db?batch=ok", json: ["a": 6])
        expect(posted, 202)
        XCTAssertNotNil(posted.dict["id"] as? String)
        XCTAssertEqual(try get("/db").dict["doc_count"] as? Int, 6)
        // Same ID again: CouchDB's batch writer drops the conflicting write.
        let again = try request("PUT", "/db/doc1?batch=ok", json: ["a": 100])
        expect(again, 202)
        let doc = try get("/db/doc1?conflicts=true").dict
        XCTAssertEqual(doc["a"] as? Int, 1)
        XCTAssertNil(doc["_conflicts"])
        XCTAssertEqual((try get("/db/doc1?open_revs=all").array).count, 1)
        // A request that is itself invalid is still refused.
        expectError(try request("PUT", "/db/_bad?batch=ok", json: ["a": 1]), 400, "illegal_docid")
    }
}
