import CouchbaseLite
import CouchbaseLiteJavaScript
import CouchbaseLiteListener
import Foundation
import XCTest

/// Issue 34, items 5–7: `_revs_limit` kept in the file and applied by compaction, purge
/// sequences and `_purged_infos_limit`, CouchDB's reasons for disagreeing revisions, re-created
/// deleted documents, `all_or_nothing`, and attachments in view rows. Every expectation is the
/// answer a real CouchDB 3.4.3 gave to the same request.
final class ListenerCouchDBRevisionsTests: ListenerTestCase {
    private let json = ["Content-Type": "application/json"]

    private func historyLength(_ path: String) throws -> Int? {
        ((try get(path).dict["_revisions"] as? [String: Any])?["ids"] as? [Any])?.count
    }

    /// A document `id` edited until it has `generations` revisions; returns the last one.
    @discardableResult
    private func editedDocument(_ id: String, generations: Int) throws -> String {
        var rev = try putDoc("/db/\(id)", ["count": 0])
        for i in 1..<generations { rev = try putDoc("/db/\(id)", ["_rev": rev, "count": i]) }
        return rev
    }

    // MARK: Item 5: _revs_limit

    /// rev_stemming_test "revs limit is kept after compaction": a lowered limit shows at once in
    /// `_revisions` (CouchDB reads no more history than the limit), compaction prunes the stored
    /// tree to it, and the limit is still there after compaction and after reopening.
    func testRevsLimitIsKeptAfterCompactionAndReopen() throws {
        let db = try createDB()
        try editedDocument("bar", generations: 6)
        XCTAssertEqual(try historyLength("/db/bar?revs=true"), 6)
        expect(try request("PUT", "/db/_revs_limit", body: Array("5".utf8), headers: json), 200)
        XCTAssertEqual(try historyLength("/db/bar?revs=true"), 5)
        XCTAssertEqual(try db.syncHistory(docID: "bar", revID: db.syncWinningRevision(docID: "bar")!.revID).count, 6)

        expect(try request("POST", "/db/_compact", json: [String: Any]()), 202)
        XCTAssertEqual(try historyLength("/db/bar?revs=true"), 5)
        XCTAssertEqual(try db.syncHistory(docID: "bar", revID: db.syncWinningRevision(docID: "bar")!.revID).count, 5,
                       "compaction prunes the tree itself")
        XCTAssertEqual(try get("/db/_revs_limit").json as? Int, 5)

        try db.close()
        XCTAssertEqual(try get("/db/_revs_limit").json as? Int, 5, "kept in the file")
        XCTAssertEqual(try historyLength("/db/bar?revs=true"), 5)
    }

    /// rev_stemming_test "revs limit update" (but for the default, which stays 1.x's 20, not
    /// CouchDB's 1000): edits after the change keep `limit` generations.
    func testRevsLimitUpdate() throws {
        try createDB()
        XCTAssertEqual(try get("/db/_revs_limit").json as? Int, 20)
        try editedDocument("foo", generations: 6)
        XCTAssertEqual(try historyLength("/db/foo?revs=true"), 6)
        let set = try request("PUT", "/db/_revs_limit", body: Array("5".utf8), headers: json)
        expect(set, 200)
        XCTAssertTrue(jsonEqual(set.json, ["ok": true]))
        var rev = try XCTUnwrap(try get("/db/foo").dict["_rev"] as? String)
        for i in 0..<6 { rev = try putDoc("/db/foo", ["_rev": rev, "count": 10 + i]) }
        XCTAssertEqual(try historyLength("/db/foo?revs=true"), 5)
        // `revs_limit` may ask for less, not more.
        XCTAssertEqual(try historyLength("/db/foo?revs=true&revs_limit=2"), 2)
        XCTAssertEqual(try historyLength("/db/foo?revs=true&revs_limit=50"), 5)
    }

    // MARK: Item 6: purge

