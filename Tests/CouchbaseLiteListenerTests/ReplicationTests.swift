import CBLTestSupport
import CouchbaseLite
import CouchbaseLiteListener
import Crypto
import Foundation
import SQLiteKit
import XCTest

/// Base of the replication tests: two managers replicating through a real listener on 127.0.0.1: the "server" is the
/// listener's manager, the "client" a second manager in its own directory.
class ReplicationTestCase: ListenerTestCase {
    var clientDirectory: URL!
    var clientManager: CBLManager!

    override func setUpWithError() throws {
        try super.setUpWithError()
        clientDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("cbl-client-\(UUID().uuidString)")
        clientManager = try CBLManager(directory: clientDirectory.path)
    }

    override func tearDownWithError() throws {
        clientManager?.close()
        if let clientDirectory { try? FileManager.default.removeItem(at: clientDirectory) }
        try super.tearDownWithError()
    }

    func remoteURL(_ db: String, user: String? = nil) -> URL {
        let credentials = user.map { "\($0)@" } ?? ""
        return URL(string: "http://\(credentials)127.0.0.1:\(listener.port)/\(db)")!
    }

    /// Starts a one-shot replication and waits (bounded) until it stops.
    func runToCompletion(_ replication: CBLReplication, timeout: TimeInterval = 30,
                         file: StaticString = #filePath, line: UInt = #line) {
        replication.tuning = fastTuning(replication.tuning)
        replication.start()
        let deadline = Date().addingTimeInterval(timeout)
        while replication.running && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        XCTAssertFalse(replication.running, "replication did not finish in \(timeout) s", file: file, line: line)
        XCTAssertEqual(replication.status, .stopped, file: file, line: line)
    }

    func fastTuning(_ tuning: ReplicationTuning) -> ReplicationTuning {
        var t = tuning
        t.requestRetryDelays = [.milliseconds(50), .milliseconds(100)]
        t.offlineRetryDelay = .milliseconds(100)
        t.longpollTimeout = .seconds(2)
        t.checkpointInterval = .zero
        return t
    }

    func waitUntil(_ timeout: TimeInterval = 15, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if condition() { return true }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return condition()
    }

    static func randomBytes(_ count: Int, seed: UInt64) -> Data {
        var state = seed
        var out = Data(count: count)
        for i in 0..<count {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            out[i] = UInt8(truncatingIfNeeded: state >> 33)
        }
        return out
    }

    /// Fills a database with the shapes a replication must carry.
    func populate(_ db: CBLDatabase) throws -> (small: Data, large: Data) {
        for i in 0..<40 {
            try db.document(withID: String(format: "doc%02d", i))!.putProperties(["i": i, "type": i % 2 == 0 ? "even" : "odd"])
        }
        let small = Data("hello, attachment".utf8)
        let large = Self.randomBytes(100_000, seed: 7)
        try db.document(withID: "doc01")!.update { rev in
            rev.setAttachmentNamed("note.txt", withContentType: "text/plain", content: small)
            return true
        }
        try db.document(withID: "doc02")!.update { rev in
            rev.setAttachmentNamed("blob.bin", withContentType: "application/octet-stream", content: large)
            return true
        }
        try db.document(withID: "doc03")!.delete()
        return (small, large)
    }

    func assertSameContent(_ a: CBLDatabase, _ b: CBLDatabase, file: StaticString = #filePath, line: UInt = #line) throws {
        let ids = (0..<40).map { String(format: "doc%02d", $0) }
        for id in ids {
            let da = a.document(withID: id), db = b.document(withID: id)
            XCTAssertEqual(da?.currentRevisionID, db?.currentRevisionID, "\(id)", file: file, line: line)
            XCTAssertEqual(da?.isDeleted, db?.isDeleted, "\(id)", file: file, line: line)
            let leavesA = Set(try da?.getLeafRevisions().compactMap(\.revisionID) ?? [])
            let leavesB = Set(try db?.getLeafRevisions().compactMap(\.revisionID) ?? [])
            XCTAssertEqual(leavesA, leavesB, "leaves of \(id)", file: file, line: line)
        }
        XCTAssertEqual(a.documentCount, b.documentCount, file: file, line: line)
    }

    // MARK: Helpers

    func sqliteInfo(_ db: CBLDatabase, key: String) throws -> String? {
        let path = db.internalURL.appendingPathComponent("db.sqlite3").path
        let connection = try SQLiteConnection(path: path, mode: .init(readOnly: true, create: false))
        return try connection.scalarString("SELECT value FROM info WHERE key=?", [.text(key)])
    }

    /// Deletes an `info` row as another process would have.
    func deleteSQLiteInfo(_ db: CBLDatabase, _ key: String) throws {
        let path = db.internalURL.appendingPathComponent("db.sqlite3").path
        let connection = try SQLiteConnection(path: path, mode: .init(readOnly: false, create: false))
        try connection.run("DELETE FROM info WHERE key=?", [.text(key)])
    }

    /// Writes `info` rows as another process (one killed mid-save) would have left them.
    func setSQLiteInfo(_ db: CBLDatabase, _ rows: [String: String]) throws {
        let path = db.internalURL.appendingPathComponent("db.sqlite3").path
        let connection = try SQLiteConnection(path: path, mode: .init(readOnly: false, create: false))
        for (key, value) in rows {
            try connection.run("INSERT OR REPLACE INTO info (key, value) VALUES (?, ?)", [.text(key), .text(value)])
        }
    }
}

