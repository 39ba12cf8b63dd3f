import CouchbaseLite
import CouchbaseLiteListener
import Foundation
import XCTest

/// Issue 34, items 1 and 2: sequences as CouchDB 2+ writes them (and 1.x's numbers on request),
/// and the configuration settings the listener honours, against a real listener on 127.0.0.1,
/// with CouchDB 3.4's answers.
final class ListenerSequencesAndConfigTests: ListenerTestCase {
    private var clientDirectory: URL!

    override func tearDownWithError() throws {
        if let clientDirectory { try? FileManager.default.removeItem(at: clientDirectory) }
        try super.tearDownWithError()
    }

    private func setConfig(_ section: String, _ key: String, _ value: String) throws {
        expect(try request("PUT", "/_node/_local/_config/\(section)/\(key)", json: value), 200)
    }

    // MARK: Sequences

    /// CouchDB 2+ sends sequences as strings whose number comes first (changes_async's helpers read
    /// `"1-"`); `since` takes them back, and numbers, quoted or not; anything else is 400.
    func testSequencesAreCouchDBStringsAndBothFormsAreAccepted() throws {
        try createDB()
        for id in ["a", "b", "c"] { try putDoc("/db/\(id)", ["v": id]) }
        let info = try get("/db").dict
        XCTAssertEqual(info["update_seq"] as? String, "3-cbl")
        XCTAssertEqual(info["committed_update_seq"] as? String, "3-cbl")

        let feed = try get("/db/_changes")
        XCTAssertEqual((feed.dict["results"] as? [[String: Any]])?.map { $0["seq"] as? String }, ["1-cbl", "2-cbl", "3-cbl"])
        XCTAssertEqual(feed.dict["last_seq"] as? String, "3-cbl")
        for since in ["1-cbl", "1", "%221-cbl%22", "1-g1AAAAB", "1-"] {
            let after = try get("/db/_changes?since=\(since)")
            XCTAssertEqual((after.dict["results"] as? [[String: Any]])?.map { $0["id"] as? String }, ["b", "c"], since)
        }
        let posted = try request("POST", "/db/_changes", json: ["since": 2])
        XCTAssertEqual((posted.dict["results"] as? [[String: Any]])?.map { $0["id"] as? String }, ["c"])
        let postedString = try request("POST", "/db/_changes", json: ["since": "2-cbl"])
        XCTAssertEqual((postedString.dict["results"] as? [[String: Any]])?.map { $0["id"] as? String }, ["c"])
        XCTAssertEqual(try get("/db/_changes?since=now").dict["last_seq"] as? String, "3-cbl")
        for bad in ["abc", "-1", "x-cbl", "1.5"] {
            expectError(try get("/db/_changes?since=\(bad)"), 400, "bad_request", "Malformed sequence supplied in 'since' parameter.")
        }
        // Views and _all_docs with update_seq=true, as CouchDB 3.4 answers them.
        XCTAssertEqual(try get("/db/_all_docs?update_seq=true").dict["update_seq"] as? String, "3-cbl")
        let longpoll = try get("/db/_changes?feed=longpoll&since=2")
        XCTAssertEqual(longpoll.dict["last_seq"] as? String, "3-cbl")
        let continuous = try request("GET", "/db/_changes?feed=continuous&timeout=100", timeout: 10)
        XCTAssertTrue(continuous.text.hasSuffix("{\"last_seq\":\"3-cbl\"}\n"), continuous.text)
    }