    /// purge_test "purge documents": the purge sequence advances by one per document named, is
    /// kept by compaction, and views lose the purged documents' rows.
    func testPurgeSequenceAdvancesAndViewsForgetPurgedDocuments() throws {
        CBLView.setCompiler(CBLJSViewCompiler(limits: CBLJSLimits(timeLimit: 1)))
        defer { CBLView.setCompiler(nil) }
        try createDB()
        expect(try request("PUT", "/db/_design/test", json: ["views": [
            "all_docs_twice": ["map": "function(doc) { emit(doc.integer, null); emit(doc.integer, null) }"],
            "single_doc": ["map": "function(doc) { if (doc._id == \"1\") { emit(1, null) }}"],
        ]]), 201)
        expect(try request("POST", "/db/_bulk_docs", json: ["docs": (1...11).map { ["_id": String($0), "integer": $0] }]), 201)
        XCTAssertEqual((try get("/db/_design/test/_view/all_docs_twice").dict["rows"] as? [Any])?.count, 22)
        XCTAssertEqual(try get("/db/_design/test/_view/single_doc").dict["total_rows"] as? Int, 1)
        XCTAssertEqual(seqNumber(try get("/db").dict["purge_seq"]), 0)

        let rev1 = try XCTUnwrap(try get("/db/1").dict["_rev"] as? String)
        let rev2 = try XCTUnwrap(try get("/db/2").dict["_rev"] as? String)
        let purge = try request("POST", "/db/_purge", json: ["1": [rev1], "2": [rev2]])
        expect(purge, 201)
        XCTAssertTrue(jsonEqual(purge.json, ["purge_seq": NSNull(), "purged": ["1": [rev1], "2": [rev2]]]))
        expectError(try get("/db/1"), 404, "not_found", "missing")
        XCTAssertEqual(seqNumber(try get("/db").dict["purge_seq"]), 2)
        let keys = (try get("/db/_design/test/_view/all_docs_twice").dict["rows"] as? [[String: Any]] ?? []).map { $0["key"] as? Int }
        XCTAssertEqual(keys, (3...11).flatMap { [$0, $0] })
        XCTAssertEqual(try get("/db/_design/test/_view/single_doc").dict["total_rows"] as? Int, 0)
        XCTAssertEqual((try get("/db/_design/test/_info").dict["view_index"] as? [String: Any])?["purge_seq"] as? Int, 2,
                       "the index has seen the purges")

        expect(try request("POST", "/db/_compact", json: [String: Any]()), 202)
        XCTAssertEqual(seqNumber(try get("/db").dict["purge_seq"]), 2, "compaction keeps the purge sequence")

        // A name that finds nothing still counts (CouchDB: 1 more per document named).
        expect(try request("POST", "/db/_purge", json: ["nosuch": ["1-abc"]]), 201)
        XCTAssertEqual(seqNumber(try get("/db").dict["purge_seq"]), 3)
    }

    /// `purged` lists the named leaves purged: not a named ancestor still needed, nor one that
    /// went with its leaf; CouchDB's 400s for bad bodies.
    func testPurgeAnswersListNamedLeavesOnly() throws {
        try createDB()
        let r1 = try putDoc("/db/b", ["x": 1])
        let r2 = try putDoc("/db/b", ["_rev": r1, "x": 2])
        let first = try request("POST", "/db/_purge", json: ["b": [r1]])
        XCTAssertTrue(jsonEqual(first.json, ["purge_seq": NSNull(), "purged": ["b": [String]()]]))
        XCTAssertEqual(try get("/db/b").dict["_rev"] as? String, r2)
        let second = try request("POST", "/db/_purge", json: ["b": [r1, r2, "3-zz"]])
        XCTAssertTrue(jsonEqual(second.json, ["purge_seq": NSNull(), "purged": ["b": [r2]]]))
        expectError(try get("/db/b"), 404, "not_found", "missing")

        expectError(try request("POST", "/db/_purge", json: ["b": "x"]), 400, "bad_request", "Invalid list of revisions")
        expectError(try request("POST", "/db/_purge", json: ["b": ["x"]]), 400, "bad_request", "Invalid rev format")
        expectError(try request("POST", "/db/_purge", json: [Any]()), 400, "bad_request", "Request body must be a JSON object")
        XCTAssertTrue(jsonEqual(try request("POST", "/db/_purge", json: [String: Any]()).json, ["purge_seq": NSNull(), "purged": [String: Any]()]))
        XCTAssertEqual(seqNumber(try get("/db").dict["purge_seq"]), 2)
    }

