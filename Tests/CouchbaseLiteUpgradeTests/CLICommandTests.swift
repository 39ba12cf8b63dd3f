import CBLTestSupport
import CouchbaseLite
import Foundation
import XCTest
@testable import CouchbaseLiteSwift

/// End-to-end runs of the `cbl` executable: dump, query, n1ql, compact, check and their errors,
/// on databases each test makes with the library (so they run on a clean clone), plus fixture
/// cases that skip when `../shared/fixtures` is absent.
final class CLICommandTests: XCTestCase {
    private var scratch: Scratch!
    /// Revision IDs of the 1.x test database, by document ID.
    private var revs: [String: String] = [:]

    override func setUp() {
        super.setUp()
        scratch = Scratch()
    }

    override func tearDown() {
        scratch = nil
        super.tearDown()
    }

    // MARK: Running cbl

    struct Run {
        var status: Int32
        var stdout: String
        var stderr: String
        var lines: [String] { stdout.split(separator: "\n").map(String.init) }
        var json: [[String: Any]] {
            lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        }
    }

    private func cbl(_ arguments: [String], file: StaticString = #filePath, line: UInt = #line) throws -> Run {
        guard let output = try BuiltExecutable.run("cbl", arguments, scratch: scratch.url) else {
            throw XCTSkip("cbl executable not found; build with `swift build --build-tests`")
        }
        if output.timedOut { XCTFail("cbl \(arguments.joined(separator: " ")) did not finish", file: file, line: line) }
        return Run(status: output.status, stdout: output.stdout, stderr: output.stderr)
    }

    /// Exit status 2, nothing on standard output, and one `cbl <command>: error: …` line that
    /// contains `expected` (no stack trace, no usage dump).
    private func assertInputError(_ run: Run, _ command: String, _ expected: String,
                                  file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(run.status, 2, run.stderr, file: file, line: line)
        XCTAssertEqual(run.stdout, "", file: file, line: line)
        let lines = run.stderr.split(separator: "\n")
        XCTAssertEqual(lines.count, 1, "expected one line, got: \(run.stderr)", file: file, line: line)
        XCTAssertTrue(run.stderr.hasPrefix("cbl \(command): error: "), run.stderr, file: file, line: line)
        XCTAssertTrue(run.stderr.contains(expected), "'\(expected)' not in: \(run.stderr)", file: file, line: line)
        for trace in ["Fatal error", "Stack dump", "backtrace", "Usage:"] {
            XCTAssertFalse(run.stderr.contains(trace), run.stderr, file: file, line: line)
        }
    }

    // MARK: Test databases

    /// A 1.x database `tasks.cblite2` with two indexed views, an attachment, a conflict, a
    /// tombstone and a local document.
    private func makeOneX() throws -> String {
        let directory = scratch.path("one")
        let manager = try CBLManager(directory: directory.path)
        defer { manager.close() }
        let db = try manager.databaseNamed("tasks")
        let bodies: [(String, [String: Any])] = [
            ("a", ["type": "task", "date": [2016, 1, 5], "points": 3]),
            ("b", ["type": "task", "date": [2016, 1, 20], "points": 5]),
            ("c", ["type": "list", "date": [2016, 2, 1], "points": 2]),
            ("d", ["type": "task", "date": [2017, 3, 3], "points": 7]),
            ("e", ["type": "note", "date": [2018, 1, 1], "points": "many"]),
        ]
        for (id, body) in bodies { revs[id] = try db.document(withID: id)!.putProperties(body).revisionID }
        revs["a"] = try db.document(withID: "a")!.update { rev in
            rev.setAttachmentNamed("note.txt", withContentType: "text/plain", content: Data("hello".utf8))
            return true
        }.revisionID
        let conflicted = db.document(withID: "conflicted")!
        let base = try conflicted.putProperties(["type": "x"])
        let one = try base.createRevision(withProperties: ["type": "x", "v": 1])
        let other = base.createRevision()
        other["type"] = "x"
        other["v"] = 2
        let two = try other.saveAllowingConflict()
        revs["conflicted"] = conflicted.currentRevisionID
        revs["conflicted-loser"] = [one.revisionID!, two.revisionID!].first { $0 != conflicted.currentRevisionID }
        try db.document(withID: "gone")!.putProperties(["type": "temp"])
        try db.document(withID: "gone")!.delete()
        revs["gone"] = try db.document(withID: "gone")!.getLeafRevisions().first?.revisionID
        try db.putLocalDocument(["theme": "dark"], withID: "settings")

        db.viewNamed("app/by_date").setMapBlock({ doc, emit in
            if let date = doc["date"] { emit(date, doc["points"]) }
        }, version: "1")
        db.viewNamed("app/by_type").setMapBlock({ doc, emit in
            if let type = doc["type"] as? String { emit(type, nil) }
        }, version: "1")
        try db.viewNamed("app/by_date").updateIndex()
        return directory.appendingPathComponent("tasks.cblite2").path
    }