/// Push and pull between two managers through the listener.
final class ReplicationTests: ReplicationTestCase {
    // MARK: One-shot push and pull

    func testPushCreatesTargetThenPullReproducesEverything() throws {
        let local = try clientManager.databaseNamed("local")
        let (small, large) = try populate(local)

        let push = local.createPushReplication(remoteURL("target"))
        push.createTarget = true
        runToCompletion(push)
        XCTAssertNil(push.lastError)
        let target = try manager.existingDatabaseNamed("target")
        try assertSameContent(local, target)
        XCTAssertEqual(target.existingDocument(withID: "doc01")?.currentRevision?.attachmentNamed("note.txt")?.content, small)
        XCTAssertEqual(target.existingDocument(withID: "doc02")?.currentRevision?.attachmentNamed("blob.bin")?.content, large)
        XCTAssertEqual(target.document(withID: "doc03")?.isDeleted, true)
        XCTAssertEqual(target.document(withID: "doc03")?.currentRevisionID, local.document(withID: "doc03")?.currentRevisionID)
        // 40 docs: one revision each is a leaf (doc01/doc02 at gen 2, doc03 a tombstone).
        XCTAssertEqual(push.changesCount, 40)
        XCTAssertEqual(push.completedChangesCount, 40)

        let copy = try clientManager.databaseNamed("copy")
        let pull = copy.createPullReplication(remoteURL("target"))
        runToCompletion(pull)
        XCTAssertNil(pull.lastError)
        try assertSameContent(local, copy)
        XCTAssertEqual(copy.existingDocument(withID: "doc02")?.currentRevision?.attachmentNamed("blob.bin")?.content, large)
        XCTAssertEqual(copy.existingDocument(withID: "doc02")?.currentRevision?.attachmentNamed("blob.bin")?.metadata["digest"] as? String,
                       local.existingDocument(withID: "doc02")?.currentRevision?.attachmentNamed("blob.bin")?.metadata["digest"] as? String)
        // Revision histories arrive with the revisions.
        XCTAssertEqual(try copy.existingDocument(withID: "doc01")?.getRevisionHistory().compactMap(\.revisionID),
                       try local.existingDocument(withID: "doc01")?.getRevisionHistory().compactMap(\.revisionID))
        // Pulled revisions are recorded as coming from the remote.
        XCTAssertEqual(pull.completedChangesCount, 40)
    }

    func testPushToMissingDatabaseStopsWith404() throws {
        let local = try clientManager.databaseNamed("local")
        try local.document(withID: "a")!.putProperties(["x": 1])
        let push = local.createPushReplication(remoteURL("nowhere"))
        runToCompletion(push)
        XCTAssertEqual((push.lastError as NSError?)?.code, 404)
        XCTAssertFalse(manager.databaseExistsNamed("nowhere"))
    }

    // MARK: Conflicts

    func testConflictsMadeOnBothSidesSurviveWithTheSameWinner() throws {
        let local = try clientManager.databaseNamed("local")
        let server = try createDB("shared")
        try local.document(withID: "c")!.putProperties(["side": "local", "n": 1])
        try server.document(withID: "c")!.putProperties(["side": "server"])
        try local.document(withID: "onlyLocal")!.putProperties(["x": 1])
        try server.document(withID: "onlyServer")!.putProperties(["x": 2])

        runToCompletion(local.createPushReplication(remoteURL("shared")))
        runToCompletion(local.createPullReplication(remoteURL("shared")))

        for db in [local, server] {
            let doc = try XCTUnwrap(db.existingDocument(withID: "c"))
            XCTAssertEqual(try doc.getLeafRevisions().count, 2, "both branches in \(db.name)")
            XCTAssertEqual(try doc.getConflictingRevisions().count, 2)
            XCTAssertNotNil(db.existingDocument(withID: "onlyLocal"))
            XCTAssertNotNil(db.existingDocument(withID: "onlyServer"))
        }
        XCTAssertEqual(local.existingDocument(withID: "c")?.currentRevisionID,
                       server.existingDocument(withID: "c")?.currentRevisionID)
        XCTAssertEqual(local.existingDocument(withID: "c")?["side"] as? String,
                       server.existingDocument(withID: "c")?["side"] as? String)
    }

    // MARK: Checkpoints

    func testCheckpointIDFollowsThe1xRuleAndIsStoredOnBothSides() throws {
        let local = try clientManager.databaseNamed("local")
        for i in 0..<10 { try local.document(withID: "d\(i)")!.putProperties(["i": i]) }
        let url = remoteURL("cp")
        _ = try createDB("cp")
        let push = local.createPushReplication(url)
        runToCompletion(push)

        // spec 9.1: SHA-1 of the canonical JSON of the replication's identity (iOS rule).
        let canonical = "{\"continuous\":false,\"localUUID\":\"\(local.privateUUID!)\",\"push\":true,\"remoteURL\":\"\(url.absoluteString)\"}"
        let expected = Insecure.SHA1.hash(data: Data(canonical.utf8)).map { String(format: "%02x", $0) }.joined()
        let remote = try get("/cp/_local/\(expected)")
        expect(remote, 200)
        XCTAssertEqual(remote.dict["lastSequence"] as? String, String(local.lastSequenceNumber))
        // The local half is the info row checkpoint/<id> (read through SQLite, as 1.x would).
        let info = try sqliteInfo(local, key: "checkpoint/\(expected)")
        XCTAssertEqual(info, String(local.lastSequenceNumber))
    }

