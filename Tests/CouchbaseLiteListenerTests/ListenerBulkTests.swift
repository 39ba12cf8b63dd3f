import CouchbaseLite
import CouchbaseLiteListener
import Foundation
import XCTest

final class ListenerBulkTests: ListenerTestCase {
    override func setUpWithError() throws {
        try super.setUpWithError()
        try createDB()
    }

    /// k00…k09, a deleted `gone`, a conflicted `doc1`.
    private func populate() throws -> (gone: String, doc1: String, branch: String) {
        let docs = (0..<10).map { ["_id": String(format: "k%02d", $0), "i": $0] as [String: Any] }
        expect(try request("POST", "/db/_bulk_docs", json: ["docs": docs]), 201)
        let g1 = try putDoc("/db/gone", ["x": 1])
        let gone = try XCTUnwrap(try request("DELETE", "/db/gone?rev=\(g1)").dict["rev"] as? String)
        let d1 = try putDoc("/db/doc1", ["n": 1])
        let doc1 = try putDoc("/db/doc1", ["_rev": d1, "n": 2])
        let branch = "2-ffffffffffffffffffffffffffffffff"
        expect(try request("POST", "/db/_bulk_docs", json: ["new_edits": false, "docs": [[
            "_id": "doc1", "_rev": branch, "n": "branch",
            "_revisions": ["start": 2, "ids": ["ffffffffffffffffffffffffffffffff", String(d1.dropFirst(2))]],
        ]]]), 201)
        return (gone, doc1, branch)
    }

    func testBulkDocs() throws {
        // As CouchDB: a document with a bad ID, or one that is not an object, fails the whole request.
        expectError(try request("POST", "/db/_bulk_docs", json: ["docs": [["_id": "ok"], ["_id": "_bad"]]]), 400, "illegal_docid")
        expectError(try request("POST", "/db/_bulk_docs", json: ["docs": [["_id": "ok"], "nope"]]), 400, "bad_request")
        XCTAssertNil(try manager.existingDatabaseNamed("db").existingDocument(withID: "ok"))
        let r = try request("POST", "/db/_bulk_docs", json: ["docs": [["_id": "a", "v": 1], ["v": 2]]])
        expect(r, 201)
        let rows = r.array.compactMap { $0 as? [String: Any] }
        XCTAssertEqual(rows.count, 2)
        XCTAssertEqual(rows[0]["id"] as? String, "a")
        XCTAssertEqual(rows[0]["ok"] as? Bool, true)
        XCTAssertTrue((rows[1]["id"] as? String)?.hasPrefix("-") ?? false)

        let aRev = try XCTUnwrap(rows[0]["rev"] as? String)
        let again = try request("POST", "/db/_bulk_docs", json: ["docs": [["_id": "a", "v": 3], ["_id": "a", "_rev": aRev, "v": 4],
                                                                           ["_id": "a", "_rev": aRev, "_deleted": true]]])
        let results = again.array.compactMap { $0 as? [String: Any] }
        XCTAssertTrue(jsonEqual(results[0], ["id": "a", "error": "conflict", "reason": "Document update conflict."]))
        XCTAssertEqual(results[1]["ok"] as? Bool, true)
        XCTAssertEqual(results[2]["error"] as? String, "conflict")

        // new_edits=false answers [] and inserts with history.
        let replicated = try request("POST", "/db/_bulk_docs", json: ["new_edits": false, "docs": [
            ["_id": "r", "_rev": "3-c", "v": 1, "_revisions": ["start": 3, "ids": ["c", "b", "a"]]],
            ["_id": "r2", "_rev": "1-z", "_deleted": true],
        ]])
        expect(replicated, 201)
        XCTAssertEqual(replicated.text, "[]\n")
        XCTAssertEqual(try get("/db/r?revs=true").dict["_revisions"] as? NSDictionary, ["start": 3, "ids": ["c", "b", "a"]] as NSDictionary)
        expectError(try get("/db/r2"), 404, "not_found", "deleted")
        let invalid = try request("POST", "/db/_bulk_docs", json: ["new_edits": false, "docs": [["_id": "x", "v": 1]]])
        XCTAssertEqual((invalid.array.first as? [String: Any])?["error"] as? String, "bad_request")

        // all_or_nothing: refused as CouchDB 3 refuses it, nothing saved.
        let aborted = try request("POST", "/db/_bulk_docs", json: ["all_or_nothing": true, "docs": [["_id": "n"], ["_id": "a", "v": 5]]])
        expect(aborted, 417)
        XCTAssertEqual((aborted.json as? [[String: Any]])?.map { $0["error"] as? String }, ["not_implemented", "not_implemented"])
        XCTAssertNil(try manager.existingDatabaseNamed("db").existingDocument(withID: "n"))
        expectError(try request("POST", "/db/_bulk_docs", json: ["nodocs": true]), 400, "bad_request")
        expectError(try request("GET", "/db/_bulk_docs"), 405, "method_not_allowed")
        expectError(try request("POST", "/db/_bulk_docs", body: Array("{\"docs\":[]}".utf8), headers: ["Content-Type": "text/plain"]),
                    415, "bad_content_type")
    }

