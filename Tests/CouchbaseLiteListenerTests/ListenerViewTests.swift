import CouchbaseLite
import CouchbaseLiteListener
import Foundation
import XCTest

final class ListenerViewTests: ListenerTestCase {
    var db: CBLDatabase!

    override func setUpWithError() throws {
        try super.setUpWithError()
        db = try createDB()
        // The React Native training app's views, written in Swift as the brief's apps would.
        db.viewNamed("main/listsByName").setMapBlock({ doc, emit in
            if doc["type"] as? String == "task-list", let name = doc["name"] { emit(name, nil) }
        }, version: "1")
        db.viewNamed("main/incompleteTasksCount").setMapBlock({ doc, emit in
            if doc["type"] as? String == "task", doc["complete"] as? Bool != true, let list = doc["list"] as? String {
                emit([list, doc["title"] ?? NSNull()], 1)
            }
        }, reduce: { _, values, _ in values.reduce(0) { $0 + (($1 as? Int) ?? 0) } }, version: "1")
        for (i, name) in ["Groceries", "Chores", "Books"].enumerated() {
            try putDoc("/db/list\(i)", ["type": "task-list", "name": name])
        }
        let tasks: [(String, String, Bool)] = [("list0", "milk", false), ("list0", "eggs", false), ("list0", "tea", true),
                                               ("list1", "dishes", false), ("list2", "read", false)]
        for (i, t) in tasks.enumerated() {
            try putDoc("/db/task\(i)", ["type": "task", "list": t.0, "title": t.1, "complete": t.2])
        }
    }

    private func rows(_ r: HTTPResult) -> [[String: Any]] { r.dict["rows"] as? [[String: Any]] ?? [] }

    func testMapQueries() throws {
        let all = try get("/db/_design/main/_view/listsByName")
        expect(all, 200)
        XCTAssertEqual(all.dict["total_rows"] as? Int, 3)
        XCTAssertEqual(all.dict["offset"] as? Int, 0)
        XCTAssertTrue(jsonEqual(rows(all), [
            ["id": "list2", "key": "Books", "value": NSNull()],
            ["id": "list1", "key": "Chores", "value": NSNull()],
            ["id": "list0", "key": "Groceries", "value": NSNull()],
        ]))
        XCTAssertEqual(rows(try get("/db/_design/main/_view/listsByName?descending=true&limit=1")).map { $0["key"] as? String ?? "" }, ["Groceries"])
        let range = try get("/db/_design/main/_view/listsByName?startkey=%22C%22&endkey=%22H%22")
        XCTAssertEqual(rows(range).count, 2)
        XCTAssertEqual(range.dict["offset"] as? Int, 1)   // "Books" comes before "C"
        XCTAssertEqual(try get("/db/_design/main/_view/listsByName?descending=true&startkey=%22C%22").dict["offset"] as? Int, 2)
        XCTAssertEqual(rows(try get("/db/_design/main/_view/listsByName?start_key=%22C%22&end_key=%22Groceries%22&inclusive_end=false")).count, 1)
        // CouchDB refuses a key that is not JSON (1.x took it as a string).
        expectError(try get("/db/_design/main/_view/listsByName?startkey=Chores"), 400, "bad_request", "invalid UTF-8 JSON")
        XCTAssertEqual(rows(try get("/db/_design/main/_view/listsByName?startkey=%22Chores%22")).count, 2)
        XCTAssertEqual(rows(try get("/db/_design/main/_view/listsByName?key=%22Books%22")).map { $0["id"] as? String ?? "" }, ["list2"])
        XCTAssertEqual(rows(try get("/db/_design/main/_view/listsByName?skip=1&limit=1")).map { $0["id"] as? String ?? "" }, ["list1"])
        let docs = rows(try get("/db/_design/main/_view/listsByName?include_docs=true&limit=1"))
        XCTAssertEqual((docs.first?["doc"] as? [String: Any])?["name"] as? String, "Books")
        XCTAssertEqual((docs.first?["doc"] as? [String: Any])?["_id"] as? String, "list2")

        let keys = try request("POST", "/db/_design/main/_view/listsByName", json: ["keys": ["Groceries", "Nope", "Books"]])
        XCTAssertEqual(rows(keys).map { $0["id"] as? String ?? "" }, ["list0", "list2"])
        let updateSeq = seqNumber(try get("/db/_design/main/_view/listsByName?update_seq=true").dict["update_seq"])
        XCTAssertEqual(updateSeq, Int(db.lastSequenceNumber))
    }