    func testAProcessKilledBetweenTheRemoteAndLocalCheckpointSavesResumes() throws {
        let local = try clientManager.databaseNamed("local")
        for i in 0..<12 { try local.document(withID: "d\(i)")!.putProperties(["i": i]) }
        _ = try createDB("half")
        let url = remoteURL("half")
        runToCompletion(local.createPushReplication(url))
        let canonical = "{\"continuous\":false,\"localUUID\":\"\(local.privateUUID!)\",\"push\":true,\"remoteURL\":\"\(url.absoluteString)\"}"
        let id = Insecure.SHA1.hash(data: Data(canonical.utf8)).map { String(format: "%02x", $0) }.joined()
        let finished = String(local.lastSequenceNumber)
        XCTAssertEqual(try sqliteInfo(local, key: "checkpoint/\(id)"), finished)
        XCTAssertNil(try sqliteInfo(local, key: "checkpoint/\(id)/pending"), "cleared once both sides agree")

        // What a kill between the two saves leaves: the remote `_local` holds the new sequence,
        // the local row the old one, and the pending row (written before the PUT) the new one.
        try setSQLiteInfo(local, ["checkpoint/\(id)": "3", "checkpoint/\(id)/pending": finished])
        let again = local.createPushReplication(url)
        runToCompletion(again)
        XCTAssertNil(again.lastError)
        XCTAssertEqual(again.changesCount, 0, "resumed from the pending checkpoint the remote holds")

        // The same when the very first save was cut: no local row yet, only the pending one.
        try deleteSQLiteInfo(local, "checkpoint/\(id)")
        try setSQLiteInfo(local, ["checkpoint/\(id)/pending": finished])
        let first = local.createPushReplication(url)
        runToCompletion(first)
        XCTAssertEqual(first.changesCount, 0, "resumed from the first pending checkpoint the remote holds")
        XCTAssertEqual(try sqliteInfo(local, key: "checkpoint/\(id)"), finished)

        // A pending row the remote does not hold is ignored: 1.x's rule (start over) applies.
        try setSQLiteInfo(local, ["checkpoint/\(id)": "3", "checkpoint/\(id)/pending": "7"])
        let over = local.createPushReplication(url)
        runToCompletion(over)
        XCTAssertEqual(over.changesCount, 12, "a mismatch starts over")
    }

    func testSecondRunTransfersOnlyWhatIsNew() throws {
        let local = try clientManager.databaseNamed("local")
        _ = try createDB("inc")
        for i in 0..<20 { try local.document(withID: "d\(i)")!.putProperties(["i": i]) }
        let first = local.createPushReplication(remoteURL("inc"))
        runToCompletion(first)
        XCTAssertEqual(first.completedChangesCount, 20)

        let again = local.createPushReplication(remoteURL("inc"))
        runToCompletion(again)
        XCTAssertEqual(again.changesCount, 0, "nothing new since the checkpoint")

        for i in 20..<25 { try local.document(withID: "d\(i)")!.putProperties(["i": i]) }
        let third = local.createPushReplication(remoteURL("inc"))
        runToCompletion(third)
        XCTAssertEqual(third.changesCount, 5)
        XCTAssertEqual(try manager.existingDatabaseNamed("inc").documentCount, 25)

        // Pull side: same rule against the remote's sequences.
        let mirror = try clientManager.databaseNamed("mirror")
        let pull1 = mirror.createPullReplication(remoteURL("inc"))
        runToCompletion(pull1)
        XCTAssertEqual(mirror.documentCount, 25)
        try manager.existingDatabaseNamed("inc").document(withID: "new")!.putProperties(["n": 1])
        let pull2 = mirror.createPullReplication(remoteURL("inc"))
        runToCompletion(pull2)
        XCTAssertEqual(pull2.changesCount, 1)
        XCTAssertEqual(mirror.documentCount, 26)
    }

    func testResetCheckpointStartsOver() throws {
        let local = try clientManager.databaseNamed("local")
        _ = try createDB("reset")
        for i in 0..<5 { try local.document(withID: "d\(i)")!.putProperties(["i": i]) }
        runToCompletion(local.createPushReplication(remoteURL("reset")))
        let again = local.createPushReplication(remoteURL("reset"))
        again.resetCheckpoint()
        runToCompletion(again)
        XCTAssertEqual(again.changesCount, 5, "all local changes are looked at again")
        XCTAssertEqual(again.completedChangesCount, 5)
    }

    // MARK: Continuous

