import CouchbaseLite
import CouchbaseLiteListener
import Foundation
import XCTest

/// `_changes` as CouchDB 3 answers it (issue 18 B8): included documents with `conflicts`,
/// `attachments` and `att_encoding_info`; the `_view`, `_design` and `_selector` filters with
/// `limit` counting matches; heartbeats; `since=now`; `feed=eventsource`. The WebSocket feed
/// has its own tests (ListenerChangesWebSocketTests).
final class ListenerChangesFeedTests: ListenerTestCase {
    var db: CBLDatabase!

    override func setUpWithError() throws {
        try super.setUpWithError()
        db = try createDB()
    }

    private func results(_ r: HTTPResult) -> [[String: Any]] { r.dict["results"] as? [[String: Any]] ?? [] }
    private func ids(_ r: HTTPResult) -> [String] { results(r).map { $0["id"] as? String ?? "" } }

    // MARK: Included documents

    func testConflictsAndAttachmentsInIncludedDocuments() throws {
        let text = Array("Hello, changes feed! Hello, changes feed!".utf8)
        let gzipped = StoredGzip.member(text)
        let rev1 = try putDoc("/db/doc", [
            "v": 1,
            "_attachments": [
                // Not a compressible type: stored as it is.
                "plain.txt": ["content_type": "application/octet-stream", "data": Data("plain body".utf8).base64EncodedString()],
                "zipped.txt": ["content_type": "text/plain", "data": Data(gzipped).base64EncodedString(), "encoding": "gzip"],
            ],
        ])
        let stubs = try XCTUnwrap(get("/db/doc").dict["_attachments"])
        let rev2 = try putDoc("/db/doc", ["_rev": rev1, "v": 2, "_attachments": stubs])
        // A conflicting branch from rev1.
        let branch = "2-00000000000000000000000000000001"
        expect(try request("PUT", "/db/doc?new_edits=false", json: [
            "_rev": branch, "v": "branch",
            "_revisions": ["start": 2, "ids": ["00000000000000000000000000000001", String(rev1.dropFirst(2))]],
        ]), 201)
        // The branch's all-zero digest sorts first: rev2 stays the winner.
        let winner = rev2
        let loser = branch

        func doc(_ query: String) throws -> [String: Any] {
            let r = try get("/db/_changes?include_docs=true" + query)
            expect(r, 200)
            return try XCTUnwrap(results(r).first?["doc"] as? [String: Any], r.text)
        }
        func attachment(_ doc: [String: Any], _ name: String) -> [String: Any] {
            (doc["_attachments"] as? [String: Any])?[name] as? [String: Any] ?? [:]
        }

        // Plain include_docs: stubs, with no trace of how they are stored.
        let plain = try doc("")
        XCTAssertEqual(plain["_rev"] as? String, winner)
        XCTAssertNil(plain["_conflicts"])
        let stub = attachment(plain, "zipped.txt")
        XCTAssertEqual(stub["stub"] as? Bool, true)
        XCTAssertEqual(stub["length"] as? Int, text.count)
        XCTAssertNil(stub["data"])
        XCTAssertNil(stub["encoding"])
        XCTAssertNil(stub["encoded_length"])

        // conflicts=true
        let withConflicts = try doc("&conflicts=true")
        XCTAssertEqual(withConflicts["_conflicts"] as? [String], [loser])

        // attachments=true: bodies inline, decoded.
        do {
            let inline = try doc("&attachments=true")
            let zipped = attachment(inline, "zipped.txt")
            XCTAssertEqual(zipped["data"] as? String, Data(text).base64EncodedString())
            XCTAssertNil(zipped["stub"])
            XCTAssertNil(zipped["encoding"])
            XCTAssertEqual(attachment(inline, "plain.txt")["data"] as? String, Data("plain body".utf8).base64EncodedString())

            // att_encoding_info=true: stubs say gzip and the stored length.
            let info = try doc("&att_encoding_info=true")
            XCTAssertEqual(attachment(info, "zipped.txt")["encoding"] as? String, "gzip")
            XCTAssertEqual(attachment(info, "zipped.txt")["encoded_length"] as? Int, gzipped.count)
            XCTAssertEqual(attachment(info, "zipped.txt")["stub"] as? Bool, true)
            XCTAssertNil(attachment(info, "plain.txt")["encoding"])

            // Both: decoded data, and the encoding it is stored with.
            let both = try doc("&attachments=true&att_encoding_info=true")
            XCTAssertEqual(attachment(both, "zipped.txt")["data"] as? String, Data(text).base64EncodedString())
            XCTAssertEqual(attachment(both, "zipped.txt")["encoding"] as? String, "gzip")
            XCTAssertEqual(attachment(both, "zipped.txt")["encoded_length"] as? Int, gzipped.count)
        }
    }