    /// `_purged_infos_limit`: 1000 by default, set with a positive integer, kept in the file.
    func testPurgedInfosLimit() throws {
        let db = try createDB()
        XCTAssertEqual(try get("/db/_purged_infos_limit").json as? Int, 1000)
        let set = try request("PUT", "/db/_purged_infos_limit", body: Array("5".utf8), headers: json)
        expect(set, 200)
        XCTAssertTrue(jsonEqual(set.json, ["ok": true]))
        XCTAssertEqual(try get("/db/_purged_infos_limit").json as? Int, 5)
        for bad in ["0", "\"x\"", "-1"] {
            expectError(try request("PUT", "/db/_purged_infos_limit", body: Array(bad.utf8), headers: json),
                        400, "bad_request", "`purged_infos_limit` must be positive integer")
        }
        expectError(try request("POST", "/db/_purged_infos_limit", json: 3), 405, "method_not_allowed", "Only GET,PUT allowed")
        try db.close()
        XCTAssertEqual(try get("/db/_purged_infos_limit").json as? Int, 5)
    }

    // MARK: Item 7

    /// conflicts_test: a body's `_rev`, `?rev=` and `If-Match` must agree, each with its reason.
    func testRevisionInBodyQueryAndEtagMustAgree() throws {
        try createDB()
        let rev = try putDoc("/db/foo", ["a": 1])
        let differ = "Document rev from request body and query string have different values"
        let etag = "Document rev and etag have different values"
        expectError(try request("PUT", "/db/foo?rev=1-x", json: ["_rev": "1-y"]), 400, "bad_request", differ)
        expectError(try request("PUT", "/db/foobar", json: ["_id": "foo", "_rev": rev, "a": 1], headers: ["If-Match": "1-foobar"]),
                    400, "bad_request", etag)
        expectError(try request("PUT", "/db/foo", json: ["_rev": "1-y"], headers: ["If-Match": "\"1-x\""]), 400, "bad_request", etag)
        expectError(try request("PUT", "/db/foo?rev=1-y", json: ["a": 2], headers: ["If-Match": "\"1-x\""]), 400, "bad_request", etag)
        expectError(try request("PUT", "/db/foo?rev=1-y", json: ["_rev": "1-y"], headers: ["If-Match": "\"1-x\""]),
                    400, "bad_request", etag)
        expectError(try request("DELETE", "/db/foo?rev=\(rev)", headers: ["If-Match": "\"1-x\""]), 400, "bad_request", etag)
        expectError(try request("PUT", "/db/foo/att.txt?rev=\(rev)", body: Array("hi".utf8),
                                headers: ["Content-Type": "text/plain", "If-Match": "\"1-x\""]), 400, "bad_request", etag)
        expectError(try request("PUT", "/db/foo", json: ["a": 2], headers: ["If-Match": "bad"]), 400, "bad_request", "Invalid rev format")
        expectError(try request("PUT", "/db/foo?rev=bad", json: ["a": 2]), 400, "bad_request", "Invalid rev format")
        // Agreeing names are fine.
        let updated = try request("PUT", "/db/foo?rev=\(rev)", json: ["_rev": rev, "a": 2], headers: ["If-Match": "\"\(rev)\""])
        expect(updated, 201)
    }

    /// recreate_doc_test "Recreate a deleted document with non-exsistant rev": 409, with or
    /// without attachments.
    func testRecreatingDeletedDocumentWithUnknownRevisionIsAConflict() throws {
        try createDB()
        let first = try putDoc("/db/foo", ["a": "bar", "b": 42])
        expect(try request("DELETE", "/db/foo?rev=\(first)"), 200)
        expectError(try request("PUT", "/db/foo", json: ["_id": "foo", "_rev": "1-asfafasdf", "a": "bar", "b": 42]),
                    409, "conflict", "Document update conflict.")
        expectError(try request("PUT", "/db/foo", json: ["_id": "foo", "_rev": "1-aasasfasdf", "_attachments": [
            "foo.txt": ["content_type": "text/plain", "data": "VGhpcyBpcyBhIGJhc2U2NCBlbmNvZGVkIHRleHQ="],
        ]]), 409, "conflict", "Document update conflict.")
        expectError(try get("/db/foo"), 404, "not_found", "deleted")
    }

