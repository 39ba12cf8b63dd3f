import CouchbaseLite
import CouchbaseLiteListener
import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

final class ListenerChangesTests: ListenerTestCase {
    var db: CBLDatabase!

    override func setUpWithError() throws {
        try super.setUpWithError()
        db = try createDB()
    }

    private func results(_ r: HTTPResult) -> [[String: Any]] { r.dict["results"] as? [[String: Any]] ?? [] }

    func testNormalFeed() throws {
        let a1 = try putDoc("/db/a", ["v": 1])           // seq 1
        try putDoc("/db/b", ["v": 1])                      // seq 2
        let a2 = try putDoc("/db/a", ["_rev": a1, "v": 2]) // seq 3
        let c1 = try putDoc("/db/c", ["v": 1])           // seq 4
        let c2 = try XCTUnwrap(try request("DELETE", "/db/c?rev=\(c1)").dict["rev"] as? String)   // seq 5

        let feed = try get("/db/_changes")
        expect(feed, 200)
        let rows = results(feed)
        XCTAssertEqual(rows.map { $0["id"] as? String ?? "" }, ["b", "a", "c"])
        XCTAssertEqual(rows.map { seqNumber($0["seq"]) ?? 0 }, [2, 3, 5])
        XCTAssertTrue(jsonEqual(rows[1], ["seq": "3-cbl", "id": "a", "changes": [["rev": a2]]]))
        XCTAssertTrue(jsonEqual(rows[2], ["seq": "5-cbl", "id": "c", "changes": [["rev": c2]], "deleted": true]))
        XCTAssertEqual(seqNumber(feed.dict["last_seq"]), 5)

        let since = try get("/db/_changes?since=3")
        XCTAssertEqual(results(since).map { $0["id"] as? String ?? "" }, ["c"])
        XCTAssertEqual(seqNumber(since.dict["last_seq"]), 5)
        let limited = try get("/db/_changes?limit=2")
        XCTAssertEqual(results(limited).map { seqNumber($0["seq"]) ?? 0 }, [2, 3])
        XCTAssertEqual(seqNumber(limited.dict["last_seq"]), 3)
        let desc = try get("/db/_changes?descending=true&limit=2")
        XCTAssertEqual(results(desc).map { seqNumber($0["seq"]) ?? 0 }, [5, 3])
        XCTAssertEqual(seqNumber(desc.dict["last_seq"]), 3)
        let active = try get("/db/_changes?active_only=true")
        XCTAssertEqual(results(active).map { $0["id"] as? String ?? "" }, ["b", "a"])

        let docs = try get("/db/_changes?include_docs=true&since=2")
        let docRows = results(docs)
        XCTAssertTrue(jsonEqual(docRows[0]["doc"], ["_id": "a", "_rev": a2, "v": 2]))
        XCTAssertTrue(jsonEqual(docRows[1]["doc"], ["_id": "c", "_rev": c2, "_deleted": true]))

        let now = try get("/db/_changes?since=now")
        XCTAssertEqual(results(now).count, 0)
        XCTAssertEqual(seqNumber(now.dict["last_seq"]), 5)
        expectError(try get("/db/_changes?since=abc"), 400, "bad_request")
        expectError(try get("/db/_changes?feed=websocket"), 400, "bad_request")
        expectError(try get("/db/_changes?style=weird"), 400, "bad_request")
    }

    func testStyleAllDocsAndDocIDsFilter() throws {
        let r1 = try putDoc("/db/doc1", ["n": 1])
        let r2 = try putDoc("/db/doc1", ["_rev": r1, "n": 2])
        let branch = "2-ffffffffffffffffffffffffffffffff"
        try request("PUT", "/db/doc1?new_edits=false", json: ["_rev": branch, "_revisions": ["start": 2, "ids": ["ffffffffffffffffffffffffffffffff", String(r1.dropFirst(2))]]])
        try putDoc("/db/k03", ["i": 3])
        try putDoc("/db/k04", ["i": 4])

        let main = results(try get("/db/_changes"))
        XCTAssertTrue(jsonEqual(main[0]["changes"], [["rev": branch]]))
        let all = results(try get("/db/_changes?style=all_docs"))
        XCTAssertTrue(jsonEqual(all[0]["changes"], [["rev": branch], ["rev": r2]]))

        let filtered = try request("POST", "/db/_changes?filter=_doc_ids", json: ["doc_ids": ["k03", "doc1", "nope"]])
        expect(filtered, 200)
        XCTAssertEqual(results(filtered).map { $0["id"] as? String ?? "" }, ["doc1", "k03"])
        let viaQuery = try get("/db/_changes?filter=_doc_ids&doc_ids=%5B%22k04%22%5D")
        XCTAssertEqual(results(viaQuery).map { $0["id"] as? String ?? "" }, ["k04"])
        expectError(try get("/db/_changes?filter=_doc_ids"), 400, "bad_request")
        expectError(try get("/db/_changes?filter=app/nofilter"), 404, "not_found")

        // Parameters in a POST body (what 1.x replicators send) work like URL ones.
        let body = try request("POST", "/db/_changes", json: ["since": 3, "limit": 1, "style": "all_docs"])
        XCTAssertEqual(results(body).map { $0["id"] as? String ?? "" }, ["k03"])

        // A filter registered in Swift.
        db.setFilterNamed("app/even") { rev, params in
            ((rev.properties?["i"] as? Int) ?? 1) % 2 == 0 && (params?["flag"] as? String) == "on"
        }
        XCTAssertEqual(results(try get("/db/_changes?filter=app/even&flag=on")).map { $0["id"] as? String ?? "" }, ["k04"])
        XCTAssertEqual(results(try get("/db/_changes?filter=app/even&flag=off")).count, 0)
    }