    // MARK: Filters

    func testViewFilter() throws {
        _ = db.viewNamed("app/posts").setMapBlock({ doc, emit in
            if doc["type"] as? String == "post" { emit(doc["_id"] as Any, nil) }
        }, version: "1")
        try putDoc("/db/p1", ["type": "post"])      // seq 1
        try putDoc("/db/c1", ["type": "comment"])   // seq 2
        try putDoc("/db/p2", ["type": "post"])      // seq 3
        try putDoc("/db/p3", ["type": "post"])      // seq 4

        let all = try get("/db/_changes?filter=_view&view=app/posts")
        expect(all, 200)
        XCTAssertEqual(ids(all), ["p1", "p2", "p3"])
        XCTAssertEqual(seqNumber(all.dict["last_seq"]), 4)
        // `limit` counts the rows that pass, not the rows read.
        let two = try get("/db/_changes?filter=_view&view=app/posts&limit=2")
        XCTAssertEqual(ids(two), ["p1", "p2"])
        XCTAssertEqual(seqNumber(two.dict["last_seq"]), 3)
        XCTAssertEqual(ids(try get("/db/_changes?filter=_view&view=app/posts&since=1")), ["p2", "p3"])

        expectError(try get("/db/_changes?filter=_view"), 400, "bad_request", "`view` filter parameter is not provided.")
        expectError(try get("/db/_changes?filter=_view&view=posts"), 400, "bad_request",
                    "`view` must be of the form `designname/viewname`")
        expectError(try get("/db/_changes?filter=_view&view=app/nope"), 404, "not_found")
        expectError(try get("/db/_changes?filter=_nope"), 400, "bad_request", "unknown builtin filter name")
    }

    func testDesignFilter() throws {
        try putDoc("/db/doc1", ["value": 1])
        try putDoc("/db/_design/app", ["views": [:] as [String: Any]])
        try putDoc("/db/doc2", ["value": 2])
        let r = try get("/db/_changes?filter=_design")
        expect(r, 200)
        XCTAssertEqual(ids(r), ["_design/app"])
        XCTAssertEqual(seqNumber(r.dict["last_seq"]), 3)
    }

    func testSelectorFilter() throws {
        for i in 0..<10 {
            try putDoc("/db/d\(i)", ["n": i, "even": i % 2 == 0, "tags": i < 5 ? ["low"] : ["high"]])
        }
        let evens = try request("POST", "/db/_changes?filter=_selector", json: ["selector": ["even": true]])
        expect(evens, 200)
        XCTAssertEqual(ids(evens), ["d0", "d2", "d4", "d6", "d8"])
        XCTAssertEqual(seqNumber(evens.dict["last_seq"]), 10)

        let limited = try request("POST", "/db/_changes?filter=_selector&limit=2",
                                  json: ["selector": ["n": ["$gte": 3], "tags": ["$all": ["high"]]]])
        XCTAssertEqual(ids(limited), ["d5", "d6"])
        XCTAssertEqual(seqNumber(limited.dict["last_seq"]), 7)

        let deep = try request("POST", "/db/_changes?filter=_selector",
                               json: ["selector": ["$or": [["n": 1], ["n": ["$in": [8, 9]]]]], "include_docs": true])
        XCTAssertEqual(ids(deep), ["d1", "d8", "d9"])
        XCTAssertEqual((results(deep).first?["doc"] as? [String: Any])?["n"] as? Int, 1)

        // `fields` trims the included documents.
        let trimmed = try request("POST", "/db/_changes?filter=_selector&include_docs=true",
                                  json: ["selector": ["n": 3], "fields": ["n", "tags.0", "nope"]])
        XCTAssertEqual(ids(trimmed), ["d3"])
        XCTAssertTrue(jsonEqual(results(trimmed).first?["doc"], ["n": 3, "tags": ["0": "low"]]), trimmed.text)
        expectError(try request("POST", "/db/_changes?filter=_selector", json: ["selector": ["n": 3], "fields": "n"]),
                    400, "bad_request", "Selector error: fields must be JSON array")

        expectError(try get("/db/_changes?filter=_selector"), 400, "bad_request", "Selector must be specified in POST payload")
        expectError(try request("POST", "/db/_changes?filter=_selector", json: ["selector": ["n": ["$foo": 1]]]),
                    400, "bad_request", "Invalid operator: $foo")
        expectError(try request("POST", "/db/_changes?filter=_selector", json: ["selector": "n"]),
                    400, "bad_request", "Selector error: expected a JSON object")
        expectError(try request("POST", "/db/_changes?filter=_selector", json: [:] as [String: Any]),
                    400, "bad_request", "Selector error: expected a JSON object")
    }