    /// bulk_docs_test "bulk docs raises error for `all_or_nothing` option": 417, every document
    /// `not_implemented`, none saved. With `new_edits: false`, or no documents, it is ignored.
    func testAllOrNothingIsRefusedAsCouchDB3Does() throws {
        try createDB()
        let aRev = try putDoc("/db/a", ["v": 1])
        let refused = try request("POST", "/db/_bulk_docs", json: ["all_or_nothing": true, "docs": [
            ["_id": "x"], ["_id": "a", "_rev": aRev, "v": 2]]])
        expect(refused, 417)
        let reason = "all_or_nothing is not supported"
        XCTAssertTrue(jsonEqual(refused.json, [
            ["id": "x", "rev": "0-", "error": "not_implemented", "reason": reason],
            ["id": "a", "rev": aRev, "error": "not_implemented", "reason": reason],
        ]), refused.text)
        expectError(try get("/db/x"), 404, "not_found", "missing")
        XCTAssertEqual(try get("/db/a").dict["_rev"] as? String, aRev)
        let generated = try request("POST", "/db/_bulk_docs", json: ["all_or_nothing": true, "docs": [["v": 1]]])
        expect(generated, 417)
        XCTAssertFalse(((generated.json as? [[String: Any]])?.first?["id"] as? String ?? "").isEmpty, "an ID is made up")

        expect(try request("POST", "/db/_bulk_docs", json: ["all_or_nothing": true, "new_edits": false,
                                                             "docs": [["_id": "z", "_rev": "1-abc"]]]), 201)
        XCTAssertEqual(try get("/db/z").dict["_rev"] as? String, "1-abc")
        expect(try request("POST", "/db/_bulk_docs", json: ["all_or_nothing": true, "docs": [Any]()]), 201)
        expect(try request("POST", "/db/_bulk_docs", json: ["all_or_nothing": "yes", "docs": [["_id": "w"]]]), 201)
    }

    /// attachment_views_test "manages attachments in views successfully": `include_docs` rows
    /// have stubs, and with `attachments=true` the content inline.
    func testViewRowsCarryAttachmentsWhenAsked() throws {
        CBLView.setCompiler(CBLJSViewCompiler(limits: CBLJSLimits(timeLimit: 1)))
        defer { CBLView.setCompiler(nil) }
        try createDB()
        let data = "VGhpcyBpcyBhIGJhc2U2NCBlbmNvZGVkIHRleHQ="
        let atts = ["foo.txt", "bar.txt", "baz.txt"].reduce(into: [String: Any]()) { $0[$1] = ["content_type": "text/plain", "data": data] }
        expect(try request("POST", "/db/_bulk_docs", json: ["docs": (30..<40).map { ["_id": String($0), "_attachments": atts] }
                                                                    + [["_id": "1"]]]), 201)
        expect(try request("PUT", "/db/_design/v", json: ["views": ["count": ["map": """
            function(doc) { var n = 0; for (var k in doc._attachments) n++; emit(parseInt(doc._id), n); }
            """]]]), 201)

        let stubs = try get("/db/_design/v/_view/count?startkey=30&endkey=39&include_docs=true").dict["rows"] as? [[String: Any]] ?? []
        XCTAssertEqual(stubs.count, 10)
        XCTAssertEqual(stubs.first?["value"] as? Int, 3)
        let stub = try XCTUnwrap(((stubs.first?["doc"] as? [String: Any])?["_attachments"] as? [String: Any])?["baz.txt"] as? [String: Any])
        XCTAssertEqual(stub["stub"] as? Bool, true)
        XCTAssertNil(stub["data"])

        let inline = try get("/db/_design/v/_view/count?startkey=30&endkey=39&include_docs=true&attachments=true").dict["rows"]
            as? [[String: Any]] ?? []
        XCTAssertEqual(inline.count, 10)
        let att = try XCTUnwrap(((inline.first?["doc"] as? [String: Any])?["_attachments"] as? [String: Any])?["baz.txt"] as? [String: Any])
        XCTAssertEqual(att["data"] as? String, data)
        XCTAssertNil(att["stub"])
        XCTAssertNil(att["encoding"])
        XCTAssertNil(att["encoded_length"])
        XCTAssertEqual(att["content_type"] as? String, "text/plain")

        // _all_docs does the same.
        let all = try get("/db/_all_docs?include_docs=true&attachments=true&key=%2230%22").dict["rows"] as? [[String: Any]] ?? []
        let allAtt = ((all.first?["doc"] as? [String: Any])?["_attachments"] as? [String: Any])?["foo.txt"] as? [String: Any]
        XCTAssertEqual(allAtt?["data"] as? String, data)
        XCTAssertNil(allAtt?["stub"])
    }
}