    func testContinuousPullGoesIdleAndFollowsNewChanges() throws {
        let server = try createDB("live")
        try server.document(withID: "first")!.putProperties(["n": 1])
        let local = try clientManager.databaseNamed("local")
        let pull = local.createPullReplication(remoteURL("live"))
        pull.continuous = true
        pull.tuning = fastTuning(pull.tuning)
        let notified = Counter()
        let observer = NotificationCenter.default.addObserver(forName: .cblReplicationChange, object: pull, queue: nil) { _ in
            notified.increment()
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        pull.start()
        XCTAssertTrue(waitUntil { pull.status == .idle && local.existingDocument(withID: "first") != nil })
        try putDoc("/live/second", ["n": 2])
        XCTAssertTrue(waitUntil { local.existingDocument(withID: "second") != nil }, "a change made later arrives")
        XCTAssertTrue(pull.running)
        pull.stop()
        XCTAssertTrue(waitUntil { !pull.running && pull.status == .stopped })
        XCTAssertGreaterThan(notified.value, 1)
    }

    func testContinuousPushFollowsLocalChangesAndCloseStopsIt() throws {
        _ = try createDB("mirror")
        let local = try clientManager.databaseNamed("local")
        let push = local.createPushReplication(remoteURL("mirror"))
        push.continuous = true
        push.tuning = fastTuning(push.tuning)
        push.start()
        XCTAssertTrue(waitUntil { push.status == .idle })
        XCTAssertEqual(local.allReplications.count, 1)
        try local.document(withID: "late")!.putProperties(["n": 1])
        XCTAssertTrue(waitUntil { (try? self.manager.existingDatabaseNamed("mirror").existingDocument(withID: "late")) != nil })
        try local.close()
        XCTAssertTrue(waitUntil(5) { !push.running })
        XCTAssertEqual(push.status, .stopped)
    }

    // MARK: Filters

    func testPushFilterAndDocumentIDs() throws {
        let local = try clientManager.databaseNamed("local")
        for i in 0..<10 { try local.document(withID: "d\(i)")!.putProperties(["i": i, "even": i % 2 == 0]) }
        local.setFilterNamed("evens") { rev, params in
            (rev["even"] as? Bool) == true && (params?["min"] as? Int).map { (rev["i"] as? Int ?? 0) >= $0 } ?? true
        }
        _ = try createDB("filtered")
        let push = local.createPushReplication(remoteURL("filtered"))
        push.filter = "evens"
        push.filterParams = ["min": 4]
        runToCompletion(push)
        let server = try manager.existingDatabaseNamed("filtered")
        XCTAssertEqual(Set((0..<10).filter { server.existingDocument(withID: "d\($0)") != nil }), [4, 6, 8])

        let mirror = try clientManager.databaseNamed("mirror")
        let pull = mirror.createPullReplication(remoteURL("filtered"))
        pull.documentIDs = ["d6"]
        runToCompletion(pull)
        XCTAssertNotNil(mirror.existingDocument(withID: "d6"))
        XCTAssertEqual(mirror.documentCount, 1)
    }

    // MARK: Authentication

    func testAuthenticationBasicURLCredentialsAndSessionCookie() throws {
        _ = try createDB("private")
        try manager.existingDatabaseNamed("private").document(withID: "secret")!.putProperties(["x": 1])
        listener.setPasswords(["alice": "wonder"])
        let local = try clientManager.databaseNamed("local")

        let anonymous = local.createPullReplication(remoteURL("private"))
        runToCompletion(anonymous)
        XCTAssertEqual((anonymous.lastError as NSError?)?.code, 401)
        XCTAssertNil(local.existingDocument(withID: "secret"))

        let wrong = local.createPullReplication(remoteURL("private"))
        wrong.authenticator = CBLAuthenticator.basicAuthenticator(withName: "alice", password: "nope")
        runToCompletion(wrong)
        XCTAssertEqual((wrong.lastError as NSError?)?.code, 401)

        let basic = local.createPullReplication(remoteURL("private"))
        basic.authenticator = CBLAuthenticator.basicAuthenticator(withName: "alice", password: "wonder")
        runToCompletion(basic)
        XCTAssertNil(basic.lastError)
        XCTAssertNotNil(local.existingDocument(withID: "secret"))

        let viaURL = try clientManager.databaseNamed("viaurl").createPullReplication(remoteURL("private", user: "alice:wonder"))
        runToCompletion(viaURL)
        XCTAssertNil(viaURL.lastError)
        XCTAssertNotNil(viaURL.localDatabase.existingDocument(withID: "secret"))

        let session = try clientManager.databaseNamed("viasession").createPullReplication(remoteURL("private"))
        session.authenticator = CBLAuthenticator.sessionCookieAuthenticator(withName: "alice", password: "wonder")
        runToCompletion(session)
        XCTAssertNil(session.lastError)
        XCTAssertNotNil(session.localDatabase.existingDocument(withID: "secret"))
    }

    func testSessionCookieSetByTheApp() throws {
        _ = try createDB("private")
        try manager.existingDatabaseNamed("private").document(withID: "secret")!.putProperties(["x": 1])
        listener.setPasswords(["bob": "builder"])
        // Log in as an app would (its own HTTP call), then hand the cookie to the replication.
        let login = try request("POST", "/_session", json: ["name": "bob", "password": "builder"])
        expect(login, 200)
        let cookie = try XCTUnwrap(login.header("set-cookie")?.split(separator: ";").first)
        let parts = cookie.split(separator: "=", maxSplits: 1).map(String.init)
        let local = try clientManager.databaseNamed("local")
        let pull = local.createPullReplication(remoteURL("private"))
        pull.setCookieNamed(parts[0], withValue: parts[1], path: "/", expirationDate: nil, secure: false)
        runToCompletion(pull)
        XCTAssertNil(pull.lastError)
        XCTAssertNotNil(local.existingDocument(withID: "secret"))
    }

    // MARK: TLS

    func testTLSToAListenerWithAPinnedSelfSignedIdentity() throws {
        let secure = try startSecureListener(label: "Replication Test")
        defer { secure.stop() }
        let pem = try XCTUnwrap(secure.sslCertificatePEM)
        _ = try createDB("tls")
        let url = URL(string: "https://127.0.0.1:\(secure.port)/tls")!
        let local = try clientManager.databaseNamed("local")
        try local.document(withID: "over-tls")!.putProperties(["secure": true])

        let untrusted = local.createPushReplication(url)
        runToCompletion(untrusted)
        XCTAssertNotNil(untrusted.lastError, "an unknown self-signed certificate is refused")
        XCTAssertNil(try manager.existingDatabaseNamed("tls").existingDocument(withID: "over-tls"))

        let pinned = local.createPushReplication(url)
        try pinned.setAnchorCertificates(pem: [pem], onlyThese: true)
        runToCompletion(pinned)
        XCTAssertNil(pinned.lastError)
        XCTAssertEqual(try manager.existingDatabaseNamed("tls").existingDocument(withID: "over-tls")?["secure"] as? Bool, true)

        XCTAssertThrowsError(try pinned.setAnchorCertificates(pem: ["not a certificate"]))
    }

    // MARK: Attachments

    func testGzipEncodedAttachmentsArriveDecodedAndIntact() throws {
        let server = try createDB("gz")
        let original = Data(String(repeating: "compressible text ", count: 500).utf8)
        // A revision whose attachment is stored gzip-encoded, as 1.x stores `encoding: gzip`.
        let gzipped = try gzip(original)
        let put = try request("PUT", "/gz/zipped?new_edits=false", json: [
            "_id": "zipped", "_rev": "1-abc",
            "_attachments": ["t.txt": ["content_type": "text/plain", "encoding": "gzip",
                                       "data": gzipped.base64EncodedString()]],
        ])
        expect(put, 201)
        XCTAssertEqual(server.existingDocument(withID: "zipped")?.currentRevision?.attachmentNamed("t.txt")?.content, original)

        let local = try clientManager.databaseNamed("local")
        runToCompletion(local.createPullReplication(remoteURL("gz")))
        XCTAssertEqual(local.existingDocument(withID: "zipped")?.currentRevision?.attachmentNamed("t.txt")?.content, original)
        runToCompletion(local.createPushReplication(remoteURL("gz-copy")).configured { $0.createTarget = true })
        XCTAssertEqual(try manager.existingDatabaseNamed("gz-copy").existingDocument(withID: "zipped")?
            .currentRevision?.attachmentNamed("t.txt")?.content, original)
    }

    func testAttachmentEditsSendOnlyWhatTheRemoteLacks() throws {
        let local = try clientManager.databaseNamed("local")
        let big = Self.randomBytes(300_000, seed: 3)
        let doc = local.document(withID: "album")!
        try doc.update { rev in
            rev["title"] = "v1"
            rev.setAttachmentNamed("photo.jpg", withContentType: "image/jpeg", content: big)
            return true
        }
        _ = try createDB("album")
        runToCompletion(local.createPushReplication(remoteURL("album")))
        // Edit only the JSON: the next push must not send the 300 KB again (a stub with revpos).
        try doc.update { rev in rev["title"] = "v2"; return true }
        runToCompletion(local.createPushReplication(remoteURL("album")))
        let server = try manager.existingDatabaseNamed("album").existingDocument(withID: "album")
        XCTAssertEqual(server?["title"] as? String, "v2")
        XCTAssertEqual(server?.currentRevision?.attachmentNamed("photo.jpg")?.content, big)
        XCTAssertEqual(server?.currentRevision?.attachmentNamed("photo.jpg")?.revpos, 1)
    }

    // MARK: Observation and pending documents

    func testPendingDocumentsObserversAndStream() throws {
        let local = try clientManager.databaseNamed("local")
        for i in 0..<5 { try local.document(withID: "p\(i)")!.putProperties(["i": i]) }
        _ = try createDB("pending")
        let push = local.createPushReplication(remoteURL("pending"))
        XCTAssertEqual(push.pendingDocumentIDs, Set((0..<5).map { "p\($0)" }))
        XCTAssertTrue(push.isDocumentPending(local.existingDocument(withID: "p3")!))
        XCTAssertNil(local.createPullReplication(remoteURL("pending")).pendingDocumentIDs)

        let observer = StatusObserver()
        push.addObserver(observer, forKeyPath: "status", options: [.new], context: nil)
        let stream = push.changes()
        let collected = Collected()
        let reader = Task {
            for await change in stream { collected.append(change.status) }
        }
        runToCompletion(push)
        XCTAssertEqual(push.pendingDocumentIDs, [])
        XCTAssertTrue(waitUntil { collected.values.last == .stopped })
        reader.cancel()
        XCTAssertTrue(waitUntil { observer.statuses.contains(CBLReplicationStatus.stopped.rawValue) })
        XCTAssertTrue(collected.values.contains(.active))
        push.removeObserver(observer, forKeyPath: "status")
    }

    // MARK: Validation

    func testRejectedDocumentsAreSkippedAndReportedNotRetried() throws {
        // Pull: the local validation rejects some revisions; the rest arrive.
        let server = try createDB("v")
        for i in 0..<6 { try server.document(withID: "v\(i)")!.putProperties(["i": i, "bad": i % 3 == 0]) }
        let local = try clientManager.databaseNamed("local")
        local.setValidationNamed("no-bad") { rev, context in
            if rev["bad"] as? Bool == true { context.reject(withMessage: "bad documents are not welcome") }
        }
        let pull = local.createPullReplication(remoteURL("v"))
        runToCompletion(pull)
        XCTAssertEqual((pull.lastError as NSError?)?.code, 403, "the rejection is reported")
        XCTAssertEqual(local.documentCount, 4)
        XCTAssertNil(local.existingDocument(withID: "v0"))
        XCTAssertEqual(pull.completedChangesCount, 6, "rejected revisions count as handled")

        // Push: the remote's validation rejects some; the push completes, and the next run does
        // not send them again.
        local.setValidationNamed("no-bad", as: nil)
        for i in 0..<4 { try local.document(withID: "p\(i)")!.putProperties(["i": i, "secret": i < 2]) }
        let target = try createDB("guarded")
        target.setValidationNamed("no-secrets") { rev, context in
            if rev["secret"] as? Bool == true { context.reject(withMessage: "no secrets here") }
        }
        let push = local.createPushReplication(remoteURL("guarded"))
        push.documentIDs = ["p0", "p1", "p2", "p3"]
        runToCompletion(push)
        XCTAssertEqual((push.lastError as NSError?)?.code, 403)
        XCTAssertEqual(target.documentCount, 2)
        XCTAssertNotNil(target.existingDocument(withID: "p3"))
        let again = local.createPushReplication(remoteURL("guarded"))
        again.documentIDs = ["p0", "p1", "p2", "p3"]
        runToCompletion(again)
        XCTAssertEqual(again.changesCount, 0, "rejected documents are not retried forever")
    }

    // MARK: Server-side filters and installed databases

    func testChannelsBecomeTheSyncGatewayByChannelFilter() throws {
        let server = try createDB("channels")
        // Our listener runs Swift filters by name; this one does what Sync Gateway's does.
        server.setFilterNamed("sync_gateway/bychannel") { rev, params in
            let wanted = Set(((params?["channels"] as? String) ?? "").split(separator: ",").map(String.init))
            return !(Set(rev["channels"] as? [String] ?? []).isDisjoint(with: wanted))
        }
        try server.document(withID: "a1")!.putProperties(["channels": ["team-a"]])
        try server.document(withID: "b1")!.putProperties(["channels": ["team-b"]])
        try server.document(withID: "ab")!.putProperties(["channels": ["team-a", "team-b"]])
        try server.document(withID: "c1")!.putProperties(["channels": ["team-c"]])
        let local = try clientManager.databaseNamed("local")
        let pull = local.createPullReplication(remoteURL("channels"))
        pull.channels = ["team-a", "team-c"]
        runToCompletion(pull)
        XCTAssertNil(pull.lastError)
        XCTAssertEqual(Set(["a1", "b1", "ab", "c1"].filter { local.existingDocument(withID: $0) != nil }), ["a1", "ab", "c1"])
    }

    func testAnInstalledCopyResumesFromTheOriginalsCheckpoint() throws {
        let original = try clientManager.databaseNamed("original")
        for i in 0..<30 { try original.document(withID: "d\(i)")!.putProperties(["i": i]) }
        _ = try createDB("shared")
        runToCompletion(original.createPushReplication(remoteURL("shared")))
        try original.close()
        // Install a copy of the folder as another database (a new private UUID; the old one is
        // kept in _local/CBL_LocalCheckpoint, spec 1.6).
        let folder = clientDirectory.appendingPathComponent("original.cblite2").path
        try clientManager.replaceDatabaseNamed("installed", withDatabaseDir: folder)
        let installed = try clientManager.existingDatabaseNamed("installed")
        XCTAssertNotEqual(installed.privateUUID, try clientManager.existingDatabaseNamed("original").privateUUID)
        try installed.document(withID: "new")!.putProperties(["fresh": true])
        let push = installed.createPushReplication(remoteURL("shared"))
        runToCompletion(push)
        XCTAssertNil(push.lastError)
        XCTAssertEqual(push.changesCount, 1, "only the change made after the copy is looked at")
        XCTAssertEqual(try manager.existingDatabaseNamed("shared").documentCount, 31)
    }

    func testSuspendResumeAndRestart() throws {
        let server = try createDB("pausable")
        let local = try clientManager.databaseNamed("local")
        let pull = local.createPullReplication(remoteURL("pausable"))
        pull.continuous = true
        pull.tuning = fastTuning(pull.tuning)
        pull.start()
        defer { pull.stop() }
        XCTAssertTrue(waitUntil { pull.status == .idle })
        pull.suspended = true
        XCTAssertTrue(waitUntil { !pull.running && pull.status == .stopped })
        XCTAssertEqual(local.allReplications.count, 0)
        try server.document(withID: "while-suspended")!.putProperties(["n": 1])
        Thread.sleep(forTimeInterval: 0.2)
        XCTAssertNil(local.existingDocument(withID: "while-suspended"))
        pull.suspended = false
        XCTAssertTrue(waitUntil { local.existingDocument(withID: "while-suspended") != nil })
        XCTAssertTrue(pull.running)
        pull.restart()
        XCTAssertTrue(waitUntil { pull.status == .idle })
        XCTAssertEqual(local.allReplications.count, 1, "a restarted replication stays registered")
        try server.document(withID: "after-restart")!.putProperties(["n": 2])
        XCTAssertTrue(waitUntil { local.existingDocument(withID: "after-restart") != nil })
    }
}

final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func increment() { lock.lock(); count += 1; lock.unlock() }
    var value: Int { lock.lock(); defer { lock.unlock() }; return count }
}

