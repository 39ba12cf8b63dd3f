import CouchbaseLite
import CouchbaseLiteSwift
import CBLTestSupport
import Foundation
import JSONCore
import XCTest
@testable import CouchbaseLiteUpgrade

/// `cbl compare` end to end, and comparisons over the shared fixtures' names data.
final class CompareCommandTests: XCTestCase {
    private var scratch: Scratch!

    override func setUp() { scratch = Scratch() }
    override func tearDown() { scratch = nil }

    private func run(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        try runCBL(arguments, in: scratch)
    }

    private func makeLegacy(_ docs: [(String, [String: Any])], views: [String: CBLMapBlock]) throws -> URL {
        try makeLegacyDatabase(in: scratch, docs, views: views)
    }

    private func people() throws -> URL {
        try makeLegacy([("a", ["type": "person", "name": "alice"]), ("b", ["type": "person", "name": "Bob"]),
                        ("c", ["type": "person", "name": "carol"])],
                       views: ["app/byName": { doc, emit in if doc["type"] as? String == "person", let n = doc["name"] { emit(n, nil) } }])
    }

    func testEqualExitsZeroAndDifferentExitsOneWithTheRuleNamed() throws {
        let db = try people()
        let equal = try run(["compare", db.path, "--view", "app/byName", "--n1ql",
                             "SELECT meta().id AS id, name AS key FROM _ WHERE type = 'person' ORDER BY name COLLATE UNICODE, meta().id"])
        XCTAssertEqual(equal.status, 0, equal.stdout + equal.stderr)
        XCTAssertTrue(equal.stdout.contains("EQUAL"), equal.stdout)
        XCTAssertFalse(equal.stdout.contains("\u{1B}["), "no colours when piped")

        let different = try run(["compare", db.path, "--view", "app/byName", "--n1ql",
                                 "SELECT meta().id AS id, name AS key FROM _ WHERE type = 'person' ORDER BY name"])
        XCTAssertEqual(different.status, 1, different.stdout + different.stderr)
        XCTAssertTrue(different.stdout.contains("DIFFERENT"), different.stdout)
        XCTAssertTrue(different.stdout.contains("binary-collation"), different.stdout)
        XCTAssertTrue(different.stdout.contains("cbl2-format.md §9.4"), different.stdout)
    }

    func testJSONAndHTMLReports() throws {
        let db = try people()
        let htmlFile = scratch.path("report.html")
        let r = try run(["compare", db.path, "--view", "app/byName", "--json", "--html", htmlFile.path, "--n1ql",
                         "SELECT meta().id AS id, name AS key FROM _ WHERE type = 'person' ORDER BY name"])
        XCTAssertEqual(r.status, 1, r.stderr)
        let json = try XCTUnwrap(try JSON.parse(r.stdout) as? [String: Any])
        XCTAssertEqual(json["equal"] as? Bool, false)
        XCTAssertEqual(json["viewRowCount"] as? Int, 3)
        let differences = try XCTUnwrap(json["differences"] as? [[String: Any]])
        XCTAssertEqual(differences.map { $0["rule"] as? String }, ["binary-collation"])
        XCTAssertEqual(differences.first?["kind"] as? String, "order-differs")
        let html = try String(contentsOf: htmlFile, encoding: .utf8)
        XCTAssertTrue(html.hasPrefix("<!DOCTYPE html>"))
        XCTAssertTrue(html.contains("BINARY string collation"))
        XCTAssertFalse(html.contains("<link") || html.contains("src=\"http"), "self-contained")
        try checkInHeadlessChromium(htmlFile, expect: ["1 difference, 0 unexplained", "highlighted rows"])
    }

