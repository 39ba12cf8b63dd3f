import CouchbaseLite
import CouchbaseLiteJavaScript
import CouchbaseLiteListener
import Foundation
import XCTest

/// Views through the listener as CouchDB 3.4 answers them (its own HTTP view tests, and answers
/// read off a real CouchDB 3.4.3): grouped rows counted by limit/skip, raw collation, object keys
/// in their emitted order, linked documents, offsets, CouchDB's errors, index information and
/// design document options. JavaScript design documents throughout.
final class ListenerCouchDBViewTests: ListenerTestCase {
    var db: CBLDatabase!

    override func setUpWithError() throws {
        try super.setUpWithError()
        CBLView.setCompiler(CBLJSViewCompiler(limits: CBLJSLimits(timeLimit: 1)))
        db = try createDB()
    }

    override func tearDownWithError() throws {
        CBLView.setCompiler(nil)
        try super.tearDownWithError()
    }

    /// POSTs raw JSON text (member order as written).
    @discardableResult
    func post(_ path: String, _ text: String) throws -> HTTPResult {
        try request("POST", path, body: Array(text.utf8), headers: ["Content-Type": "application/json"])
    }

    @discardableResult
    func put(_ path: String, _ json: Any) throws -> HTTPResult {
        let result = try request("PUT", path, json: json)
        XCTAssertEqual(result.status, 201, "body: \(result.text)")
        return result
    }

    func rows(_ result: HTTPResult) -> [[String: Any]] { result.dict["rows"] as? [[String: Any]] ?? [] }

    /// Documents `1`…`n` with `integer` = their number.
    func makeDocs(_ range: ClosedRange<Int>) throws {
        let docs = range.map { ["_id": String($0), "integer": $0, "string": String($0)] as [String: Any] }
        expect(try request("POST", "/db/_bulk_docs", json: ["docs": docs]), 201)
    }

    // MARK: 1. limit and skip count grouped rows

