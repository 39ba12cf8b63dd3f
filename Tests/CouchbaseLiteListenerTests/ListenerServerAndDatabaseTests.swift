import CouchbaseLite
import CouchbaseLiteListener
import Foundation
import XCTest

final class ListenerServerAndDatabaseTests: ListenerTestCase {
    func testListenerReportsBoundPortAndURL() throws {
        XCTAssertNotEqual(listener.port, 0)
        XCTAssertEqual(listener.url?.absoluteString, "http://127.0.0.1:\(listener.port)/")
        // A second listener on the same port cannot start.
        let other = CBLListener(manager: manager, port: listener.port)
        other.bindAddress = "127.0.0.1"
        XCTAssertThrowsError(try other.start())
    }

    func testStopFreesThePortAndRestartWorks() throws {
        let port = listener.port
        listener.stop()
        XCTAssertNil(listener.url)
        XCTAssertThrowsError(try RawHTTPClient(port: port, timeout: 2).send("GET", "/"))
        let again = CBLListener(manager: manager, port: port)
        again.bindAddress = "127.0.0.1"
        try again.start()
        defer { again.stop() }
        XCTAssertEqual(try RawHTTPClient(port: port).send("GET", "/").status, 200)
    }

    func testWelcome() throws {
        let r = try get("/")
        expect(r, 200)
        XCTAssertEqual(r.header("content-type"), "application/json")
        XCTAssertEqual(r.dict["couchdb"] as? String, "Welcome")
        XCTAssertEqual(r.dict["version"] as? String, CBLVersion())
        XCTAssertNotNil((r.dict["vendor"] as? [String: Any])?["name"] as? String)
        XCTAssertTrue(r.header("server")?.hasPrefix("CouchbaseLite/") ?? false)
    }

    func testAllDbsUUIDsActiveTasksSession() throws {
        try createDB("beta")
        try createDB("alpha")
        XCTAssertEqual(try get("/_all_dbs").json as? [String], ["alpha", "beta"])

        let uuids = try get("/_uuids?count=3").dict["uuids"] as? [String] ?? []
        XCTAssertEqual(uuids.count, 3)
        XCTAssertEqual(Set(uuids).count, 3)
        XCTAssertTrue(uuids.allSatisfy { $0.count == 32 && $0.allSatisfy(\.isHexDigit) })
        XCTAssertEqual((try get("/_uuids").dict["uuids"] as? [String])?.count, 1)
        expectError(try get("/_uuids?count=5000"), 400, "bad_request")
        expectError(try get("/_uuids?count=abc"), 400, "bad_request", "count must be a positive integer")

        let tasks = try get("/_active_tasks")
        expect(tasks, 200)
        XCTAssertEqual(tasks.array.count, 0)
        XCTAssertEqual(tasks.text, "[]\n")

        let session = try get("/_session").dict
        XCTAssertEqual(session["ok"] as? Bool, true)
        let ctx = session["userCtx"] as? [String: Any]
        XCTAssertTrue(ctx?["name"] is NSNull)
        XCTAssertEqual(ctx?["roles"] as? [String], ["_admin"])

        expectError(try request("POST", "/_replicate", json: ["source": "a", "target": "b"]), 404, "not_found")
        expectError(try get("/_nonsense"), 400, "illegal_database_name")
    }

    func testCreateGetDeleteDatabase() throws {
        let created = try request("PUT", "/demo")
        expect(created, 201)
        XCTAssertTrue(jsonEqual(created.json, ["ok": true]))
        XCTAssertEqual(created.header("location"), "http://127.0.0.1:\(listener.port)/demo")
        XCTAssertTrue(manager.databaseExistsNamed("demo"))

        expectError(try request("PUT", "/demo"), 412, "file_exists",
                    "The database could not be created, the file already exists.")
        expectError(try request("PUT", "/Bad"), 400, "illegal_database_name",
                    "Name: 'Bad'. Only lowercase characters (a-z), digits (0-9), and any of the characters _, $, (, ), +, -, and / are allowed. Must begin with a letter.")
        expectError(try get("/nosuchdb"), 404, "not_found", "Database does not exist.")
        expectError(try request("DELETE", "/nosuchdb"), 404, "not_found", "Database does not exist.")

        try putDoc("/demo/a", ["x": 1])
        try putDoc("/demo/b", ["x": 2])
        let info = try get("/demo")
        expect(info, 200)
        XCTAssertEqual(info.dict["db_name"] as? String, "demo")
        XCTAssertEqual(info.dict["doc_count"] as? Int, 2)
        XCTAssertEqual(info.dict["doc_del_count"] as? Int, 0)
        XCTAssertEqual(seqNumber(info.dict["update_seq"]), 2)
        XCTAssertEqual(seqNumber(info.dict["committed_update_seq"]), 2)
        XCTAssertGreaterThan(info.dict["disk_size"] as? Int ?? 0, 0)
        XCTAssertNotNil(info.dict["instance_start_time"] as? String)

        expectError(try request("DELETE", "/demo?rev=1-abc"), 400, "bad_request")
        let deleted = try request("DELETE", "/demo")
        expect(deleted, 200)
        XCTAssertTrue(jsonEqual(deleted.json, ["ok": true]))
        XCTAssertFalse(manager.databaseExistsNamed("demo"))
        expectError(try get("/demo"), 404, "not_found")
    }