    func testAllDocs() throws {
        let (gone, doc1, branch) = try populate()
        let all = try get("/db/_all_docs").dict
        XCTAssertEqual(all["total_rows"] as? Int, 11)
        XCTAssertEqual(all["offset"] as? Int, 0)
        let rows = all["rows"] as? [[String: Any]] ?? []
        XCTAssertEqual(rows.map { $0["id"] as? String ?? "" }, ["doc1"] + (0..<10).map { String(format: "k%02d", $0) })
        XCTAssertTrue(jsonEqual(rows[0], ["id": "doc1", "key": "doc1", "value": ["rev": branch]]))

        let range = try get("/db/_all_docs?startkey=%22k02%22&endkey=%22k05%22&inclusive_end=false&include_docs=true").dict
        let rangeRows = range["rows"] as? [[String: Any]] ?? []
        XCTAssertEqual(rangeRows.map { $0["id"] as? String ?? "" }, ["k02", "k03", "k04"])
        XCTAssertEqual((rangeRows[0]["doc"] as? [String: Any])?["i"] as? Int, 2)
        XCTAssertEqual((rangeRows[0]["doc"] as? [String: Any])?["_id"] as? String, "k02")
        // A key that is not JSON is refused, as CouchDB 3.4 does (1.x took it as a string).
        expectError(try get("/db/_all_docs?startkey=k08"), 400, "bad_request", "invalid UTF-8 JSON")
        XCTAssertEqual((try get("/db/_all_docs?startkey=%22k08%22").dict["rows"] as? [Any])?.count, 2)

        let desc = try get("/db/_all_docs?descending=true&limit=3&skip=1&update_seq=true").dict
        XCTAssertEqual((desc["rows"] as? [[String: Any]])?.map { $0["id"] as? String ?? "" }, ["k08", "k07", "k06"])
        XCTAssertEqual(desc["offset"] as? Int, 1)
        XCTAssertEqual(seqNumber(desc["update_seq"]), Int(try manager.existingDatabaseNamed("db").lastSequenceNumber))

        let keys = try request("POST", "/db/_all_docs", json: ["keys": ["k01", "nope", "gone"]]).dict
        XCTAssertTrue(keys["offset"] is NSNull)
        let keyRows = keys["rows"] as? [[String: Any]] ?? []
        XCTAssertEqual(keyRows.count, 3)
        XCTAssertEqual(keyRows[0]["id"] as? String, "k01")
        XCTAssertTrue(jsonEqual(keyRows[1], ["key": "nope", "error": "not_found"]))
        XCTAssertTrue(jsonEqual(keyRows[2], ["id": "gone", "key": "gone", "value": ["rev": gone, "deleted": true]]))
        let keysGet = try get("/db/_all_docs?keys=%5B%22k03%22%5D&include_docs=true").dict["rows"] as? [[String: Any]]
        XCTAssertEqual((keysGet?.first?["doc"] as? [String: Any])?["i"] as? Int, 3)
        let keysDocs = try request("POST", "/db/_all_docs?include_docs=true", json: ["keys": ["gone"]]).dict["rows"] as? [[String: Any]]
        XCTAssertTrue(keysDocs?.first?["doc"] is NSNull)

        let conflicts = try get("/db/_all_docs?only_conflicts=true&include_docs=true&conflicts=true").dict["rows"] as? [[String: Any]] ?? []
        XCTAssertEqual(conflicts.map { $0["id"] as? String ?? "" }, ["doc1"])
        XCTAssertTrue(jsonEqual((conflicts.first?["doc"] as? [String: Any])?["_conflicts"], [doc1]))

        expectError(try get("/db/_all_docs?limit=-1"), 400, "query_parse_error")
        expectError(try get("/db/_all_docs?keys=notjson"), 400, "bad_request", "invalid UTF-8 JSON")
        expectError(try request("POST", "/db/_all_docs", json: ["keys": "k01"]), 400, "bad_request")
        expectError(try get("/nosuch/_all_docs"), 404, "not_found", "Database does not exist.")
    }

