@testable import CouchbaseLite
import Foundation
import JSONCore
import XCTest

/// The replication protocol messages read and written against real CouchDB 3.4.3 traffic
/// (`../shared/fixtures/couchdb-replication`, recorded between CouchDB's replicator and a
/// CouchDB database): each recorded body of a kind is decoded, encoded again and compared as
/// JSON values, and byte for byte where CouchDB's member order is fixed.
final class ProtocolMessageTests: XCTestCase {
    /// One recorded request/response pair.
    struct Exchange {
        let method: String
        let path: String
        let requestBody: [UInt8]?
        let status: Int
        let responseBody: [UInt8]?
    }

    static func exchanges() throws -> [Exchange] {
        let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let folder = repo.deletingLastPathComponent().appendingPathComponent("shared/fixtures/couchdb-replication")
        let names = ["couchdb-pulls-from-couchdb.jsonl", "couchdb-pushes-to-couchdb.jsonl"]
        guard names.allSatisfy({ FileManager.default.fileExists(atPath: folder.appendingPathComponent($0).path) }) else {
            throw XCTSkip("shared/fixtures/couchdb-replication not present (fresh clone)")
        }
        func text(_ body: Any?) -> [UInt8]? {
            guard let body = body as? [String: Any], let text = body["text"] as? String else { return nil }
            return Array(text.utf8)
        }
        var out: [Exchange] = []
        for name in names {
            let data = try Data(contentsOf: folder.appendingPathComponent(name))
            for line in data.split(separator: UInt8(ascii: "\n")) where !line.isEmpty {
                let record = try JSON.parseObject(Array(line))
                let request = record["request"] as! [String: Any]
                let response = record["response"] as! [String: Any]
                out.append(Exchange(method: request["method"] as! String, path: request["path"] as! String,
                                    requestBody: text(request["body"]), status: response["status"] as! Int,
                                    responseBody: text(response["body"])))
            }
        }
        return out
    }

    /// The value of JSON text, written canonically (sorted keys), for comparing as values.
    func canonical(_ bytes: [UInt8], file: StaticString = #filePath, line: UInt = #line) throws -> String {
        String(decoding: try JSON.canonicalData(try JSON.parse(bytes)), as: UTF8.self)
    }

    func trimmingNewlines(_ bytes: [UInt8]) -> [UInt8] {
        var out = bytes
        while out.last == 0x0A { out.removeLast() }
        return out
    }

    func testChangesFeedRoundTrip() throws {
        let feeds = try Self.exchanges().filter { $0.path.contains("/_changes") && $0.status == 200 }
        XCTAssertEqual(feeds.count, 2)
        var rowCount = 0
        for feed in feeds {
            let body = try XCTUnwrap(feed.responseBody)
            let (rows, lastSeq) = try ChangesRow.decodeFeed(body)
            XCTAssertFalse(rows.isEmpty)
            let last = try XCTUnwrap(lastSeq)
            guard case .string(let text) = last.value else { return XCTFail("CouchDB 3 sequences are strings") }
            XCTAssertTrue(text.hasPrefix("2"), text)
            // Byte for byte: CouchDB writes one row a line, members in a fixed order.
            var writer = JSONWriter()
            writer.writeRaw(ChangesRow.feedPrefix)
            for (index, row) in rows.enumerated() {
                if index > 0 { writer.writeRaw(ChangesRow.feedSeparator) }
                row.encode(into: &writer)
            }
            writer.writeRaw(ChangesRow.feedSuffix(lastSequence: last, pending: 0))
            XCTAssertEqual(String(decoding: trimmingNewlines(writer.bytes), as: UTF8.self),
                           String(decoding: trimmingNewlines(body), as: UTF8.self))
            rowCount += rows.count
        }
        // The first run lists the 21 documents (plus the deleted ones), the second the two edits.
        let first = try ChangesRow.decodeFeed(feeds[0].responseBody!).rows
        XCTAssertEqual(first.first { $0.docID == "doc05" }?.revIDs.count, 2, "both conflicting leaves of doc05")
        XCTAssertEqual(Set(first.filter(\.deleted).map(\.docID)), ["doc10", "doc11"])
        XCTAssertGreaterThan(rowCount, 20)
    }