    func testLongpollTimesOutWithEmptyResults() throws {
        try putDoc("/db/a", ["v": 1])
        let start = Date()
        let r = try request("GET", "/db/_changes?feed=longpoll&timeout=400&since=now", timeout: 10)
        let elapsed = Date().timeIntervalSince(start)
        expect(r, 200)
        XCTAssertTrue(jsonEqual(r.json, ["results": [Any](), "last_seq": "1-cbl"]), r.text)
        XCTAssertGreaterThanOrEqual(elapsed, 0.35)
        XCTAssertLessThan(elapsed, 5)
        // Existing changes are answered at once.
        let quick = try request("GET", "/db/_changes?feed=longpoll&timeout=5000", timeout: 10)
        XCTAssertEqual(results(quick).count, 1)
    }

    func testLongpollWakesOnChange() throws {
        try putDoc("/db/a", ["v": 1])
        let db = self.db!
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.3) {
            _ = try? db.document(withID: "b")?.putProperties(["v": 2])
        }
        let start = Date()
        let r = try request("GET", "/db/_changes?feed=longpoll&since=1&timeout=10000&heartbeat=100&include_docs=true", timeout: 15)
        let elapsed = Date().timeIntervalSince(start)
        expect(r, 200)
        let rows = results(r)
        XCTAssertEqual(rows.map { $0["id"] as? String ?? "" }, ["b"])
        XCTAssertEqual((rows.first?["doc"] as? [String: Any])?["v"] as? Int, 2)
        XCTAssertEqual(seqNumber(r.dict["last_seq"]), 2)
        XCTAssertLessThan(elapsed, 5)
        XCTAssertGreaterThan(elapsed, 0.2)
    }

    func testContinuousFeed() throws {
        try putDoc("/db/a", ["v": 1])
        let db = self.db!
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.3) {
            _ = try? db.document(withID: "b")?.putProperties(["v": 2])
        }
        let r = try request("GET", "/db/_changes?feed=continuous&timeout=1200&heartbeat=200", timeout: 10)
        expect(r, 200)
        let lines = r.text.split(separator: "\n").map(String.init)
        let objects = lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        XCTAssertEqual(objects.compactMap { $0["id"] as? String }, ["a", "b"], r.text)
        XCTAssertEqual(seqNumber(objects.last?["last_seq"]), 2)
        // Heartbeats are empty lines.
        XCTAssertTrue(r.text.contains("\n\n"), r.text)

        let limited = try request("GET", "/db/_changes?feed=continuous&limit=1&timeout=5000", timeout: 10)
        let limitedLines = limited.text.split(separator: "\n")
        XCTAssertEqual(limitedLines.count, 2, limited.text)
        XCTAssertTrue(limitedLines[1].contains("last_seq"))
    }

    func testStoppingTheListenerAnswersWaitingFeeds() throws {
        let port = listener.port
        let finished = expectation(description: "longpoll answered")
        DispatchQueue.global().async {
            let r = try? RawHTTPClient(port: port).send("GET", "/db/_changes?feed=longpoll&since=now&timeout=30000", timeout: 20)
            if let r, r.status == 200 { finished.fulfill() }
        }
        Thread.sleep(forTimeInterval: 0.3)
        let start = Date()
        listener.stop()
        wait(for: [finished], timeout: 10)
        XCTAssertLessThan(Date().timeIntervalSince(start), 8)
    }

    func testWaitingFeedsDoNotBlockOtherRequests() throws {
        let port = listener.port
        let group = DispatchGroup()
        let woken = LockedBox(0)
        for _ in 0..<6 {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                let r = try? RawHTTPClient(port: port).send("GET", "/db/_changes?feed=longpoll&since=now&timeout=8000", timeout: 15)
                if let r, r.status == 200, (r.dict["results"] as? [Any])?.isEmpty == false {
                    woken.update { $0 += 1 }
                }
            }
        }
        Thread.sleep(forTimeInterval: 0.3)
        // Twenty writes from concurrent clients go through while six feeds wait.
        let start = Date()
        let writes = DispatchGroup()
        let statuses = LockedBox([Int]())
        for i in 0..<20 {
            writes.enter()
            Thread.detachNewThread {
                defer { writes.leave() }
                let body = Array("{\"i\":\(i)}".utf8)
                let status = (try? RawHTTPClient(port: port).send("PUT", "/db/w\(i)", headers: ["Content-Type": "application/json"],
                                                                  body: body).status) ?? 0
                statuses.update { $0.append(status) }
            }
        }
        XCTAssertEqual(writes.wait(timeout: .now() + 10), .success)
        XCTAssertLessThan(Date().timeIntervalSince(start), 5)
        XCTAssertEqual(statuses.value.sorted(), Array(repeating: 201, count: 20))
        XCTAssertEqual(group.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(woken.value, 6)
        XCTAssertEqual(db.documentCount, 20)
    }

    /// Clients that hang up in the middle of longpoll/continuous feeds leave the server healthy.
    func testClientsHangingUpOnFeeds() throws {
        let port = listener.port
        for (i, query) in ["feed=continuous&heartbeat=50", "feed=longpoll&heartbeat=50&since=now", "feed=continuous",
                           "feed=longpoll&since=now&timeout=60000"].enumerated() {
            let request = Array("GET /db/_changes?\(query) HTTP/1.1\r\nHost: x\r\n\r\n".utf8)
            // Send the request, read for a moment, then close the socket without reading the rest.
            _ = try? RawHTTPClient(port: port).exchange(request, timeout: 0.2 + Double(i) * 0.05)
        }
        Thread.sleep(forTimeInterval: 0.3)
        try putDoc("/db/after", ["ok": true])
        XCTAssertEqual(seqNumber(try get("/db/_changes").dict["last_seq"]), 1)
        // Stopping with feeds possibly still open is clean too.
        listener.stop()
    }

    /// A client that hangs up while a `feed=normal` answer or a `_bulk_get` answer streams (both
    /// span many pieces here) stops its production: the listener goes on answering, and the same
    /// answers read whole are complete.
    func testClientsHangingUpOnStreamedAnswers() throws {
        let filler = String(repeating: "x", count: 200)
        let docs = (0..<3000).map { ["_id": String(format: "d%04d", $0), "filler": filler] }
        expect(try request("POST", "/db/_bulk_docs", json: ["docs": docs]), 201)
        let bulkGet = Array(try JSONSerialization.data(withJSONObject: ["docs": docs.map { ["id": $0["_id"]!] }]))
        let requests = [
            Array("GET /db/_changes?include_docs=true HTTP/1.1\r\nHost: x\r\n\r\n".utf8),
            Array(("POST /db/_bulk_get HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                   + "Content-Length: \(bulkGet.count)\r\n\r\n").utf8) + bulkGet,
        ]
        for _ in 0..<5 {
            for bytes in requests {
                // Read the first bytes of the answer, then close with the rest unread.
                let fd = try RawHTTPClient.connectedSocket(port: listener.port, timeout: 10)
                RawHTTPClient.sendAll(fd, bytes)
                var buffer = [UInt8](repeating: 0, count: 1024)
                XCTAssertGreaterThan(recv(fd, &buffer, buffer.count, 0), 0)
                close(fd)
            }
        }
        let feed = try get("/db/_changes?include_docs=true")
        expect(feed, 200)
        XCTAssertEqual(results(feed).count, 3000)
        XCTAssertEqual((results(feed).last?["doc"] as? [String: Any])?["filler"] as? String, filler)
        XCTAssertEqual(seqNumber(feed.dict["last_seq"]), 3000)
        let answer = try request("POST", "/db/_bulk_get", json: ["docs": docs.map { ["id": $0["_id"]!] }])
        expect(answer, 200)
        XCTAssertEqual(results(answer).count, 3000)
    }

    /// HEAD of a streamed answer (`_changes`, `_all_docs`): the GET answer's status and headers,
    /// no body, and nothing left producing.
    func testHeadOfStreamedAnswers() throws {
        try putDoc("/db/a", ["v": 1])
        for path in ["/db/_changes", "/db/_all_docs"] {
            let head = try request("HEAD", path, timeout: 5)
            expect(head, 200)
            XCTAssertEqual(head.header("content-type"), "application/json", path)
            XCTAssertTrue(head.body.isEmpty, path)
        }
        XCTAssertEqual(results(try get("/db/_changes")).count, 1)
    }

    /// Deleting the database ends the feeds waiting on it with a well-formed answer.
    func testDeletingTheDatabaseAnswersWaitingFeeds() throws {
        try putDoc("/db/a", ["v": 1])
        let port = listener.port
        let answer = LockedBox<HTTPResult?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            let r = try? RawHTTPClient(port: port).send("GET", "/db/_changes?feed=longpoll&since=1&timeout=20000", timeout: 25)
            answer.update { $0 = r }
            done.signal()
        }
        Thread.sleep(forTimeInterval: 0.3)
        let start = Date()
        expect(try request("DELETE", "/db"), 200)
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
        XCTAssertLessThan(Date().timeIntervalSince(start), 5)
        let r = try XCTUnwrap(answer.value)
        XCTAssertEqual(r.status, 200)
        XCTAssertTrue(jsonEqual(r.json, ["results": [Any](), "last_seq": "1-cbl"]), r.text)
        expectError(try get("/db/_changes"), 404, "not_found", "Database does not exist.")
    }
}
