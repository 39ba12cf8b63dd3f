import CouchbaseLite
import CBLTestSupport
import CouchbaseLiteSwift
import Foundation
import JSONCore
import XCTest
@testable import CouchbaseLiteUpgrade

/// `cbl migrate-plan`: every view of a database classed over one conversion, on the real 1.x
/// fixtures, on a generated database with the view shapes apps use, and as HTML in Chromium.
final class MigrationPlanTests: XCTestCase {
    private var scratch: Scratch!

    override func setUp() { scratch = Scratch() }
    override func tearDown() { scratch = nil }

    private func run(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        try runCBL(arguments, in: scratch)
    }

    // MARK: (a) the real 1.x fixtures

    func testEveryViewOfTheRealFixturesIsClassedAndEveryEqualWasRun() throws {
        // The .cblite2 fixtures, and the single-file ones that carry view indexes (the manager
        // upgrades those to .cblite2 on open, as 1.2+ did).
        var bundles: [URL] = [], todoLite: [URL] = []
        for path in ["cbl1/sqlite-cblite2/ios140/iosdb.cblite2", "cbl1/sqlite-cblite2/android140-cbl2test/android-sqlite.cblite2"] {
            bundles.append(try scratch.copyFixture(path))
        }
        for (folder, name) in [("ios-people", "people"), ("android104-todos", "todos"), ("android110-guest", "guest"), ("ios104-alt", "iosdb")] {
            let copy = try scratch.copyFixture("cbl1/legacy-cblite/\(folder)", as: "legacy-\(folder)")
            let manager = try CBLManager(directory: copy.path)
            manager.close()
            let bundle = copy.appendingPathComponent("\(name).cblite2")
            guard FileManager.default.fileExists(atPath: bundle.path) else { continue }
            bundles.append(bundle)
            // The 1.2 upgrade drops stored view indexes (1.x rebuilt them): ToDoLite's own two maps
            // (ToDoLite-Android's List and Task classes) are indexed again over its real documents.
            guard ["todos", "guest"].contains(name) else { continue }
            let reopened = try CBLManager(directory: copy.path)
            let db = try reopened.existingDatabaseNamed(name)
            db.viewNamed("lists").setMapBlock({ doc, emit in if doc["type"] as? String == "list", let t = doc["title"] { emit(t, nil) } }, version: "1")
            db.viewNamed("tasks").setMapBlock({ doc, emit in
                if doc["type"] as? String == "task" { emit([doc["list_id"] ?? NSNull(), doc["created_at"] ?? NSNull()], doc) }
            }, version: "1")
            _ = try db.viewNamed("lists").createQuery().run()
            _ = try db.viewNamed("tasks").createQuery().run()
            reopened.close()
            todoLite.append(bundle)
        }
        var classed = 0
        for bundle in bundles {
            let plan = try MigrationPlanner(legacyDatabase: bundle).plan()
            let manager = try CBLManager(directory: bundle.deletingLastPathComponent().path)
            let names = Set(try manager.existingDatabaseNamed(bundle.deletingPathExtension().lastPathComponent).allViews.map(\.name))
            manager.close()
            XCTAssertTrue(names.isSubset(of: Set(plan.entries.map(\.view))), "\(bundle.lastPathComponent): every stored view planned")
            if todoLite.contains(bundle) {
                let byView = Dictionary(plan.entries.map { ($0.view, $0) }, uniquingKeysWith: { a, _ in a })
                XCTAssertEqual(byView["lists"]?.verdict, .equal, "\(bundle.lastPathComponent): \(byView["lists"]?.n1ql ?? "absent") \(byView["lists"]?.unexpressed ?? [])")
                XCTAssertEqual(byView["tasks"]?.verdict, .handWritten, "the whole document as the value is not a property")
                XCTAssertEqual(byView["tasks"]?.map?.keyPaths, ["list_id", "created_at"])
            }
            for e in plan.entries {
                classed += 1
                if e.verdict == .equal {
                    XCTAssertTrue(e.verified, "\(e.view): equal only when both sides ran and agreed")
                    XCTAssertEqual(e.viewRowCount, e.n1qlRowCount, e.view)
                    XCTAssertFalse(e.n1ql.isEmpty)
                }
                if e.verdict == .handWritten { XCTAssertFalse(e.unexpressed.isEmpty, "\(e.view): says what could not be expressed") }
                if e.verdict == .explained { XCTAssertFalse(e.rules.isEmpty || e.rules.contains { $0.rule == "unexplained" }, e.view) }
            }
        }
        XCTAssertGreaterThanOrEqual(classed, todoLite.count * 2)
        print("migrate-plan over \(bundles.count) fixtures: \(classed) view queries classed")
    }