final class StatusObserver: CBLKeyValueObserving, @unchecked Sendable {
    private let lock = NSLock()
    private var seen: [Int32] = []
    func observeValue(forKeyPath keyPath: String?, of object: Any?, change: [NSKeyValueChangeKey: Any]?,
                      context: UnsafeMutableRawPointer?) {
        lock.lock(); defer { lock.unlock() }
        if let status = change?[.newKey] as? Int32 { seen.append(status) }
    }
    var statuses: [Int32] { lock.lock(); defer { lock.unlock() }; return seen }
}

final class Collected: @unchecked Sendable {
    private let lock = NSLock()
    private var list: [CBLReplicationStatus] = []
    func append(_ s: CBLReplicationStatus) { lock.lock(); list.append(s); lock.unlock() }
    var values: [CBLReplicationStatus] { lock.lock(); defer { lock.unlock() }; return list }
}

extension CBLReplication {
    func configured(_ body: (CBLReplication) -> Void) -> CBLReplication {
        body(self)
        return self
    }
}

/// gzip (RFC 1952) through the system's gzip tool, so the test does not use the code under test.
func gzip(_ data: Data) throws -> Data {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["gzip", "-c"]
    let input = Pipe(), output = Pipe()
    process.standardInput = input
    process.standardOutput = output
    try process.run()
    input.fileHandleForWriting.write(data)
    try input.fileHandleForWriting.close()
    let result = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return result
}

