import CouchbaseLite
import CouchbaseLiteListener
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
}