    /// Renders the page in headless Chromium (Debian's package; `.ci/run` installs it) and checks
    /// what a person sees: the DOM the page's script built, and a screenshot of the window size
    /// with far more drawn on it than on a blank page. Skips where Chromium is not installed.
    private func checkInHeadlessChromium(_ page: URL, expect: [String]) throws {
        let chromium = try HeadlessChromium.find()
        let dom = try chromium.run(["--dump-dom", page.absoluteString])
        for text in expect { XCTAssertTrue(dom.contains(text), "Chromium's DOM lacks '\(text)'") }
        // The script ran: it wrote the count of highlighted rows (the moved row on each side).
        XCTAssertTrue(dom.contains("2 highlighted rows, 0 unexplained"), dom)

        // The screenshot: a PNG of the window's size, with the report drawn on it.
        func screenshot(_ url: String, _ name: String) throws -> (width: UInt32, height: UInt32, bytes: Int) {
            let file = page.deletingLastPathComponent().appendingPathComponent(name)
            _ = try chromium.run(["--window-size=1100,800", "--screenshot=\(file.path)", url])
            let png = try Data(contentsOf: file)
            XCTAssertEqual(png.prefix(8), Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]), "\(name) is a PNG")
            func be32(_ at: Int) -> UInt32 { png[at..<(at + 4)].reduce(0) { $0 << 8 | UInt32($1) } }
            return (be32(16), be32(20), png.count)
        }
        let report = try screenshot(page.absoluteString, "report.png")
        XCTAssertEqual(report.width, 1100)
        XCTAssertEqual(report.height, 800)
        let blank = try screenshot("about:blank", "blank.png")
        XCTAssertGreaterThan(report.bytes, 4 * blank.bytes, "the report's screenshot shows little more than a blank page")
    }

    func testSuggestProposesAVerifiedQuery() throws {
        let db = try makeLegacy([("a", ["type": "person", "name": "alice"]), ("b", ["type": "person", "name": "Bob"]),
                                 ("x", ["type": "pet", "name": "rex"])],
                                views: ["app/byName": { doc, emit in if doc["type"] as? String == "person", let n = doc["name"] { emit(n, nil) } }])
        let r = try run(["compare", db.path, "--view", "app/byName", "--map-only", "--suggest"])
        XCTAssertEqual(r.status, 0, r.stdout + r.stderr)
        XCTAssertTrue(r.stdout.contains("N1QL:   SELECT meta().id AS id, name AS key FROM _ WHERE type = 'person' AND name IS VALUED ORDER BY name COLLATE UNICODE, meta().id"), r.stdout)
        XCTAssertTrue(r.stdout.contains("verified"), r.stdout)
        let neither = try run(["compare", db.path, "--view", "app/byName"])
        XCTAssertEqual(neither.status, 2, "a usage error")
        XCTAssertTrue(neither.stderr.contains("Give either --n1ql QUERY or --suggest"), neither.stderr)
    }

    func testSuggestForADesignDocumentJavaScriptView() throws {
        // A REST-era app's view lives in its design document as JavaScript, not in a Swift closure.
        let db = try makeLegacy([("a", ["type": "person", "name": "alice"]), ("b", ["type": "person", "name": "Bob"]),
                                 ("x", ["type": "pet", "name": "rex"]),
                                 ("_design/app", ["language": "javascript", "views": [
                                     "byName": ["map": "function(doc) { if (doc.type == 'person' && doc.name) emit(doc.name, null); }"],
                                 ]])],
                                views: [:])
        let r = try run(["compare", db.path, "--view", "app/byName", "--map-only", "--suggest"])
        if r.status == 2, r.stderr.contains("need JavaScriptCore at run time") {
            throw XCTSkip("JavaScriptCore is not installed (apt install libjavascriptcoregtk-4.1-0): \(r.stderr)")
        }
        XCTAssertEqual(r.status, 0, r.stdout + r.stderr)
        XCTAssertTrue(r.stdout.contains("N1QL:   SELECT meta().id AS id, name AS key FROM _ WHERE type = 'person' AND name IS VALUED ORDER BY name COLLATE UNICODE, meta().id"), r.stdout)
        XCTAssertTrue(r.stdout.contains("verified"), r.stdout)
    }

    func testBadInputExitsTwoWithAOneLineMessage() throws {
        let db = try people()
        let missingView = try run(["compare", db.path, "--view", "app/nope", "--n1ql", "SELECT meta().id AS id, name AS key FROM _"])
        XCTAssertEqual(missingView.status, 2)
        XCTAssertTrue(missingView.stderr.hasPrefix("cbl compare: error: No view named 'app/nope'"), missingView.stderr)
        XCTAssertEqual(missingView.stderr.split(separator: "\n").count, 1)

        let malformed = try run(["compare", db.path, "--view", "app/byName", "--n1ql", "SELECT meta().id AS id, name AS key FROM _ WHERE"])
        XCTAssertEqual(malformed.status, 2)
        XCTAssertTrue(malformed.stderr.contains("syntax error at line 1"), malformed.stderr)

        let missing = try run(["compare", scratch.path("nowhere.cblite2").path, "--view", "v", "--n1ql", "SELECT 1 AS key"])
        XCTAssertEqual(missing.status, 2)
        XCTAssertEqual(missing.stderr.split(separator: "\n").count, 1, missing.stderr)
        XCTAssertFalse(missing.stderr.contains("Fatal error") || missing.stderr.contains("Stack"), missing.stderr)

        // A 2.x database where the 1.x one is expected.
        let modern = try CouchbaseLiteSwift.Database(name: "modern", config: DatabaseConfiguration(directory: scratch.url.path))
        try modern.close()
        let twoX = try run(["compare", scratch.path("modern.cblite2").path, "--view", "v", "--n1ql", "SELECT 1 AS key"])
        XCTAssertEqual(twoX.status, 2)
        XCTAssertTrue(twoX.stderr.hasPrefix("cbl compare: error: modern.cblite2 is a 2.x/3.x database"), twoX.stderr)

        let badKey = try run(["compare", db.path, "--view", "app/byName", "--key", "alice", "--n1ql", "SELECT 1 AS key"])
        XCTAssertEqual(badKey.status, 2)
        XCTAssertTrue(badKey.stderr.contains(#"--key alice: not JSON (a string needs quotes: --key '"alice"')"#), badKey.stderr)
    }

    // MARK: Over the shared fixtures' names data

    private func namesDatabase() throws -> URL {
        let root = try SharedFixtures.root()
        let lines = try String(contentsOf: root.appendingPathComponent("cbl2/query_data/names_100.json"), encoding: .utf8)
            .split(separator: "\n")
        var docs: [(String, [String: Any])] = []
        for (i, line) in lines.enumerated() {
            docs.append((String(format: "n%03d", i), try JSON.parseObject(Array(line.utf8))))
        }
        return try makeLegacy(docs, views: [
            "names/byLast": { doc, emit in
                if let n = doc["name"] as? [String: Any], let last = n["last"] { emit(last, n["first"]) }
            },
            "names/byLike": { doc, emit in for l in doc["likes"] as? [Any] ?? [] { emit(l, nil) } },
            "names/byGender": { doc, emit in if let g = doc["gender"] { emit(g, nil) } },
        ])
    }

    func testNamesViewsAndTheirN1QLCounterparts() throws {
        let db = try namesDatabase()
        let comparison = ViewComparison(legacyDatabase: db)
        var mapOnly = ViewQueryOptions()
        mapOnly.mapOnly = true

        let byLast = try comparison.compare(view: .stored(name: "names/byLast"), options: mapOnly,
            n1ql: "SELECT meta().id AS id, name.last AS key, name.first AS value FROM _ ORDER BY name.last COLLATE UNICODE, meta().id")
        XCTAssertEqual(byLast.viewRows.count, 100)
        XCTAssertTrue(byLast.isEqual, "\(byLast.differences.prefix(3))")

        // One row per liked thing: the view emits per array element, N1QL needs UNNEST.
        let naive = try comparison.compare(view: .stored(name: "names/byLike"), options: mapOnly,
            n1ql: "SELECT meta().id AS id, likes[0] AS key FROM _ WHERE likes[0] IS VALUED ORDER BY likes[0], meta().id")
        XCTAssertTrue(naive.differences.contains { $0.rule == .multipleEmits }, "\(naive.countsByRule)")
        let unnest = try comparison.compare(view: .stored(name: "names/byLike"), options: mapOnly,
            n1ql: "SELECT meta().id AS id, l AS key FROM _ UNNEST likes AS l ORDER BY l COLLATE UNICODE, meta().id")
        XCTAssertTrue(unnest.isEqual, "\(unnest.differences.prefix(3))")

        // Grouped and reduced: count per gender.
        var grouped = ViewQueryOptions()
        grouped.group = true
        grouped.reduce = .count
        let genders = try comparison.compare(view: .stored(name: "names/byGender"), options: grouped,
            n1ql: "SELECT gender AS key, count(*) AS value FROM _ WHERE gender IS VALUED GROUP BY gender ORDER BY gender")
        XCTAssertEqual(genders.matchedBy, "key")
        XCTAssertTrue(genders.isEqual, "\(genders.differences)")
        XCTAssertEqual(genders.viewRows.reduce(0.0) { $0 + ($1.value.doubleValue ?? 0) }, 100)
    }

    func testProfilesNestedArraysNeedUnnest() throws {
        let root = try SharedFixtures.root()
        let text = try String(contentsOf: root.appendingPathComponent("cbl2/query_data/profiles_100.json"), encoding: .utf8)
        var docs: [(String, [String: Any])] = []
        for line in text.split(separator: "\n") {
            let body = try JSON.parseObject(Array(line.utf8))
            docs.append((body["pid"] as? String ?? UUID().uuidString, body))
        }
        let db = try makeLegacy(docs, views: ["profiles/byState": { doc, emit in
            for case let c as [String: Any] in doc["contacts"] as? [Any] ?? [] {
                if let a = c["address"] as? [String: Any], let state = a["state"] { emit(state, nil) }
            }
        }])
        var mapOnly = ViewQueryOptions()
        mapOnly.mapOnly = true
        let comparison = ViewComparison(legacyDatabase: db)
        let first = try comparison.compare(view: .stored(name: "profiles/byState"), options: mapOnly,
            n1ql: "SELECT meta().id AS id, contacts[0].address.state AS key FROM _ WHERE contacts[0].address.state IS VALUED ORDER BY key, meta().id")
        XCTAssertGreaterThan(first.viewRows.count, first.n1qlRows.count)
        XCTAssertTrue(first.differences.allSatisfy { $0.rule == .multipleEmits }, "\(first.countsByRule) \(first.unexplained.prefix(3).map(\.detail))")
        let unnest = try comparison.compare(view: .stored(name: "profiles/byState"), options: mapOnly,
            n1ql: "SELECT meta().id AS id, c.address.state AS key FROM _ UNNEST contacts AS c WHERE c.address.state IS VALUED "
                + "ORDER BY c.address.state COLLATE UNICODE, meta().id")
        XCTAssertTrue(unnest.isEqual, "\(unnest.differences.prefix(3))")
    }

    func testAClosureViewOverAFixtureDatabase() throws {
        let bundle = try scratch.copyFixture("cbl1/sqlite-cblite2/ios140/iosdb.cblite2")
        let report = try ViewComparison(legacyDatabase: bundle).compare(
            view: .closure(name: "check/ids", map: { doc, emit in emit(doc["_id"] ?? NSNull(), nil) }, reduce: nil, version: "1"),
            n1ql: "SELECT meta().id AS id, meta().id AS key FROM _ ORDER BY meta().id")
        XCTAssertEqual(report.viewRows.count, 2)
        XCTAssertTrue(report.isEqual, "\(report.differences)")
    }
}

/// The suggestion mode: from a view's stored rows, the N1QL query and index that reproduce it,
/// verified by running the comparison.
final class ViewSuggestionTests: XCTestCase {
    private var scratch: Scratch!

    override func setUp() { scratch = Scratch() }
    override func tearDown() { scratch = nil }

    private func makeLegacy(_ docs: [(String, [String: Any])], views: [String: CBLMapBlock]) throws -> URL {
        try makeLegacyDatabase(in: scratch, docs, views: views)
    }

    func testInfersFilterKeyAndValueAndVerifies() throws {
        let docs: [(String, [String: Any])] = [
            ("t1", ["type": "task", "title": "write", "owner": "ann", "done": false]),
            ("t2", ["type": "task", "title": "Read", "owner": "bob", "done": true]),
            ("t3", ["type": "task", "title": "émail", "owner": "cy", "done": false]),
            ("l1", ["type": "list", "title": "Groceries", "owner": "ann"]),
        ]
        let db = try makeLegacy(docs, views: ["tasks/byTitle": { doc, emit in
            if doc["type"] as? String == "task", let t = doc["title"] { emit(t, doc["owner"]) }
        }])
        var options = ViewQueryOptions()
        options.mapOnly = true
        let s = try ViewComparison(legacyDatabase: db).suggest(view: "tasks/byTitle", options: options)
        XCTAssertEqual(s.description.filters, [MapDescription.Filter(path: "type", value: .string("task"))])
        XCTAssertEqual(s.description.keyPaths, ["title"])
        XCTAssertEqual(s.description.valuePath, "owner")
        XCTAssertEqual(s.n1ql, "SELECT meta().id AS id, title AS key, owner AS value FROM _ WHERE type = 'task' AND title IS VALUED "
                       + "ORDER BY title COLLATE UNICODE, meta().id")
        XCTAssertEqual(s.indexExpressions, ["type", "title"])
        XCTAssertTrue(s.verified, "\(s.report.differences)")
        XCTAssertEqual(s.indexSwift, #"try database.createIndex(ValueIndexConfiguration(["type", "title"]), name: "idx_tasks_byTitle")"#)
    }

    func testMultipleEmitsBecomeUnnestAndGroupedViewsBecomeGroupBy() throws {
        let docs: [(String, [String: Any])] = [
            ("a", ["tags": ["red", "Blue"], "when": ["y": 2016, "m": 1]]),
            ("b", ["tags": ["green"], "when": ["y": 2016, "m": 2]]),
            ("c", ["tags": ["blue", "red"], "when": ["y": 2017, "m": 1]]),
        ]
        let db = try makeLegacy(docs, views: [
            "d/byTag": { doc, emit in for t in doc["tags"] as? [Any] ?? [] { emit(t, nil) } },
            "d/byMonth": { doc, emit in
                if let w = doc["when"] as? [String: Any], let y = w["y"], let m = w["m"] { emit([y, m], nil) }
            },
        ])
        let comparison = ViewComparison(legacyDatabase: db)
        var mapOnly = ViewQueryOptions()
        mapOnly.mapOnly = true
        let byTag = try comparison.suggest(view: "d/byTag", options: mapOnly)
        XCTAssertEqual(byTag.description.unnestPath, "tags")
        XCTAssertTrue(byTag.n1ql.contains("UNNEST tags AS e"), byTag.n1ql)
        XCTAssertTrue(byTag.verified, "\(byTag.n1ql) \(byTag.report.differences)")

        var grouped = ViewQueryOptions()
        grouped.groupLevel = 1
        grouped.reduce = .count
        let byYear = try comparison.suggest(view: "d/byMonth", options: grouped)
        XCTAssertEqual(byYear.description.keyPaths, ["when.y", "when.m"])
        XCTAssertEqual(byYear.n1ql, "SELECT [`when`.y] AS key, count(*) AS value FROM _ WHERE `when`.y IS VALUED AND `when`.m IS VALUED "
                       + "GROUP BY `when`.y ORDER BY `when`.y")
        XCTAssertTrue(byYear.verified, "\(byYear.report.differences)")
    }

    func testNullKeysKeepTheDocumentsThatHaveTheProperty() throws {
        let docs: [(String, [String: Any])] = [
            ("u1", ["type": "user", "name": "ann"]), ("u2", ["type": "user", "name": NSNull()]),
            ("o1", ["type": "order", "total": 3]),
        ]
        let db = try makeLegacy(docs, views: ["users/byName": { doc, emit in
            if doc["type"] as? String == "user" { emit(doc["name"] ?? NSNull(), nil) }
        }])
        var options = ViewQueryOptions()
        options.mapOnly = true
        let s = try ViewComparison(legacyDatabase: db).suggest(view: "users/byName", options: options)
        XCTAssertTrue(s.n1ql.contains("name IS NOT MISSING"), s.n1ql)
        XCTAssertEqual(s.report.n1qlRows.count, 2, "the order is not selected: \(s.n1ql)")
        XCTAssertEqual(Set(s.report.differences.map(\.rule)), [.nullOrdering], "only what N1QL cannot reproduce")
    }

    func testAGivenDescriptionAndTheRulesItCannotFix() throws {
        let docs: [(String, [String: Any])] = [("x", ["k": true]), ("y", ["k": 0.5]), ("z", ["k": 2])]
        let db = try makeLegacy(docs, views: ["v/k": { doc, emit in if let k = doc["k"] { emit(k, nil) } }])
        var options = ViewQueryOptions()
        options.mapOnly = true
        let s = try ViewComparison(legacyDatabase: db).suggest(view: "v/k", options: options,
                                                              description: MapDescription(keyPaths: ["k"]))
        XCTAssertFalse(s.verified)
        XCTAssertTrue(s.notes.contains { $0.contains("booleans-as-numbers") }, "\(s.notes)")
    }
}

/// A 1.x database `legacy.cblite2` in `scratch` holding `docs`, with `views` indexed by their maps.
func makeLegacyDatabase(in scratch: Scratch, _ docs: [(String, [String: Any])], views: [String: CBLMapBlock]) throws -> URL {
    let manager = try CBLManager(directory: scratch.url.path)
    defer { manager.close() }
    let db = try manager.databaseNamed("legacy")
    db.inTransaction {
        for (id, props) in docs { _ = try? db.document(withID: id)?.putProperties(props) }
        return true
    }
    for (name, map) in views {
        db.viewNamed(name).setMapBlock(map, version: "1")
        _ = try db.viewNamed(name).createQuery().run()
    }
    return scratch.path("legacy.cblite2")
}
