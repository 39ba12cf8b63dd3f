import CouchbaseLite
import CouchbaseLiteJavaScript
import CouchbaseLiteListener
import Foundation
import XCTest

/// JavaScript design documents through the listener: views (map, custom and built-in reduces,
/// `require` of `views.lib`), `_changes` filters and `validate_doc_update`, as CouchDB runs them.
final class ListenerJavaScriptTests: ListenerTestCase {
    var db: CBLDatabase!
    var viewCompiler: CBLJSViewCompiler!

    /// A design document shaped like a PhoneGap-era todo app's (TodoLite-PhoneGap kept its views,
    /// a date helper module and a per-list filter in `_design/todo`).
    nonisolated(unsafe) static let todoDesign: [String: Any] = [
        "language": "javascript",
        "views": [
            "lib": ["dates": "exports.day = function (timestamp) { return timestamp.substring(0, 10); };"],
            "tasks": ["map": "function(doc){ if (doc.type == 'task') emit([doc.type, doc.created_at], null); }"],
            "byListAndDay": [
                "map": """
                    function(doc) {
                      if (doc.type == 'task') emit([doc.list_id, require('views/lib/dates').day(doc.created_at)], doc.done ? 1 : 0);
                    }
                    """,
                "reduce": """
                    function(keys, values, rereduce) {
                      if (rereduce) {
                        var out = {done: 0, total: 0};
                        values.forEach(function (v) { out.done += v.done; out.total += v.total; });
                        return out;
                      }
                      return {done: sum(values), total: values.length};
                    }
                    """,
            ],
            "countByList": ["map": "function(doc) { if (doc.type == 'task') emit(doc.list_id, 1); }", "reduce": "_count"],
            "sumByList": ["map": "function(doc) { if (doc.type == 'task') emit(doc.list_id, doc.done ? 1 : 0); }", "reduce": "_sum"],
        ] as [String: Any],
        "filters": ["byList": "function(doc, req) { return doc.type == 'task' && doc.list_id == req.query.list; }"],
    ]

    override func setUpWithError() throws {
        try super.setUpWithError()
        viewCompiler = CBLJSViewCompiler(limits: CBLJSLimits(timeLimit: 1))
        CBLView.setCompiler(viewCompiler)
        CBLDatabase.setFilterCompiler(CBLJSFilterCompiler(limits: CBLJSLimits(timeLimit: 1)))
        db = try createDB()
        try putDoc("/db/list1", ["type": "list", "title": "Groceries", "created_at": "2013-04-30T08:00:00Z"])
        try putDoc("/db/list2", ["type": "list", "title": "Chores", "created_at": "2013-04-30T09:00:00Z"])
        let tasks: [(String, String, String, Bool)] = [
            ("t1", "list1", "2013-05-01T10:00:00Z", true), ("t2", "list1", "2013-05-01T12:00:00Z", false),
            ("t3", "list1", "2013-05-02T09:00:00Z", true), ("t4", "list2", "2013-05-03T08:00:00Z", false),
        ]
        for (id, list, created, done) in tasks {
            try putDoc("/db/\(id)", ["type": "task", "list_id": list, "created_at": created, "done": done, "title": "task \(id)"])
        }
        try putDoc("/db/_design/todo", Self.todoDesign)
    }

    override func tearDownWithError() throws {
        CBLView.setCompiler(nil)
        CBLDatabase.setFilterCompiler(nil)
        try super.tearDownWithError()
    }

    private func rows(_ r: HTTPResult) -> [[String: Any]] { r.dict["rows"] as? [[String: Any]] ?? [] }

