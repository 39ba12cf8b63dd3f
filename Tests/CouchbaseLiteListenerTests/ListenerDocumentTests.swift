import CouchbaseLite
import CouchbaseLiteListener
import Foundation
import XCTest

final class ListenerDocumentTests: ListenerTestCase {
    override func setUpWithError() throws {
        try super.setUpWithError()
        try createDB()
    }

    func testPutGetUpdateConflicts() throws {
        let created = try request("PUT", "/db/doc1", json: ["n": 1, "tags": ["a", "b"]])
        expect(created, 201)
        let rev1 = try XCTUnwrap(created.dict["rev"] as? String)
        XCTAssertTrue(jsonEqual(created.json, ["ok": true, "id": "doc1", "rev": rev1]))
        XCTAssertEqual(created.header("etag"), "\"\(rev1)\"")
        XCTAssertEqual(created.header("location"), "http://127.0.0.1:\(listener.port)/db/doc1")

        expectError(try request("PUT", "/db/doc1", json: ["n": 2]), 409, "conflict", "Document update conflict.")
        let rev2 = try putDoc("/db/doc1", ["_rev": rev1, "n": 2])
        XCTAssertTrue(rev2.hasPrefix("2-"))
        expectError(try request("PUT", "/db/doc1", json: ["_rev": rev1, "n": 3]), 409, "conflict", "Document update conflict.")
        // The parent may also be given as ?rev= or If-Match.
        let rev3 = try XCTUnwrap(try request("PUT", "/db/doc1?rev=\(rev2)", json: ["n": 3]).dict["rev"] as? String)
        let rev4 = try XCTUnwrap(try request("PUT", "/db/doc1", json: ["n": 4], headers: ["If-Match": "\"\(rev3)\""]).dict["rev"] as? String)
        expectError(try request("PUT", "/db/doc1?rev=\(rev3)", json: ["_rev": rev4, "n": 5]), 400, "bad_request")

        let doc = try get("/db/doc1")
        expect(doc, 200)
        XCTAssertTrue(jsonEqual(doc.json, ["_id": "doc1", "_rev": rev4, "n": 4]))
        XCTAssertEqual(doc.header("etag"), "\"\(rev4)\"")
        XCTAssertEqual(try get("/db/doc1", headers: ["If-None-Match": "\"\(rev4)\""]).status, 304)

        let old = try get("/db/doc1?rev=\(rev1)")
        XCTAssertTrue(jsonEqual(old.json, ["_id": "doc1", "_rev": rev1, "n": 1, "tags": ["a", "b"]]))
        expectError(try get("/db/doc1?rev=9-abc"), 404, "not_found", "missing")
        expectError(try get("/db/doc1?rev=garbage"), 400, "bad_request", "Invalid rev format")
        expectError(try get("/db/nosuch"), 404, "not_found", "missing")

        let head = try request("HEAD", "/db/doc1")
        expect(head, 200)
        XCTAssertEqual(head.header("etag"), "\"\(rev4)\"")
        XCTAssertTrue(head.body.isEmpty)
    }