/// `POST /_replicate` and `GET /_active_tasks`, driven over HTTP as CouchDB-style tools do.
final class ListenerReplicateTests: ReplicationTestCase {
    /// A second listener (the "remote" of replications the first one runs).
    var remoteListener: CBLListener!
    var remoteManager: CBLManager!

    override func setUpWithError() throws {
        try super.setUpWithError()
        remoteManager = clientManager
        remoteListener = CBLListener(manager: remoteManager, port: 0)
        remoteListener.bindAddress = "127.0.0.1"
        try remoteListener.start()
    }

    override func tearDownWithError() throws {
        remoteListener?.stop()
        try super.tearDownWithError()
    }

    var remoteBase: String { "http://127.0.0.1:\(remoteListener.port)" }

    func testOneShotPushAndPullWithCredentialsInTheURL() throws {
        let local = try createDB("here")
        for i in 0..<12 { try local.document(withID: "r\(i)")!.putProperties(["i": i]) }
        remoteListener.setPasswords(["u": "p"])
        let push = try request("POST", "/_replicate", json: [
            "source": "here", "target": "http://u:p@127.0.0.1:\(remoteListener.port)/there", "create_target": true,
        ])
        expect(push, 200)
        XCTAssertEqual(push.dict["ok"] as? Bool, true)
        XCTAssertNotNil(push.dict["session_id"] as? String)
        XCTAssertEqual(try remoteManager.existingDatabaseNamed("there").documentCount, 12)

        try remoteManager.existingDatabaseNamed("there").document(withID: "back")!.putProperties(["x": 1])
        let pull = try request("POST", "/_replicate", json: [
            "source": ["url": "\(remoteBase)/there", "auth": ["basic": ["username": "u", "password": "p"]]],
            "target": "here", "doc_ids": ["back"],
        ])
        expect(pull, 200)
        XCTAssertNotNil(local.existingDocument(withID: "back"))
        XCTAssertEqual(local.documentCount, 13)

        let denied = try request("POST", "/_replicate", json: ["source": "here", "target": "\(remoteBase)/there"])
        expectError(denied, 401, "unauthorized")
        // Remote → remote runs as a service (ListenerRelayReplicationTests): the remote's refusal is the answer.
        // (A database that exists: a missing one is 404 for anyone, as in CouchDB.)
        expectError(try request("POST", "/_replicate", json: ["source": "\(remoteBase)/there", "target": "\(remoteBase)/y"]),
                    401, "unauthorized")
    }