    func testPhoneGapMapView() throws {
        let r = try get("/db/_design/todo/_view/tasks")
        expect(r, 200)
        XCTAssertEqual(r.dict["total_rows"] as? Int, 4)
        XCTAssertEqual(r.dict["offset"] as? Int, 0)
        XCTAssertTrue(jsonEqual(rows(r), [
            ["id": "t1", "key": ["task", "2013-05-01T10:00:00Z"], "value": NSNull()],
            ["id": "t2", "key": ["task", "2013-05-01T12:00:00Z"], "value": NSNull()],
            ["id": "t3", "key": ["task", "2013-05-02T09:00:00Z"], "value": NSNull()],
            ["id": "t4", "key": ["task", "2013-05-03T08:00:00Z"], "value": NSNull()],
        ]), r.text)
        // Every option a native view has.
        let range = try get("/db/_design/todo/_view/tasks?startkey=%5B%22task%22%2C%222013-05-02%22%5D&descending=false")
        XCTAssertEqual(rows(range).map { $0["id"] as? String ?? "" }, ["t3", "t4"])
        XCTAssertEqual(range.dict["offset"] as? Int, 2)
        let desc = try get("/db/_design/todo/_view/tasks?descending=true&limit=2&include_docs=true")
        XCTAssertEqual(rows(desc).map { $0["id"] as? String ?? "" }, ["t4", "t3"])
        XCTAssertEqual((rows(desc).first?["doc"] as? [String: Any])?["list_id"] as? String, "list2")
        let keys = try request("POST", "/db/_design/todo/_view/tasks",
                               json: ["keys": [["task", "2013-05-03T08:00:00Z"], ["task", "nope"]]])
        expect(keys, 200)
        XCTAssertEqual(rows(keys).map { $0["id"] as? String ?? "" }, ["t4"])
        // The index is incremental: a new task appears, a deleted one goes.
        try putDoc("/db/t5", ["type": "task", "list_id": "list2", "created_at": "2013-05-04T00:00:00Z", "done": true, "title": "t5"])
        let t1 = try get("/db/t1").dict["_rev"] as? String ?? ""
        expect(try request("DELETE", "/db/t1?rev=\(t1)"), 200)
        XCTAssertEqual(rows(try get("/db/_design/todo/_view/tasks")).map { $0["id"] as? String ?? "" }, ["t2", "t3", "t4", "t5"])
    }

    func testCustomReduceWithGroupingAndLibraryModule() throws {
        let total = try get("/db/_design/todo/_view/byListAndDay")
        expect(total, 200)
        XCTAssertTrue(jsonEqual(rows(total), [["key": NSNull(), "value": ["done": 2, "total": 4]]]), total.text)
        let byList = try get("/db/_design/todo/_view/byListAndDay?group_level=1")
        XCTAssertTrue(jsonEqual(rows(byList), [
            ["key": ["list1"], "value": ["done": 2, "total": 3]],
            ["key": ["list2"], "value": ["done": 0, "total": 1]],
        ]), byList.text)
        let byDay = try get("/db/_design/todo/_view/byListAndDay?group=true")
        XCTAssertTrue(jsonEqual(rows(byDay), [
            ["key": ["list1", "2013-05-01"], "value": ["done": 1, "total": 2]],
            ["key": ["list1", "2013-05-02"], "value": ["done": 1, "total": 1]],
            ["key": ["list2", "2013-05-03"], "value": ["done": 0, "total": 1]],
        ]), byDay.text)
        let mapOnly = try get("/db/_design/todo/_view/byListAndDay?reduce=false&limit=2")
        XCTAssertTrue(jsonEqual(rows(mapOnly), [
            ["id": "t1", "key": ["list1", "2013-05-01"], "value": 1],
            ["id": "t2", "key": ["list1", "2013-05-01"], "value": 0],
        ]), mapOnly.text)
        XCTAssertEqual(mapOnly.dict["total_rows"] as? Int, 4)
        expectError(try get("/db/_design/todo/_view/tasks?group=true"), 400, "query_parse_error")
    }

    func testBuiltinReducesRunNatively() throws {
        XCTAssertTrue(jsonEqual(rows(try get("/db/_design/todo/_view/countByList?group=true")), [
            ["key": "list1", "value": 3], ["key": "list2", "value": 1],
        ]))
        XCTAssertTrue(jsonEqual(rows(try get("/db/_design/todo/_view/sumByList")), [["key": NSNull(), "value": 2]]))
        var design = Self.todoDesign
        design["_rev"] = try get("/db/_design/todo").dict["_rev"] as? String
        var views = design["views"] as! [String: Any]
        views["stats"] = ["map": "function(doc) { if (doc.type == 'task') emit(doc.list_id, doc.done ? 1 : 0); }", "reduce": "_stats"]
        views["lists"] = ["map": "function(doc) { if (doc.type == 'task') emit(doc.list_id, null); }", "reduce": "_approx_count_distinct"]
        design["views"] = views
        try putDoc("/db/_design/todo", design)
        XCTAssertTrue(jsonEqual(rows(try get("/db/_design/todo/_view/stats")), [
            ["key": NSNull(), "value": ["sum": 2, "count": 4, "min": 0, "max": 1, "sumsqr": 2]],
        ]))
        XCTAssertTrue(jsonEqual(rows(try get("/db/_design/todo/_view/lists")), [["key": NSNull(), "value": 2]]))
    }