    func testSequencesStayOpaque() {
        let couch = RemoteSequence(json: "26-g1AAAABPeJzL")!
        XCTAssertEqual(couch.checkpointString, "26-g1AAAABPeJzL")
        XCTAssertEqual(RemoteSequence(checkpoint: couch.checkpointString), couch)
        let number = RemoteSequence(json: 42)!
        XCTAssertEqual(number.checkpointString, "42")
        XCTAssertEqual(RemoteSequence(checkpoint: "42"), number)
        XCTAssertEqual(number.json, .int(42))
        let array = RemoteSequence(json: [7, "g1AAAA"])!
        XCTAssertEqual(array.checkpointString, #"[7,"g1AAAA"]"#)
        XCTAssertEqual(RemoteSequence(checkpoint: array.checkpointString), array)
        var writer = JSONWriter()
        array.encode(into: &writer)
        XCTAssertEqual(String(decoding: writer.bytes, as: UTF8.self), #"[7,"g1AAAA"]"#)
        XCTAssertNil(RemoteSequence(json: .null))
    }

    func testRevsDiffRoundTrip() throws {
        let diffs = try Self.exchanges().filter { $0.path.hasSuffix("/_revs_diff") }
        XCTAssertGreaterThanOrEqual(diffs.count, 5)
        for diff in diffs {
            let request = try XCTUnwrap(diff.requestBody)
            let offers = try RevsDiff.decodeRequest(request)
            XCTAssertEqual(try canonical(RevsDiff.encodeRequest(offers)), try canonical(request))
            let answerBody = try XCTUnwrap(diff.responseBody)
            let answer = try RevsDiff.decodeAnswer(answerBody)
            XCTAssertEqual(try canonical(RevsDiff.encodeAnswer(answer)), try canonical(answerBody))
            // Every document of these pushes was missing on the empty target.
            XCTAssertEqual(Set(answer.keys), Set(offers.map(\.docID)))
            if answer.count == 1 {
                XCTAssertEqual(String(decoding: RevsDiff.encodeAnswer(answer), as: UTF8.self),
                               String(decoding: trimmingNewlines(answerBody), as: UTF8.self))
            }
        }
    }

    func testBulkGetRoundTrip() throws {
        let bulkGets = try Self.exchanges().filter { $0.path.contains("/_bulk_get") && $0.status == 200 }
        XCTAssertGreaterThanOrEqual(bulkGets.count, 4)
        var revisions: [IncomingRevision] = []
        for exchange in bulkGets {
            let body = try XCTUnwrap(exchange.responseBody)
            let results = try BulkGetResult.decodeAnswer(body)
            var writer = JSONWriter()
            writer.writeRaw(BulkGetResult.answerPrefix)
            for (index, result) in results.enumerated() {
                if index > 0 { writer.writeRawByte(UInt8(ascii: ",")) }
                result.encode(into: &writer)
                for case .revision(let revision) in result.docs { revisions.append(revision) }
            }
            writer.writeRaw(BulkGetResult.answerSuffix)
            XCTAssertEqual(try canonical(writer.bytes), try canonical(body))
        }
        let doc01 = try XCTUnwrap(revisions.first { $0.docID == "doc01" })
        XCTAssertEqual(doc01.history.count, 2)
        XCTAssertEqual(doc01.history.first, doc01.revID)
        let stub = try XCTUnwrap(doc01.attachments?.values.first)
        XCTAssertTrue(stub.stub)
        XCTAssertEqual(stub.revpos, 2)
        XCTAssertEqual(stub.length, 21)
        XCTAssertEqual(stub.contentType, "text/plain")
        XCTAssertEqual(doc01.stubNames.count, 1)
        let doc00 = try XCTUnwrap(revisions.first { $0.docID == "doc00" })
        XCTAssertNil(doc00.attachments)
        XCTAssertTrue(doc00.specialKeys.isEmpty)
        // The stored body: the properties alone, canonical.
        XCTAssertEqual(String(decoding: try doc00.storedBody(), as: UTF8.self),
                       #"{"n":0,"nested":{"ok":true,"v":null},"tags":["a",0],"text":""}"#)
    }

    func testBulkGetRequestsMatchThePuller() throws {
        // The pull's request body names the same revisions as CouchDB's replicator's.
        let bulkGets = try Self.exchanges().filter { $0.path.contains("/_bulk_get") }
        for exchange in bulkGets {
            let request = try JSON.parseObject(try XCTUnwrap(exchange.requestBody))
            let docs = try XCTUnwrap(request["docs"] as? [[String: Any]])
            XCTAssertFalse(docs.isEmpty)
            for doc in docs {
                XCTAssertNotNil(doc["id"] as? String)
                XCTAssertNotNil(doc["rev"] as? String)
            }
        }
    }

    func testBulkGetFailureEncoding() throws {
        let failure = BulkGetResult.Failure(docID: "d", revID: "1-x", error: "not_found", reason: "missing")
        XCTAssertEqual(failure.status, 404)
        let result = BulkGetResult(docID: "d", docs: [.failure(failure)])
        var writer = JSONWriter()
        result.encode(into: &writer)
        XCTAssertEqual(String(decoding: writer.bytes, as: UTF8.self),
                       #"{"id":"d","docs":[{"error":{"id":"d","rev":"1-x","error":"not_found","reason":"missing"}}]}"#)
        let decoded = BulkGetResult(json: try JSON.object(writer.bytes))
        guard case .failure(let back)? = decoded.docs.first else { return XCTFail("not a failure") }
        XCTAssertEqual(back, failure)
    }

    func testPushedRevisionsRoundTrip() throws {
        // `_bulk_docs` with `new_edits=false`: each document is what the puller reads too.
        let bulkDocs = try Self.exchanges().filter { $0.path.hasSuffix("/_bulk_docs") }
        XCTAssertGreaterThanOrEqual(bulkDocs.count, 4)
        var count = 0
        for exchange in bulkDocs {
            let request = try JSON.object(try XCTUnwrap(exchange.requestBody))
            for case .object(let doc) in request["docs"]?.arrayValue ?? [] {
                let revision = try IncomingRevision(json: doc)
                XCTAssertEqual(try canonical(revision.encoded), try canonical(try JSON.data(.object(doc), sortedKeys: true)))
                XCTAssertEqual(revision.history.first, revision.revID)
                count += 1
            }
        }
        XCTAssertGreaterThan(count, 10)
    }

    func testCheckpointRoundTrip() throws {
        let local = try Self.exchanges().filter { $0.path.contains("/_local/") }
        var saved = 0
        for exchange in local {
            if exchange.method == "PUT", let body = exchange.requestBody {
                let checkpoint = try Checkpoint(jsonText: body, fallbackID: "")
                XCTAssertTrue(checkpoint.id.hasPrefix("_local/"))
                XCTAssertNotNil(checkpoint.otherMembers["source_last_seq"])
                XCTAssertEqual(try canonical(checkpoint.encoded), try canonical(body))
                saved += 1
            }
            if exchange.method == "GET", exchange.status == 200, let body = exchange.responseBody {
                let checkpoint = try Checkpoint(jsonText: body, fallbackID: "")
                XCTAssertEqual(checkpoint.rev, "0-1")
                XCTAssertEqual(try canonical(checkpoint.encoded), try canonical(body))
            }
        }
        XCTAssertEqual(saved, 4)
        // A 1.x checkpoint keeps its sequence as text.
        var mine = Checkpoint(id: "_local/abc")
        mine.lastSequence = "26-g1AAAA"
        mine.rev = "0-3"
        XCTAssertEqual(String(decoding: mine.encoded, as: UTF8.self),
                       #"{"_id":"_local/abc","_rev":"0-3","lastSequence":"26-g1AAAA"}"#)
        XCTAssertEqual(try Checkpoint(jsonText: mine.encoded, fallbackID: ""), mine)
    }

    /// A revision read from a peer is parsed once: its stored body is written from the typed members,
    /// canonical for the replicator, in the client's order for the listener's `new_edits=false`.
    func testIncomingRevisionWritesItsBodyOnceFromTheTypedMembers() throws {
        let text = #"{"_id":"d","_rev":"2-b","zeta":1,"alpha":{"y":true,"x":null},"_revisions":{"start":2,"ids":["b","a"]}}"#
        let pulled = try IncomingRevision(jsonText: Array(text.utf8))
        XCTAssertEqual(pulled.history, ["2-b", "1-a"])
        XCTAssertEqual(String(decoding: try pulled.storedBody(), as: UTF8.self), #"{"alpha":{"x":null,"y":true},"zeta":1}"#)
        XCTAssertNil(pulled.storedMemberOrder)
        let kept = try IncomingRevision(json: try JSON.object(Array(text.utf8)), keepsMemberOrder: true)
        XCTAssertEqual(String(decoding: try kept.storedBody(), as: UTF8.self), #"{"zeta":1,"alpha":{"y":true,"x":null}}"#)
        XCTAssertEqual(kept.storedMemberOrder?.memberNames, ["zeta", "alpha"])
        // The dictionary form the attachment path inserts carries the same members, unparsed again.
        let properties = try pulled.insertionProperties()
        XCTAssertEqual(properties["zeta"] as? Int, 1)
        XCTAssertEqual((properties["alpha"] as? [String: Any])?["y"] as? Bool, true)
        XCTAssertNil(properties["_revisions"])
    }
}