    func testRevsRevsInfoAndLocalSeq() throws {
        let rev1 = try putDoc("/db/doc", ["v": 1])
        let rev2 = try putDoc("/db/doc", ["_rev": rev1, "v": 2])
        let revs = try get("/db/doc?revs=true").dict
        XCTAssertTrue(jsonEqual(revs["_revisions"], ["start": 2, "ids": [String(rev2.dropFirst(2)), String(rev1.dropFirst(2))]]))
        let info = try get("/db/doc?revs_info=true").dict
        XCTAssertTrue(jsonEqual(info["_revs_info"], [["rev": rev2, "status": "available"], ["rev": rev1, "status": "available"]]))
        XCTAssertEqual(try get("/db/doc?local_seq=true").dict["_local_seq"] as? Int, 2)
        let limited = try get("/db/doc?revs=true&revs_limit=1").dict
        XCTAssertTrue(jsonEqual(limited["_revisions"], ["start": 2, "ids": [String(rev2.dropFirst(2))]]))
        expectError(try get("/db/doc?revs=maybe"), 400, "query_parse_error")
        // atts_since never trims history; Sync Gateway's revs_from (sent by 1.x pullers) does.
        let rev3 = try putDoc("/db/doc", ["_rev": rev2, "v": 3])
        let since = "%5B%22\(rev2)%22%5D"
        let full = try get("/db/doc?revs=true&atts_since=\(since)").dict["_revisions"] as? [String: Any]
        XCTAssertEqual((full?["ids"] as? [String])?.count, 3)
        let trimmed = try get("/db/doc?revs=true&revs_from=\(since)").dict["_revisions"] as? [String: Any]
        XCTAssertEqual(trimmed?["ids"] as? [String], [String(rev3.dropFirst(2)), String(rev2.dropFirst(2))])
        let rev3Only = try putDoc("/db/doc", ["_rev": rev3, "v": 2])
        XCTAssertTrue(rev3Only.hasPrefix("4-"))

        // After compaction the ancestor's body is gone.
        expect(try request("POST", "/db/_compact", json: [String: Any]()), 202)
        let compacted = try get("/db/doc?revs_info=true").dict
        XCTAssertTrue(jsonEqual(compacted["_revs_info"], [["rev": rev3Only, "status": "available"], ["rev": rev3, "status": "missing"],
                                                          ["rev": rev2, "status": "missing"], ["rev": rev1, "status": "missing"]]))
        expectError(try get("/db/doc?rev=\(rev1)"), 404, "not_found", "missing")
    }

    func testDeleteAndRecreate() throws {
        let rev1 = try putDoc("/db/gone", ["x": 1])
        expectError(try request("DELETE", "/db/gone"), 409, "conflict", "Document update conflict.")
        expectError(try request("DELETE", "/db/gone?rev=bad"), 400, "bad_request", "Invalid rev format")
        let deleted = try request("DELETE", "/db/gone?rev=\(rev1)")
        expect(deleted, 200)
        let rev2 = try XCTUnwrap(deleted.dict["rev"] as? String)
        XCTAssertTrue(jsonEqual(deleted.json, ["ok": true, "id": "gone", "rev": rev2]))
        expectError(try get("/db/gone"), 404, "not_found", "deleted")
        XCTAssertTrue(jsonEqual(try get("/db/gone?rev=\(rev2)").json, ["_id": "gone", "_rev": rev2, "_deleted": true]))
        expectError(try request("DELETE", "/db/nosuch?rev=1-abc"), 404, "not_found", "missing")
        // PUT without a rev re-creates a deleted document on top of its tombstone.
        let rev3 = try putDoc("/db/gone", ["x": 2])
        XCTAssertTrue(rev3.hasPrefix("3-"))
        // A deletion through PUT with _deleted.
        let rev4 = try putDoc("/db/gone", ["_rev": rev3, "_deleted": true])
        XCTAssertTrue(rev4.hasPrefix("4-"))
        expectError(try get("/db/gone"), 404, "not_found", "deleted")
    }

    func testInvalidIDsAndSpecialMembers() throws {
        expectError(try request("PUT", "/db/_foo", json: ["x": 1]), 400, "illegal_docid",
                    "Only reserved document ids may start with underscore.")
        expectError(try request("PUT", "/db/doc2", json: ["_bogus": 1]), 400, "doc_validation",
                    "Bad special document member: _bogus")
        expectError(try request("PUT", "/db/doc3", body: Array("{\"broken\": ".utf8), headers: ["Content-Type": "application/json"]),
                    400, "bad_request", "invalid UTF-8 JSON")
        expectError(try request("PUT", "/db/doc3", json: ["_rev": 12, "x": 1]), 400, "bad_request", "Invalid rev format")
        expectError(try request("PUT", "/db/doc3", json: ["a", "b"]), 400, "bad_request")
        // CouchDB accepts a JSON body whatever the Content-Type says.
        let plain = try request("PUT", "/db/doc3", body: Array("{\"x\":1}".utf8), headers: ["Content-Type": "text/plain"])
        expect(plain, 201)
        XCTAssertEqual(try manager.existingDatabaseNamed("db").documentCount, 1)
    }