    func testLimitAndSkipCountGroupedRows() throws {
        try makeDocs(1...6)
        // Each document emits its key twice (CouchDB's reduce_builtin test): each group sums two rows.
        try put("/db/_design/r", ["views": [
            "sum": ["map": "function(doc) { emit(doc.integer, doc.integer); emit(doc.integer, doc.integer); }", "reduce": "_sum"],
            "js": ["map": "function(doc) { emit([doc.integer % 2 ? 'odd' : 'even', doc.integer], 1); }",
                   "reduce": "function(keys, values) { return sum(values); }"],
        ]])
        let limited = rows(try get("/db/_design/r/_view/sum?group=true&limit=3"))
        XCTAssertTrue(jsonEqual(limited, [["key": 1, "value": 2], ["key": 2, "value": 4], ["key": 3, "value": 6]]))
        let paged = rows(try get("/db/_design/r/_view/sum?group=true&skip=2&limit=2"))
        XCTAssertTrue(jsonEqual(paged, [["key": 3, "value": 6], ["key": 4, "value": 8]]))
        let descending = rows(try get("/db/_design/r/_view/sum?group=true&descending=true&limit=2"))
        XCTAssertTrue(jsonEqual(descending, [["key": 6, "value": 12], ["key": 5, "value": 10]]))
        // Group levels: two groups (even, odd) of three documents each.
        let level = rows(try get("/db/_design/r/_view/js?group_level=1&limit=1&skip=1"))
        XCTAssertTrue(jsonEqual(level, [["key": ["odd"], "value": 3]]))
        // One reduced row: skipping it leaves none.
        XCTAssertTrue(jsonEqual(rows(try get("/db/_design/r/_view/sum")), [["key": NSNull(), "value": 42]]))
        XCTAssertTrue(rows(try get("/db/_design/r/_view/sum?skip=1")).isEmpty)
        // With keys and group=true, one row per key, in the keys' order.
        let keyed = rows(try post("/db/_design/r/_view/sum?group=true", #"{"keys":[5,2,9]}"#))
        XCTAssertTrue(jsonEqual(keyed, [["key": 5, "value": 10], ["key": 2, "value": 4]]))
    }

    // MARK: 2. Raw collation

    func testRawCollationFromViewOptions() throws {
        let values: [Any] = [1, 2, false, NSNull(), true, ["a": 1], ["a"], "A", "B", "a", "b"]
        let docs = values.enumerated().map { ["_id": String($0.offset), "foo": $0.element] as [String: Any] }
        expect(try request("POST", "/db/_bulk_docs", json: ["docs": Array(docs.reversed())]), 201)
        try put("/db/_design/raw", ["views": [
            "test": ["map": "function(doc) { emit(doc.foo, null); }", "options": ["collation": "raw"]],
            "unicode": ["map": "function(doc) { emit(doc.foo, null); }"],
        ]])
        // CouchDB's raw order: numbers < false < null < true < objects < arrays < strings by code point.
        let raw = rows(try get("/db/_design/raw/_view/test")).map { $0["key"] ?? NSNull() }
        XCTAssertTrue(jsonEqual(raw, values), "\(raw)")
        let descending = rows(try get("/db/_design/raw/_view/test?descending=true")).map { $0["key"] ?? NSNull() }
        XCTAssertTrue(jsonEqual(descending, Array(values.reversed())))
        // Key ranges follow the view's collation: "Z" < "a" only in raw order.
        XCTAssertTrue(jsonEqual(rows(try get("/db/_design/raw/_view/test?startkey=%22Z%22&endkey=%22a%22")).map { $0["key"] }, ["a"]))
        XCTAssertTrue(jsonEqual(rows(try get("/db/_design/raw/_view/test?descending=true&endkey=%22a%22&inclusive_end=false"))
            .map { $0["key"] }, ["b"]))
        // The default (Unicode) collation: null < false < true < numbers < strings (a < A) < arrays < objects.
        let unicode = rows(try get("/db/_design/raw/_view/unicode")).map { $0["key"] ?? NSNull() }
        XCTAssertTrue(jsonEqual(unicode, [NSNull(), false, true, 1, 2, "a", "A", "b", "B", ["a"], ["a": 1]]), "\(unicode)")
        expectError(try get("/db/_design/raw/_view/unicode?startkey=%22Z%22&endkey=%22a%22"), 400, "query_parse_error",
                    "No rows can match your key range, reverse your start_key and end_key or set descending=true")
    }

    // MARK: 3. Object keys in their emitted order

    func testObjectKeysCollateInTheirMemberOrder() throws {
        // The body is sent as text: its members' order is part of what is stored.
        try post("/db/_bulk_docs", #"""
            {"docs":[{"_id":"1","foo":{"a":1}},{"_id":"2","foo":{"a":2}},{"_id":"3","foo":{"b":1}},
                     {"_id":"4","foo":{"b":2}},{"_id":"5","foo":{"b":2,"a":1}},{"_id":"6","foo":{"b":2,"c":2}}]}
            """#)
        try put("/db/_design/foo", ["views": ["foo": ["map": "function(doc) { emit(doc.foo, null); }"]]])
        let result = try get("/db/_design/foo/_view/foo")
        XCTAssertEqual(rows(result).map { $0["id"] as? String ?? "" }, ["1", "2", "3", "4", "5", "6"])
        // The row's key is the object as emitted, members in that order.
        XCTAssertTrue(result.text.contains(#"{"id":"5","key":{"b":2,"a":1},"value":null}"#), result.text)
        XCTAssertEqual(rows(try get("/db/_design/foo/_view/foo?descending=true")).map { $0["id"] as? String ?? "" },
                       ["6", "5", "4", "3", "2", "1"])
        // A key parameter matches only the object with its members in the same order.
        let key = "%7B%22b%22%3A2%2C%22a%22%3A1%7D"   // {"b":2,"a":1}
        XCTAssertEqual(rows(try get("/db/_design/foo/_view/foo?key=\(key)")).map { $0["id"] as? String ?? "" }, ["5"])
        XCTAssertTrue(rows(try get("/db/_design/foo/_view/foo?key=%7B%22a%22%3A1%2C%22b%22%3A2%7D")).isEmpty)
        XCTAssertEqual(rows(try post("/db/_design/foo/_view/foo", #"{"keys":[{"b":2,"a":1},{"b":1}]}"#))
            .map { $0["id"] as? String ?? "" }, ["5", "3"])
        XCTAssertEqual(rows(try post("/db/_design/foo/_view/foo", #"{"startkey":{"b":2,"a":1}}"#))
            .map { $0["id"] as? String ?? "" }, ["5", "6"])
        // The stored document keeps the order too (its revision ID is the digest of the sorted form).
        let doc = try get("/db/5")
        XCTAssertTrue(doc.text.contains(#""foo":{"b":2,"a":1}"#), doc.text)
        // The revision ID is the digest of the canonical (sorted) body, as 1.x computes it.
        let sortedRevision = try request("PUT", "/db/5-sorted", body: Array(#"{"foo":{"a":1,"b":2}}"#.utf8),
                                         headers: ["Content-Type": "application/json"]).dict["rev"] as? String
        XCTAssertEqual(db.document(withID: "5")!.currentRevisionID, sortedRevision)
    }

    func testInclusiveEndFalseWithEndKeyDocID() throws {
        try makeDocs(1...9)
        try put("/db/_design/c", ["views": ["byString": ["map": "function(doc) { emit(doc.integer > 5 ? 'b' : 'a', null); }"]]])
        let base = "/db/_design/c/_view/byString?endkey=%22b%22&inclusive_end=false"
        XCTAssertEqual(rows(try get(base)).map { $0["id"] as? String ?? "" }, ["1", "2", "3", "4", "5"])
        // (endkey, endkey_docid) is the exclusive end: the rows of "b" before document 8.
        XCTAssertEqual(rows(try get(base + "&endkey_docid=8")).map { $0["id"] as? String ?? "" },
                       ["1", "2", "3", "4", "5", "6", "7"])
        XCTAssertEqual(rows(try get("/db/_design/c/_view/byString?endkey=%22b%22&endkey_docid=8")).count, 8)
    }

    // MARK: 4. include_docs

    func testIncludeDocsFollowsEmittedRevisionAndShowsConflicts() throws {
        try put("/db/_design/d", ["views": [
            "prev": ["map": "function(doc) { if (doc.prev) emit(doc._id, {'_rev': doc.prev}); else emit(doc._id, {'_rev': doc._rev}); }"],
            "all": ["map": "function(doc) { emit(doc._id, null); }"],
        ]])
        let first = try request("PUT", "/db/doc", json: ["value": 1]).dict["rev"] as! String
        let second = try request("PUT", "/db/doc", json: ["_rev": first, "value": 2, "prev": first]).dict["rev"] as! String
        let row = rows(try get("/db/_design/d/_view/prev?include_docs=true")).first
        let doc = row?["doc"] as? [String: Any]
        XCTAssertEqual(doc?["_rev"] as? String, first, "the emitted _rev names the revision")
        XCTAssertEqual(doc?["value"] as? Int, 1)
        XCTAssertNotEqual(first, second)

        // A conflict made by new_edits=false: conflicts=true lists it in the row's document.
        // (A revision ID lower than the current one, so the current one stays the winner.)
        expect(try request("PUT", "/db/doc?new_edits=false", json: ["_rev": "2-0000", "value": 3,
                                                                     "_revisions": ["start": 2, "ids": ["0000", String(first.dropFirst(2))]]]), 201)
        let withConflicts = rows(try get("/db/_design/d/_view/all?include_docs=true&conflicts=true")).first?["doc"] as? [String: Any]
        XCTAssertEqual(withConflicts?["_rev"] as? String, second)
        XCTAssertEqual(withConflicts?["_conflicts"] as? [String], ["2-0000"])
        let without = rows(try get("/db/_design/d/_view/all?include_docs=true")).first?["doc"] as? [String: Any]
        XCTAssertNil(without?["_conflicts"])
    }

    // MARK: 5. offset

    func testOffsetCountsRowsBeforeStartKeyAndDocID() throws {
        try makeDocs(0...99)
        try put("/db/_design/p", ["views": ["nulls": ["map": "function(doc) { emit(null, null); }"]]])
        for (start, end) in [("startkey_docid", "endkey_docid"), ("start_key_doc_id", "end_key_doc_id")] {
            let result = try get("/db/_design/p/_view/nulls?startkey=null&\(start)=1&endkey=null&\(end)=40")
            XCTAssertEqual(result.dict["offset"] as? Int, 1)   // document "0" comes before "1"
            XCTAssertEqual(result.dict["total_rows"] as? Int, 100)
            let ids = rows(result).map { $0["id"] as? String ?? "" }
            XCTAssertEqual(ids.count, 35)
            XCTAssertEqual(ids.first, "1")
            XCTAssertEqual(ids.last, "40")
        }
        let skipped = try get("/db/_design/p/_view/nulls?startkey=null&startkey_docid=10&skip=3&limit=1")
        XCTAssertEqual(skipped.dict["offset"] as? Int, 5)   // "0", "1" before "10"; "10", "11", "12" skipped
        XCTAssertEqual(rows(skipped).map { $0["id"] as? String ?? "" }, ["13"])
        let descending = try get("/db/_design/p/_view/nulls?descending=true&startkey=null&startkey_docid=98")
        XCTAssertEqual(descending.dict["offset"] as? Int, 1)   // "99" before "98"
    }

    // MARK: 6. Errors

    func testParameterErrorsAsCouchDB() throws {
        try makeDocs(1...3)
        try put("/db/_design/test", ["views": [
            "no_reduce": ["map": "function(doc) { emit(doc._id, null); }"],
            "with_reduce": ["map": "function (doc) { emit(doc.integer, doc.integer); }",
                            "reduce": "function (keys, values) { return sum(values); }"],
        ]])
        let v = "/db/_design/test/_view/"
        let grouping = "Invalid use of grouping on a map view."
        expectError(try get(v + "no_reduce?group=true"), 400, "query_parse_error", grouping)
        expectError(try get(v + "no_reduce?group_level=1"), 400, "query_parse_error", grouping)
        expectError(try get(v + "no_reduce?reduce=true"), 400, "query_parse_error", "Reduce is invalid for map-only views.")
        expect(try get(v + "no_reduce?reduce=false"), 200)
        expectError(try get(v + "with_reduce?group=true&reduce=false"), 400, "query_parse_error", grouping)
        expectError(try get(v + "with_reduce?group_level=1&reduce=false"), 400, "query_parse_error", grouping)
        expectError(try get(v + "with_reduce?include_docs=true"), 400, "query_parse_error", "`include_docs` is invalid for reduce")
        expectError(try get(v + "with_reduce?conflicts=true"), 400, "query_parse_error", "`conflicts` is invalid for reduce views.")
        expectError(try get(v + "with_reduce?group=false&group_level=1"), 400, "query_parse_error",
                    "Can't specify group=false and group_level>0 at the same time")
        let multiKey = "Multi-key fetches for reduce views must use `group=true`"
        expectError(try get(v + "with_reduce?keys=%5B1,2%5D"), 400, "query_parse_error", multiKey)
        expectError(try post(v + "with_reduce", #"{"keys":[1,2]}"#), 400, "query_parse_error", multiKey)
        XCTAssertTrue(jsonEqual(rows(try post(v + "with_reduce", #"{"keys":[2]}"#)), [["key": NSNull(), "value": 2]]))
        expectError(try get(v + "no_reduce?keys=%5B1,2%5D&startkey=0"), 400, "query_parse_error",
                    "`keys` is incompatible with `key`, `start_key` and `end_key`")
        expectError(try get(v + "no_reduce?startkey=2&endkey=1"), 400, "query_parse_error",
                    "No rows can match your key range, reverse your start_key and end_key or set descending=true")
        expectError(try get(v + "no_reduce?startkey=1&endkey=2&descending=true"), 400, "query_parse_error",
                    "No rows can match your key range, reverse your start_key and end_key or set descending=false")
        expectError(try get(v + "no_reduce?startkey=foo"), 400, "bad_request", "invalid UTF-8 JSON")
        expectError(try get(v + "no_reduce?limit=-1"), 400, "query_parse_error", #"Invalid value for positive integer: "-1""#)
        expectError(try get(v + "no_reduce?descending=foo"), 400, "query_parse_error", #"Invalid boolean parameter: "foo""#)
        expectError(try get(v + "no_reduce?stale=foo"), 400, "query_parse_error", "Invalid value for `stale`.")
        expectError(try get(v + "no_reduce?update=foo"), 400, "query_parse_error", "Invalid value for `update`.")
        expectError(try post(v + "no_reduce", "[]"), 400, "bad_request", "Request body must be a JSON object")
        expectError(try post(v + "no_reduce", #"{"keys":1}"#), 400, "bad_request", "`keys` member must be an array.")
        expectError(try post("/db/_temp_view", #"{"map":"function(doc){emit(doc.integer)}"}"#), 410, "gone",
                    "Temporary views are not supported in CouchDB")
    }

    func testRunawayMapAndOverflowingReduceAnswerAsCouchDB() throws {
        try makeDocs(1...2)
        // One design document each: the views of a design document are indexed together.
        try put("/db/_design/loop", ["views": ["loop": ["map": "function(doc) { while (true) {} }"]]])
        try put("/db/_design/big", ["views": ["too_big": [
            "map": "function (doc) { emit(doc.integer, doc.integer); }",
            "reduce": "function (keys, values) { var chars = []; for (var i = 0; i < 1000; i++) chars.push('wazzap'); return chars; }"]]])
        try put("/db/_design/eval", ["views": ["eval": [
            "map": "function(doc) { var glob = emit.constructor('return this')(); emit(doc._id, null); }"]]])
        let loop = try get("/db/_design/loop/_view/loop")
        XCTAssertEqual(loop.status, 500)
        XCTAssertEqual(loop.dict["error"] as? String, "os_process_error", loop.text)
        // The overflow is the row's error; the answer is still 200.
        let overflow = try get("/db/_design/big/_view/too_big")
        expect(overflow, 200)
        let row = rows(overflow).first
        XCTAssertEqual(row?["error"] as? String, "reduce_overflow_error")
        XCTAssertTrue((row?["reason"] as? String ?? "").hasPrefix("Reduce output must shrink more rapidly"))
        XCTAssertTrue(row?["key"] is NSNull)
        // No code evaluation at run time: the map throws, each document is skipped.
        XCTAssertEqual(try get("/db/_design/eval/_view/eval").dict["total_rows"] as? Int, 0)
    }

    // MARK: 7. Index information

    func testDesignInfoCompactionAndVersions() throws {
        try makeDocs(1...50)
        try put("/db/_design/info", ["views": ["v": ["map": "function(doc) { emit(doc.integer, doc.string); }"]]])
        let before = try get("/db/_design/info/_info").dict
        XCTAssertEqual(before["name"] as? String, "info")
        let index = before["view_index"] as? [String: Any] ?? [:]
        XCTAssertEqual((index["signature"] as? String)?.count, 32)
        XCTAssertEqual(index["language"] as? String, "javascript")
        XCTAssertEqual(index["update_seq"] as? Int, 0)
        XCTAssertEqual(index["compact_running"] as? Bool, false)
        XCTAssertEqual(index["updater_running"] as? Bool, false)
        XCTAssertEqual(index["purge_seq"] as? Int, 0)
        XCTAssertEqual((index["collator_versions"] as? [String])?.count, 1)
        let fileBefore = (index["sizes"] as? [String: Any])?["file"] as? Int ?? -1
        XCTAssertGreaterThan(fileBefore, 0)

        // stale=ok does not index; the size stays.
        expect(try get("/db/_design/info/_view/v?stale=ok"), 200)
        let stale = try get("/db/_design/info/_info").dict["view_index"] as? [String: Any] ?? [:]
        XCTAssertEqual((stale["sizes"] as? [String: Any])?["file"] as? Int, fileBefore)
        XCTAssertEqual(stale["signature"] as? String, index["signature"] as? String)

        expect(try get("/db/_design/info/_view/v?limit=1"), 200)
        let after = try get("/db/_design/info/_info").dict["view_index"] as? [String: Any] ?? [:]
        XCTAssertEqual(after["update_seq"] as? Int, Int(db.lastSequenceNumber))   // 50 documents and the design document
        let sizes = after["sizes"] as? [String: Any] ?? [:]
        XCTAssertGreaterThan(sizes["external"] as? Int ?? 0, 0)
        XCTAssertLessThan(sizes["active"] as? Int ?? .max, sizes["file"] as? Int ?? 0)

        let compacted = try request("POST", "/db/_compact/info", json: [String: Any]())
        expect(compacted, 202)
        XCTAssertEqual(compacted.dict["ok"] as? Bool, true)
        XCTAssertEqual(rows(try get("/db/_design/info/_view/v?key=7")).first?["value"] as? String, "7")
        expectError(try request("POST", "/db/_compact/nosuch", json: [String: Any]()), 404, "not_found")

        // A new definition is a new signature.
        let rev = try get("/db/_design/info").dict["_rev"] as! String
        try put("/db/_design/info", ["_rev": rev, "views": ["v": ["map": "function(doc) { emit(doc.string, null); }"]]])
        XCTAssertNotEqual((try get("/db/_design/info/_info").dict["view_index"] as? [String: Any])?["signature"] as? String,
                          index["signature"] as? String)

        // A design document whose view does not compile still has its information (no index yet).
        try put("/db/_design/broken", ["views": ["v": ["map": "function(doc) { emit(doc._id"]]])
        let broken = try get("/db/_design/broken/_info")
        expect(broken, 200)
        XCTAssertEqual((broken.dict["view_index"] as? [String: Any])?["update_seq"] as? Int, 0)
        expectError(try get("/db/_design/broken/_view/v"), 400, "compilation_error")

        let versions = try get("/_node/_local/_versions").dict
        XCTAssertEqual((versions["javascript_engine"] as? [String: Any])?["name"] as? String, "javascriptcore")
        let collation = versions["collation_driver"] as? [String: Any]
        XCTAssertEqual(collation?["name"] as? String, "libicu")
        XCTAssertEqual(collation?["collator_version"] as? String, (index["collator_versions"] as? [String])?.first)
    }

    // MARK: 9. Design document options

    func testDesignOptionsIncludeDesignAndLocalSeq() throws {
        try put("/db/_design/fu", ["options": ["include_design": true, "local_seq": true], "views": [
            "data": ["map": "function (doc) { emit(null, doc._id); }"],
            "with_seq": ["map": "function (doc) { emit(doc._local_seq, null); }"],
        ]])
        try put("/db/_design/bingo", ["views": ["data": ["map": "function (doc) { emit(null, doc._id); }"]]])
        let design = rows(try get("/db/_design/fu/_view/data"))
        XCTAssertEqual(design.map { $0["value"] as? String ?? "" }, ["_design/bingo", "_design/fu"])
        XCTAssertTrue(rows(try get("/db/_design/bingo/_view/data")).isEmpty)
        expect(try request("POST", "/db", json: ["x": 1]), 201)
        let withSeq = rows(try get("/db/_design/fu/_view/with_seq"))
        XCTAssertEqual(withSeq.compactMap { $0["key"] as? Int }, [1, 2, 3])
    }

    func testBuiltinReduceMatchedByPrefix() throws {
        try makeDocs(1...4)
        for trailing in ["\n", "orama", " "] {
            let name = "b\(trailing.unicodeScalars.first!.value)"
            try put("/db/_design/\(name)", ["views": [
                "sum": ["map": "function(doc) { emit(doc.integer, doc.integer); }", "reduce": "_sum" + trailing],
                "count": ["map": "function(doc) { emit(doc.integer, doc.integer); }", "reduce": "_count" + trailing],
            ]])
            XCTAssertEqual(rows(try get("/db/_design/\(name)/_view/sum")).first?["value"] as? Int, 10)
            XCTAssertEqual(rows(try get("/db/_design/\(name)/_view/count")).first?["value"] as? Int, 4)
        }
    }
}