    func testRevsDiff() throws {
        _ = try populate()
        let k01 = try XCTUnwrap(try get("/db/k01").dict["_rev"] as? String)
        let r = try request("POST", "/db/_revs_diff", json: ["k01": ["1-abc", "2-def", k01], "nosuch": ["1-x"], "k02": [String]()])
        expect(r, 200)
        XCTAssertTrue(jsonEqual(r.json, [
            "k01": ["missing": ["1-abc", "2-def"], "possible_ancestors": [k01]],
            "nosuch": ["missing": ["1-x"]],
        ]), r.text)
        XCTAssertTrue(jsonEqual(try request("POST", "/db/_revs_diff", json: ["k01": [k01]]).json, [String: Any]()))
        expectError(try request("POST", "/db/_revs_diff", json: ["k01": "1-a"]), 400, "bad_request")
        expectError(try request("POST", "/db/_revs_diff", json: [1]), 400, "bad_request")
    }

    func testBulkGet() throws {
        _ = try populate()
        let k01 = try XCTUnwrap(try get("/db/k01").dict["_rev"] as? String)
        let r = try request("POST", "/db/_bulk_get?revs=true", json: ["docs": [["id": "k01", "rev": k01], ["id": "nosuch"], ["id": "k02"],
                                                                                ["id": "k03", "rev": "9-zzz"], ["id": "gone"]]])
        expect(r, 200)
        let results = r.dict["results"] as? [[String: Any]] ?? []
        XCTAssertEqual(results.count, 5)
        XCTAssertTrue(jsonEqual(results[0], ["id": "k01", "docs": [["ok": [
            "_id": "k01", "_rev": k01, "i": 1, "_revisions": ["start": 1, "ids": [String(k01.dropFirst(2))]],
        ]]]]))
        XCTAssertTrue(jsonEqual(results[1], ["id": "nosuch", "docs": [["error": ["id": "nosuch", "rev": "undefined",
                                                                                 "error": "not_found", "reason": "missing"]]]]))
        XCTAssertEqual((((results[2]["docs"] as? [[String: Any]])?.first?["ok"]) as? [String: Any])?["i"] as? Int, 2)
        XCTAssertTrue(jsonEqual(results[3], ["id": "k03", "docs": [["error": ["id": "k03", "rev": "9-zzz",
                                                                              "error": "not_found", "reason": "missing"]]]]))
        XCTAssertEqual((((results[4]["docs"] as? [[String: Any]])?.first?["error"]) as? [String: Any])?["reason"] as? String, "deleted")

        // Attachments inline, and the multipart/mixed form replicators ask for.
        let rev = try XCTUnwrap(try get("/db/k05").dict["_rev"] as? String)
        expect(try request("PUT", "/db/k05/a.txt?rev=\(rev)", body: Array("ATT".utf8), headers: ["Content-Type": "text/plain"]), 201)
        let inline = try request("POST", "/db/_bulk_get?attachments=true", json: ["docs": [["id": "k05"]]]).dict
        let doc = (((inline["results"] as? [[String: Any]])?.first?["docs"] as? [[String: Any]])?.first?["ok"]) as? [String: Any]
        XCTAssertEqual(((doc?["_attachments"] as? [String: Any])?["a.txt"] as? [String: Any])?["data"] as? String, "QVRU")

        let mixed = try request("POST", "/db/_bulk_get?revs=true&attachments=true", json: ["docs": [["id": "k05"], ["id": "k06"], ["id": "nope"]]],
                                headers: ["Accept": "multipart/mixed"])
        expect(mixed, 200)
        XCTAssertTrue(mixed.header("content-type")?.hasPrefix("multipart/mixed") ?? false)
        XCTAssertTrue(mixed.text.contains("multipart/related"))
        XCTAssertTrue(mixed.text.contains("filename=\"a.txt\""))
        // a.txt (text/plain) is stored gzip-encoded and sent as stored, as CouchDB does.
        XCTAssertTrue(mixed.text.contains("Content-Encoding: gzip"), mixed.text)
        XCTAssertTrue(mixed.text.contains("\"encoding\":\"gzip\""), mixed.text)
        XCTAssertTrue(mixed.text.contains("\"_id\":\"k06\""))
        XCTAssertTrue(mixed.text.contains("error=\"true\""))

        expectError(try request("POST", "/db/_bulk_get", json: ["nodocs": 1]), 400, "bad_request")
    }
}