    func testEscapedAndUnusualDocumentIDs() throws {
        let ids = ["a/b", "with space", "ünïcødé", "q?x=1&y", "%41", "..", "../../etc/passwd", "a+b"]
        let allowed = CharacterSet.alphanumerics
        for id in ids {
            let path = "/db/" + id.addingPercentEncoding(withAllowedCharacters: allowed)!
            let rev = try putDoc(path, ["id": id])
            let doc = try get(path)
            expect(doc, 200)
            XCTAssertEqual(doc.dict["_id"] as? String, id)
            XCTAssertEqual(doc.dict["_rev"] as? String, rev)
            XCTAssertNotNil(try manager.existingDatabaseNamed("db").existingDocument(withID: id), id)
        }
        let all = try get("/db/_all_docs").dict["rows"] as? [[String: Any]] ?? []
        XCTAssertEqual(Set(all.compactMap { $0["id"] as? String }), Set(ids))
    }

    func testDesignDocumentsBothSpellings() throws {
        let ddoc: [String: Any] = ["language": "javascript", "views": ["v": ["map": "function(doc){emit(doc._id,null)}"]]]
        let rev = try putDoc("/db/_design/app", ddoc)
        XCTAssertEqual(try get("/db/_design/app").dict["_rev"] as? String, rev)
        XCTAssertEqual(try get("/db/_design%2Fapp").dict["_id"] as? String, "_design/app")
        let rev2 = try putDoc("/db/_design%2Fapp", ["_rev": rev, "language": "javascript"])
        XCTAssertTrue(rev2.hasPrefix("2-"))
        expectError(try request("PUT", "/db/_design/", json: ["x": 1]), 400, "illegal_docid")
        let deleted = try request("DELETE", "/db/_design/app?rev=\(rev2)")
        expect(deleted, 200)
        expectError(try get("/db/_design/app"), 404, "not_found", "deleted")
    }

    func testNewEditsFalseConflictsAndOpenRevs() throws {
        let rev1 = try putDoc("/db/doc1", ["n": 1])
        let rev2 = try putDoc("/db/doc1", ["_rev": rev1, "n": 2])
        let suffix1 = String(rev1.dropFirst(2))
        // A replicated branch with its history (PUT ?new_edits=false).
        let branch = "2-ffffffffffffffffffffffffffffffff"
        let put = try request("PUT", "/db/doc1?new_edits=false", json: [
            "_rev": branch, "n": "branch",
            "_revisions": ["start": 2, "ids": ["ffffffffffffffffffffffffffffffff", suffix1]],
        ])
        expect(put, 201)
        XCTAssertEqual(put.dict["rev"] as? String, branch)
        // Inserting it again is a no-op success.
        expect(try request("PUT", "/db/doc1?new_edits=false", json: ["_rev": branch, "n": "branch"]), 201)

        let conflicts = try get("/db/doc1?conflicts=true")
        XCTAssertTrue(jsonEqual(conflicts.json, ["_id": "doc1", "_rev": branch, "n": "branch", "_conflicts": [rev2]]))

        let all = try get("/db/doc1?open_revs=all")
        expect(all, 200)
        XCTAssertTrue(jsonEqual(all.json, [["ok": ["_id": "doc1", "_rev": rev2, "n": 2]],
                                           ["ok": ["_id": "doc1", "_rev": branch, "n": "branch"]]]))
        let list = "[\"\(rev2)\", \"3-nope\"]".addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        XCTAssertTrue(jsonEqual(try get("/db/doc1?open_revs=\(list)").json,
                                [["ok": ["_id": "doc1", "_rev": rev2, "n": 2]], ["missing": "3-nope"]]))
        expectError(try get("/db/doc1?open_revs=nonsense"), 400, "bad_request")
        let withRevs = try get("/db/doc1?open_revs=all&revs=true").array
        XCTAssertEqual(((withRevs.last as? [String: Any])?["ok"] as? [String: Any])?["_revisions"] as? NSDictionary,
                       ["start": 2, "ids": ["ffffffffffffffffffffffffffffffff", suffix1]] as NSDictionary)

        // Deleting the winner makes the other branch current; the deletion shows in deleted_conflicts.
        let del = try request("DELETE", "/db/doc1?rev=\(branch)")
        expect(del, 200)
        let tomb = try XCTUnwrap(del.dict["rev"] as? String)
        XCTAssertTrue(jsonEqual(try get("/db/doc1").json, ["_id": "doc1", "_rev": rev2, "n": 2]))
        XCTAssertTrue(jsonEqual(try get("/db/doc1?deleted_conflicts=true").dict["_deleted_conflicts"], [tomb]))

        // Bad histories are refused.
        expectError(try request("PUT", "/db/doc1?new_edits=false", json: ["n": 1]), 400, "bad_request")
        expectError(try request("PUT", "/db/doc1?new_edits=false", json: ["_rev": "5-a", "_revisions": ["start": 9, "ids": ["a"]]]),
                    400, "bad_request")
        expectError(try request("PUT", "/db/doc1?new_edits=false", json: ["_rev": "5-a", "_revisions": ["ids": 3]]),
                    400, "bad_request")
    }