    // MARK: (b) a generated database with the view shapes apps use

    static func appDatabase(in scratch: Scratch) throws -> URL {
        var docs: [(String, [String: Any])] = []
        let names = ["alice", "Bob", "carol", "Émile", "dave", "eve", "Zoë", "frank"]
        for (i, n) in names.enumerated() {
            var p: [String: Any] = ["type": "person", "name": n, "age": 20 + i * 3, "address": ["zip": "7500\(i)"],
                                    "tags": i % 2 == 0 ? ["red", "blue"] : ["green"]]
            if i % 3 != 0 { p["city"] = ["Paris", "lyon", "Nice"][i % 3] }
            docs.append((String(format: "person-%02d", i), p))
        }
        for i in 0..<12 {
            docs.append((String(format: "task-%02d", i), ["type": "task", "title": "task \(i)", "done": i % 3 == 0, "priority": i % 4,
                                                          "list_id": "list-\(i % 3)", "date": [2016, 1 + i % 2, 1 + i]]))
        }
        docs.append(("_design/js", ["language": "javascript", "views": [
            "byType": ["map": "function(doc) { if (doc.type) emit(doc.type, null); }", "reduce": "_count"],
            "priorities": ["map": "function(doc) { if (doc.type == 'task') emit(doc.priority, doc.priority); }", "reduce": "_sum"],
            "stats": ["map": "function(doc) { if (doc.type == 'task') emit(doc.list_id, doc.priority); }", "reduce": "_stats"],
            "listPriority": ["map": "function(doc) { if (doc.type == 'task') emit([doc.list_id, doc.priority], null); }", "reduce": "_count"],
            "custom": ["map": "function(doc) { if (doc.type == 'task') emit(doc.title, 1); }",
                       "reduce": "function(keys, values, rereduce) { return sum(values); }"],
        ]]))
        func person(_ doc: [String: Any]) -> Bool { doc["type"] as? String == "person" }
        func task(_ doc: [String: Any]) -> Bool { doc["type"] as? String == "task" }
        let views: [String: CBLMapBlock] = [
            "app/personsByName": { doc, emit in if person(doc), let n = doc["name"] { emit(n, nil) } },
            "app/personsByAge": { doc, emit in if person(doc), let a = doc["age"] { emit(a, nil) } },
            "app/nameToAge": { doc, emit in if person(doc), let n = doc["name"] { emit(n, doc["age"]) } },
            "app/byCity": { doc, emit in if let c = doc["city"] { emit(c, nil) } },
            "app/byZip": { doc, emit in if let a = doc["address"] as? [String: Any], let z = a["zip"] { emit(z, nil) } },
            "app/tasksByPriority": { doc, emit in if task(doc), let p = doc["priority"] { emit(p, doc["title"]) } },
            "app/tasksByList": { doc, emit in if task(doc), let l = doc["list_id"], let p = doc["priority"] { emit([l, p], nil) } },
            "app/typeAndName": { doc, emit in if person(doc), let n = doc["name"] { emit(["person", n], nil) } },
            "app/doneTasks": { doc, emit in if task(doc), doc["done"] as? Bool == true, let t = doc["title"] { emit(t, nil) } },
            "app/tasksByDone": { doc, emit in if task(doc), let d = doc["done"] { emit(d, nil) } },
            "app/tags": { doc, emit in for t in doc["tags"] as? [Any] ?? [] { emit(t, nil) } },
            "app/tasksByDate": { doc, emit in if task(doc), let d = doc["date"] { emit(d, nil) } },
            "app/byID": { doc, emit in if task(doc), let id = doc["_id"] { emit(id, nil) } },
            "app/upperNames": { doc, emit in if person(doc), let n = doc["name"] as? String { emit(n.uppercased(), nil) } },
            "app/wholeDocs": { doc, emit in if task(doc), let t = doc["title"] { emit(t, doc) } },
            "app/nameAndCity": { doc, emit in if person(doc), let n = doc["name"] { emit(n, nil); if let c = doc["city"] { emit(c, nil) } } },
            "app/constantValue": { doc, emit in if person(doc), let n = doc["name"] { emit(n, 1) } },
            "app/nothing": { doc, emit in if doc["type"] as? String == "invoice" { emit(doc["_id"], nil) } },
            "app/titles": { doc, emit in if task(doc), let t = doc["title"] { emit(t, doc["priority"]) } },
            "app/ages": { doc, emit in if let a = doc["age"] { emit(a, doc["name"]) } },
        ]
        return try makeLegacyDatabase(in: scratch, docs, views: views)
    }