    func testChangesWithJavaScriptFilter() throws {
        let r = try get("/db/_changes?filter=todo/byList&list=list1")
        expect(r, 200)
        let ids = (r.dict["results"] as? [[String: Any]] ?? []).map { $0["id"] as? String ?? "" }
        XCTAssertEqual(ids, ["t1", "t2", "t3"])
        let other = try get("/db/_changes?filter=todo/byList&list=list2")
        XCTAssertEqual((other.dict["results"] as? [[String: Any]] ?? []).map { $0["id"] as? String ?? "" }, ["t4"])
        expect(try get("/db/_changes?filter=todo/nope"), 404)
        // filter=_view runs the design document's JavaScript map: documents it emits a row for.
        let viewed = try get("/db/_changes?filter=_view&view=todo/tasks")
        expect(viewed, 200)
        XCTAssertEqual((viewed.dict["results"] as? [[String: Any]] ?? []).map { $0["id"] as? String ?? "" }, ["t1", "t2", "t3", "t4"])
    }

    func testMapThatThrowsSkipsOnlyThatDocument() throws {
        try putDoc("/db/t6", ["type": "task", "list_id": "list2", "created_at": "2013-05-05T00:00:00Z"])   // no title
        try putDoc("/db/_design/fragile", ["views": ["titles": [
            "map": "function(doc) { if (doc.type == 'task') emit(doc.title.toUpperCase(), null); }"]]])
        let before = viewCompiler.mapFailureCount
        let r = try get("/db/_design/fragile/_view/titles")
        expect(r, 200)
        XCTAssertEqual(rows(r).map { $0["key"] as? String ?? "" }, ["TASK T1", "TASK T2", "TASK T3", "TASK T4"])
        XCTAssertEqual(viewCompiler.mapFailureCount - before, 1)
    }

    func testRunawayMapIsStoppedAndTheListenerKeepsServing() throws {
        try putDoc("/db/_design/runaway", ["views": ["forever": ["map": "function(doc) { while (true) {} }"]]])
        let start = Date()
        let r = try get("/db/_design/runaway/_view/forever")
        let elapsed = Date().timeIntervalSince(start)
        XCTAssertEqual(r.status, 500, r.text)
        let reason = r.dict["reason"] as? String ?? ""
        XCTAssertTrue(reason.contains("runaway/forever") && reason.contains("time limit (1 s)"), reason)
        XCTAssertLessThan(elapsed, 4)
        expect(try get("/db/_design/todo/_view/tasks"), 200)
        expect(try get("/db/t1"), 200)
        try putDoc("/db/after", ["type": "note"])
    }

    func testChangedMapSourceResetsTheIndex() throws {
        XCTAssertEqual(rows(try get("/db/_design/todo/_view/tasks")).count, 4)
        // A new revision that leaves the view alone keeps its index.
        var design = Self.todoDesign
        design["_rev"] = try get("/db/_design/todo").dict["_rev"] as? String
        design["filters"] = ["none": "function(doc, req) { return false; }"]
        try putDoc("/db/_design/todo", design)
        let indexed = db.viewNamed("todo/tasks").lastSequenceIndexed
        XCTAssertGreaterThan(indexed, 0)
        XCTAssertEqual(rows(try get("/db/_design/todo/_view/tasks")).count, 4)
        // A changed map source discards the index: only the new function's rows remain.
        design["_rev"] = try get("/db/_design/todo").dict["_rev"] as? String
        var views = design["views"] as! [String: Any]
        views["tasks"] = ["map": "function(doc){ if (doc.type == 'list') emit(doc.title, null); }"]
        design["views"] = views
        try putDoc("/db/_design/todo", design)
        let r = try get("/db/_design/todo/_view/tasks")
        XCTAssertTrue(jsonEqual(rows(r), [
            ["id": "list2", "key": "Chores", "value": NSNull()],
            ["id": "list1", "key": "Groceries", "value": NSNull()],
        ]), r.text)
    }