    func testContinuousReplicationIsListedAndCancelled() throws {
        _ = try createDB("live")
        _ = try remoteManager.databaseNamed("feed")
        let start = try request("POST", "/_replicate", json: [
            "source": "\(remoteBase)/feed", "target": "live", "continuous": true,
        ])
        expect(start, 202)
        let session = try XCTUnwrap(start.dict["session_id"] as? String)
        XCTAssertTrue(waitUntil {
            let tasks = (try? self.get("/_active_tasks").array) ?? []
            return (tasks.first as? [String: Any])?["status"] as? String == "Idle"
        })
        let task = try XCTUnwrap(try get("/_active_tasks").array.first as? [String: Any])
        XCTAssertEqual(task["type"] as? String, "Replication")
        XCTAssertEqual(task["task"] as? String, session)
        XCTAssertEqual(task["source"] as? String, "\(remoteBase)/feed")
        XCTAssertEqual(task["target"] as? String, "live")
        XCTAssertEqual(task["continuous"] as? Bool, true)

        try remoteManager.existingDatabaseNamed("feed").document(withID: "pushed-later")!.putProperties(["n": 1])
        XCTAssertTrue(waitUntil { (try? self.manager.existingDatabaseNamed("live").existingDocument(withID: "pushed-later")) != nil })

        let cancel = try request("POST", "/_replicate", json: [
            "source": "\(remoteBase)/feed", "target": "live", "continuous": true, "cancel": true,
        ])
        expect(cancel, 200)
        XCTAssertTrue(waitUntil { ((try? self.get("/_active_tasks").array) ?? [1]).isEmpty })
        expectError(try request("POST", "/_replicate", json: [
            "source": "\(remoteBase)/feed", "target": "live", "continuous": true, "cancel": true,
        ]), 404, "not_found")
    }
}