    func testAGeneratedAppDatabaseIsClassedViewByView() throws {
        let db = try Self.appDatabase(in: scratch)
        let r = try run(["migrate-plan", db.path, "--json"])
        XCTAssertEqual(r.status, 1, "some views need hand-written queries: " + r.stderr)
        let plan = try JSONDecoder().decode(MigrationPlan.self, from: Data(r.stdout.utf8))
        let byQuery = Dictionary(plan.entries.map { ("\($0.view) \($0.query)", $0) }, uniquingKeysWith: { a, _ in a })
        let views = Set(plan.entries.map(\.view))
        XCTAssertGreaterThanOrEqual(views.count, 20)
        func verdict(_ key: String) -> MigrationPlan.Verdict? { byQuery[key]?.verdict }
        let equal = ["app/personsByName", "app/personsByAge", "app/nameToAge", "app/byCity", "app/byZip", "app/tasksByPriority",
                     "app/tasksByList", "app/doneTasks", "app/byID", "app/titles", "app/ages"]
        for v in equal {
            XCTAssertEqual(verdict("\(v) map"), .equal, "\(v): \(byQuery["\(v) map"].map { "\($0.n1ql) \($0.rules.map(\.rule)) \($0.unexpressed)" } ?? "absent")")
        }
        let handWritten = ["app/upperNames", "app/wholeDocs", "app/nameAndCity", "app/constantValue", "app/nothing"]
        for v in handWritten {
            let e = byQuery["\(v) map"]
            XCTAssertEqual(e?.verdict, .handWritten, "\(v): \(e.map { "\($0.n1ql) \($0.rules.map(\.rule))" } ?? "absent")")
            XCTAssertFalse(e?.unexpressed.isEmpty ?? true, "\(v) says what the suggestion could not express")
        }
        // Shapes whose outcome depends on collation details: classed, never silently wrong.
        for v in ["app/typeAndName", "app/tasksByDone", "app/tags", "app/tasksByDate"] {
            XCTAssertNotNil(verdict("\(v) map"), v)
        }
        for e in plan.entries {
            if e.verdict == .equal { XCTAssertTrue(e.verified); XCTAssertEqual(e.viewRowCount, e.n1qlRowCount, e.view) }
            if e.verdict == .explained { XCTAssertFalse(e.rules.isEmpty) }
            XCTAssertGreaterThanOrEqual(e.viewMilliseconds, 0)
            if !e.n1ql.isEmpty { XCTAssertFalse(e.queryBuilderSwift.isEmpty, e.view) }
        }
        XCTAssertEqual(byQuery["app/personsByName map"]?.queryBuilderSwift.contains("Expression.property(\"name\").collate(Collation.unicode())"), true)
        XCTAssertEqual(byQuery["app/personsByName map"]?.indexExpressions, ["name"])

        // The design document's JavaScript views, where the JavaScript runtime is present.
        let js = plan.entries.filter { $0.view.hasPrefix("js/") }
        XCTAssertEqual(Set(js.map(\.view)), ["js/byType", "js/priorities", "js/listPriority", "js/stats", "js/custom"])
        guard byQuery["js/byType map"]?.n1ql.isEmpty == false else {
            throw XCTSkip("JavaScriptCore is not available: the design document's views were classed unrunnable (\(byQuery["js/byType map"]?.unexpressed ?? []))")
        }
        XCTAssertEqual(verdict("js/byType map"), .equal)
        XCTAssertEqual(verdict("js/byType reduce _count group"), .equal, "\(byQuery["js/byType reduce _count group"].map { "\($0.n1ql) \($0.rules.map(\.rule)) \($0.unexpressed)" } ?? "absent")")
        XCTAssertEqual(verdict("js/priorities reduce _sum group"), .equal, "\(byQuery["js/priorities reduce _sum group"].map { "\($0.n1ql) \($0.rules.map(\.rule)) \($0.unexpressed)" } ?? "absent")")
        XCTAssertEqual(verdict("js/listPriority reduce _count group"), .equal)
        XCTAssertNotNil(verdict("js/listPriority reduce _count group_level=1"))
        XCTAssertNotNil(verdict("js/stats reduce _stats group"))
        XCTAssertEqual(verdict("js/custom map"), .handWritten, "a JavaScript reduce has no N1QL aggregate")
    }

