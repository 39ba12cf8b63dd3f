import CouchbaseLite
import CouchbaseLiteJavaScript
@testable import CouchbaseLiteListener
import Foundation
import JSONCore
import XCTest

/// CouchDB 3.4's security model through a real listener: users in `_users`, Basic and cookie
/// sessions, per-database `_security`, validation with the real user, the lockout and the
/// configuration API; the expected answers are the ones CouchDB 3.4.3 gave to the same requests.
final class ListenerUsersTests: ListenerTestCase {
    private func basic(_ user: String, _ password: String) -> [String: String] {
        ["Authorization": "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()]
    }

    private var admin: [String: String] { basic("adm", "pass") }

    /// An admin, one PBKDF2 iteration for new hashes (CouchDB's own tests do the same), `_users`.
    private func setUpUsers() throws {
        listener.setPasswords(["adm": "pass"])
        expect(try request("PUT", "/_node/_local/_config/chttpd_auth/iterations", json: "1", headers: admin), 200)
        expect(try request("PUT", "/_users", headers: admin), 201)
    }

    private func createUser(_ name: String, _ password: String, roles: [String] = [], as headers: [String: String]? = nil) throws {
        let r = try request("PUT", "/_users/org.couchdb.user:\(name)",
                            json: ["name": name, "password": password, "roles": roles, "type": "user"], headers: headers ?? admin)
        XCTAssertEqual(r.status, 201, r.text)
    }

    private func userContext(_ result: HTTPResult) -> [String: Any] {
        result.dict["userCtx"] as? [String: Any] ?? [:]
    }

    private func sessionCookie(_ result: HTTPResult) throws -> String {
        let header = try XCTUnwrap(result.header("set-cookie"), result.text)
        return String(header.split(separator: ";")[0])
    }

    // MARK: Users and sessions

    func testUserDocumentsAreStoredHashedAndAuthenticate() throws {
        try setUpUsers()
        let ddoc = try get("/_users/_design/_auth", headers: admin)
        expect(ddoc, 200)
        XCTAssertNotNil(ddoc.dict["validate_doc_update"] as? String)

        try createUser("jchris@apache.org", "funnybone", roles: ["staff"])
        let stored = try get("/_users/org.couchdb.user:jchris@apache.org", headers: admin).dict
        XCTAssertNil(stored["password"])
        XCTAssertEqual(stored["password_scheme"] as? String, "pbkdf2")
        XCTAssertEqual(stored["pbkdf2_prf"] as? String, "sha256")
        XCTAssertEqual(stored["iterations"] as? Int, 1)
        let salt = try XCTUnwrap(stored["salt"] as? String)
        XCTAssertEqual(salt.count, 32)
        XCTAssertEqual(stored["derived_key"] as? String,
                       CouchPasswords.pbkdf2(password: "funnybone", salt: salt, iterations: 1, prf: "sha256"))
        XCTAssertEqual(stored["roles"] as? [String], ["staff"])

        let session = try get("/_session", headers: basic("jchris@apache.org", "funnybone"))
        expect(session, 200)
        XCTAssertEqual(userContext(session)["name"] as? String, "jchris@apache.org")
        XCTAssertEqual(userContext(session)["roles"] as? [String], ["staff"])
        let info = session.dict["info"] as? [String: Any] ?? [:]
        XCTAssertEqual(info["authenticated"] as? String, "default")
        XCTAssertEqual(info["authentication_db"] as? String, "_users")
        XCTAssertEqual(info["authentication_handlers"] as? [String], ["cookie", "default"])

        expectError(try get("/_session", headers: basic("jchris@apache.org", "wrong")), 401, "unauthorized",
                    "Name or password is incorrect.")
        expectError(try get("/_session", headers: basic("nobody", "x")), 401, "unauthorized", "Name or password is incorrect.")
        // `_:_` is no credentials at all (CouchDB's way to log out a Basic client).
        let loggedOut = try get("/_session", headers: ["Authorization": "Basic Xzpf"])
        expect(loggedOut, 200)
        XCTAssertTrue(userContext(loggedOut)["name"] is NSNull)
        XCTAssertNil((loggedOut.dict["info"] as? [String: Any])?["authenticated"])
        expectError(try get("/_session?basic=true"), 401, "unauthorized")

        // A password may start with `:`; the name ends at the first one.
        try createUser("foo@example.org", ":bar")
        XCTAssertEqual(userContext(try get("/_session", headers: basic("foo@example.org", ":bar")))["name"] as? String,
                       "foo@example.org")

        // A user document in conflict cannot be used to log in.
        let rev = try XCTUnwrap(stored["_rev"] as? String)
        var conflicting = stored
        conflicting["_rev"] = "2-" + String(repeating: "a", count: 32)
        conflicting["_revisions"] = ["start": 2, "ids": [String(repeating: "a", count: 32), String(rev.dropFirst(2))]]
        conflicting["other"] = 1
        expect(try request("PUT", "/_users/org.couchdb.user:jchris@apache.org?new_edits=false", json: conflicting, headers: admin), 201)
        conflicting["_rev"] = "2-" + String(repeating: "b", count: 32)
        conflicting["_revisions"] = ["start": 2, "ids": [String(repeating: "b", count: 32), String(rev.dropFirst(2))]]
        conflicting["other"] = 2
        expect(try request("PUT", "/_users/org.couchdb.user:jchris@apache.org?new_edits=false", json: conflicting, headers: admin), 201)
        let refused = try get("/_session", headers: basic("jchris@apache.org", "funnybone"))
        expect(refused, 401)
        XCTAssertTrue((refused.dict["reason"] as? String ?? "").contains("conflict"), refused.text)
    }

    func testSessionCookiesStartRefreshExpireAndRefuseTampering() throws {
        try setUpUsers()
        try createUser("alice", "s3cret!")
        try createDB("open")
        expect(try request("PUT", "/open/_security", json: ["members": ["names": ["alice"]]], headers: admin), 200)

        // Form and JSON logins.
        expectError(try request("POST", "/_session", body: Array("name=alice&password=nope".utf8),
                                headers: ["Content-Type": "application/x-www-form-urlencoded"]),
                    401, "unauthorized", "Name or password is incorrect.")
        let form = try request("POST", "/_session", body: Array("name=alice&password=s3cret%21".utf8),
                               headers: ["Content-Type": "application/x-www-form-urlencoded"])
        expect(form, 200)
        XCTAssertTrue(jsonEqual(form.json, ["ok": true, "name": "alice", "roles": [String]()]))
        let setCookie = try XCTUnwrap(form.header("set-cookie"))
        XCTAssertTrue(setCookie.contains("; Version=1"), setCookie)
        XCTAssertTrue(setCookie.contains("; Max-Age=600"), setCookie)
        XCTAssertTrue(setCookie.contains("; Path=/; HttpOnly"), setCookie)
        let cookie = try sessionCookie(form)
        let login = try request("POST", "/_session", json: ["name": "alice", "password": "s3cret!"])
        expect(login, 200)

        let session = try get("/_session", headers: ["Cookie": cookie])
        XCTAssertEqual(userContext(session)["name"] as? String, "alice")
        XCTAssertEqual((session.dict["info"] as? [String: Any])?["authenticated"] as? String, "cookie")
        expect(try request("PUT", "/open/doc", json: ["x": 1], headers: ["Cookie": cookie]), 201)
        XCTAssertNil(try get("/open/doc", headers: ["Cookie": cookie]).header("set-cookie"), "a fresh cookie is not renewed")

        // The cookie is CouchDB's: HMAC-SHA256 over name and time, keyed by the secret and the user's salt.
        let secret = try XCTUnwrap(try get("/_node/_local/_config/chttpd_auth/secret", headers: admin).json as? String)
        let salt = try XCTUnwrap(try get("/_users/org.couchdb.user:alice", headers: admin).dict["salt"] as? String)
        let (parsed, _) = try XCTUnwrap(AuthSessionCookie.parse(String(cookie.dropFirst("AuthSession=".count))))
        XCTAssertEqual("AuthSession=" + parsed.value(secret: secret, salt: salt), cookie)

        // Older than a tenth of the timeout: accepted, and a new cookie comes back.
        let now = Int(Date().timeIntervalSince1970)
        let older = "AuthSession=" + AuthSessionCookie(name: "alice", timestamp: now - 120).value(secret: secret, salt: salt)
        let refreshed = try get("/open/doc", headers: ["Cookie": older])
        expect(refreshed, 200)
        let renewed = try XCTUnwrap(refreshed.header("set-cookie"))
        XCTAssertTrue(renewed.hasPrefix("AuthSession=") && !renewed.hasPrefix(older + ";"), renewed)
        // Past the timeout (600 s): no user, so the members-only database answers 401.
        let expired = "AuthSession=" + AuthSessionCookie(name: "alice", timestamp: now - 601).value(secret: secret, salt: salt)
        expectError(try get("/open/doc", headers: ["Cookie": expired]), 401, "unauthorized", "You are not authorized to access this db.")
        // Tampered: another name under alice's signature, or a changed signature.
        let forgedName = "AuthSession=" + AuthSessionCookie(name: "adm", timestamp: now).value(secret: secret, salt: salt)
        expectError(try get("/open/doc", headers: ["Cookie": forgedName]), 401, "unauthorized")
        var bytes = Array(cookie.utf8)
        bytes[bytes.count - 3] = bytes[bytes.count - 3] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        expectError(try get("/open/doc", headers: ["Cookie": String(decoding: bytes, as: UTF8.self)]), 401, "unauthorized")
        // Malformed: CouchDB's 400, never a 5xx.
        for hostile in ["AuthSession=%%%", "AuthSession=" + String(repeating: "A", count: 10_000), "AuthSession=YWxpY2U",
                        "AuthSession=YWxpY2U6WlpaWjo", "AuthSession=" + Data("alice:-1:x".utf8).base64EncodedString()] {
            let r = try get("/open/doc", headers: ["Cookie": hostile])
            XCTAssertTrue([400, 401].contains(r.status), "\(hostile.prefix(40)): \(r.status) \(r.text)")
        }
        expectError(try get("/open/doc", headers: ["Cookie": "AuthSession=%%%"]), 400, "bad_request",
                    "Malformed AuthSession cookie. Please clear your cookies.")

        // A new password (a new salt) ends the old sessions.
        var doc = try get("/_users/org.couchdb.user:alice", headers: admin).dict
        doc["password"] = "n3w"
        expect(try request("PUT", "/_users/org.couchdb.user:alice", json: doc, headers: admin), 201)
        expectError(try get("/open/doc", headers: ["Cookie": cookie]), 401, "unauthorized")
        expect(try get("/open/doc", headers: basic("alice", "n3w")), 200)
        expectError(try get("/open/doc", headers: basic("alice", "s3cret!")), 401, "unauthorized", "Name or password is incorrect.")

        // Logging out clears the cookie on the client.
        let out = try request("DELETE", "/_session", headers: ["Cookie": cookie])
        expect(out, 200)
        XCTAssertTrue(out.header("set-cookie")?.hasPrefix("AuthSession=;") == true)
    }

    func testUsersMayOnlyTouchTheirOwnDocument() throws {
        try setUpUsers()
        // CouchDB 3's `_users` is admins-only until its security is opened (which needs the setting).
        expectError(try request("PUT", "/_users/org.couchdb.user:eve",
                                json: ["name": "eve", "password": "pw", "roles": [String](), "type": "user"]),
                    401, "unauthorized", "You are not authorized to access this db.")
        expectError(try request("PUT", "/_users/_security", json: [String: Any](), headers: admin), 403, "forbidden",
                    "You can't edit the security object of the user database.")
        expect(try request("PUT", "/_node/_local/_config/couchdb/users_db_security_editable", json: "true", headers: admin), 200)
        expect(try request("PUT", "/_users/_security", json: ["admins": ["names": [String](), "roles": [String]()],
                                                                "members": ["names": [String](), "roles": [String]()]],
                           headers: admin), 200)

        // Anyone may sign up, without roles.
        try createUser("eve", "pw", as: [:])
        expectError(try request("PUT", "/_users/org.couchdb.user:mal",
                                json: ["name": "mal", "password": "pw", "roles": ["boss"], "type": "user"]),
                    403, "forbidden", "Only _admin may set roles")
        try createUser("bob", "pw")
        // A user reads and changes their own document; their password, not their roles.
        let own = try get("/_users/org.couchdb.user:eve", headers: basic("eve", "pw"))
        expect(own, 200)
        expectError(try get("/_users/org.couchdb.user:bob", headers: basic("eve", "pw")), 404, "not_found", "missing")
        expectError(try get("/_users/org.couchdb.user:nobody", headers: basic("eve", "pw")), 404, "not_found", "missing")
        var doc = own.dict
        doc["roles"] = ["x"]
        expectError(try request("PUT", "/_users/org.couchdb.user:eve", json: doc, headers: basic("eve", "pw")),
                    403, "forbidden", "Only _admin may edit roles")
        doc["roles"] = [String]()
        doc["password"] = "pw2"
        expect(try request("PUT", "/_users/org.couchdb.user:eve", json: doc, headers: basic("eve", "pw")), 201)
        expect(try get("/_session", headers: basic("eve", "pw2")), 200)
        expectError(try request("PUT", "/_users/org.couchdb.user:zed",
                                json: ["name": "zed", "password": "pw", "roles": [String](), "type": "user"],
                                headers: basic("eve", "pw2")), 404, "not_found")
        // Listings and design documents are for admins.
        expectError(try get("/_users/_all_docs", headers: basic("eve", "pw2")), 401, "unauthorized", "You are not a server admin.")
        expectError(try get("/_users/_changes", headers: basic("eve", "pw2")), 401, "unauthorized", "You are not a server admin.")
        expectError(try get("/_users/_design/_auth", headers: basic("eve", "pw2")), 403, "forbidden",
                    "Only administrators can view design docs in the users database.")

        // `_users`' own rules, for admins too.
        var bad = try get("/_users/org.couchdb.user:bob", headers: admin).dict
        bad["type"] = "not user"
        expectError(try request("PUT", "/_users/org.couchdb.user:bob", json: bad, headers: admin), 403, "forbidden", "doc.type must be user")
        expectError(try request("PUT", "/_users/org.couchdb.user:joe:erlang",
                                json: ["name": "joe:erlang", "password": "q", "roles": [String](), "type": "user"], headers: admin),
                    403, "forbidden", "Character `:` is not allowed in usernames.")
        // password_regexp, as CouchDB's users_db test sets it.
        expect(try request("PUT", "/_node/_local/_config/couch_httpd_auth/password_regexp",
                           json: #"[{".{10,}"}, {"[A-Z]+", "Requirement 2."}]"#, headers: admin), 200)
        expectError(try request("PUT", "/_users/org.couchdb.user:kim",
                                json: ["name": "kim", "password": "funnnnnybone", "roles": [String](), "type": "user"], headers: admin),
                    400, "bad_request", "Password does not conform to requirements. Requirement 2.")
        expect(try request("PUT", "/_node/_local/_config/couch_httpd_auth/password_regexp", json: "{{\".{10,}\"}}", headers: admin), 200)
        expectError(try request("PUT", "/_users/org.couchdb.user:kim",
                                json: ["name": "kim", "password": "funnnnnyBone", "roles": [String](), "type": "user"], headers: admin),
                    403, "forbidden", "Server cannot hash passwords at this time.")
    }

    // MARK: Per-database security

    func testMembersAdminsAndOthersOnEveryEndpointFamily() throws {
        try setUpUsers()
        try createUser("alice", "a")              // member by name
        try createUser("bob", "b", roles: ["staff"])   // member by role
        try createUser("carol", "c")              // neither
        try createUser("dave", "d")               // the database's admin
        expect(try request("PUT", "/shop", headers: admin), 201)
        // A new database is CouchDB 3's admin_only until its security is set.
        XCTAssertTrue(jsonEqual(try get("/shop/_security", headers: admin).json,
                                ["members": ["roles": ["_admin"]], "admins": ["roles": ["_admin"]]]))
        expectError(try get("/shop", headers: basic("alice", "a")), 403, "forbidden", "You are not allowed to access this db.")
        expectError(try request("PUT", "/shop/_security", json: ["x": 1], headers: basic("dave", "d")), 403, "forbidden")
        expectError(try request("PUT", "/shop/_security", json: ["foo"], headers: admin), 400, "bad_request")
        expect(try request("PUT", "/shop/_security",
                           json: ["admins": ["names": ["dave"]], "members": ["names": ["alice"], "roles": ["staff"]]],
                           headers: admin), 200)
        expect(try request("PUT", "/shop/_design/app", json: ["views": ["all": ["map": "function(d){emit(d._id,null)}"]]],
                           headers: basic("dave", "d")), 201)
        expect(try request("PUT", "/shop/seed", json: ["x": 0], headers: admin), 201)

        let members = [basic("alice", "a"), basic("bob", "b"), basic("dave", "d"), admin]
        let reads = ["/shop", "/shop/seed", "/shop/_all_docs", "/shop/_changes", "/shop/_design/app", "/shop/_security",
                     "/shop/_design_docs"]
        for path in reads {
            for headers in members {
                let r = try get(path, headers: headers)
                XCTAssertEqual(r.status, 200, "\(path) as \(headers): \(r.text)")
            }
            expectError(try get(path, headers: basic("carol", "c")), 403, "forbidden", "You are not allowed to access this db.")
            expectError(try get(path), 401, "unauthorized", "You are not authorized to access this db.")
        }
        let view = try get("/shop/_design/app/_view/all", headers: basic("carol", "c"))
        expectError(view, 403, "forbidden")
        XCTAssertFalse([401, 403].contains(try get("/shop/_design/app/_view/all", headers: basic("alice", "a")).status))

        // Writes: documents, attachments, _bulk_docs.
        expect(try request("PUT", "/shop/a1", json: ["by": "alice"], headers: basic("alice", "a")), 201)
        expect(try request("POST", "/shop", json: ["by": "bob"], headers: basic("bob", "b")), 201)
        expectError(try request("PUT", "/shop/c1", json: ["by": "carol"], headers: basic("carol", "c")), 403, "forbidden")
        expectError(try request("PUT", "/shop/n1", json: ["by": "nobody"]), 401, "unauthorized")
        let rev = try XCTUnwrap(try get("/shop/a1", headers: admin).dict["_rev"] as? String)
        expect(try request("PUT", "/shop/a1/note.txt?rev=\(rev)", body: Array("hi".utf8),
                           headers: basic("alice", "a").merging(["Content-Type": "text/plain"]) { a, _ in a }), 201)
        expectError(try request("PUT", "/shop/c1/note.txt", body: Array("hi".utf8),
                                headers: basic("carol", "c").merging(["Content-Type": "text/plain"]) { a, _ in a }), 403, "forbidden")
        expectError(try get("/shop/a1/note.txt", headers: basic("carol", "c")), 403, "forbidden")
        expect(try get("/shop/a1/note.txt", headers: basic("bob", "b")), 200)
        let bulk = try request("POST", "/shop/_bulk_docs",
                               json: ["docs": [["_id": "b1"], ["_id": "_design/sneaky", "views": [String: Any]()]]],
                               headers: basic("alice", "a"))
        expect(bulk, 201)
        XCTAssertEqual((bulk.array.first as? [String: Any])?["ok"] as? Bool, true, bulk.text)
        XCTAssertEqual((bulk.array.last as? [String: Any])?["error"] as? String, "forbidden", bulk.text)
        expectError(try request("POST", "/shop/_bulk_docs", json: ["docs": [["_id": "c2"]]], headers: basic("carol", "c")),
                    403, "forbidden")

        // Design documents and admin-only database endpoints: database admins only.
        expectError(try request("PUT", "/shop/_design/mine", json: ["views": [String: Any]()], headers: basic("alice", "a")),
                    403, "forbidden", "You are not a db or server admin.")
        expectError(try request("PUT", "/shop/_design/mine?new_edits=false",
                                json: ["_rev": "2-642e20f96624a0aae6025b4dba0c6fb2", "views": [String: Any]()],
                                headers: basic("bob", "b")), 403, "forbidden", "You are not a db or server admin.")
        expectError(try request("PUT", "/shop/_security", json: [String: Any](), headers: basic("alice", "a")),
                    403, "forbidden", "You are not a db or server admin.")
        expectError(try request("POST", "/shop/_compact", json: [String: Any](), headers: basic("alice", "a")), 403, "forbidden")
        expect(try request("POST", "/shop/_compact", json: [String: Any](), headers: basic("dave", "d")), 202)

        // Server-level endpoints.
        expectError(try get("/_all_dbs", headers: basic("alice", "a")), 401, "unauthorized", "You are not a server admin.")
        expectError(try request("PUT", "/newdb", headers: basic("dave", "d")), 401, "unauthorized", "You are not a server admin.")
        expectError(try request("DELETE", "/shop", headers: basic("dave", "d")), 401, "unauthorized", "You are not a server admin.")
        expectError(try get("/_node/_local/_config", headers: basic("dave", "d")), 401, "unauthorized", "You are not a server admin.")
        expect(try get("/", headers: basic("carol", "c")), 200)
        expect(try get("/"), 200)

        // _replicate: as the user who asks, on both sides.
        try createDB("source")
        expect(try request("PUT", "/source/_security", json: ["members": ["names": ["alice", "carol"]]], headers: admin), 200)
        expect(try request("PUT", "/source/s1", json: ["v": 1], headers: admin), 201)
        expectError(try request("POST", "/_replicate", json: ["source": "source", "target": "shop"]), 401, "unauthorized")
        expectError(try request("POST", "/_replicate", json: ["source": "source", "target": "shop"], headers: basic("carol", "c")),
                    403, "forbidden")
        let replicated = try request("POST", "/_replicate", json: ["source": "source", "target": "shop"], headers: basic("alice", "a"))
        expect(replicated, 200)
        expect(try get("/shop/s1", headers: admin), 200)
    }

    // MARK: Validation with the real user

    func testValidationSeesTheRequestsUserAndSecurityObject() throws {
        CBLView.setCompiler(CBLJSViewCompiler(limits: CBLJSLimits(timeLimit: 1)))
        CBLDatabase.setFilterCompiler(CBLJSFilterCompiler(limits: CBLJSLimits(timeLimit: 1)))
        defer {
            CBLView.setCompiler(nil)
            CBLDatabase.setFilterCompiler(nil)
        }
        try setUpUsers()
        try createUser("tom", "cat")
        try createUser("jerry", "mouse")
        try createDB("notes")
        let validate = """
            function (newDoc, oldDoc, userCtx, secObj) {
              if (secObj.admin_override && userCtx.roles.indexOf('_admin') != -1) return;
              if (!newDoc._deleted && !newDoc.author) throw({forbidden: 'Documents must have an author field'});
              if (oldDoc && oldDoc.author != userCtx.name)
                throw({unauthorized: "You are '" + userCtx.name + "', not the author '" + oldDoc.author + "' of this document. You jerk."});
              if (newDoc.echo) throw({forbidden: JSON.stringify([userCtx, secObj.admins])});
            }
            """
        expect(try request("PUT", "/notes/_security", json: ["admin_override": false, "admins": ["names": ["jerry"]]],
                           headers: admin), 200)
        expect(try request("PUT", "/notes/_design/test", json: ["validate_doc_update": validate], headers: admin), 201)

        expectError(try request("PUT", "/notes/d", json: ["foo": 1], headers: basic("jerry", "mouse")), 403, "forbidden",
                    "Documents must have an author field")
        let echoed = try request("PUT", "/notes/e", json: ["author": "tom", "echo": true], headers: basic("tom", "cat"))
        expect(echoed, 403)
        XCTAssertTrue(jsonEqual(try JSONSerialization.jsonObject(with: Data((echoed.dict["reason"] as? String ?? "").utf8)),
                                [["db": "notes", "name": "tom", "roles": [String]()], ["names": ["jerry"]]]), echoed.text)
        expect(try request("PUT", "/notes/d", json: ["foo": 1, "author": "jerry"], headers: basic("jerry", "mouse")), 201)
        var doc = try get("/notes/d", headers: admin).dict
        doc["foo"] = 2
        expectError(try request("PUT", "/notes/d", json: doc, headers: basic("tom", "cat")), 401, "unauthorized",
                    "You are 'tom', not the author 'jerry' of this document. You jerk.")
        // The admin, without override: the validation sees `_admin` and no name.
        expectError(try request("PUT", "/notes/d", json: doc, headers: admin), 401, "unauthorized")
        expect(try request("PUT", "/notes/_security", json: ["admin_override": true, "admins": ["names": ["jerry"]]],
                           headers: admin), 200)
        expect(try request("PUT", "/notes/d", json: doc, headers: admin), 201)
        // _bulk_docs: each document on its own.
        let bulk = try request("POST", "/notes/_bulk_docs",
                               json: ["docs": [["_id": "bahbah", "author": "jerry"], ["_id": "fahfah"]]], headers: basic("jerry", "mouse"))
        XCTAssertNotNil((bulk.array.first as? [String: Any])?["rev"], bulk.text)
        XCTAssertEqual((bulk.array.last as? [String: Any])?["error"] as? String, "forbidden", bulk.text)
        // A replicated revision (new_edits=false) is validated as the user pushing it.
        let pushed = try request("POST", "/notes/_bulk_docs",
                                 json: ["new_edits": false, "docs": [["_id": "d", "_rev": "9-" + String(repeating: "b", count: 32),
                                                                      "author": "tom"]]],
                                 headers: basic("tom", "cat"))
        XCTAssertEqual((pushed.array.first as? [String: Any])?["error"] as? String, "unauthorized", pushed.text)
    }

    // MARK: Lockout, admins, configuration, JSONP

    func testRepeatedFailuresLockTheNameOut() throws {
        try setUpUsers()
        try createUser("alice", "right")
        for _ in 0..<5 {
            expectError(try get("/_session", headers: basic("alice", "wrong")), 401, "unauthorized", "Name or password is incorrect.")
        }
        // Locked: even the right password is refused for a while, before it is looked at.
        expectError(try get("/_session", headers: basic("alice", "right")), 403, "forbidden",
                    "Account is temporarily locked due to multiple authentication failures")
        expectError(try request("POST", "/_session", json: ["name": "alice", "password": "right"]), 403, "forbidden")
        // Another name is not locked.
        expect(try get("/_session", headers: admin), 200)
        expect(try request("PUT", "/_node/_local/_config/chttpd_auth_lockout/mode", json: "off", headers: admin), 200)
        XCTAssertEqual(userContext(try get("/_session", headers: basic("alice", "right")))["name"] as? String, "alice")
    }

    func testAdminsSectionIsHashedPersistedAndUsed() throws {
        try setUpUsers()
        let previous = try request("PUT", "/_node/_local/_config/admins/jan", json: "apple", headers: admin)
        expect(previous, 200)
        XCTAssertEqual(previous.json as? String, "")
        let hash = try XCTUnwrap(try get("/_node/_local/_config/admins/jan", headers: admin).json as? String)
        XCTAssertTrue(hash.hasPrefix("-pbkdf2:sha256-"), hash)
        XCTAssertFalse(hash.contains("apple"))
        let file = try String(contentsOf: directory.appendingPathComponent(".listener-config.json"), encoding: .utf8)
        XCTAssertTrue(file.contains(hash) && !file.contains("apple"))
        let session = try get("/_session", headers: basic("jan", "apple"))
        XCTAssertEqual(userContext(session)["roles"] as? [String], ["_admin"])
        // CouchDB 3.4.3's own hash of adm:pass in its [admins] section.
        expect(try request("PUT", "/_node/_local/_config/admins/couch",
                           json: "-pbkdf2:sha256-44d48390e55a22524a6ea0af81c0d5909c50a1e1e7a38aaa8300ca2ab4d90e74,0b6d709657c2fa1e8300bbe09dd16062,600000",
                           headers: admin), 200)
        XCTAssertEqual(userContext(try get("/_session", headers: basic("couch", "pass")))["name"] as? String, "couch")
        // Not persisted: gone from the file, kept while running.
        expect(try request("PUT", "/_node/_local/_config/chttpd/allow_jsonp", json: "true",
                           headers: admin.merging(["X-Couch-Persist": "false"]) { a, _ in a }), 200)
        let after = try String(contentsOf: directory.appendingPathComponent(".listener-config.json"), encoding: .utf8)
        XCTAssertFalse(after.contains("allow_jsonp"))
        expectError(try get("/_node/_local/_config/chttpd/nothing", headers: admin), 404, "not_found", "unknown_config_value")
        XCTAssertTrue(jsonEqual(try get("/_membership", headers: admin).json,
                                ["all_nodes": ["nonode@nohost"], "cluster_nodes": ["nonode@nohost"]]))

        // A restarted listener keeps the persisted admins.
        listener.stop()
        listener = CBLListener(manager: manager, port: 0)
        listener.bindAddress = "127.0.0.1"
        try listener.start()
        client = RawHTTPClient(port: listener.port)
        XCTAssertEqual(userContext(try get("/_session", headers: basic("jan", "apple")))["roles"] as? [String], ["_admin"])
        expectError(try get("/_all_dbs"), 401, "unauthorized", "You are not a server admin.")
    }

    func testJSONPCallbacks() throws {
        try createDB("db")
        try putDoc("/db/0", ["a": 0])
        let plain = try get("/db/0?callback=jsonp_no_chunk")
        expect(plain, 200)
        XCTAssertEqual(plain.header("content-type"), "application/json")
        expect(try request("PUT", "/_node/_local/_config/chttpd/allow_jsonp", json: "true"), 200)
        let wrapped = try get("/db/0?callback=jsonp_no_chunk")
        expect(wrapped, 200)
        XCTAssertEqual(wrapped.header("content-type"), "application/javascript")
        XCTAssertTrue(wrapped.text.hasPrefix("/* CouchDB */jsonp_no_chunk({"), wrapped.text)
        XCTAssertTrue(wrapped.text.hasSuffix("});"), wrapped.text)
        expectError(try get("/db/0?callback=jsonp_no_chunk%22"), 400, "bad_request")
        let changes = try get("/db/_changes?callback=jsonp_chunk")
        XCTAssertEqual(changes.header("content-type"), "application/javascript")
        let inner = changes.text.dropFirst("/* CouchDB */jsonp_chunk(".count).dropLast(2)
        let parsed = try JSONSerialization.jsonObject(with: Data(inner.utf8)) as? [String: Any]
        XCTAssertEqual((parsed?["results"] as? [Any])?.count, 1, changes.text)
    }
}