    /// With `style=all_docs` a filter tests every leaf and lists only the ones that pass.
    func testSelectorFilterTestsEachLeaf() throws {
        let rev1 = try putDoc("/db/doc", ["color": "red"])
        let rev2 = try putDoc("/db/doc", ["_rev": rev1, "color": "blue"])
        let branch = "2-ffffffffffffffffffffffffffffffff"
        expect(try request("PUT", "/db/doc?new_edits=false", json: [
            "_rev": branch, "color": "red",
            "_revisions": ["start": 2, "ids": ["ffffffffffffffffffffffffffffffff", String(rev1.dropFirst(2))]],
        ]), 201)
        // The branch wins (higher revision ID); the other leaf is blue.
        let red = try request("POST", "/db/_changes?filter=_selector&style=all_docs", json: ["selector": ["color": "red"]])
        XCTAssertTrue(jsonEqual(results(red).first?["changes"], [["rev": branch]]), red.text)
        let blue = try request("POST", "/db/_changes?filter=_selector&style=all_docs", json: ["selector": ["color": "blue"]])
        XCTAssertTrue(jsonEqual(results(blue).first?["changes"], [["rev": rev2]]), blue.text)
        let blueWinner = try request("POST", "/db/_changes?filter=_selector", json: ["selector": ["color": "blue"]])
        XCTAssertEqual(results(blueWinner).count, 0)
    }

    func testFilteredContinuousFeedCountsMatches() throws {
        try putDoc("/db/a", ["type": "x"])
        try putDoc("/db/b", ["type": "y"])
        try putDoc("/db/c", ["type": "y"])
        let r = try request("POST", "/db/_changes?feed=continuous&filter=_selector&limit=2&timeout=5000",
                            json: ["selector": ["type": "y"]], timeout: 10)
        expect(r, 200)
        let lines = r.text.split(separator: "\n").map { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        XCTAssertEqual(lines.compactMap { $0?["id"] as? String }, ["b", "c"], r.text)
        XCTAssertEqual(seqNumber(lines.last??["last_seq"]), 3)
    }

    // MARK: Heartbeats and since=now

    func testHeartbeatOnLongpoll() throws {
        try putDoc("/db/a", ["v": 1])
        let r = try request("GET", "/db/_changes?feed=longpoll&since=now&timeout=900&heartbeat=200", timeout: 10)
        expect(r, 200)
        // Newlines while idle, then the JSON answer.
        let leading = r.text.prefix { $0 == "\n" }.count
        XCTAssertGreaterThanOrEqual(leading, 2, r.text.debugDescription)
        let json = try JSONSerialization.jsonObject(with: Data(r.text.dropFirst(leading).utf8))
        XCTAssertTrue(jsonEqual(json, ["results": [Any](), "last_seq": "1-cbl"]), r.text)
    }

    func testHeartbeatOnContinuousAndErrors() throws {
        let r = try request("GET", "/db/_changes?feed=continuous&timeout=700&heartbeat=150", timeout: 10)
        expect(r, 200)
        XCTAssertTrue(r.text.hasPrefix("\n\n"), r.text.debugDescription)
        XCTAssertTrue(r.text.hasSuffix("{\"last_seq\":\"0-cbl\"}\n"), r.text.debugDescription)
        expectError(try get("/db/_changes?feed=continuous&heartbeat=-1000"), 400, "bad_request",
                    "The heartbeat value should be a positive integer (in milliseconds).")
        expectError(try get("/db/_changes?feed=continuous&heartbeat=a1000"), 400, "bad_request",
                    "Invalid heartbeat value. Expecting a positive integer value (in milliseconds).")
    }

    func testContinuousSinceNowSeesOnlyNewChanges() throws {
        try putDoc("/db/old", ["v": 1])
        let db = self.db!
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.3) {
            _ = try? db.document(withID: "new")?.putProperties(["v": 2])
        }
        let r = try request("GET", "/db/_changes?feed=continuous&since=now&timeout=1200", timeout: 10)
        let lines = r.text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        XCTAssertEqual(lines.compactMap { $0["id"] as? String }, ["new"], r.text)
        XCTAssertEqual(seqNumber(lines.last?["last_seq"]), 2)
    }