/// `cbl replicate` against a listener on 127.0.0.1.
final class ReplicateCommandTests: ReplicationTestCase {
    func runCBL(_ arguments: [String]) throws -> (Int32, String) {
        guard let cbl = BuiltExecutable.find("cbl") else { throw XCTSkip("cbl not built (swift build --build-tests)") }
        let run = try runChildProcess(cbl, arguments, timeout: 60)
        XCTAssertFalse(run.timedOut, "cbl replicate did not finish")
        return (run.status, run.output)
    }

    func testPullIntoANewFileThenPushBack() throws {
        let server = try createDB("source")
        for i in 0..<25 { try server.document(withID: "c\(i)")!.putProperties(["i": i]) }
        let folder = clientDirectory.appendingPathComponent("cli")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let path = folder.appendingPathComponent("copy.cblite2").path
        let (status, output) = try runCBL(["replicate", remoteURL("source").absoluteString, path, "--create-target"])
        XCTAssertEqual(status, 0, output)
        XCTAssertTrue(output.contains("25/25"), output)
        let manager = try CBLManager(directory: folder.path)
        XCTAssertEqual(try manager.existingDatabaseNamed("copy").documentCount, 25)
        manager.close()

        let (pushStatus, pushOutput) = try runCBL(["replicate", path, remoteURL("backup").absoluteString, "--create-target"])
        XCTAssertEqual(pushStatus, 0, pushOutput)
        XCTAssertEqual(try self.manager.existingDatabaseNamed("backup").documentCount, 25)

        let (failed, message) = try runCBL(["replicate", remoteURL("missing").absoluteString, path])
        XCTAssertEqual(failed, 1)
        XCTAssertTrue(message.contains("404"), message)
        let (usage, _) = try runCBL(["replicate", path, path])
        XCTAssertEqual(usage, 2)
    }

    /// `--filter NAME --filter-param KEY=VALUE` reach the server's filter function on a pull;
    /// a push filter (an app's function) is refused with exit status 2.
    func testPullWithServerSideFilterAndParameters() throws {
        let server = try createDB("shared")
        server.setFilterNamed("app/by_owner") { revision, params in
            (revision["owner"] as? String) == (params?["owner"] as? String)
        }
        for (id, owner) in [("t1", "alice"), ("t2", "bob"), ("t3", "alice")] {
            try server.document(withID: id)!.putProperties(["owner": owner])
        }
        let folder = clientDirectory.appendingPathComponent("cli")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let path = folder.appendingPathComponent("mine.cblite2").path
        let (status, output) = try runCBL(["replicate", remoteURL("shared").absoluteString, path, "--create-target",
                                           "--filter", "app/by_owner", "--filter-param", "owner=alice"])
        XCTAssertEqual(status, 0, output)
        let manager = try CBLManager(directory: folder.path)
        let local = try manager.existingDatabaseNamed("mine")
        XCTAssertEqual(local.documentCount, 2)
        XCTAssertNotNil(local.existingDocument(withID: "t1"))
        XCTAssertNil(local.existingDocument(withID: "t2"))
        manager.close()

        let (push, pushMessage) = try runCBL(["replicate", path, remoteURL("shared").absoluteString, "--filter", "app/by_owner"])
        XCTAssertEqual(push, 2, pushMessage)
        XCTAssertTrue(pushMessage.hasPrefix("cbl replicate: error: --filter applies to a pull"), pushMessage)
        let (noFilter, noFilterMessage) = try runCBL(["replicate", remoteURL("shared").absoluteString, path, "--filter-param", "a=b"])
        XCTAssertEqual(noFilter, 2, noFilterMessage)
        XCTAssertTrue(noFilterMessage.contains("--filter-param needs --filter"), noFilterMessage)
    }
}