    func testExitStatusZeroWhenEveryViewIsEqualAndTwoOnError() throws {
        let db = try makeLegacyDatabase(in: scratch, [("a", ["type": "person", "name": "alice"]), ("b", ["type": "person", "name": "Bob"]),
                                                       ("x", ["type": "pet", "name": "rex"])],
                                        views: ["app/byName": { doc, emit in if doc["type"] as? String == "person", let n = doc["name"] { emit(n, nil) } }])
        let r = try run(["migrate-plan", db.path])
        XCTAssertEqual(r.status, 0, r.stdout + r.stderr)
        XCTAssertTrue(r.stdout.contains("1 view: 1 equal, 0 equal with explained differences, 0 need a hand-written query"), r.stdout)
        XCTAssertTrue(r.stdout.contains("N1QL:   SELECT meta().id AS id, name AS key FROM _ WHERE type = 'person' AND name IS VALUED ORDER BY name COLLATE UNICODE, meta().id"), r.stdout)
        let missing = try run(["migrate-plan", scratch.path("nowhere.cblite2").path])
        XCTAssertEqual(missing.status, 2, missing.stderr)
    }

    func testARowOfADeletedDocumentIsAnExplainedDifference() throws {
        // The app last queried the view before a document was deleted: its stored index still has the row.
        let db = try makeLegacyDatabase(in: scratch, [("a", ["type": "person", "name": "alice"]), ("b", ["type": "person", "name": "Bob"]),
                                                       ("c", ["type": "person", "name": "carol"])],
                                        views: ["app/byName": { doc, emit in if doc["type"] as? String == "person", let n = doc["name"] { emit(n, nil) } }])
        let manager = try CBLManager(directory: scratch.url.path)
        try XCTUnwrap(try manager.existingDatabaseNamed("legacy").existingDocument(withID: "c")).delete()
        manager.close()
        let r = try run(["migrate-plan", db.path, "--json"])
        XCTAssertEqual(r.status, 0, "explained differences pass: " + r.stdout + r.stderr)
        let plan = try JSONDecoder().decode(MigrationPlan.self, from: Data(r.stdout.utf8))
        let e = try XCTUnwrap(plan.entries.first)
        XCTAssertEqual(e.verdict, .explained, "\(e.rules.map(\.rule)) \(e.unexpressed)")
        XCTAssertEqual(e.rules.map(\.rule), ["dropped-revisions"], "the view still has the deleted document's row; 2.x keeps only the deletion")
        XCTAssertFalse(e.verified)
        XCTAssertEqual(e.differenceCount, 1)
    }