    /// `CBLListener.integerSequences` (`cbl serve --integer-sequences`): 1.x LiteServ's numbers,
    /// strings still accepted in `since`.
    func testIntegerSequencesKeep1xNumbers() throws {
        listener.integerSequences = true
        try createDB()
        for id in ["a", "b"] { try putDoc("/db/\(id)", ["v": id]) }
        XCTAssertEqual(try get("/db").dict["update_seq"] as? Int, 2)
        let feed = try get("/db/_changes")
        XCTAssertEqual((feed.dict["results"] as? [[String: Any]])?.map { $0["seq"] as? Int }, [1, 2])
        XCTAssertEqual(feed.dict["last_seq"] as? Int, 2)
        XCTAssertTrue(feed.text.contains("\"last_seq\":2"), feed.text)
        XCTAssertEqual((try get("/db/_changes?since=1-cbl").dict["results"] as? [[String: Any]])?.count, 1)
        let events = try request("GET", "/db/_changes?feed=eventsource&timeout=100", timeout: 10)
        XCTAssertTrue(events.text.contains("\nid: 1\n"), events.text)
    }

    /// Our replicator pulls and pushes through the listener in both sequence modes, and a second
    /// pull resumes from its checkpoint (the listener's sequence, stored as sent, read back).
    func testReplicationInBothSequenceModes() throws {
        clientDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("cbl-seq-client-\(UUID().uuidString)")
        let clientManager = try CBLManager(directory: clientDirectory.path)
        defer { clientManager.close() }
        for integers in [false, true] {
            listener.integerSequences = integers
            let name = integers ? "numbers" : "strings"
            let server = try createDB(name)
            for i in 0..<20 { try server.document(withID: "doc\(i)")?.putProperties(["i": i]) }
            let url = URL(string: "http://127.0.0.1:\(listener.port)/\(name)")!
            let local = try clientManager.databaseNamed("local-\(name)")
            try runToCompletion(local.createPullReplication(url))
            XCTAssertEqual(local.documentCount, 20, name)
            for i in 20..<25 { try server.document(withID: "doc\(i)")?.putProperties(["i": i]) }
            let again = local.createPullReplication(url)
            try runToCompletion(again)
            XCTAssertEqual(local.documentCount, 25, name)
            XCTAssertEqual(again.completedChangesCount, 5, "\(name): the second pull starts from the checkpoint")
            try local.document(withID: "local1")?.putProperties(["from": "client"])
            try runToCompletion(local.createPushReplication(url))
            XCTAssertEqual(server.existingDocument(withID: "local1")?.properties?["from"] as? String, "client", name)
        }
    }

    private func runToCompletion(_ replication: CBLReplication) throws {
        replication.start()
        let deadline = Date().addingTimeInterval(30)
        while replication.running && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        XCTAssertFalse(replication.running)
        XCTAssertNil(replication.lastError)
    }

    // MARK: Configuration

    /// `[chttpd] decode_plus_to_space` (basics_test): a `+` in a document's path is a space when
    /// set; by default the listener keeps 1.x's `+`.
    func testDecodePlusToSpace() throws {
        try createDB()
        XCTAssertEqual(try request("PUT", "/db/test+doc", json: [String: Any]()).dict["id"] as? String, "test+doc")
        try setConfig("chttpd", "decode_plus_to_space", "true")
        XCTAssertEqual(try request("PUT", "/db/test+doc+2", json: [String: Any]()).dict["id"] as? String, "test doc 2")
        try setConfig("chttpd", "decode_plus_to_space", "false")
        XCTAssertEqual(try request("PUT", "/db/test+doc+3", json: [String: Any]()).dict["id"] as? String, "test+doc+3")
    }

    /// `[chttpd] max_http_request_size` (changes_test): a larger body is 413 with CouchDB's words.
    func testMaxHTTPRequestSize() throws {
        try createDB()
        try setConfig("chttpd", "max_http_request_size", "16")
        expectError(try request("POST", "/db/_changes", json: ["doc_ids": ["doc1", "doc3", "doc4"]]),
                    413, "too_large", "the request entity is too large")
        expect(try request("DELETE", "/_node/_local/_config/chttpd/max_http_request_size"), 200)
        expect(try request("POST", "/db/_changes", json: ["doc_ids": ["doc1", "doc3", "doc4"]]), 200)
    }

