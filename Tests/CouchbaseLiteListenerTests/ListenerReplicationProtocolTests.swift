import CouchbaseLite
import CouchbaseLiteListener
import Crypto
import Foundation
import XCTest

/// The request sequences a 1.x replicator sends (spec sections 9.3–9.6), played by hand against
/// the listener: a push (checkpoint, `_revs_diff`, `_bulk_docs` new_edits=false, multipart PUT
/// for large attachments, checkpoint save) and a pull (`POST _changes`, `GET ?revs=true` with
/// multipart, insertion with history). Both ends must hold the same revision trees afterwards.
final class ListenerReplicationProtocolTests: ListenerTestCase {
    private func history(_ rev: CBLSavedRevision) throws -> [String] {
        try rev.getRevisionHistory().reversed().compactMap(\.revisionID)
    }

    /// The winning revision (tombstones included) and its history.
    private func winner(_ db: CBLDatabase, _ docID: String) throws -> (revID: String, history: [String]) {
        let rev = try XCTUnwrap(try db.syncWinningRevision(docID: docID), docID)
        return (rev.revID, try db.syncHistory(docID: docID, revID: rev.revID).map(\.revID))
    }

    /// The body a pusher sends for a revision: properties plus `_revisions`, attachments older
    /// than `minRevpos` as stubs, small ones inline, big ones marked `follows`.
    private func pushBody(_ rev: CBLSavedRevision, minRevpos: Int = 1) throws -> ([String: Any], [(String, Data, String)]) {
        var body = rev.properties ?? [:]
        body["_revisions"] = CBLDatabase.syncRevisionsDictionary(try history(rev))
        var follows: [(String, Data, String)] = []
        if var atts = body["_attachments"] as? [String: Any] {
            for name in atts.keys.sorted() {
                guard var meta = atts[name] as? [String: Any], let att = rev.attachmentNamed(name) else { continue }
                let revpos = meta["revpos"] as? Int ?? 0
                meta["digest"] = nil
                if revpos < minRevpos {
                    meta = ["stub": true, "revpos": revpos]
                } else if let content = att.content {
                    meta["stub"] = nil
                    if content.count >= 2048 {
                        meta["follows"] = true
                        follows.append((name, content, att.contentType ?? "application/octet-stream"))
                    } else {
                        meta["data"] = content.base64EncodedString()
                    }
                }
                atts[name] = meta
            }
            body["_attachments"] = atts
        }
        return (body, follows)
    }

    private func multipart(_ json: [String: Any], _ parts: [(String, Data, String)]) throws -> ([UInt8], String) {
        let boundary = "cbl-\(UUID().uuidString)"
        var out = Array("--\(boundary)\r\nContent-Type: application/json\r\n\r\n".utf8)
        out += Array(try JSONSerialization.data(withJSONObject: json, options: [.sortedKeys]))
        for (name, data, type) in parts {
            out += Array("\r\n--\(boundary)\r\nContent-Disposition: attachment; filename=\"\(name)\"\r\nContent-Type: \(type)\r\n\r\n".utf8)
            out += Array(data)
        }
        out += Array("\r\n--\(boundary)--".utf8)
        return (out, "multipart/related; boundary=\"\(boundary)\"")
    }

