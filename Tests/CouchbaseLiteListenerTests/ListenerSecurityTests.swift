import CouchbaseLite
import CouchbaseLiteListener
import Foundation
import XCTest

/// Authentication, read-only mode, and hostile input: the server refuses cleanly, keeps
/// serving, and nothing in the database changes.
final class ListenerSecurityTests: ListenerTestCase {
    private func basic(_ user: String, _ password: String) -> [String: String] {
        ["Authorization": "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()]
    }

    func testBasicAuthentication() throws {
        try createDB("demo")
        XCTAssertFalse(listener.requiresAuth)
        listener.setPasswords(["admin": "s3cret", "bob": "pa:ss"])
        XCTAssertEqual(listener.passwords?["admin"], "s3cret")
        XCTAssertTrue(listener.requiresAuth)
        XCTAssertEqual(listener.passwordForUser("bob"), "pa:ss")
        // Bonjour is remembered but not advertised on Linux.
        listener.setBonjourName("My DB", type: "_cbl._tcp")
        listener.txtRecordDictionary = ["k": "v"]
        XCTAssertEqual(listener.bonjourName, "My DB")
        XCTAssertEqual(listener.TXTRecordDictionary, ["k": "v"])

        // As CouchDB 3: the welcome is open, server endpoints are for server admins, and a
        // database without a `_security` is admin_only.
        expect(try get("/"), 200)
        expectError(try get("/_all_dbs"), 401, "unauthorized", "You are not a server admin.")
        for path in ["/demo", "/demo/_changes", "/demo/doc"] {
            let denied = try get(path)
            expectError(denied, 401, "unauthorized", "You are not authorized to access this db.")
            XCTAssertEqual(denied.header("www-authenticate"), "Basic realm=\"CouchbaseLite\"")
        }
        expectError(try request("PUT", "/demo/doc", json: ["x": 1]), 401, "unauthorized")
        expectError(try get("/demo", headers: basic("admin", "wrong")), 401, "unauthorized")
        expectError(try get("/demo", headers: basic("nobody", "s3cret")), 401, "unauthorized")
        expectError(try get("/demo", headers: ["Authorization": "Basic !!!"]), 401, "unauthorized")
        XCTAssertEqual(try manager.existingDatabaseNamed("demo").documentCount, 0)

        expect(try get("/demo", headers: basic("admin", "s3cret")), 200)
        expect(try get("/demo", headers: basic("bob", "pa:ss")), 200)
        expect(try request("PUT", "/demo/doc", json: ["x": 1], headers: basic("admin", "s3cret")), 201)
        let session = try get("/_session", headers: basic("bob", "pa:ss")).dict
        XCTAssertEqual((session["userCtx"] as? [String: Any])?["name"] as? String, "bob")

        // Cookie sessions: POST /_session is allowed without credentials.
        expectError(try request("POST", "/_session", body: Array("name=admin&password=nope".utf8),
                                headers: ["Content-Type": "application/x-www-form-urlencoded"]),
                    401, "unauthorized", "Name or password is incorrect.")
        let login = try request("POST", "/_session", body: Array("name=admin&password=s3cret".utf8),
                                headers: ["Content-Type": "application/x-www-form-urlencoded"])
        expect(login, 200)
        XCTAssertTrue(jsonEqual(login.json, ["ok": true, "name": "admin", "roles": ["_admin"]]))
        let cookie = try XCTUnwrap(login.header("set-cookie")?.split(separator: ";").first.map(String.init))
        XCTAssertTrue(cookie.hasPrefix("AuthSession="))
        expect(try get("/demo/doc", headers: ["Cookie": cookie]), 200)
        let jsonLogin = try request("POST", "/_session", json: ["name": "bob", "password": "pa:ss"])
        expect(jsonLogin, 200)
        // Logging out tells the client to drop the cookie; the cookie is CouchDB's signed one, so
        // (as in CouchDB) it stays valid until it expires or the password changes.
        let logout = try request("DELETE", "/_session", headers: ["Cookie": cookie])
        expect(logout, 200)
        XCTAssertTrue(logout.header("set-cookie")?.hasPrefix("AuthSession=;") == true)
        listener.setPasswords(["admin": "n3w", "bob": "pa:ss"])
        expectError(try get("/demo/doc", headers: ["Cookie": cookie]), 401, "unauthorized")

        listener.setPasswords(nil)
        expect(try get("/demo"), 200)
        listener.setPasswords([:])
        XCTAssertNil(listener.passwords)
        expect(try get("/demo"), 200)
    }

    func testReadOnlyListener() throws {
        let db = try createDB("demo")
        try putDoc("/demo/doc", ["x": 1])
        listener.readOnly = true
        let seq = db.lastSequenceNumber
        expectError(try request("PUT", "/demo/doc2", json: ["x": 1]), 403, "forbidden")
        expectError(try request("PUT", "/other"), 403, "forbidden")
        expectError(try request("DELETE", "/demo"), 403, "forbidden")
        expectError(try request("POST", "/demo/_bulk_docs", json: ["docs": [["_id": "z"]]]), 403, "forbidden")
        expectError(try request("POST", "/demo/_compact", json: [String: Any]()), 403, "forbidden")
        expect(try get("/demo/doc"), 200)
        expect(try request("POST", "/demo/_all_docs", json: ["keys": ["doc"]]), 200)
        expect(try request("POST", "/demo/_revs_diff", json: ["doc": ["1-a"]]), 200)
        expect(try request("POST", "/demo/_changes", json: [String: Any]()), 200)
        XCTAssertEqual(db.lastSequenceNumber, seq)
        XCTAssertFalse(manager.databaseExistsNamed("other"))
    }

    func testBodySizeLimit() throws {
        let db = try createDB("demo")
        listener.maxBodySize = 1024
        let big = [UInt8](repeating: UInt8(ascii: "a"), count: 4096)
        let json = Array("{\"x\":\"".utf8) + big + Array("\"}".utf8)
        expectError(try request("PUT", "/demo/doc", body: json, headers: ["Content-Type": "application/json"]), 413, "too_large")
        // Also when the body arrives chunked, without a Content-Length.
        var chunked: [UInt8] = []
        for slice in stride(from: 0, to: json.count, by: 500) {
            let part = json[slice..<min(slice + 500, json.count)]
            chunked += Array(String(part.count, radix: 16).utf8) + [13, 10] + part + [13, 10]
        }
        chunked += Array("0\r\n\r\n".utf8)
        let r = try client.send("PUT", "/demo/doc", headers: ["Transfer-Encoding": "chunked", "Content-Type": "application/json"],
                                body: chunked)
        expectError(r, 413, "too_large")
        XCTAssertEqual(db.documentCount, 0)
        // A refused body does not break the connection: the next request on it is answered.
        let pipelined = Array("PUT /demo/doc HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: \(json.count)\r\n\r\n".utf8)
            + json + Array("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8)
        let both = String(decoding: try client.exchange(pipelined, timeout: 10), as: UTF8.self)
        XCTAssertTrue(both.hasPrefix("HTTP/1.1 413"), both)
        XCTAssertTrue(both.contains("HTTP/1.1 200 OK") && both.contains("\"couchdb\":\"Welcome\""), both)
        listener.maxBodySize = 1 << 20
        expect(try request("PUT", "/demo/doc", body: json, headers: ["Content-Type": "application/json"]), 201)
    }

    func testHostileInputLeavesDatabaseUnchanged() throws {
        let db = try createDB("demo")
        let rev = try putDoc("/demo/doc", ["x": 1])
        let seq = db.lastSequenceNumber
        let outside = directory.deletingLastPathComponent()
        let json = ["Content-Type": "application/json"]

        let cases: [(String, String, [UInt8]?, [String: String], Int)] = [
            ("PUT", "/demo/doc2", Array("{\"broken\": ".utf8), json, 400),
            ("PUT", "/demo/doc2", Array("[[[[".utf8), json, 400),
            ("PUT", "/demo/doc2", Array(String(repeating: "[", count: 100_000).utf8), json, 400),
            ("PUT", "/demo/doc2", Array(String(repeating: "{\"a\":", count: 50_000).utf8), json, 400),
            ("PUT", "/demo/doc2", [0x7B, 0x22, 0xFF, 0xFE, 0x22, 0x3A, 0x31, 0x7D], json, 400),     // invalid UTF-8
            ("PUT", "/demo/doc2", [], json, 400),
            ("PUT", "/demo/doc2", Array("\"just a string\"".utf8), json, 400),
            ("POST", "/demo/_bulk_docs", Array("{\"docs\":[]}".utf8), ["Content-Type": "text/plain"], 415),
            ("POST", "/demo/_bulk_docs", Array("{\"docs\": 7}".utf8), json, 400),
            ("POST", "/demo/_bulk_docs", Array("{\"docs\":[{\"_id\":\"x\",\"_rev\":\"zz\"}],\"new_edits\":false}".utf8), json, 201),
            ("POST", "/demo/_revs_diff", Array("not json".utf8), json, 400),
            ("PUT", "/demo/doc?rev=not-a-rev", Array("{}".utf8), json, 400),
            ("PUT", "/demo/doc", Array("{\"_rev\":\"1-\"}".utf8), json, 400),
            ("PUT", "/demo/doc", Array("{\"_rev\":\"-1-a\"}".utf8), json, 400),
            ("DELETE", "/demo/doc?rev=0-abc", nil, [:], 400),
            ("GET", "/demo/doc?rev=%ZZ", nil, [:], 400),
            ("GET", "/demo/%E0%A4%A", nil, [:], 400),
            ("GET", "/demo/doc?open_revs=%5B1%2C2%5D", nil, [:], 400),
            ("GET", "/demo/doc?atts_since=nope&attachments=true", nil, [:], 400),
            ("PUT", "/demo/../../../etc/passwd", Array("{}".utf8), json, 400),
            ("PUT", "/demo/doc/../../../escape.txt", Array("x".utf8), ["Content-Type": "text/plain"], 400),
            ("PUT", "/..%2F..%2Fescape", nil, [:], 400),
            ("PUT", "/demo%2F..%2F..%2Fescape", nil, [:], 400),
            ("GET", "/demo/_design/x/_view/../../../doc", nil, [:], 400),
            ("PUT", "/demo/_local/../../x", Array("{}".utf8), json, 400),
            ("GET", "/demo/_changes?since=-5", nil, [:], 400),
            ("GET", "/demo/_all_docs?startkey=%5B", nil, [:], 400),   // CouchDB: "invalid UTF-8 JSON"
            ("GET", "/demo/_changes?limit=99999999999999999999", nil, [:], 400),
            ("POST", "/demo/_bulk_get", Array("{\"docs\":[{\"id\":\"doc\",\"rev\":\"x\"}]}".utf8), json, 200),
            ("COPY", "/demo/doc", nil, [:], 400),   // CouchDB's COPY without its Destination header
            ("PATCH", "/demo", nil, [:], 405),
        ]
        for (method, path, body, headers, status) in cases {
            let r = try client.send(method, path, headers: headers, body: body)
            XCTAssertEqual(r.status, status, "\(method) \(path): \(r.text)")
            if r.status >= 400 {
                XCTAssertNotNil(r.dict["error"] as? String, "\(method) \(path): \(r.text)")
                XCTAssertNotNil(r.dict["reason"] as? String, "\(method) \(path): \(r.text)")
            }
        }
        // Garbage that is not HTTP at all.
        _ = try? client.exchange(Array("\u{1}\u{2}GARBAGE\r\n\r\n".utf8), timeout: 3)
        _ = try? client.exchange(Array("GET /demo HTTP/1.1\r\nContent-Length: -5\r\n\r\n".utf8), timeout: 3)

        // Still serving, and nothing changed: same sequence, same document, no stray files.
        expect(try get("/demo"), 200)
        XCTAssertEqual(db.lastSequenceNumber, seq)
        XCTAssertEqual(db.documentCount, 1)
        XCTAssertEqual(try get("/demo/doc").dict["_rev"] as? String, rev)
        XCTAssertEqual(manager.allDatabaseNames, ["demo"])
        for name in ["escape", "escape.txt", "passwd", "x"] {
            XCTAssertFalse(FileManager.default.fileExists(atPath: outside.appendingPathComponent(name).path), name)
        }
        let inside = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        XCTAssertEqual(inside, ["demo.cblite2"])
    }
}