    /// `[couchdb] max_document_size`: 413 `document_too_large` with the body's `_id` as reason
    /// (empty for a PUT whose ID is in the URL, as CouchDB 3.4.3 answers); `_bulk_docs` saves none.
    func testMaxDocumentSize() throws {
        let db = try createDB()
        try setConfig("couchdb", "max_document_size", "60")
        let big = String(repeating: "x", count: 80)
        expectError(try request("PUT", "/db/big", json: ["a": big]), 413, "document_too_large", "")
        expectError(try request("POST", "/db/_bulk_docs", json: ["docs": [["_id": "small"], ["_id": "b1", "a": big]]]),
                    413, "document_too_large", "b1")
        XCTAssertNil(db.existingDocument(withID: "small"))
        XCTAssertNil(db.existingDocument(withID: "big"))
        try putDoc("/db/ok", ["a": 1, "_attachments": ["a.txt": ["content_type": "text/plain", "data": Data(big.utf8).base64EncodedString()]]])
    }

    /// `[uuids] algorithm` and `utc_id_suffix` (uuids_test), for `_uuids` and new documents' IDs.
    func testUUIDAlgorithms() throws {
        try createDB()
        func uuids(_ count: Int) throws -> [String] { try get("/_uuids?count=\(count)").dict["uuids"] as? [String] ?? [] }
        // Unset: random ones, and 1.x's IDs for documents POSTed without one.
        XCTAssertEqual(try uuids(3).map(\.count), [32, 32, 32])
        XCTAssertEqual((try request("POST", "/db", json: ["v": 1]).dict["id"] as? String)?.first, "-")

        try setConfig("uuids", "algorithm", "sequential")
        let sequential = try uuids(1000)
        XCTAssertEqual(Set(sequential.map(\.count)), [32])
        XCTAssertEqual(sequential, sequential.sorted())
        XCTAssertEqual(Set(sequential.map { $0.prefix(26) }).count, 1, "one prefix for a run this short")
        let posted = try XCTUnwrap(try request("POST", "/db", json: ["v": 2]).dict["id"] as? String)
        XCTAssertEqual(posted.count, 32)
        XCTAssertGreaterThan(posted, sequential.last!)

        try setConfig("uuids", "algorithm", "utc_random")
        let before = String(Int64(Date().timeIntervalSince1970 * 1_000_000) - 1, radix: 16)
        let utcRandom = try uuids(1000)
        XCTAssertEqual(Set(utcRandom.map(\.count)), [32])
        XCTAssertEqual(Set(utcRandom).count, 1000)
        XCTAssertGreaterThan(String(utcRandom[0].prefix(14)), String(repeating: "0", count: 14 - before.count) + before)
        XCTAssertLessThan(utcRandom[1].prefix(14), utcRandom[999].prefix(14))

        try setConfig("uuids", "algorithm", "utc_id")
        try setConfig("uuids", "utc_id_suffix", "frog")
        let utcID = try uuids(10)
        XCTAssertEqual(Set(utcID.map(\.count)), [18])
        XCTAssertTrue(utcID.allSatisfy { $0.hasSuffix("frog") })
        XCTAssertEqual(utcID, utcID.sorted())
        XCTAssertEqual(Set(utcID).count, 10, "never the same microsecond twice")
    }

    /// `[chttpd] x_forwarded_host` (http_test): the header a `Location` takes its host from.
    func testLocationFromTheConfiguredForwardedHostHeader() throws {
        try createDB()
        let plain = try request("PUT", "/db/test2", json: [String: Any](), headers: ["X-Forwarded-Host": "mysite.com"])
        XCTAssertEqual(plain.header("location"), "http://mysite.com/db/test2")
        try setConfig("chttpd", "x_forwarded_host", "X-Host")
        let custom = try request("PUT", "/db/test3", json: [String: Any](), headers: ["X-Host": "mysite2.com"])
        XCTAssertEqual(custom.header("location"), "http://mysite2.com/db/test3")
    }
}