    func testValidateDocUpdate() throws {
        try putDoc("/db/_design/rules", ["validate_doc_update": """
            function(newDoc, oldDoc, userCtx, secObj) {
              if (newDoc.type == 'task' && !newDoc.title && !newDoc._deleted) throw({forbidden: 'A task needs a title'});
              if (newDoc.secret) throw({unauthorized: 'Only admins may write secrets'});
              if (oldDoc && oldDoc.owner && newDoc.owner != oldDoc.owner && !newDoc._deleted) throw({forbidden: 'The owner cannot change'});
              if (newDoc._deleted && oldDoc && oldDoc.locked) throw({forbidden: 'Locked documents stay'});
              if (newDoc._attachments && oldDoc && oldDoc.frozen) throw({forbidden: 'Frozen documents take no attachments'});
              if (userCtx.db != 'db') throw({forbidden: 'wrong userCtx'});
            }
            """])
        expectError(try request("PUT", "/db/bad", json: ["type": "task"]), 403, "forbidden", "A task needs a title")
        expectError(try request("POST", "/db", json: ["type": "task"]), 403, "forbidden", "A task needs a title")
        expectError(try request("PUT", "/db/s", json: ["secret": true]), 401, "unauthorized", "Only admins may write secrets")
        let rev = try putDoc("/db/owned", ["owner": "ann", "locked": true, "frozen": true])
        expectError(try request("PUT", "/db/owned", json: ["_rev": rev, "owner": "bob"]), 403, "forbidden", "The owner cannot change")
        expectError(try request("DELETE", "/db/owned?rev=\(rev)"), 403, "forbidden", "Locked documents stay")
        expectError(try request("PUT", "/db/owned/a.txt?rev=\(rev)", body: Array("hi".utf8), headers: ["Content-Type": "text/plain"]),
                    403, "forbidden", "Frozen documents take no attachments")
        let bulk = try request("POST", "/db/_bulk_docs", json: ["docs": [["_id": "ok1", "type": "task", "title": "fine"],
                                                                      ["_id": "no1", "type": "task"]]])
        expect(bulk, 201)
        XCTAssertEqual(bulk.array.count, 2)
        XCTAssertEqual((bulk.array.first as? [String: Any])?["ok"] as? Bool, true)
        XCTAssertTrue(jsonEqual(bulk.array.last ?? [:], ["id": "no1", "error": "forbidden", "reason": "A task needs a title"]), bulk.text)
        try putDoc("/db/good", ["type": "task", "title": "fine", "owner": "ann"])
        expect(try get("/db/bad"), 404)
        // Removing the design document lifts the rules.
        let rulesRev = try get("/db/_design/rules").dict["_rev"] as? String ?? ""
        expect(try request("DELETE", "/db/_design/rules?rev=\(rulesRev)"), 200)
        try putDoc("/db/bad", ["type": "task"])
    }

    func testWithoutCompilersJavaScriptIsRefusedClearly() throws {
        CBLView.setCompiler(nil)
        CBLDatabase.setFilterCompiler(nil)
        let r = try get("/db/_design/todo/_view/tasks")
        expectError(r, 501, "not_implemented")
        XCTAssertTrue((r.dict["reason"] as? String ?? "").contains("--no-javascript"))
        expect(try get("/db/_changes?filter=todo/byList&list=list1"), 404)
    }

    func testFunctionThatDoesNotCompileAnswersCompilationError() throws {
        // CouchDB 3.4 names it `compilation_error` with 400 (couch_mrview's design document check).
        try putDoc("/db/_design/broken", ["views": ["v": ["map": "function(doc) { emit("]],
                                          "filters": ["f": "function(doc, req) { return ("]])
        let view = try get("/db/_design/broken/_view/v")
        expectError(view, 400, "compilation_error")
        XCTAssertTrue((view.dict["reason"] as? String ?? "").hasPrefix("Compilation of the map function failed"), view.text)
        expectError(try get("/db/_changes?filter=broken/f"), 400, "compilation_error")
        // Everything else keeps serving.
        expect(try get("/db/_design/todo/_view/tasks"), 200)
        expect(try get("/db/_changes?filter=todo/byList&list=list1"), 200)
        // A validate_doc_update that does not compile refuses writes, but not to design documents.
        let rulesRev = try putDoc("/db/_design/rules", ["validate_doc_update": "function(newDoc) {"])
        let refused = try request("PUT", "/db/n1", json: ["type": "note"])
        expectError(refused, 400, "compilation_error")
        XCTAssertTrue((refused.dict["reason"] as? String ?? "").contains("_design/rules"), refused.text)
        try putDoc("/db/_design/rules", ["_rev": rulesRev, "validate_doc_update": "function(newDoc) {}"])
        try putDoc("/db/n1", ["type": "note"])
    }