    func testDatabaseNameWithSlashIsEscaped() throws {
        expect(try request("PUT", "/team%2Fnotes"), 201)
        XCTAssertTrue(manager.databaseExistsNamed("team/notes"))
        XCTAssertEqual(try get("/_all_dbs").json as? [String], ["team/notes"])
        try putDoc("/team%2Fnotes/doc", ["a": 1])
        XCTAssertEqual(try get("/team%2Fnotes").dict["db_name"] as? String, "team/notes")
        XCTAssertEqual(try get("/team%2Fnotes/doc").dict["a"] as? Int, 1)
        XCTAssertEqual(try manager.existingDatabaseNamed("team/notes").documentCount, 1)
        // Unescaped, the slash separates the database from the document ID.
        expectError(try get("/team/notes"), 404, "not_found", "Database does not exist.")
        expect(try request("DELETE", "/team%2Fnotes"), 200)
        XCTAssertFalse(manager.databaseExistsNamed("team/notes"))
    }

    func testPostCreatesAndUpdatesDocuments() throws {
        try createDB()
        let created = try request("POST", "/db", json: ["type": "note", "text": "hello"])
        expect(created, 201)
        let id = try XCTUnwrap(created.dict["id"] as? String)
        let rev = try XCTUnwrap(created.dict["rev"] as? String)
        XCTAssertTrue(id.hasPrefix("-") && id.count == 23, id)
        XCTAssertTrue(rev.hasPrefix("1-"))
        XCTAssertEqual(created.dict["ok"] as? Bool, true)
        XCTAssertEqual(created.header("location"), "http://127.0.0.1:\(listener.port)/db/\(id)")

        let updated = try request("POST", "/db", json: ["_id": id, "_rev": rev, "text": "bye"])
        expect(updated, 201)
        XCTAssertTrue((updated.dict["rev"] as? String)?.hasPrefix("2-") ?? false)
        XCTAssertEqual(try get("/db/\(id)").dict["text"] as? String, "bye")

        let named = try request("POST", "/db", json: ["_id": "named", "v": 1])
        XCTAssertEqual(named.dict["id"] as? String, "named")
        expectError(try request("POST", "/db", json: ["_id": "named", "v": 2]), 409, "conflict", "Document update conflict.")
        expectError(try request("POST", "/db", json: ["_id": "named", "_rev": "1-nope", "v": 2]), 409, "conflict")
        expectError(try request("POST", "/db", body: Array("{".utf8), headers: ["Content-Type": "application/json"]),
                    400, "bad_request", "invalid UTF-8 JSON")
        expectError(try request("POST", "/db", body: Array("a=b".utf8), headers: ["Content-Type": "application/x-www-form-urlencoded"]),
                    415, "bad_content_type")
        expectError(try request("POST", "/db", json: [1, 2]), 400, "bad_request")
    }

    func testCompactEnsureFullCommitAndPurge() throws {
        let db = try createDB()
        let rev1 = try putDoc("/db/doc", ["v": 1])
        try putDoc("/db/doc", ["_rev": rev1, "v": 2])
        let rev = try putDoc("/db/gone", ["v": 1])

        let compact = try request("POST", "/db/_compact", json: [String: Any]())
        expect(compact, 202)
        XCTAssertTrue(jsonEqual(compact.json, ["ok": true]))
        XCTAssertNil(db.document(withID: "doc")?.revision(withID: rev1)?.properties)

        let commit = try request("POST", "/db/_ensure_full_commit", json: [String: Any]())
        expect(commit, 201)
        XCTAssertEqual(commit.dict["ok"] as? Bool, true)

        let purge = try request("POST", "/db/_purge", json: ["gone": [rev], "nosuch": ["1-a"]])
        expect(purge, 201)
        XCTAssertTrue(jsonEqual(purge.dict["purged"], ["gone": [rev], "nosuch": [String]()]))
        expectError(try get("/db/gone"), 404, "not_found", "missing")
        XCTAssertNil(db.existingDocument(withID: "gone"))
        XCTAssertEqual(db.documentCount, 1)
        expectError(try request("POST", "/db/_purge", json: ["doc": "notalist"]), 400, "bad_request")
    }
}