    // MARK: EventSource

    /// The events of a `text/event-stream` body, each as its field lines.
    private func events(_ text: String) -> [[String: String]] {
        text.components(separatedBy: "\n\n").filter { !$0.isEmpty }.map { block in
            var fields: [String: String] = [:]
            for line in block.split(separator: "\n", omittingEmptySubsequences: false) {
                guard let colon = line.firstIndex(of: ":") else { continue }
                var value = line[line.index(after: colon)...]
                if value.hasPrefix(" ") { value = value.dropFirst() }
                fields[String(line[..<colon])] = String(value)
            }
            return fields
        }
    }

    func testEventSourceFeed() throws {
        let a = try putDoc("/db/a", ["v": 1])
        try putDoc("/db/b", ["v": 2])
        let r = try request("GET", "/db/_changes?feed=eventsource&timeout=800&heartbeat=300", timeout: 10)
        expect(r, 200)
        XCTAssertEqual(r.header("content-type"), "text/event-stream")
        XCTAssertEqual(r.header("cache-control"), "no-cache")
        // CouchDB's framing: `data: <row>\nid: <seq as JSON>\n\n`, heartbeats as `heartbeat` events.
        XCTAssertTrue(r.text.hasPrefix("data: {"), r.text)
        let all = events(r.text)
        let changes = all.filter { $0["event"] == nil }
        XCTAssertEqual(changes.map { $0["id"] }, ["\"1-cbl\"", "\"2-cbl\""], r.text)
        let first = try JSONSerialization.jsonObject(with: Data((changes.first?["data"] ?? "").utf8))
        XCTAssertTrue(jsonEqual(first, ["seq": "1-cbl", "id": "a", "changes": [["rev": a]]]), r.text)
        XCTAssertTrue(all.contains { $0["event"] == "heartbeat" && $0["data"] == "" }, r.text)
        XCTAssertTrue(r.text.contains("event: heartbeat\ndata: \n\n"))

        // A reconnecting EventSource sends Last-Event-ID: the feed resumes after it (the id as
        // sent, or a 1.x client's number).
        let resumed = try request("GET", "/db/_changes?feed=eventsource&timeout=300", headers: ["Last-Event-ID": "\"1-cbl\""], timeout: 10)
        XCTAssertEqual(events(resumed.text).map { $0["id"] }, ["\"2-cbl\""], resumed.text)
        let resumedFrom1x = try request("GET", "/db/_changes?feed=eventsource&timeout=300", headers: ["Last-Event-ID": "1"], timeout: 10)
        XCTAssertEqual(events(resumedFrom1x.text).map { $0["id"] }, ["\"2-cbl\""], resumedFrom1x.text)
    }
}

/// A gzip member holding `bytes` in one stored (uncompressed) deflate block: a valid gzip
/// stream without a compressor.
enum StoredGzip {
    static func member(_ bytes: [UInt8]) -> [UInt8] {
        precondition(bytes.count < 65_536)
        var out: [UInt8] = [0x1F, 0x8B, 0x08, 0, 0, 0, 0, 0, 0, 0xFF]
        let len = UInt16(bytes.count)
        out += [0x01, UInt8(len & 0xFF), UInt8(len >> 8), UInt8(~len & 0xFF), UInt8(~len >> 8)]
        out += bytes
        let crc = crc32(bytes)
        out += [UInt8(crc & 0xFF), UInt8((crc >> 8) & 0xFF), UInt8((crc >> 16) & 0xFF), UInt8(crc >> 24)]
        let size = UInt32(bytes.count)
        out += [UInt8(size & 0xFF), UInt8((size >> 8) & 0xFF), UInt8((size >> 16) & 0xFF), UInt8(size >> 24)]
        return out
    }

    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = (crc & 1) != 0 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }
}