    /// A 2.x database `people.cblite2`: three people (one with a blob) and a deleted document.
    private func makeTwoX() throws -> String {
        let directory = scratch.path("two")
        let db = try Database(name: "people", config: DatabaseConfiguration(directory: directory.path))
        try db.saveDocument(MutableDocument(id: "p1", data: ["name": "Ann", "age": 31]))
        try db.saveDocument(MutableDocument(id: "p2", data: ["name": "Bob", "age": 25]))
        let p3 = MutableDocument(id: "p3", data: ["name": "Cy", "age": 40])
        p3.setBlob(Blob(contentType: "text/plain", data: Data("photo".utf8)), forKey: "photo")
        try db.saveDocument(p3)
        try db.saveDocument(MutableDocument(id: "p4", data: ["name": "Dee"]))
        try db.deleteDocument(db.document(withID: "p4")!)
        revs["p1"] = db.document(withID: "p1")?.revisionID
        try db.close()
        return directory.appendingPathComponent("people.cblite2").path
    }

    // MARK: dump

    func testDumpOneX() throws {
        let path = try makeOneX()
        let plain = try cbl(["dump", path])
        XCTAssertEqual(plain.status, 0, plain.stderr)
        XCTAssertEqual(plain.json.map { $0["_id"] as? String }, ["a", "b", "c", "conflicted", "d", "e"])
        XCTAssertEqual(plain.lines[1], #"{"_id":"b","_rev":"\#(revs["b"]!)","date":[2016,1,20],"points":5,"type":"task"}"#)
        let a = plain.json[0]
        XCTAssertEqual(a["_rev"] as? String, revs["a"])
        let stub = (a["_attachments"] as? [String: Any])?["note.txt"] as? [String: Any]
        XCTAssertEqual(stub?["length"] as? Int, 5)
        XCTAssertEqual(stub?["stub"] as? Bool, true)

        let all = try cbl(["dump", path, "--revs", "--conflicts", "--deleted", "--local"])
        XCTAssertEqual(all.status, 0, all.stderr)
        let byID = Dictionary(all.json.map { ($0["_id"] as! String, $0) }, uniquingKeysWith: { a, _ in a })
        XCTAssertEqual(all.json.map { $0["_id"] as? String },
                       ["a", "b", "c", "conflicted", "d", "e", "gone", "_local/settings"])
        XCTAssertEqual(byID["gone"]?["_deleted"] as? Bool, true)
        XCTAssertEqual(byID["gone"]?["_rev"] as? String, revs["gone"])
        XCTAssertEqual(byID["conflicted"]?["_conflicts"] as? [String], [revs["conflicted-loser"]!])
        XCTAssertNil(byID["b"]?["_conflicts"])
        let history = byID["a"]?["_revisions"] as? [String: Any]
        XCTAssertEqual(history?["start"] as? Int, 2)
        XCTAssertEqual((history?["ids"] as? [String])?.first, String(revs["a"]!.dropFirst(2)))
        XCTAssertEqual((history?["ids"] as? [String])?.count, 2)
        XCTAssertEqual(all.lines.last, #"{"_id":"_local/settings","_rev":"1-local","theme":"dark"}"#)
    }

    func testDumpTwoX() throws {
        let path = try makeTwoX()
        let run = try cbl(["dump", path])
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertEqual(run.json.map { $0["_id"] as? String }, ["p1", "p2", "p3"])
        XCTAssertEqual(run.lines[0], #"{"_id":"p1","_rev":"\#(revs["p1"]!)","age":31,"name":"Ann"}"#)
        let photo = run.json[2]["photo"] as? [String: Any]
        XCTAssertEqual(photo?["@type"] as? String, "blob")
        XCTAssertEqual(photo?["length"] as? Int, 5)

        let deleted = try cbl(["dump", path, "--deleted", "--revs"])
        XCTAssertEqual(deleted.json.map { $0["_id"] as? String }, ["p1", "p2", "p3", "p4"])
        XCTAssertEqual(deleted.json[3]["_deleted"] as? Bool, true)
        XCTAssertEqual((deleted.json[3]["_revisions"] as? [String: Any])?["start"] as? Int, 2)
    }

    // MARK: query

    func testQueryMapRowsWithEveryRangeOption() throws {
        let path = try makeOneX()
        func rows(_ extra: [String], view: String = "app/by_date") throws -> [String] {
            let run = try cbl(["query", path, view] + extra)
            XCTAssertEqual(run.status, 0, run.stderr)
            XCTAssertEqual(run.stderr, "")
            return run.lines
        }
        XCTAssertEqual(try rows([]), [
            #"{"key":[2016,1,5],"value":3,"id":"a"}"#,
            #"{"key":[2016,1,20],"value":5,"id":"b"}"#,
            #"{"key":[2016,2,1],"value":2,"id":"c"}"#,
            #"{"key":[2017,3,3],"value":7,"id":"d"}"#,
            #"{"key":[2018,1,1],"value":"many","id":"e"}"#,
        ])
        func ids(_ extra: [String], view: String = "app/by_date") throws -> [String] {
            let run = try cbl(["query", path, "--view", view] + extra)
            XCTAssertEqual(run.status, 0, run.stderr)
            return run.json.map { $0["id"] as? String ?? "?" }
        }
        XCTAssertEqual(try ids(["--start-key", "[2016,1,10]", "--end-key", "[2016,12]"]), ["b", "c"])
        XCTAssertEqual(try ids(["--descending", "--limit", "2"]), ["e", "d"])
        XCTAssertEqual(try ids(["--skip", "1", "--limit", "1"]), ["b"])
        XCTAssertEqual(try ids(["--key", "[2016,2,1]", "--key", "[2016,1,5]"]), ["c", "a"])
        XCTAssertEqual(try ids(["--start-key", "[2016]", "--end-key", "[2016]", "--prefix-match-level", "1"]), ["a", "b", "c"])
        XCTAssertEqual(try ids(["--end-key", "[2016,2,1]", "--no-inclusive-end"]), ["a", "b"])
        XCTAssertEqual(try ids(["--start-key", "[2016,1,5]", "--no-inclusive-start", "--end-key", "[2016,2,1]"]), ["b", "c"])
        XCTAssertEqual(try ids([], view: "app/by_type"), ["c", "e", "a", "b", "d", "conflicted"])
        XCTAssertEqual(try ids(["--start-key", #""task""#, "--start-key-doc-id", "b", "--end-key", #""task""#], view: "app/by_type"),
                       ["b", "d"])
        XCTAssertEqual(try ids(["--start-key", #""task""#, "--end-key", #""task""#, "--end-key-doc-id", "b"], view: "app/by_type"),
                       ["a", "b"])
        XCTAssertEqual(try ids(["--descending", "--start-key", #""task""#, "--end-key", #""task""#], view: "app/by_type"),
                       ["d", "b", "a"])

        let docs = try cbl(["query", path, "app/by_date", "--key", "[2016,1,5]", "--include-docs"])
        XCTAssertEqual(docs.status, 0, docs.stderr)
        let doc = docs.json.first?["doc"] as? [String: Any]
        XCTAssertEqual(doc?["_id"] as? String, "a")
        XCTAssertEqual(doc?["_rev"] as? String, revs["a"])
        XCTAssertEqual(doc?["points"] as? Int, 3)

        let table = try cbl(["query", path, "app/by_date", "--limit", "2", "--table"])
        XCTAssertEqual(table.status, 0, table.stderr)
        XCTAssertEqual(table.lines, [
            "key          value  id",
            "-----------  -----  ---",
            "[2016,1,5]   3      \"a\"",
            "[2016,1,20]  5      \"b\"",
            "(2 rows)",
        ])
    }

    func testQueryBuiltinReduceAndGrouping() throws {
        let path = try makeOneX()
        func lines(_ extra: [String], view: String = "app/by_date") throws -> [String] {
            let run = try cbl(["query", path, view] + extra)
            XCTAssertEqual(run.status, 0, run.stderr)
            return run.lines
        }
        XCTAssertEqual(try lines(["--reduce", "count"]), [#"{"key":null,"value":5}"#])
        XCTAssertEqual(try lines(["--reduce", "sum", "--end-key", "[2017]"]), [#"{"key":null,"value":10}"#])
        XCTAssertEqual(try lines(["--reduce", "sum", "--group-level", "1", "--end-key", "[2017,12]"]),
                       [#"{"key":[2016],"value":10}"#, #"{"key":[2017],"value":7}"#])
        XCTAssertEqual(try lines(["--reduce", "stats", "--group-level", "2", "--end-key", "[2016,12]"]), [
            #"{"key":[2016,1],"value":{"count":2,"max":5,"min":3,"sum":8,"sumsqr":34}}"#,
            #"{"key":[2016,2],"value":{"count":1,"max":2,"min":2,"sum":2,"sumsqr":4}}"#,
        ])
        // Limit and skip count reduced rows (CouchDB, 1.x's ForestDB storage; see MIGRATING.md).
        XCTAssertEqual(try lines(["--reduce", "count", "--skip", "1", "--limit", "2"]), [])
        XCTAssertEqual(try lines(["--reduce", "count", "--group", "--skip", "1", "--limit", "2"], view: "app/by_type"),
                       [#"{"key":"note","value":1}"#, #"{"key":"task","value":3}"#])
        XCTAssertEqual(try lines(["--reduce", "count", "--group"], view: "app/by_type"), [
            #"{"key":"list","value":1}"#, #"{"key":"note","value":1}"#, #"{"key":"task","value":3}"#, #"{"key":"x","value":1}"#,
        ])
        XCTAssertEqual(try lines(["--group", "--descending"], view: "app/by_type"), [
            #"{"key":"x","value":null}"#, #"{"key":"task","value":null}"#, #"{"key":"note","value":null}"#, #"{"key":"list","value":null}"#,
        ])
        XCTAssertEqual(try lines(["--reduce", "count", "--group-level", "1", "--table"]),
                       ["key     value", "------  -----", "[2016]  3", "[2017]  1", "[2018]  1", "(3 rows)"])

        let notNumeric = try cbl(["query", path, "app/by_date", "--reduce", "sum"])
        assertInputError(notNumeric, "query", "_sum needs numeric values")
        XCTAssertTrue(notNumeric.stderr.contains(#"got "many" (the row with key [2018,1,1])"#), notNumeric.stderr)
    }

    func testQueryAllDocs() throws {
        let path = try makeOneX()
        func run(_ extra: [String]) throws -> Run {
            let run = try cbl(["query", path, "--all-docs"] + extra)
            XCTAssertEqual(run.status, 0, run.stderr)
            return run
        }
        let all = try run([])
        XCTAssertEqual(all.json.map { $0["key"] as? String }, ["a", "b", "c", "conflicted", "d", "e"])
        XCTAssertEqual(all.lines[1], #"{"key":"b","value":{"rev":"\#(revs["b"]!)"},"id":"b"}"#)
        let deleted = try run(["--include-deleted"])
        XCTAssertEqual(deleted.json.map { $0["id"] as? String }, ["a", "b", "c", "conflicted", "d", "e", "gone"])
        XCTAssertEqual((deleted.json.last?["value"] as? [String: Any])?["deleted"] as? Bool, true)
        let conflicts = try run(["--only-conflicts"])
        XCTAssertEqual(conflicts.json.map { $0["id"] as? String }, ["conflicted"])
        XCTAssertEqual(((conflicts.json.first?["value"] as? [String: Any])?["_conflicts"] as? [String])?.count, 2)
        XCTAssertEqual(try run(["--start-key", #""b""#, "--end-key", #""d""#]).json.map { $0["id"] as? String },
                       ["b", "c", "conflicted", "d"])
        XCTAssertEqual(try run(["--descending", "--limit", "2"]).json.map { $0["id"] as? String }, ["e", "d"])
        XCTAssertEqual(try run(["--key", #""c""#, "--key", #""zz""#]).lines,
                       [#"{"key":"c","value":{"rev":"\#(revs["c"]!)"},"id":"c"}"#, #"{"key":"zz","error":"not_found"}"#])
        let docs = try run(["--key", #""b""#, "--include-docs"])
        XCTAssertEqual((docs.json.first?["doc"] as? [String: Any])?["points"] as? Int, 5)
    }

    func testQueryReportsAStaleIndexAndNeverUpdatesIt() throws {
        let path = try makeOneX()
        let manager = try CBLManager(directory: scratch.path("one").path)
        try manager.existingDatabaseNamed("tasks").document(withID: "f")!.putProperties(["date": [2019, 1, 1], "points": 1])
        manager.close()
        let run = try cbl(["query", path, "app/by_date", "--reduce", "count"])
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertEqual(run.lines, [#"{"key":null,"value":5}"#])
        XCTAssertTrue(run.stderr.hasPrefix("cbl query: note: the index of view 'app/by_date' is stale"), run.stderr)
        XCTAssertEqual(try cbl(["query", path, "app/by_date", "--reduce", "count"]).lines, [#"{"key":null,"value":5}"#])
    }

    // MARK: n1ql

    func testN1QL() throws {
        let path = try makeTwoX()
        let rows = try cbl(["n1ql", path, "SELECT meta().id AS id, name FROM _ WHERE age > $min ORDER BY age", "--param", "min=30"])
        XCTAssertEqual(rows.status, 0, rows.stderr)
        XCTAssertEqual(rows.lines, [#"{"id":"p1","name":"Ann"}"#, #"{"id":"p3","name":"Cy"}"#])
        let unnamed = try cbl(["n1ql", path, "SELECT count(*), max(age) AS oldest FROM _"])
        XCTAssertEqual(unnamed.lines, [#"{"$1":3,"oldest":40}"#])
        let missing = try cbl(["n1ql", path, "SELECT name, nickname FROM _ WHERE meta().id = 'p2'"])
        XCTAssertEqual(missing.lines, [#"{"name":"Bob"}"#])
        let stringParam = try cbl(["n1ql", path, "SELECT age FROM _ WHERE name = $who", "--param", "who=Bob"])
        XCTAssertEqual(stringParam.lines, [#"{"age":25}"#])
        let table = try cbl(["n1ql", path, "SELECT name, age FROM _ ORDER BY name", "--table"])
        XCTAssertEqual(table.lines, ["name   age", "-----  ---", "\"Ann\"  31", "\"Bob\"  25", "\"Cy\"   40", "(3 rows)"])
        // meta().expiration needs a column this file lacks: the query runs on a copy, the file stays as it was.
        let before = try checksums(URL(fileURLWithPath: path))
        let expiration = try cbl(["n1ql", path, "SELECT meta().id AS id, meta().expiration AS exp FROM _ WHERE meta().id = 'p1'"])
        XCTAssertEqual(expiration.lines, [#"{"id":"p1"}"#], expiration.stderr)
        XCTAssertEqual(try checksums(URL(fileURLWithPath: path)), before)
        let plan = try cbl(["n1ql", path, "SELECT name FROM _ WHERE age > 30", "--explain"])
        XCTAssertEqual(plan.status, 0, plan.stderr)
        XCTAssertTrue(plan.stdout.hasPrefix("SELECT "), plan.stdout)
        XCTAssertTrue(plan.stdout.contains("kv_default"), plan.stdout)
        XCTAssertTrue(plan.stdout.contains("SCAN"), plan.stdout)
    }

    func testN1QLConvertsAOneXDatabaseOnTheFly() throws {
        let path = try makeOneX()
        let run = try cbl(["n1ql", path, "SELECT meta().id AS id, points FROM _ WHERE type = 'task' ORDER BY meta().id"])
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertEqual(run.lines, [#"{"id":"a","points":3}"#, #"{"id":"b","points":5}"#, #"{"id":"d","points":7}"#])
        XCTAssertTrue(run.stderr.contains("note: ") && run.stderr.contains("converted into a temporary directory"), run.stderr)
        // The source is untouched and the temporary copy is gone.
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: scratch.path("one").path), ["tasks.cblite2"])
    }

    // MARK: compact

    func testCompactOneXAndTwoX() throws {
        let path = try makeOneX()
        let manager = try CBLManager(directory: scratch.path("one").path)
        let doc = try manager.existingDatabaseNamed("tasks").document(withID: "big")!
        for i in 0..<40 {
            try doc.update { rev in
                rev["i"] = i
                rev["padding"] = String(repeating: "x", count: 8000)
                return true
            }
        }
        manager.close()
        let run = try cbl(["compact", path])
        XCTAssertEqual(run.status, 0, run.stderr)
        func bytes(_ label: String) -> Int {
            let line = run.lines.first { $0.hasPrefix(label) } ?? ""
            return Int(line.dropFirst(label.count).trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "") ?? -1
        }
        XCTAssertGreaterThan(bytes("before:"), bytes("after:"), run.stdout)
        XCTAssertGreaterThan(bytes("after:"), 0, run.stdout)
        XCTAssertEqual(bytes("saved:"), bytes("before:") - bytes("after:"))
        XCTAssertEqual(try cbl(["dump", path]).json.count, 7)

        let twoX = try makeTwoX()
        let compacted = try cbl(["compact", twoX])
        XCTAssertEqual(compacted.status, 0, compacted.stderr)
        XCTAssertTrue(compacted.stdout.contains("format:    Couchbase Lite 2.x/3.x (schema 302)"), compacted.stdout)
        XCTAssertEqual(try cbl(["dump", twoX]).json.count, 3)
    }

    // MARK: check

    func testCheckOneX() throws {
        let path = try makeOneX()
        let clean = try cbl(["check", path])
        XCTAssertEqual(clean.status, 0, clean.stdout + clean.stderr)
        XCTAssertTrue(clean.lines.contains("integrity:       ok"), clean.stdout)
        XCTAssertTrue(clean.lines.contains("blobs:           1 file, 1 referenced"), clean.stdout)
        XCTAssertEqual(clean.lines.last, "result:          ok")

        let attachments = URL(fileURLWithPath: path).appendingPathComponent("attachments")
        let blob = try XCTUnwrap(try FileManager.default.contentsOfDirectory(atPath: attachments.path).first { $0.hasSuffix(".blob") })
        try FileManager.default.removeItem(at: attachments.appendingPathComponent(blob))
        try Data("stray".utf8).write(to: attachments.appendingPathComponent(String(repeating: "AB", count: 20) + ".blob"))
        let broken = try cbl(["check", path])
        XCTAssertEqual(broken.status, 1, broken.stdout + broken.stderr)
        XCTAssertTrue(broken.stdout.contains("(\(blob)) referenced by a rev \(revs["a"]!) attachment 'note.txt'"), broken.stdout)
        XCTAssertTrue(broken.lines.contains("  \(String(repeating: "AB", count: 20)).blob (5 bytes)"), broken.stdout)
        // The stray file is reported but is not a problem (compaction deletes it); the missing blob is.
        XCTAssertTrue(broken.lines.contains("orphaned blobs:  1 (not a problem: compact deletes them)"), broken.stdout)
        XCTAssertEqual(broken.lines.last, "result:          1 problem found")

        let json = try cbl(["check", path, "--json"])
        XCTAssertEqual(json.status, 1)
        let report = try XCTUnwrap(json.json.first)
        XCTAssertEqual(report["ok"] as? Bool, false)
        XCTAssertEqual(report["schemaVersion"] as? Int, 102)
        XCTAssertEqual(report["integrity"] as? String, "ok")
        let missing = try XCTUnwrap((report["missingBlobs"] as? [[String: Any]])?.first)
        XCTAssertEqual(missing["file"] as? String, blob)
        XCTAssertEqual((missing["references"] as? [[String: Any]])?.first?["id"] as? String, "a")
        XCTAssertEqual((report["orphanedBlobs"] as? [[String: Any]])?.first?["size"] as? Int, 5)
    }

    func testCheckTwoX() throws {
        let path = try makeTwoX()
        let clean = try cbl(["check", path, "--json"])
        XCTAssertEqual(clean.status, 0, clean.stdout + clean.stderr)
        let report = try XCTUnwrap(clean.json.first)
        XCTAssertEqual(report["ok"] as? Bool, true)
        XCTAssertEqual(report["format"] as? String, "2.x/3.x")
        XCTAssertEqual(report["documents"] as? Int, 3)
        XCTAssertEqual(report["blobs"] as? [String: Int], ["files": 1, "referenced": 1])

        let attachments = URL(fileURLWithPath: path).appendingPathComponent("Attachments")
        let blob = try XCTUnwrap(try FileManager.default.contentsOfDirectory(atPath: attachments.path).first { $0.hasSuffix(".blob") })
        try FileManager.default.moveItem(at: attachments.appendingPathComponent(blob),
                                         to: attachments.appendingPathComponent("AAAAAAAAAAAAAAAAAAAAAAAAAAA=.blob"))
        let broken = try cbl(["check", path])
        XCTAssertEqual(broken.status, 1, broken.stdout + broken.stderr)
        XCTAssertTrue(broken.stdout.contains("(\(blob)) referenced by p3"), broken.stdout)
        XCTAssertTrue(broken.lines.contains("  AAAAAAAAAAAAAAAAAAAAAAAAAAA=.blob (5 bytes)"), broken.stdout)
    }

    // MARK: Bad input

    func testBadInputIsOneLineAndExitStatusTwo() throws {
        let oneX = try makeOneX()
        let twoX = try makeTwoX()
        assertInputError(try cbl(["query", oneX, "app/nope"]), "query", "no view 'app/nope'")
        XCTAssertTrue(try cbl(["query", oneX, "app/nope"]).stderr.contains("app/by_date, app/by_type"))
        assertInputError(try cbl(["query", twoX, "--all-docs"]), "query", "is a Couchbase Lite 2.x/3.x (schema 302) database")
        assertInputError(try cbl(["n1ql", twoX, "SELECT name FROM _ WHERE"]), "n1ql", "line 1, column 25")
        assertInputError(try cbl(["n1ql", twoX, "SELEKT name FROM _"]), "n1ql", "N1QL syntax error at line 1, column 1")
        assertInputError(try cbl(["query", oneX, "app/by_date", "--start-key", "2016-01"]), "query", "not JSON")
        assertInputError(try cbl(["query", oneX, "app/by_date", "--map-only", "--reduce", "count"]), "query", "--map-only excludes")
        assertInputError(try cbl(["query", oneX, "--all-docs", "--group"]), "query", "--group applies to view queries")
        assertInputError(try cbl(["query", oneX]), "query", "give a view")
        assertInputError(try cbl(["dump", oneX, "--frobnicate"]), "dump", "Unknown option '--frobnicate'")
        assertInputError(try cbl(["n1ql", twoX, "SELECT 1", "--param", "nope"]), "n1ql", "expected NAME=VALUE")

        let nowhere = scratch.path("missing.cblite2").path
        for command in [["dump"], ["query", "--all-docs"], ["n1ql", "SELECT 1"], ["compact"], ["check"], ["info"]] {
            var arguments = [command[0], nowhere]
            arguments += command.dropFirst()
            assertInputError(try cbl(arguments), command[0], "no database at \(nowhere)")
        }

        let garbage = scratch.path("garbage.cblite2")
        try FileManager.default.createDirectory(at: garbage, withIntermediateDirectories: true)
        try Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }).write(to: garbage.appendingPathComponent("db.sqlite3"))
        for command in [["dump"], ["query", "--all-docs"], ["n1ql", "SELECT 1"], ["compact"], ["check"]] {
            assertInputError(try cbl([command[0], garbage.path] + command.dropFirst()), command[0], "is encrypted or is not an SQLite database")
        }

        let truncated = scratch.path("truncated.cblite2")
        try FileManager.default.createDirectory(at: truncated, withIntermediateDirectories: true)
        let source = try Data(contentsOf: URL(fileURLWithPath: twoX).appendingPathComponent("db.sqlite3"))
        try source.prefix(4096).write(to: truncated.appendingPathComponent("db.sqlite3"))
        for command in [["dump"], ["n1ql", "SELECT 1"], ["check"]] {
            assertInputError(try cbl([command[0], truncated.path] + command.dropFirst()), command[0], "corrupt or truncated")
        }

        let plainFile = scratch.path("notes.txt")
        try Data("hello".utf8).write(to: plainFile)
        assertInputError(try cbl(["dump", plainFile.path]), "dump", "is a file, not a NAME.cblite2 database directory")
    }

    func testEveryCommandHasHelpWithExamples() throws {
        for command in ["demo", "info", "dump", "query", "n1ql", "compact", "check", "serve", "upgrade", "replicate"] {
            let run = try cbl([command, "--help"])
            XCTAssertEqual(run.status, 0, "\(command): \(run.stderr)")
            XCTAssertTrue(run.stdout.contains("EXAMPLES:"), "\(command) --help has no examples:\n\(run.stdout)")
            XCTAssertTrue(run.stdout.contains("cbl \(command)"), run.stdout)
        }
        let root = try cbl(["--help"])
        XCTAssertEqual(root.status, 0)
        XCTAssertTrue(root.stdout.contains("EXIT STATUS"), root.stdout)
    }

    // MARK: Fixtures (skipped on a clone without ../shared/fixtures)

    /// Dump of every 1.x SQLite fixture matches facts.json: winning revisions, stored bodies, history, local docs.
    func testFixtureDumpsMatchFacts() throws {
        // Read first: XCTUnwrap would turn the skip of a clone without fixtures into a failure.
        let json = try SharedFixtures.json("cbl1/facts.json")
        let facts = try XCTUnwrap(json as? [[String: Any]])
        var checked = 0
        for fact in facts {
            guard let file = fact["db"] as? String, file.hasPrefix("sqlite-cblite2/") else { continue }
            let db = String(file.dropLast("/db.sqlite3".count))
            let bundle = try scratch.copyFixture("cbl1/" + db, as: "\(checked)-" + URL(fileURLWithPath: db).lastPathComponent)
            let run = try cbl(["dump", bundle.path, "--revs", "--local"])
            XCTAssertEqual(run.status, 0, "\(db): \(run.stderr)")
            let lines = Dictionary(run.json.map { ($0["_id"] as? String ?? "", $0) }, uniquingKeysWith: { a, _ in a })
            for doc in fact["docs"] as? [[String: Any]] ?? [] where doc["deleted"] as? Bool == false {
                let id = doc["docID"] as? String ?? ""
                let line = try XCTUnwrap(lines[id], "\(db): \(id) not dumped")
                XCTAssertEqual(line["_rev"] as? String, doc["winningRev"] as? String, "\(db) \(id)")
                if let json = doc["json"] as? String {
                    var body = line
                    for key in ["_id", "_rev", "_revisions"] { body[key] = nil }
                    XCTAssertJSONEqual(body, try JSONSerialization.jsonObject(with: Data(json.utf8)), "\(db) \(id)")
                }
                let history = (doc["history"] as? [String] ?? []).map { String($0.drop { $0 != "-" }.dropFirst()) }
                XCTAssertEqual((line["_revisions"] as? [String: Any])?["ids"] as? [String], history, "\(db) \(id)")
            }
            for local in fact["local_docs"] as? [[String: Any]] ?? [] {
                XCTAssertEqual(lines[local["docID"] as? String ?? ""]?["_rev"] as? String, local["revID"] as? String, db)
            }
            checked += 1
        }
        XCTAssertGreaterThan(checked, 10)
    }

    /// A view indexed on a real 1.x file, then queried; check, n1ql and compact on the same file.
    func testFixtureQueryCheckN1QLAndCompact() throws {
        let bundle = try scratch.copyFixture("cbl1/sqlite-cblite2/ios140/iosdb.cblite2")
        let clean = try cbl(["check", bundle.path])
        XCTAssertEqual(clean.status, 0, clean.stdout)
        XCTAssertTrue(clean.lines.contains("blobs:           2 files, 2 referenced"), clean.stdout)
        let manager = try CBLManager(directory: scratch.url.path)
        let view = try manager.existingDatabaseNamed("iosdb").viewNamed("fixture/ids")
        view.setMapBlock({ doc, emit in emit(doc["_id"] ?? NSNull(), doc["number"]) }, version: "1")
        try view.updateIndex()
        manager.close()
        let rows = try cbl(["query", bundle.path, "fixture/ids"])
        XCTAssertEqual(rows.lines, [#"{"key":"doc1","value":1,"id":"doc1"}"#, #"{"key":"doc2","value":2,"id":"doc2"}"#])
        XCTAssertEqual(try cbl(["query", bundle.path, "fixture/ids", "--reduce", "sum"]).lines, [#"{"key":null,"value":3}"#])
        let n1ql = try cbl(["n1ql", bundle.path, "SELECT meta().id AS id, foo FROM _ ORDER BY meta().id"])
        XCTAssertEqual(n1ql.lines, [#"{"id":"doc1","foo":"bar"}"#, #"{"id":"doc2","foo":"bar"}"#], n1ql.stderr)
        XCTAssertEqual(try cbl(["compact", bundle.path]).status, 0)
        XCTAssertEqual(try cbl(["check", bundle.path]).status, 0)
        XCTAssertEqual(try cbl(["dump", bundle.path]).json.count, 2)
    }

    /// A real 3.0 file: dump (live and deleted), n1ql and check.
    func testFixtureTwoXDatabase() throws {
        let bundle = try scratch.copyFixture("cbl2/lite_dbs/db_3_0_0_names_100_with_deleted.cblite2")
        XCTAssertEqual(try cbl(["dump", bundle.path]).json.count, 78)
        let all = try cbl(["dump", bundle.path, "--deleted"]).json
        XCTAssertEqual(all.count, 100)
        XCTAssertEqual(all.filter { $0["_deleted"] as? Bool == true }.count, 22)
        XCTAssertEqual(try cbl(["n1ql", bundle.path, "SELECT count(*) AS n FROM _"]).lines, [#"{"n":78}"#])
        let check = try cbl(["check", bundle.path])
        XCTAssertEqual(check.status, 0, check.stdout)
        XCTAssertTrue(check.stdout.contains("schema 400"), check.stdout)
        assertInputError(try cbl(["query", bundle.path, "--all-docs"]), "query", "schema 400")
    }

    /// Files no command can read: a ForestDB 1.x bundle and an encrypted 2.x one.
    func testFixtureForestDBAndEncryptedDatabasesAreRefused() throws {
        let forest = try scratch.copyFixture("cbl1/forestdb/ios140-forestdb/iosdb.cblite2")
        let encrypted = try scratch.copyFixture("cbl2/lite_dbs/upgrade_2.8_encrypted.cblite2")
        for command in [["dump"], ["query", "--all-docs"], ["n1ql", "SELECT 1"], ["check"], ["compact"]] {
            assertInputError(try cbl([command[0], forest.path] + command.dropFirst()), command[0], "is a ForestDB database")
            assertInputError(try cbl([command[0], encrypted.path] + command.dropFirst()), command[0],
                             "is encrypted or is not an SQLite database")
        }
    }
}