    func testThePastedQueryBuilderCodeRunsAndGivesTheN1QLRows() throws {
        let legacy = try Self.appDatabase(in: scratch)
        let plan = try MigrationPlanner(legacyDatabase: legacy).plan()
        let entry = try XCTUnwrap(plan.entries.first { $0.view == "app/doneTasks" })
        // The code below is the plan's, pasted as an app would.
        XCTAssertEqual(entry.queryBuilderSwift, """
            let query = QueryBuilder
                .select(SelectResult.expression(Meta.id).as("id"),
                        SelectResult.expression(Expression.property("title")).as("key"))
                .from(DataSource.database(database))
                .where(Expression.property("done").equalTo(Expression.value(true))
                    .and(Expression.property("title").isValued()))
                .orderBy(Ordering.expression(Expression.property("title").collate(Collation.unicode())), Ordering.expression(Meta.id))
            """)
        let (bundle, _) = try upgrade(legacy, in: scratch)
        let database = try openConverted(bundle)
        defer { try? database.close() }
        let query = QueryBuilder
            .select(SelectResult.expression(Meta.id).as("id"),
                    SelectResult.expression(Expression.property("title")).as("key"))
            .from(DataSource.database(database))
            .where(Expression.property("done").equalTo(Expression.value(true))
                .and(Expression.property("title").isValued()))
            .orderBy(Ordering.expression(Expression.property("title").collate(Collation.unicode())), Ordering.expression(Meta.id))
        let built = try query.execute().allResults().map { $0.string(forKey: "id") ?? "" }
        let n1ql = try database.createQuery(entry.n1ql).execute().allResults().map { $0.string(forKey: "id") ?? "" }
        XCTAssertEqual(built, n1ql)
        XCTAssertEqual(built.count, entry.viewRowCount)
    }

    // MARK: (c) the HTML page in a real headless Chromium

    func testHTMLRendersInHeadlessChromium() throws {
        let chromium = try HeadlessChromium.find()
        let db = try makeLegacyDatabase(in: scratch, [("a", ["type": "person", "name": "alice", "age": 30]), ("b", ["type": "person", "name": "Bob", "age": 25]),
                                                       ("x", ["type": "pet", "name": "rex"])],
                                        views: ["app/byName": { doc, emit in if doc["type"] as? String == "person", let n = doc["name"] { emit(n, nil) } },
                                                "app/upper": { doc, emit in if let n = doc["name"] as? String { emit(n.uppercased(), nil) } }])
        let page = scratch.path("plan.html")
        let r = try run(["migrate-plan", db.path, "--html", page.path])
        XCTAssertEqual(r.status, 1, r.stderr)
        let html = try String(contentsOf: page, encoding: .utf8)
        XCTAssertTrue(html.hasPrefix("<!DOCTYPE html>"))
        XCTAssertFalse(html.contains("<link") || html.contains("src=") || html.contains("http://") || html.contains("https://"), "self-contained")

        let dom = try chromium.run(["--dump-dom", page.absoluteString])
        XCTAssertTrue(dom.contains("2 views: 1 equal, 0 equal with explained differences, 1 needs a hand-written query"), dom)
        XCTAssertTrue(dom.contains("app/byName"), dom)
        XCTAssertTrue(dom.contains("app/upper"), dom)
        XCTAssertTrue(dom.contains(">equal<"), dom)
        XCTAssertTrue(dom.contains("needs a hand-written query"), dom)
        XCTAssertTrue(dom.contains("QueryBuilder (Swift)"), dom)

        let png = scratch.path("plan.png")
        _ = try chromium.run(["--window-size=1200,2000", "--screenshot=\(png.path)", page.absoluteString])
        let data = try Data(contentsOf: png)
        XCTAssertEqual(data.prefix(8), Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]), "a PNG")
        let blank = scratch.path("blank.png")
        _ = try chromium.run(["--window-size=1200,2000", "--screenshot=\(blank.path)", "about:blank"])
        XCTAssertGreaterThan(data.count, 4 * (try Data(contentsOf: blank)).count, "the screenshot shows the page, not a blank window")
    }
}