    func testLocalDocuments() throws {
        let put = try request("PUT", "/db/_local/ckpt", json: ["lastSequence": "42"])
        expect(put, 201)
        XCTAssertTrue(jsonEqual(put.json, ["ok": true, "id": "_local/ckpt", "rev": "1-local"]))
        XCTAssertTrue(jsonEqual(try get("/db/_local/ckpt").json, ["_id": "_local/ckpt", "_rev": "1-local", "lastSequence": "42"]))
        XCTAssertEqual(try get("/db/_local%2Fckpt").dict["lastSequence"] as? String, "42")
        expectError(try request("PUT", "/db/_local/ckpt", json: ["lastSequence": "43"]), 409, "conflict", "Document update conflict.")
        let updated = try request("PUT", "/db/_local/ckpt", json: ["_rev": "1-local", "lastSequence": "43"])
        XCTAssertTrue(jsonEqual(updated.json, ["ok": true, "id": "_local/ckpt", "rev": "2-local"]))
        expectError(try request("PUT", "/db/_local/ckpt", json: ["_rev": "1-local", "lastSequence": "44"]), 409, "conflict")
        expectError(try request("PUT", "/db/_local/other", json: ["_rev": "3-local"]), 409, "conflict")
        XCTAssertEqual(try manager.existingDatabaseNamed("db").existingLocalDocument(withID: "ckpt")?["lastSequence"] as? String, "43")
        // Local documents are not documents: not in _all_docs or _changes.
        XCTAssertEqual((try get("/db/_all_docs").dict["rows"] as? [Any])?.count, 0)
        XCTAssertEqual((try get("/db/_changes").dict["results"] as? [Any])?.count, 0)

        expectError(try request("DELETE", "/db/_local/ckpt"), 409, "conflict")
        expectError(try request("DELETE", "/db/_local/ckpt?rev=1-local"), 409, "conflict")
        let deleted = try request("DELETE", "/db/_local/ckpt?rev=2-local")
        expect(deleted, 200)
        XCTAssertTrue(jsonEqual(deleted.json, ["ok": true, "id": "_local/ckpt", "rev": "0-0"]))
        expectError(try get("/db/_local/ckpt"), 404, "not_found", "missing")
        expectError(try request("DELETE", "/db/_local/ckpt?rev=2-local"), 404, "not_found")
        expectError(try request("PUT", "/db/_local/x", json: ["_bogus": 1]), 400, "doc_validation")
    }
}