    func testWithoutCompilersValidateDocUpdateRefusesWritesThroughTheListener() throws {
        try putDoc("/db/_design/rules", ["validate_doc_update":
            "function(newDoc) { if (!newDoc.title && !newDoc._deleted) throw({forbidden: 'A document needs a title'}); }"])
        CBLView.setCompiler(nil)
        CBLDatabase.setFilterCompiler(nil)   // as `cbl serve --no-javascript`
        let refused = try request("PUT", "/db/unchecked", json: ["type": "note"])
        expectError(refused, 500, "unknown_query_language")
        let reason = refused.dict["reason"] as? String ?? ""
        XCTAssertTrue(reason.contains("JavaScript is disabled on this listener") && reason.contains("_design/rules"), reason)
        expect(try get("/db/unchecked"), 404)
        let rev = try get("/db/t1").dict["_rev"] as? String ?? ""
        expectError(try request("DELETE", "/db/t1?rev=\(rev)"), 500, "unknown_query_language")
        let bulk = try request("POST", "/db/_bulk_docs", json: ["docs": [["_id": "b1", "title": "fine"]]])
        XCTAssertEqual((bulk.array.first as? [String: Any])?["error"] as? String, "unknown_query_language", bulk.text)
        expect(try get("/db/b1"), 404)
        // Design documents stay writable (CouchDB never runs validate_doc_update on them), so the
        // rule can be removed; then writes are accepted again.
        let rulesRev = try get("/db/_design/rules").dict["_rev"] as? String ?? ""
        expect(try request("DELETE", "/db/_design/rules?rev=\(rulesRev)"), 200)
        try putDoc("/db/unchecked", ["type": "note"])
    }

    func testOneXAPIWithoutCompilerAndWithoutListenerKeepsOneXBehaviour() throws {
        // An app that never registers a compiler nor serves the database: 1.x never ran design
        // documents' validate_doc_update, so its own writes are accepted (its rules are setValidationNamed).
        CBLView.setCompiler(nil)
        CBLDatabase.setFilterCompiler(nil)
        let appDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("app-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: appDirectory) }
        let appManager = try CBLManager(directory: appDirectory.path)
        defer { appManager.close() }
        let appDB = try appManager.databaseNamed("app")
        _ = try appDB.document(withID: "_design/rules")!.putProperties(["validate_doc_update":
            "function(newDoc) { throw({forbidden: 'never'}); }"])
        XCTAssertEqual(try appDB.document(withID: "note")!.putProperties(["type": "note"]).properties?["type"] as? String, "note")
    }

    func testOneXAPIWithTheJavaScriptCompiler() throws {
        let compiler = try XCTUnwrap(CBLView.compiler())
        let view = db.viewNamed("app/byList")
        let map = try XCTUnwrap(compiler.compileMapFunction("function(doc) { if (doc.type == 'task') emit(doc.list_id, doc.done ? 1 : 0); }",
                                                           language: "javascript"))
        let reduce = try XCTUnwrap(compiler.compileReduceFunction("function(keys, values, rereduce) { return sum(values); }",
                                                                 language: "javascript"))
        XCTAssertNil(compiler.compileMapFunction("function(doc) { emit(", language: "javascript"))
        XCTAssertNil(compiler.compileMapFunction("(defun map (doc))", language: "lisp"))
        view.setMapBlock(map, reduce: reduce, version: "1")
        let query = view.createQuery()
        query.mapOnly = true
        let result = try query.run()
        XCTAssertEqual(result.count, 4)
        let grouped = view.createQuery()
        grouped.groupLevel = 1
        let groups = Array(try grouped.run())
        XCTAssertEqual(groups.map { $0.key as? String ?? "" }, ["list1", "list2"])
        XCTAssertEqual(groups.map { $0.value as? Int ?? -1 }, [2, 0])
        // Re-reduce, as a reduce over many rows runs it.
        XCTAssertEqual(reduce([], [3, 4, 5], true) as? Int, 12)

        // A design document view through the API is a view like any other (live queries too).
        let designView = try XCTUnwrap(db.compileDesignDocumentView(named: "todo/tasks"))
        let live = designView.createQuery().asLive()
        let updated = expectation(description: "live query sees the new task")
        let observer = live.addChangeListener { rows in
            if rows.count == 5 { updated.fulfill() }
        }
        live.start()
        try putDoc("/db/t9", ["type": "task", "list_id": "list1", "created_at": "2013-06-01T00:00:00Z", "title": "t9"])
        wait(for: [updated], timeout: 10)
        live.removeChangeListener(observer)
        live.stop()

        let filterCompiler = try XCTUnwrap(CBLDatabase.filterCompiler())
        let filter = try XCTUnwrap(filterCompiler.compileFilterFunction("function(doc, req) { return doc.list_id == req.query.list; }",
                                                                       language: "javascript"))
        let t4 = try XCTUnwrap(db.existingDocument(withID: "t4")?.currentRevision)
        XCTAssertTrue(filter(t4, ["list": "list2"]))
        XCTAssertFalse(filter(t4, ["list": "list1"]))
    }
}
