@testable import CouchbaseLite
import CouchbaseLiteListener
import Foundation
import JSONCore
import SQLiteKit
import XCTest

/// A `validate_doc_update` compiler for tests whose "source" names what the function does:
/// `record` remembers its `userCtx` and `secObj`, `requireName` refuses an anonymous user with
/// 401 (CouchDB's `{unauthorized: …}`), `forbidAll` refuses everything with 403.
final class ScriptedValidationCompiler: CBLFilterCompiler, Sendable {
    struct Call: Equatable {
        let docID: String
        let userCtx: JSONValue
        let secObj: JSONValue
    }

    let calls = Locked<[Call]>([])
    let compiled = Locked<[String]>([])

    func compileFilterFunction(_ filterSource: String, language: String) -> CBLFilterBlock? { nil }

    func compileValidateDocUpdate(_ source: String, language: String, designDocument: [String: Any]) throws -> CBLDesignValidation? {
        compiled.withLock { $0.append(designDocument["_id"] as? String ?? "?") }
        return Self.validation(source, recordingInto: calls)
    }

    static func validation(_ source: String, recordingInto calls: Locked<[Call]>) -> CBLDesignValidation {
        { newDoc, _, userCtx, secObj in
            switch source {
            case "record":
                let call = Call(docID: newDoc["_id"] as? String ?? "", userCtx: try JSONValue(foundation: userCtx),
                                secObj: try JSONValue(foundation: secObj))
                calls.withLock { $0.append(call) }
            case "requireName":
                if userCtx["name"] is NSNull { throw CBLError(401, "Log in first") }
            case "forbidAll":
                throw CBLError(403, "forbidAll refuses \(newDoc["_id"] ?? "")")
            default:
                break
            }
        }
    }
}

/// The writing user (`CBLRequestUser`): what design documents' validations see of it, CouchDB's
/// rule that only a database admin writes design documents, built-in validations, the stored
/// `_security` object and a pull made as a user. Expected values are CouchDB 3.4's: `userCtx`
/// `{"db", "name", "roles"}`, "You are not a db or server admin." with 401 (anonymous) or 403.
final class RequestUserValidationTests: DatabaseTestCase {
    var compiler: ScriptedValidationCompiler!

    static let bob = CBLRequestUser(name: "bob", roles: ["editor"],
                                    securityObject: .object(["members": .object(["names": .array(["bob"])])]),
                                    isDatabaseAdmin: false)
    static let anonymous = CBLRequestUser(name: nil, roles: [], isDatabaseAdmin: false)
    static let alice = CBLRequestUser(name: "alice", roles: ["_admin"], isDatabaseAdmin: true)
    static let notAdmin = "You are not a db or server admin."

    override func setUpWithError() throws {
        try super.setUpWithError()
        compiler = ScriptedValidationCompiler()
        CBLDatabase.setFilterCompiler(compiler)
    }

    override func tearDown() {
        CBLDatabase.setFilterCompiler(nil)
        super.tearDown()
    }