    func testPushThenPullPreservesRevisionTrees() throws {
        // The source: a doc with history, a doc with a large attachment, a deleted doc.
        let source = try manager.databaseNamed("source")
        let a = try XCTUnwrap(source.document(withID: "a"))
        for i in 1...3 { try a.update { $0["v"] = i; return true } }
        let b = try XCTUnwrap(source.document(withID: "b"))
        try b.update { $0["kind"] = "with-attachment"; return true }
        let big = Data((0..<3000).map { UInt8($0 % 251) })
        try b.update { rev in
            rev.setAttachmentNamed("big.bin", withContentType: "application/octet-stream", content: big)
            rev.setAttachmentNamed("small.txt", withContentType: "text/plain", content: Data("small".utf8))
            return true
        }
        let c = try XCTUnwrap(source.document(withID: "c"))
        try c.update { $0["v"] = 1; return true }
        try c.delete()
        let checkpointPath = "/target/_local/0123456789abcdef0123456789abcdef01234567"

        // Push, as spec 9.3/9.5 describe.
        XCTAssertEqual(try request("PUT", "/target").status, 201)
        expectError(try get(checkpointPath), 404, "not_found", "missing")
        var asked: [String: [String]] = [:]
        for doc in [a, b, c] { asked[doc.documentID] = [try winner(source, doc.documentID).revID] }
        let diff = try request("POST", "/target/_revs_diff", json: asked).dict
        XCTAssertEqual(Set(diff.keys), ["a", "b", "c"])
        XCTAssertTrue(diff.values.allSatisfy { ($0 as? [String: Any])?["possible_ancestors"] == nil })

        var bulk: [[String: Any]] = []
        for doc in [a, c] {
            let rev = try XCTUnwrap(doc.revision(withID: try winner(source, doc.documentID).revID))
            var body = try pushBody(rev).0
            if rev.isDeletion { body["_deleted"] = true }
            body["_id"] = doc.documentID
            body["_rev"] = rev.revisionID
            bulk.append(body)
        }
        XCTAssertEqual(try request("POST", "/target/_bulk_docs", json: ["docs": bulk, "new_edits": false]).text, "[]\n")
        let bRev = try XCTUnwrap(b.currentRevision)
        let (bBody, follows) = try pushBody(bRev)
        XCTAssertEqual(follows.map(\.0), ["big.bin"])
        let (payload, contentType) = try multipart(bBody, follows)
        let put = try request("PUT", "/target/b?new_edits=false", body: payload, headers: ["Content-Type": contentType])
        expect(put, 201)
        XCTAssertEqual(put.dict["rev"] as? String, bRev.revisionID)
        let saved = try request("PUT", checkpointPath, json: ["lastSequence": String(source.lastSequenceNumber)])
        XCTAssertEqual(saved.dict["rev"] as? String, "1-local")

        // An incremental push: possible_ancestors lets the pusher send a stub for the unchanged attachment.
        try b.update { $0["kind"] = "edited"; return true }
        let bRev2 = try XCTUnwrap(b.currentRevision)
        let diff2 = try request("POST", "/target/_revs_diff", json: ["b": [bRev2.revisionID!]]).dict
        let ancestors = (diff2["b"] as? [String: Any])?["possible_ancestors"] as? [String]
        XCTAssertEqual(ancestors, [bRev.revisionID!])
        var (incremental, moreFollows) = try pushBody(bRev2, minRevpos: CBLDatabase.syncGeneration(bRev.revisionID!) + 1)
        defer { _ = moreFollows }
        XCTAssertTrue(moreFollows.isEmpty)
        XCTAssertEqual(((incremental["_attachments"] as? [String: Any])?["big.bin"] as? [String: Any])?["stub"] as? Bool, true)
        incremental["_id"] = "b"
        incremental["_rev"] = bRev2.revisionID
        XCTAssertEqual(try request("POST", "/target/_bulk_docs", json: ["docs": [incremental], "new_edits": false]).text, "[]\n")
        let saved2 = try request("PUT", checkpointPath, json: ["_rev": "1-local", "lastSequence": String(source.lastSequenceNumber)])
        XCTAssertEqual(saved2.dict["rev"] as? String, "2-local")

        // The target has the same trees and contents.
        let target = try manager.existingDatabaseNamed("target")
        for docID in ["a", "b", "c"] {
            let s = try winner(source, docID)
            let t = try winner(target, docID)
            XCTAssertEqual(t.revID, s.revID, docID)
            XCTAssertEqual(t.history, s.history, docID)
        }
        XCTAssertEqual(try winner(target, "a").history.count, 3)
        XCTAssertTrue(try XCTUnwrap(try target.syncWinningRevision(docID: "c")).deleted)
        XCTAssertEqual(target.document(withID: "b")?.currentRevision?.attachmentNamed("big.bin")?.content, big)
        XCTAssertEqual(target.document(withID: "b")?.currentRevision?.attachmentNamed("small.txt")?.content, Data("small".utf8))
        XCTAssertEqual(target.documentCount, 2)

        // Pull everything back into an empty database, as a 1.x puller would.
        let pulled = try manager.databaseNamed("pulled")
        let changes = try request("POST", "/target/_changes?feed=normal&style=all_docs&heartbeat=300000",
                                  json: ["feed": "normal", "style": "all_docs", "since": 0, "heartbeat": 300000]).dict
        let rows = try XCTUnwrap(changes["results"] as? [[String: Any]])
        XCTAssertEqual(rows.count, 3)
        for row in rows {
            let docID = try XCTUnwrap(row["id"] as? String)
            for change in row["changes"] as? [[String: Any]] ?? [] {
                let rev = try XCTUnwrap(change["rev"] as? String)
                let path = "/target/\(docID)?rev=\(rev)&revs=true&attachments=true"
                let r = try get(path, headers: ["Accept": "multipart/related, application/json", "X-Accept-Part-Encoding": "gzip"])
                expect(r, 200)
                var doc: [String: Any]
                if let type = r.header("content-type"), type.hasPrefix("multipart/related") {
                    let boundary = String(type.components(separatedBy: "boundary=\"").last!.dropLast())
                    let parts = r.text.components(separatedBy: "--\(boundary)")
                    let jsonPart = try XCTUnwrap(parts[1].components(separatedBy: "\r\n\r\n").dropFirst().first)
                    doc = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(jsonPart.trimmingCharacters(in: .whitespacesAndNewlines).utf8)) as? [String: Any])
                    // The attachment part's bytes, found by its Content-Disposition.
                    let raw = r.body
                    var atts = doc["_attachments"] as? [String: Any] ?? [:]
                    for (name, value) in atts {
                        guard var meta = value as? [String: Any], meta["follows"] as? Bool == true else { continue }
                        let marker = Array("filename=\"\(name)\"".utf8)
                        let at = try XCTUnwrap(RawHTTPClient.find(marker, in: raw))
                        let start = try XCTUnwrap(RawHTTPClient.find([13, 10, 13, 10], in: raw, from: at)) + 4
                        let end = try XCTUnwrap(RawHTTPClient.find(Array("\r\n--\(boundary)".utf8), in: raw, from: start))
                        meta["follows"] = nil
                        meta["data"] = Data(raw[start..<end]).base64EncodedString()
                        atts[name] = meta
                    }
                    doc["_attachments"] = atts
                } else {
                    doc = r.dict
                }
                let revisions = try XCTUnwrap(doc["_revisions"] as? [String: Any])
                let hist = try XCTUnwrap(CBLDatabase.syncHistory(fromRevisions: revisions))
                try pulled.syncForceInsert(docID: docID, history: hist, properties: doc)
            }
        }
        for docID in ["a", "b", "c"] {
            let t = try winner(target, docID)
            let p = try winner(pulled, docID)
            XCTAssertEqual(p.revID, t.revID, docID)
            XCTAssertEqual(p.history, t.history, docID)
        }
        XCTAssertEqual(pulled.document(withID: "b")?.currentRevision?.attachmentNamed("big.bin")?.content, big)
        XCTAssertEqual(pulled.documentCount, 2)
    }

    // MARK: What CouchDB's replicator relies on

    /// `latest=true`, which CouchDB's replicator sends with every fetch: a revision superseded
    /// since the changes feed listed it stands for the leaves of its branch.
    func testLatestResolvesARevisionToTheLeavesOfItsBranch() throws {
        let db = try manager.databaseNamed("db")
        try db.syncInsertRevision(docID: "doc", body: ["_rev": "2-bbb", "_revisions": ["start": 2, "ids": ["bbb", "aaa"]], "v": 2])
        try db.syncInsertRevision(docID: "doc", body: ["_rev": "3-ccc", "_revisions": ["start": 3, "ids": ["ccc", "bbb", "aaa"]], "v": 3])
        try db.syncInsertRevision(docID: "doc", body: ["_rev": "2-xxx", "_revisions": ["start": 2, "ids": ["xxx", "aaa"]], "v": "x"])

        func openRevs(_ revs: [String], latest: Bool) throws -> [[String: Any]] {
            let list = try XCTUnwrap(String(data: JSONSerialization.data(withJSONObject: revs), encoding: .utf8))
            let query = "open_revs=" + list.addingPercentEncoding(withAllowedCharacters: .alphanumerics)! + (latest ? "&latest=true" : "")
            let r = try get("/db/doc?\(query)", headers: ["Accept": "application/json"])
            expect(r, 200)
            return r.array as? [[String: Any]] ?? []
        }
        func summary(_ entries: [[String: Any]]) -> [String] {
            entries.map { ($0["ok"] as? [String: Any])?["_rev"] as? String ?? "missing " + ($0["missing"] as? String ?? "?") }
        }
        XCTAssertEqual(summary(try openRevs(["2-bbb"], latest: true)), ["3-ccc"])
        XCTAssertEqual(summary(try openRevs(["1-aaa"], latest: true)), ["3-ccc", "2-xxx"])
        XCTAssertEqual(summary(try openRevs(["3-ccc", "2-xxx", "9-zzz"], latest: true)), ["3-ccc", "2-xxx", "missing 9-zzz"])
        XCTAssertEqual(summary(try openRevs(["2-bbb", "1-aaa"], latest: false)), ["2-bbb", "missing 1-aaa"])

        let bulk = try request("POST", "/db/_bulk_get?revs=true&latest=true", json: ["docs": [
            ["id": "doc", "rev": "2-bbb"], ["id": "doc", "rev": "1-aaa"], ["id": "doc", "rev": "4-nope"],
        ]], headers: ["Accept": "application/json"]).dict
        let results = try XCTUnwrap(bulk["results"] as? [[String: Any]])
        XCTAssertEqual(results.map { summary(($0["docs"] as? [[String: Any]] ?? []).map { $0["error"] == nil ? $0 : ["missing": "?"] }) },
                       [["3-ccc"], ["3-ccc", "2-xxx"], ["missing ?"]])
        let third = (results[2]["docs"] as? [[String: Any]])?.first?["error"] as? [String: Any]
        XCTAssertTrue(jsonEqual(third, ["id": "doc", "rev": "4-nope", "error": "not_found", "reason": "missing"]))
        let first = (results[0]["docs"] as? [[String: Any]])?.first?["ok"] as? [String: Any]
        XCTAssertTrue(jsonEqual(first?["_revisions"], ["start": 3, "ids": ["ccc", "bbb", "aaa"]]))
        let withoutLatest = try request("POST", "/db/_bulk_get", json: ["docs": [["id": "doc", "rev": "2-bbb"]]]).dict
        XCTAssertEqual(((withoutLatest["results"] as? [[String: Any]])?.first?["docs"] as? [[String: Any]])?.count, 1)
        XCTAssertEqual(summary((withoutLatest["results"] as? [[String: Any]])?.first?["docs"] as? [[String: Any]] ?? []), ["2-bbb"])

        // A plain GET with latest=true opens the winner, as CouchDB does, whatever `rev` says.
        XCTAssertEqual(try get("/db/doc?rev=2-bbb&latest=true").dict["_rev"] as? String, "3-ccc")
        XCTAssertEqual(try get("/db/doc?rev=2-xxx&latest=true").dict["_rev"] as? String, "3-ccc")
        XCTAssertEqual(try get("/db/doc?rev=2-bbb").dict["_rev"] as? String, "2-bbb")
    }

    /// `open_revs` with `Accept: multipart/mixed`: attachment bodies newer than `atts_since` as
    /// parts even without `attachments=true`, in the order of the JSON's `_attachments`.
    func testOpenRevsMultipartSendsAttachmentBodiesNewerThanAttsSince() throws {
        _ = try manager.databaseNamed("db")
        let rev1 = try putDoc("/db/att", ["kind": "photo"])
        let small = try request("PUT", "/db/att/z.txt?rev=\(rev1)", body: Array("zzz".utf8), headers: ["Content-Type": "text/plain"])
        let rev2 = try XCTUnwrap(small.dict["rev"] as? String)
        let big = (0..<3000).map { UInt8(($0 * 7) % 256) }
        let large = try request("PUT", "/db/att/a.bin?rev=\(rev2)", body: big, headers: ["Content-Type": "application/octet-stream"])
        let rev3 = try XCTUnwrap(large.dict["rev"] as? String)

        func fetch(_ query: String) throws -> [ParsedPart] {
            let r = try get("/db/att?revs=true&latest=true&\(query)", headers: ["Accept": "multipart/mixed"])
            expect(r, 200)
            let type = try XCTUnwrap(r.header("content-type"))
            XCTAssertTrue(type.hasPrefix("multipart/mixed; boundary=\""), type)
            return try MultipartBody.parts(r.body, contentType: type)
        }
        let everything = try fetch("open_revs=%5B%22\(rev3)%22%2C%229-nope%22%5D")
        XCTAssertEqual(everything.count, 2)
        let inner = try everything[0].subparts()
        XCTAssertEqual(inner.map { $0.headers["content-disposition"] ?? $0.contentType ?? "" },
                       ["application/json", "attachment; filename=\"a.bin\"", "attachment; filename=\"z.txt\""])
        let json = String(decoding: inner[0].body, as: UTF8.self)
        XCTAssertLessThan(try XCTUnwrap(json.range(of: "\"a.bin\"")).lowerBound, try XCTUnwrap(json.range(of: "\"z.txt\"")).lowerBound)
        let atts = try XCTUnwrap(inner[0].dict["_attachments"] as? [String: Any])
        // z.txt (text/plain) is stored gzip-encoded and follows as stored, as CouchDB sends it.
        let zipped = try CBLDatabase.syncGunzip(Data(inner[2].body))
        XCTAssertTrue(jsonEqual(atts["z.txt"], ["content_type": "text/plain", "revpos": 2, "length": 3, "follows": true,
                                                "encoding": "gzip", "encoded_length": inner[2].body.count,
                                                "digest": "md5-" + Data(Insecure.MD5.hash(data: Data(inner[2].body))).base64EncodedString()]),
                      "\(atts)")
        XCTAssertEqual(inner[1].body, big)
        XCTAssertEqual(inner[1].headers["content-length"], "3000")
        XCTAssertEqual(inner[1].headers["content-type"], "application/octet-stream")
        XCTAssertEqual(inner[2].headers["content-encoding"], "gzip")
        XCTAssertEqual(zipped, Data("zzz".utf8))
        XCTAssertEqual(everything[1].contentType, "application/json; error=\"true\"")
        XCTAssertTrue(jsonEqual(everything[1].json, ["missing": "9-nope"]))

        // The peer has rev2: only a.bin (revpos 3) comes along; z.txt is a stub it can resolve.
        let since = try fetch("open_revs=%5B%22\(rev3)%22%5D&atts_since=%5B%22\(rev2)%22%5D")
        let sinceInner = try since[0].subparts()
        XCTAssertEqual(sinceInner.count, 2)
        let sinceAtts = try XCTUnwrap(sinceInner[0].dict["_attachments"] as? [String: Any])
        XCTAssertEqual((sinceAtts["z.txt"] as? [String: Any])?["stub"] as? Bool, true)
        XCTAssertEqual((sinceAtts["a.bin"] as? [String: Any])?["follows"] as? Bool, true)
        XCTAssertEqual(sinceInner[1].body, big)

        // Nothing newer than rev3: the document alone, as a JSON part.
        let none = try fetch("open_revs=%5B%22\(rev3)%22%5D&atts_since=%5B%22\(rev3)%22%5D")
        XCTAssertEqual(none[0].contentType, "application/json")
        XCTAssertEqual(none[0].dict["_rev"] as? String, rev3)

        // A plain GET with atts_since asks for the newer attachments (CouchDB), inline.
        let plain = try get("/db/att?atts_since=%5B%22\(rev2)%22%5D").dict["_attachments"] as? [String: Any]
        XCTAssertEqual((plain?["a.bin"] as? [String: Any])?["data"] as? String, Data(big).base64EncodedString())
        XCTAssertEqual((plain?["z.txt"] as? [String: Any])?["stub"] as? Bool, true)
    }

    /// `_bulk_get` in multipart form: only for a client that does not take JSON; the subtype it
    /// asked for; `X-Doc-Id`/`X-Rev-Id` on documents with attachment parts.
    func testBulkGetMultipartFollowsTheAcceptHeader() throws {
        _ = try manager.databaseNamed("db")
        let rev1 = try putDoc("/db/att", ["kind": "photo"])
        let rev2 = try XCTUnwrap(try request("PUT", "/db/att/z.txt?rev=\(rev1)", body: Array("zzz".utf8),
                                             headers: ["Content-Type": "text/plain"]).dict["rev"] as? String)
        let plainRev = try putDoc("/db/plain", ["n": 1])
        let docs: [String: Any] = ["docs": [["id": "att", "rev": rev2], ["id": "plain", "rev": plainRev], ["id": "gone", "rev": "1-x"]]]

        let both = try request("POST", "/db/_bulk_get?revs=true&attachments=true", json: docs,
                               headers: ["Accept": "multipart/mixed, application/json"])
        XCTAssertEqual(both.header("content-type"), "application/json")

        let related = try request("POST", "/db/_bulk_get?revs=true&attachments=true", json: docs,
                                  headers: ["Accept": "multipart/related"])
        let type = try XCTUnwrap(related.header("content-type"))
        XCTAssertTrue(type.hasPrefix("multipart/related; boundary="), type)
        let parts = try MultipartBody.parts(related.body, contentType: type)
        XCTAssertEqual(parts.count, 3)
        XCTAssertEqual(parts[0].headers["x-doc-id"], "att")
        XCTAssertEqual(parts[0].headers["x-rev-id"], rev2)
        XCTAssertEqual(try parts[0].subparts().last.map { try CBLDatabase.syncGunzip(Data($0.body)) }, Data("zzz".utf8))
        XCTAssertEqual(parts[1].contentType, "application/json")
        XCTAssertEqual(parts[1].dict["_id"] as? String, "plain")
        XCTAssertEqual(parts[2].contentType, "application/json; error=\"true\"")
        XCTAssertTrue(jsonEqual(parts[2].json, ["id": "gone", "rev": "1-x", "error": "not_found", "reason": "missing"]))

        // With attachments=false and an empty atts_since (CouchDB's replicator), stubs only.
        let stubs = try request("POST", "/db/_bulk_get?revs=true&latest=true&attachments=false",
                                json: ["docs": [["id": "att", "rev": rev2, "atts_since": [String]()]], "attachments": false],
                                headers: ["Accept": "application/json"]).dict
        let doc = ((stubs["results"] as? [[String: Any]])?.first?["docs"] as? [[String: Any]])?.first?["ok"] as? [String: Any]
        XCTAssertEqual(((doc?["_attachments"] as? [String: Any])?["z.txt"] as? [String: Any])?["stub"] as? Bool, true)
        // A non-empty atts_since per document asks for the newer bodies.
        let newer = try request("POST", "/db/_bulk_get?revs=true",
                                json: ["docs": [["id": "att", "rev": rev2, "atts_since": [rev1]]]]).dict
        let newerDoc = ((newer["results"] as? [[String: Any]])?.first?["docs"] as? [[String: Any]])?.first?["ok"] as? [String: Any]
        XCTAssertEqual(((newerDoc?["_attachments"] as? [String: Any])?["z.txt"] as? [String: Any])?["data"] as? String, "enp6")
    }

    /// A replicated revision whose stub names an attachment we lack: CouchDB's `412
    /// missing_stub`, on which its replicator fetches the revision again with the bodies.
    func testReplicatedRevisionWithAnUnknownStubIsMissingStub() throws {
        _ = try manager.databaseNamed("db")
        let doc: [String: Any] = [
            "_id": "stubby", "_rev": "2-abc", "_revisions": ["start": 2, "ids": ["abc", "def"]],
            "_attachments": ["x.bin": ["stub": true, "revpos": 1, "digest": "md5-AAAAAAAAAAAAAAAAAAAAAA==", "length": 3]],
        ]
        expectError(try request("PUT", "/db/stubby?new_edits=false", json: doc), 412, "missing_stub",
                    "Invalid attachment stub in stubby for x.bin")
        let bulk = try request("POST", "/db/_bulk_docs", json: ["docs": [doc], "new_edits": false])
        expect(bulk, 201)
        XCTAssertTrue(jsonEqual(bulk.json, [["id": "stubby", "rev": "2-abc", "error": "missing_stub",
                                             "reason": "Invalid attachment stub in stubby for x.bin"]]), bulk.text)
        expectError(try get("/db/stubby"), 404, "not_found", "missing")
    }
}