    func testReduceGroupAndPrefixMatch() throws {
        let reduced = try get("/db/_design/main/_view/incompleteTasksCount")
        XCTAssertTrue(jsonEqual(reduced.json, ["rows": [["key": NSNull(), "value": 4]]]), reduced.text)
        let byList = try get("/db/_design/main/_view/incompleteTasksCount?group_level=1")
        XCTAssertTrue(jsonEqual(rows(byList), [["key": ["list0"], "value": 2], ["key": ["list1"], "value": 1],
                                               ["key": ["list2"], "value": 1]]), byList.text)
        let exact = rows(try get("/db/_design/main/_view/incompleteTasksCount?group=true"))
        XCTAssertEqual(exact.count, 4)
        XCTAssertTrue(jsonEqual(exact.first, ["key": ["list0", "eggs"], "value": 1]))
        let mapOnly = rows(try get("/db/_design/main/_view/incompleteTasksCount?reduce=false"))
        XCTAssertEqual(mapOnly.count, 4)
        XCTAssertEqual(mapOnly.first?["id"] as? String, "task1")
        let prefix = rows(try get("/db/_design/main/_view/incompleteTasksCount?reduce=false&startkey=%5B%22list0%22%5D&endkey=%5B%22list0%22%5D&prefix_match_level=1"))
        XCTAssertEqual(prefix.map { $0["id"] as? String ?? "" }, ["task1", "task0"])
        let grouped = try request("POST", "/db/_design/main/_view/incompleteTasksCount?group_level=1", json: ["keys": [["list1", "dishes"]]])
        XCTAssertEqual(grouped.status, 200, grouped.text)

        expectError(try get("/db/_design/main/_view/listsByName?reduce=true"), 400, "query_parse_error", "Reduce is invalid for map-only views.")
        expectError(try get("/db/_design/main/_view/listsByName?group=true"), 400, "query_parse_error", "Invalid use of grouping on a map view.")
        expectError(try get("/db/_design/main/_view/incompleteTasksCount?include_docs=true"), 400, "query_parse_error")
        expectError(try get("/db/_design/main/_view/listsByName?stale=maybe"), 400, "query_parse_error")
    }

    func testStaleQueries() throws {
        _ = try get("/db/_design/main/_view/listsByName")
        try putDoc("/db/list9", ["type": "task-list", "name": "Zzz"])
        XCTAssertEqual(rows(try get("/db/_design/main/_view/listsByName?stale=ok")).count, 3)
        XCTAssertEqual(rows(try get("/db/_design/main/_view/listsByName")).count, 4)
    }

    func testJavaScriptDesignDocumentsAreRefusedClearly() throws {
        try putDoc("/db/_design/todo", ["language": "javascript", "views": [
            "lists": ["map": "function(doc) { if (doc.type == \"list\") emit(doc.created_at, doc.title); }"],
        ]])
        expectError(try get("/db/_design/todo/_view/lists"), 501, "not_implemented",
                    "JavaScript views are not enabled on this listener (no view compiler is registered: CBLView.setCompiler, or cbl serve without --no-javascript); register view 'todo/lists' in Swift")
        expectError(try get("/db/_design/todo/_view/other"), 404, "not_found", "missing_named_view")
        expectError(try get("/db/_design/nope/_view/lists"), 404, "not_found", "missing")
        expectError(try request("PUT", "/db/_design/todo/_view/lists", json: [String: Any]()), 405, "method_not_allowed")
        // The server still works, and a Swift view registered under that name takes over.
        db.viewNamed("todo/lists").setMapBlock({ doc, emit in
            if doc["type"] as? String == "task-list" { emit(doc["name"] ?? NSNull(), nil) }
        }, version: "1")
        XCTAssertEqual(rows(try get("/db/_design/todo/_view/lists")).count, 3)
    }
}