    private func assertRefused(_ status: Int, _ message: String, _ expression: @autoclosure () throws -> some Any,
                               file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try expression(), file: file, line: line) { error in
            XCTAssertEqual((error as? CBLError)?.code, status, "\(error)", file: file, line: line)
            XCTAssertEqual((error as? CBLError)?.message, message, file: file, line: line)
        }
    }

    // MARK: userCtx and secObj

    func testValidationSeesTheAdminPartyWithoutAUserAndTheCurrentUserWithOne() throws {
        try db.document(withID: "_design/rec")!.putProperties(["validate_doc_update": "record"])
        compiler.calls.withLock { $0.removeAll() }
        try db.document(withID: "plain")!.putProperties(["v": 1])
        try CBLRequestUser.acting(as: Self.bob) { _ = try db.document(withID: "byBob")!.putProperties(["v": 2]) }
        try CBLRequestUser.acting(as: Self.anonymous) {
            _ = try db.syncInsertRevision(docID: "pulled", body: ["_rev": "1-aaaa", "v": 3])
        }
        let calls = compiler.calls.withLock { $0 }
        XCTAssertEqual(calls, [
            .init(docID: "plain", userCtx: ["db": "db", "name": nil, "roles": ["_admin"]], secObj: .object([:])),
            .init(docID: "byBob", userCtx: ["db": "db", "name": "bob", "roles": ["editor"]],
                  secObj: ["members": ["names": ["bob"]]]),
            .init(docID: "pulled", userCtx: ["db": "db", "name": nil, "roles": []], secObj: .object([:])),
        ])
    }

    func testUnauthorizedFromAValidationKeepsStatus401() throws {
        try db.document(withID: "_design/auth")!.putProperties(["validate_doc_update": "requireName"])
        try CBLRequestUser.acting(as: Self.anonymous) {
            assertRefused(401, "Log in first", try db.document(withID: "a")!.putProperties(["v": 1]))
            assertRefused(401, "Log in first", try db.syncInsertRevision(docID: "b", body: ["_rev": "1-bbbb", "v": 1]))
            assertRefused(401, "Log in first", try db.forceInsert(docID: "c", history: ["1-cccc"], properties: ["v": 1]))
        }
        try CBLRequestUser.acting(as: Self.bob) { _ = try db.document(withID: "a")!.putProperties(["v": 1]) }
        XCTAssertNotNil(try db.syncWinningRevision(docID: "a"))
        XCTAssertNil(try db.syncWinningRevision(docID: "b"))
        XCTAssertNil(try db.syncWinningRevision(docID: "c"))
    }

    // MARK: Only a database admin writes design documents

    func testDesignDocumentsAreRefusedToUsersWhoAreNotDatabaseAdmins() throws {
        // No validation anywhere: the fast paths (new document, stored-body insert) are the ones tried.
        CBLDatabase.setFilterCompiler(nil)
        XCTAssertFalse(db.hasValidationsToRun)
        try CBLRequestUser.acting(as: Self.anonymous) {
            assertRefused(401, Self.notAdmin, try db.document(withID: "_design/new")!.putProperties(["views": [:] as [String: Any]]))
        }
        try CBLRequestUser.acting(as: Self.bob) {
            assertRefused(403, Self.notAdmin, try db.document(withID: "_design/new")!.putProperties(["views": [:] as [String: Any]]))
        }
        XCTAssertNil(try db.syncWinningRevision(docID: "_design/new"))

        let first = try CBLRequestUser.acting(as: Self.alice) {
            try db.document(withID: "_design/app")!.putProperties(["views": [:] as [String: Any]])
        }
        try CBLRequestUser.acting(as: Self.bob) {
            // Other documents are bob's to write.
            _ = try db.document(withID: "doc")!.putProperties(["v": 1])
            assertRefused(403, Self.notAdmin, try db.document(withID: "_design/app")!.putProperties(
                ["_rev": first.revisionID!, "views": ["v": ["map": "x"]]]))
            assertRefused(403, Self.notAdmin, try db.document(withID: "_design/app")!.putProperties(
                ["_rev": first.revisionID!, "_deleted": true]))
            assertRefused(403, Self.notAdmin, try db.document(withID: "_design/app")!.delete())
            // A stale parent is a conflict first, as in CouchDB (the revision is checked before it is validated).
            XCTAssertThrowsStatus(409, try db.document(withID: "_design/app")!.putProperties(["views": [:] as [String: Any]]))
            // Replicated revisions: with properties, with a stored body, and through the shared insert.
            assertRefused(403, Self.notAdmin, try db.forceInsert(docID: "_design/app", history: ["2-aaaa", first.revisionID!],
                                                                properties: ["views": [:] as [String: Any]]))
            assertRefused(403, Self.notAdmin, try db.forceInsert(docID: "_design/app", history: ["2-bbbb", first.revisionID!],
                                                                storedBody: Array(#"{"views":{}}"#.utf8), deleted: false, docType: nil))
            assertRefused(403, Self.notAdmin, try db.forceInsert(docID: "_design/other", history: ["1-cccc"],
                                                                storedBody: Array("{}".utf8), deleted: false, docType: nil))
            assertRefused(403, Self.notAdmin, try db.syncInsertRevision(docID: "_design/app", body: [
                "_rev": "2-dddd", "_revisions": CBLDatabase.syncRevisionsDictionary(["2-dddd", first.revisionID!]),
            ]))
            // A revision already present is no update: nothing to refuse, nothing inserted.
            XCTAssertNil(try db.forceInsert(docID: "_design/app", history: [first.revisionID!], properties: ["views": [:] as [String: Any]]))
            XCTAssertNil(try db.forceInsert(docID: "_design/app", history: [first.revisionID!], storedBody: Array("{}".utf8),
                                            deleted: false, docType: nil))
        }
        let app = try XCTUnwrap(db.syncWinningRevision(docID: "_design/app"))
        XCTAssertEqual(app.revID, first.revisionID)
        XCTAssertFalse(app.deleted)
        XCTAssertEqual(try db.document(withID: "_design/app")!.getLeafRevisions().count, 1)
        XCTAssertNil(try db.syncWinningRevision(docID: "_design/other"))

        // An admin, and the app (no current user), write design documents.
        let second = try CBLRequestUser.acting(as: Self.alice) {
            try db.forceInsert(docID: "_design/app", history: ["2-eeee", first.revisionID!], storedBody: Array("{}".utf8),
                               deleted: false, docType: nil)
        }
        XCTAssertEqual(second?.revisionID, "2-eeee")
        _ = try db.document(withID: "_design/app")!.putProperties(["_rev": "2-eeee", "views": [:] as [String: Any]])
        XCTAssertEqual(db.documentCount, 2, "doc and _design/app")
    }

    func testDesignDocumentRuleComesBeforeTheDesignDocumentsValidations() throws {
        try db.document(withID: "_design/rec")!.putProperties(["validate_doc_update": "record"])
        XCTAssertTrue(db.hasValidationsToRun)
        compiler.calls.withLock { $0.removeAll() }
        try CBLRequestUser.acting(as: Self.bob) {
            assertRefused(403, Self.notAdmin, try db.document(withID: "_design/more")!.putProperties(["x": 1]))
            assertRefused(403, Self.notAdmin, try db.syncInsertRevision(docID: "_design/more", body: ["_rev": "1-abab"]))
        }
        XCTAssertEqual(compiler.calls.withLock { $0 }, [], "refused before any validation ran")
        try CBLRequestUser.acting(as: Self.alice) { _ = try db.document(withID: "_design/more")!.putProperties(["x": 1]) }
        // An admin's design document is saved without running validate_doc_update (CouchDB never runs it on one).
        XCTAssertEqual(compiler.calls.withLock { $0.map(\.docID) }, [])
        try CBLRequestUser.acting(as: Self.alice) { _ = try db.document(withID: "byAlice")!.putProperties(["x": 1]) }
        XCTAssertEqual(compiler.calls.withLock { $0.map(\.docID) }, ["byAlice"])
    }

    // MARK: Built-in validations

    func testBuiltInValidationReplacesTheDesignDocumentsOwnSource() throws {
        try db.document(withID: "_design/_auth")!.putProperties(["language": "javascript", "validate_doc_update": "forbidAll"])
        let seen = Locked<[JSONValue]>([])
        db.setBuiltInValidation({ newDoc, _, userCtx, secObj in
            let entry: JSONValue = ["ctx": try JSONValue(foundation: userCtx), "sec": try JSONValue(foundation: secObj)]
            seen.withLock { $0.append(entry) }
            guard newDoc["type"] as? String == "user" else { throw CBLError(403, "doc.type must be user") }
        }, forDesignDocument: "_design/_auth")
        compiler.compiled.withLock { $0.removeAll() }

        try db.document(withID: "org.couchdb.user:bob")!.putProperties(["type": "user", "name": "bob"])
        try CBLRequestUser.acting(as: Self.bob) {
            assertRefused(403, "doc.type must be user", try db.document(withID: "x")!.putProperties(["type": "note"]))
        }
        XCTAssertEqual(compiler.compiled.withLock { $0 }, [], "the document's own function is not compiled")
        XCTAssertEqual(seen.withLock { $0 }, [
            ["ctx": ["db": "db", "name": nil, "roles": ["_admin"]], "sec": .object([:])],
            ["ctx": ["db": "db", "name": "bob", "roles": ["editor"]], "sec": ["members": ["names": ["bob"]]]],
        ])

        // Removed: the document's own function runs again.
        db.setBuiltInValidation(nil, forDesignDocument: "_design/_auth")
        assertRefused(403, "forbidAll refuses org.couchdb.user:carol",
                      try db.document(withID: "org.couchdb.user:carol")!.putProperties(["type": "user"]))
        XCTAssertEqual(compiler.compiled.withLock { $0 }, ["_design/_auth"])
    }

    func testBuiltInValidationsRunWithoutACompilerInDesignDocumentOrder() throws {
        CBLDatabase.setFilterCompiler(nil)
        manager.refusesWritesWithUnrunnableValidations = true
        defer { manager.refusesWritesWithUnrunnableValidations = false }
        try db.document(withID: "_design/_auth")!.putProperties(["validate_doc_update": "function(doc) {}"])
        try db.document(withID: "_design/b")!.putProperties(["views": [:] as [String: Any]])
        // Without a compiler the design document's own rule refuses every write.
        XCTAssertThrowsError(try db.document(withID: "a")!.putProperties(["v": 1])) {
            XCTAssertTrue("\($0)".contains("_design/_auth has a validate_doc_update"), "\($0)")
        }

        let order = Locked<[String]>([])
        func rule(_ id: String, refusing property: String?) -> CBLDesignValidation {
            { newDoc, _, _, _ in
                order.withLock { $0.append(id) }
                if let property, newDoc[property] != nil { throw CBLError(403, "\(id) refuses") }
            }
        }
        // Registered out of order, one of them for a design document that does not exist.
        db.setBuiltInValidation(rule("_design/c", refusing: "worse"), forDesignDocument: "_design/c")
        db.setBuiltInValidation(rule("_design/_auth", refusing: "bad"), forDesignDocument: "_design/_auth")
        db.setBuiltInValidation(rule("_design/a", refusing: nil), forDesignDocument: "_design/a")
        XCTAssertTrue(db.hasValidationsToRun)

        try db.document(withID: "a")!.putProperties(["v": 1])
        XCTAssertEqual(order.withLock { $0 }, ["_design/_auth", "_design/a", "_design/c"], "by ID, as the store lists design documents")
        order.withLock { $0.removeAll() }
        assertRefused(403, "_design/_auth refuses", try db.document(withID: "b")!.putProperties(["bad": true]))
        assertRefused(403, "_design/_auth refuses", try db.forceInsert(docID: "c", history: ["1-cccc"],
                                                                       properties: ["bad": true, "worse": true]))
        assertRefused(403, "_design/c refuses", try db.forceInsert(docID: "c", history: ["1-cccc"],
                                                                   properties: ["worse": true]))

        // The same without the listener's setting: built-in rules are the only ones that run.
        manager.refusesWritesWithUnrunnableValidations = false
        order.withLock { $0.removeAll() }
        try db.document(withID: "d")!.putProperties(["v": 1])
        XCTAssertEqual(order.withLock { $0 }, ["_design/_auth", "_design/a", "_design/c"])

        // All removed: the database is back to no validation (and its fast paths) without the setting…
        for id in ["_design/_auth", "_design/a", "_design/c"] { db.setBuiltInValidation(nil, forDesignDocument: id) }
        XCTAssertFalse(db.hasValidationsToRun)
        try db.document(withID: "e")!.putProperties(["bad": true, "worse": true])
        // …and with it, back to refusing writes for the rule it cannot run.
        manager.refusesWritesWithUnrunnableValidations = true
        XCTAssertThrowsError(try db.document(withID: "f")!.putProperties(["v": 1]))
        XCTAssertEqual(db.documentCount, 5, "_design/_auth, _design/b, a, d, e")
    }

    // MARK: The _security object

    func testSecurityObjectIsKeptInTheInfoTableAcrossReopenAndCompaction() throws {
        XCTAssertNil(try db.storedSecurityObject())
        let dbFile = dir.url.appendingPathComponent("manager/db.cblite2/db.sqlite3").path
        func infoRows() throws -> [String: String] {
            let connection = try rawConnection(dbFile, readOnly: true)
            defer { connection.close() }
            var rows: [String: String] = [:]
            try connection.prepare("SELECT key, value FROM info").forEachRow { rows[$0.string(0) ?? ""] = $0.string(1) ?? "" }
            return rows
        }
        try db.document(withID: "a")!.putProperties(["v": 1])
        let before = try infoRows()

        let text = #"{"members":{"roles":["staff"],"names":[]},"admins":{"names":["alice"],"roles":[]}}"#
        let security = try JSON.value(text)
        try db.setStoredSecurityObject(security)
        var after = try infoRows()
        XCTAssertEqual(after.removeValue(forKey: "security"), text, "stored as given, members in their order")
        XCTAssertEqual(after, before, "no other info row changed")

        manager.close()
        manager = try makeManager(dir)
        db = try manager.databaseNamed("db")
        XCTAssertEqual(try db.storedSecurityObject(), security)
        try db.compact()
        XCTAssertEqual(try db.storedSecurityObject(), security)
        XCTAssertEqual(try JSON.string(XCTUnwrap(db.storedSecurityObject()), sortedKeys: false), text)
        XCTAssertEqual(try infoRows()["security"], text)

        try db.setStoredSecurityObject(nil)
        XCTAssertNil(try db.storedSecurityObject())
        XCTAssertNil(try infoRows()["security"])
        XCTAssertEqual(db.documentCount, 1)
    }

    // MARK: The thread-local

    func testCurrentUserIsRestoredAfterAThrowingBodyAndStaysOnItsThread() throws {
        struct Boom: Error {}
        XCTAssertNil(CBLRequestUser.current)
        try CBLRequestUser.acting(as: Self.bob) {
            XCTAssertEqual(CBLRequestUser.current, Self.bob)
            XCTAssertThrowsError(try CBLRequestUser.acting(as: Self.alice) {
                XCTAssertEqual(CBLRequestUser.current, Self.alice, "the innermost wins")
                throw Boom()
            })
            XCTAssertEqual(CBLRequestUser.current, Self.bob, "restored after the throw")
            CBLRequestUser.acting(as: nil) { XCTAssertNil(CBLRequestUser.current, "nil: no user inside") }
            XCTAssertEqual(CBLRequestUser.current, Self.bob)

            // Another thread, running meanwhile, has no user.
            let seen = Locked<[String?]>([])
            let done = DispatchSemaphore(value: 0)
            let thread = Thread {
                seen.withLock { $0.append(CBLRequestUser.current?.name ?? "none") }
                CBLRequestUser.acting(as: Self.alice) { seen.withLock { $0.append(CBLRequestUser.current?.name) } }
                done.signal()
            }
            thread.start()
            XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
            XCTAssertEqual(seen.withLock { $0 }, ["none", "alice"])
            XCTAssertEqual(CBLRequestUser.current, Self.bob, "the other thread's user stayed there")
        }
        XCTAssertNil(CBLRequestUser.current)
        XCTAssertThrowsError(try CBLRequestUser.acting(as: Self.bob) { throw Boom() })
        XCTAssertNil(CBLRequestUser.current)
    }

    // MARK: Pulling as a user

    func testPullInsertsAsTheReplicationsActingUser() throws {
        let serverDir = TempDirectory("cbl-user-pull-server")
        let serverManager = try CBLManager(directory: serverDir.path)
        defer { serverManager.close() }
        let source = try serverManager.databaseNamed("src")
        try source.document(withID: "a")!.putProperties(["v": 1])
        try source.document(withID: "b")!.putProperties(["v": 2])
        try source.document(withID: "_design/x")!.putProperties(["views": [:] as [String: Any]])
        let listener = CBLListener(manager: serverManager, port: 0)
        listener.bindAddress = "127.0.0.1"
        try listener.start()
        defer { listener.stop() }
        let url = URL(string: "http://127.0.0.1:\(listener.port)/src")!

        func pull(into target: CBLDatabase, as user: CBLRequestUser?) throws -> CBLReplication {
            let pull = target.createPullReplication(url)
            pull.actingUser = user
            XCTAssertEqual(pull.actingUser, user)
            pull.start()
            let deadline = Date().addingTimeInterval(60)
            while pull.running && Date() < deadline { usleep(5_000) }
            XCTAssertFalse(pull.running, "the pull did not finish")
            return pull
        }

        // No validation: the stored-body inserts, refusing the design document to bob.
        CBLDatabase.setFilterCompiler(nil)
        let plain = try manager.databaseNamed("plain")
        let asBob = try pull(into: plain, as: Self.bob)
        XCTAssertEqual((asBob.lastError as? CBLError)?.code, 403, "\(String(describing: asBob.lastError))")
        XCTAssertEqual(try plain.syncWinningRevision(docID: "a")?.properties?["v"] as? Int, 1)
        XCTAssertEqual(try plain.syncWinningRevision(docID: "b")?.properties?["v"] as? Int, 2)
        XCTAssertNil(try plain.syncWinningRevision(docID: "_design/x"))
        XCTAssertNil(CBLRequestUser.current)

        // A validation sees the replication's user for every revision but design documents
        // (which validate_doc_update never sees); without one, the admin party.
        let checked = try manager.databaseNamed("checked")
        let names = Locked<[String: String]>([:])
        checked.setBuiltInValidation({ newDoc, _, userCtx, _ in
            names.withLock { $0[newDoc["_id"] as? String ?? ""] = userCtx["name"] as? String ?? "null" }
        }, forDesignDocument: "_design/_auth")
        _ = try pull(into: checked, as: Self.alice)
        XCTAssertEqual(names.withLock { $0 }, ["a": "alice", "b": "alice"])
        XCTAssertNotNil(try checked.syncWinningRevision(docID: "_design/x"))

        let app = try manager.databaseNamed("app")
        app.setBuiltInValidation({ newDoc, _, userCtx, _ in
            names.withLock { $0[newDoc["_id"] as? String ?? ""] = userCtx["name"] as? String ?? "null" }
        }, forDesignDocument: "_design/_auth")
        let unchecked = try pull(into: app, as: nil)
        XCTAssertNil(unchecked.lastError)
        XCTAssertEqual(names.withLock { $0 }, ["a": "null", "b": "null"])
        XCTAssertEqual(app.documentCount, 3)
    }
}
