import CouchbaseLite
import CouchbaseLiteListener
import Crypto
import Foundation
import XCTest

/// Plays the requests Apache CouchDB 3.4's replicator made (`shared/fixtures/couchdb-replication`,
/// recorded against a CouchDB database) against the listener, in both directions and for both
/// runs (the first full one, then the incremental one from the saved checkpoint), and checks
/// that every answer carries what that replicator reads, the way CouchDB answered it.
///
/// Revision IDs are CouchDB's own (the source is loaded with `new_edits=false` inserts, and the
/// pushed revisions keep theirs), so bodies compare as they are. What legitimately differs is
/// learned and substituted: sequences (CouchDB's opaque strings, our integers), `_local`
/// revisions (`0-1` vs 1.x's `1-local`), attachment digests (`md5-` vs 1.x's `sha1-`, which
/// CouchDB does not check), and gzip transfer of compressible attachments (CouchDB sends them
/// `Content-Encoding: gzip`, we send identity with the decoded length).
final class ListenerCouchDBReplicatorTests: ListenerTestCase {
    /// CouchDB's values → ours (sequences, `_local` revisions).
    private var learned: [String: Any] = [:]

    // MARK: Pull: CouchDB's replicator reads from the listener

    func testCouchDBReplicatorPullsFromListener() throws {
        let exchanges = try RecordedExchange.load("couchdb-pulls-from-couchdb.jsonl")
        XCTAssertEqual(exchanges.count, 25)
        let source = try manager.databaseNamed("rec_src")

        // The source as CouchDB's was before each run: the revisions its _bulk_get and open_revs
        // answers carried, inserted with their history in changes-feed order.
        let firstRun = Array(exchanges[0...15]), secondRun = Array(exchanges[16...24])
        try loadSource(source, from: firstRun)
        XCTAssertEqual(source.documentCount, 18)
        try replayPull(firstRun, source)

        try loadSource(source, from: secondRun)
        XCTAssertEqual(source.documentCount, 19)
        try replayPull(secondRun, source)

        // The checkpoint the replicator saved twice: its last body, without `_revisions`.
        let checkpointID = "_local/111a57e726c461cc7fba8a94397c5697"
        let saved = try get("/rec_src/\(checkpointID)")
        expect(saved, 200)
        var expected = try XCTUnwrap(substitute(try XCTUnwrap(exchanges[24].requestJSON)) as? [String: Any])
        expected["_revisions"] = nil
        expected["_rev"] = "2-local"
        XCTAssertEqual(jsonDifferences(expected, saved.dict), [])
        XCTAssertEqual(saved.dict["source_last_seq"] as? Int, Int(source.lastSequenceNumber))
        XCTAssertEqual((saved.dict["history"] as? [Any])?.count, 2)
    }

    /// Inserts the revisions the run's `_bulk_get` answers returned (attachments from its
    /// `open_revs` answers), in the order of its changes feed.
    private func loadSource(_ db: CBLDatabase, from run: [RecordedExchange]) throws {
        var bodies: [String: [String: Any]] = [:]          // "docID rev" → body
        var attachments: [String: [String: Data]] = [:]     // docID → name → content
        for exchange in run where exchange.route.hasSuffix("/_bulk_get") {
            let results = try XCTUnwrap((exchange.responseJSON as? [String: Any])?["results"] as? [[String: Any]])
            for result in results {
                for entry in result["docs"] as? [[String: Any]] ?? [] {
                    let doc = try XCTUnwrap(entry["ok"] as? [String: Any], exchange.label)
                    bodies["\(doc["_id"]!) \(doc["_rev"]!)"] = doc
                }
            }
        }
        for exchange in run where exchange.path.contains("open_revs=") {
            let docID = String(exchange.route.split(separator: "/").last!)
            for (name, content, _) in try recordedAttachments(exchange) { attachments[docID, default: [:]][name] = content }
        }
        let changes = try XCTUnwrap(run.first { $0.route.hasSuffix("/_changes") })
        let rows = try XCTUnwrap((changes.responseJSON as? [String: Any])?["results"] as? [[String: Any]])
        for row in rows {
            let docID = try XCTUnwrap(row["id"] as? String)
            for change in row["changes"] as? [[String: Any]] ?? [] {
                var body = try XCTUnwrap(bodies["\(docID) \(change["rev"]!)"], "no body for \(docID)")
                if let atts = body["_attachments"] as? [String: Any] {
                    var inline: [String: Any] = [:]
                    for (name, value) in atts {
                        let meta = try XCTUnwrap(value as? [String: Any])
                        let content = try XCTUnwrap(attachments[docID]?[name], "no content for \(docID)/\(name)")
                        XCTAssertEqual(content.count, meta["length"] as? Int, "\(docID)/\(name)")
                        inline[name] = ["content_type": meta["content_type"]!, "revpos": meta["revpos"]!,
                                        "data": content.base64EncodedString()]
                    }
                    body["_attachments"] = inline
                }
                try db.syncInsertRevision(docID: docID, body: body)
            }
        }
    }

    /// The attachments of a recorded `open_revs` multipart answer: name, decoded content, the
    /// attachment part.
    private func recordedAttachments(_ exchange: RecordedExchange) throws -> [(String, Data, ParsedPart)] {
        let outer = try MultipartBody.parts(exchange.responseBody, contentType: try XCTUnwrap(exchange.responseHeaders["Content-Type"]))
        var out: [(String, Data, ParsedPart)] = []
        for part in outer {
            let inner = try part.subparts()
            for attachment in inner.dropFirst() {
                let name = try XCTUnwrap(filename(attachment))
                var content = Data(attachment.body)
                if attachment.headers["content-encoding"] == "gzip" { content = try CBLDatabase.syncGunzip(content) }
                out.append((name, content, attachment))
            }
        }
        return out
    }

    private func filename(_ part: ParsedPart) -> String? {
        guard let disposition = part.headers["content-disposition"],
              let range = disposition.range(of: "filename=\"") else { return nil }
        return String(disposition[range.upperBound...].dropLast())
    }

    private func replayPull(_ run: [RecordedExchange], _ source: CBLDatabase) throws {
        var instanceStartTime: String?
        for exchange in run {
            var path = exchange.path
            if exchange.route.hasSuffix("/_changes"), let since = query(exchange.path)["since"], since != "0" {
                let ours = try XCTUnwrap(learned[since], "since \(since) was never answered")
                path = path.replacingOccurrences(of: "since=\(since)", with: "since=\(ours)")
            }
            var body = exchange.requestBody
            if exchange.method == "PUT", exchange.route.contains("/_local/"), let json = exchange.requestJSON {
                // The checkpoint records our sequences, and on the second run our `_local` revision.
                body = Array(try JSONSerialization.data(withJSONObject: try XCTUnwrap(substitute(json))))
            }
            let ours = try send(exchange, path: path, body: body)
            XCTAssertEqual(ours.status, exchange.status, "\(exchange.label): \(ours.text)")

            switch (exchange.method, exchange.route) {
            case ("GET", "/rec_src/"):
                try checkDatabaseInfo(exchange, ours, source)
                instanceStartTime = ours.dict["instance_start_time"] as? String
            case ("GET", let route) where route.contains("/_local/"):
                try checkLocalGet(exchange, ours)
            case ("PUT", let route) where route.contains("/_local/"):
                try checkLocalPut(exchange, ours)
            case ("GET", "/rec_src/_changes"):
                try checkChanges(exchange, ours)
            case ("POST", "/rec_src/_bulk_get"):
                XCTAssertEqual(ours.header("content-type"), "application/json", exchange.label)
                let expected = try XCTUnwrap(exchange.responseJSON)
                XCTAssertEqual(jsonDifferences(expected, try XCTUnwrap(ours.json), opaque: ["digest"]), [], exchange.label)
                // The stubs CouchDB sends (with attachments=false) are stubs here too, not data.
                XCTAssertFalse(ours.text.contains("\"data\""), exchange.label)
            case ("GET", _) where exchange.path.contains("open_revs="):
                try checkOpenRevs(exchange, ours)
            case ("POST", "/rec_src/_ensure_full_commit"):
                XCTAssertEqual(ours.dict["ok"] as? Bool, true)
                // The replicator compares it with the database's to detect a restarted source.
                XCTAssertEqual(ours.dict["instance_start_time"] as? String, instanceStartTime, exchange.label)
                XCTAssertEqual(Set(ours.dict.keys), ["ok", "instance_start_time"])
            default:
                XCTFail("unexpected request \(exchange.label)")
            }
        }
    }

    // MARK: Push: CouchDB's replicator writes to the listener

    func testCouchDBReplicatorPushesToListener() throws {
        let exchanges = try RecordedExchange.load("couchdb-pushes-to-couchdb.jsonl")
        XCTAssertEqual(exchanges.count, 29)
        var instanceStartTime: String?
        for exchange in exchanges {
            var body = exchange.requestBody
            if exchange.method == "PUT", exchange.route.contains("/_local/"), let json = exchange.requestJSON {
                body = Array(try JSONSerialization.data(withJSONObject: try XCTUnwrap(substitute(json))))
            }
            let ours = try send(exchange, body: body)
            XCTAssertEqual(ours.status, exchange.status, "\(exchange.label): \(ours.text)")

            switch (exchange.method, exchange.route) {
            case ("PUT", "/rec_push_target/"):
                XCTAssertEqual(ours.text, String(decoding: exchange.responseBody, as: UTF8.self))
                XCTAssertEqual(ours.header("location").flatMap(urlPath), "/rec_push_target")
            case ("GET", "/rec_push_target/"):
                let db = try manager.existingDatabaseNamed("rec_push_target")
                try checkDatabaseInfo(exchange, ours, db)
                instanceStartTime = ours.dict["instance_start_time"] as? String
            case ("GET", let route) where route.contains("/_local/"):
                try checkLocalGet(exchange, ours)
            case ("PUT", let route) where route.contains("/_local/"):
                try checkLocalPut(exchange, ours)
            case ("POST", "/rec_push_target/_revs_diff"), ("POST", "/rec_push_target/_bulk_docs"):
                XCTAssertEqual(jsonDifferences(try XCTUnwrap(exchange.responseJSON), try XCTUnwrap(ours.json)), [], exchange.label)
            case ("PUT", _) where exchange.path.hasSuffix("?new_edits=false"):
                XCTAssertEqual(jsonDifferences(try XCTUnwrap(exchange.responseJSON), try XCTUnwrap(ours.json)), [], exchange.label)
                XCTAssertEqual(ours.header("etag"), exchange.responseHeaders["ETag"], exchange.label)
                XCTAssertEqual(ours.header("location").flatMap(urlPath), exchange.responseHeaders["Location"].flatMap(urlPath))
            case ("POST", "/rec_push_target/_ensure_full_commit"):
                XCTAssertEqual(ours.dict["ok"] as? Bool, true)
                XCTAssertEqual(ours.dict["instance_start_time"] as? String, instanceStartTime, exchange.label)
            default:
                XCTFail("unexpected request \(exchange.label)")
            }
        }

        // Every pushed revision is there with its history, body, tombstone flag and attachments.
        let target = try manager.existingDatabaseNamed("rec_push_target")
        var pushed: [(body: [String: Any], attachments: [String: Data])] = []
        for exchange in exchanges {
            if exchange.route.hasSuffix("/_bulk_docs") {
                let request = try XCTUnwrap(exchange.requestJSON as? [String: Any])
                XCTAssertEqual(request["new_edits"] as? Bool, false)
                for doc in try XCTUnwrap(request["docs"] as? [[String: Any]]) { pushed.append((doc, [:])) }
            } else if exchange.method == "PUT", exchange.path.hasSuffix("?new_edits=false") {
                let parts = try MultipartBody.parts(try XCTUnwrap(exchange.requestBody),
                                                    contentType: try XCTUnwrap(exchange.requestHeaders["Content-Type"]))
                var contents: [String: Data] = [:]
                for part in parts.dropFirst() {
                    var content = Data(part.body)
                    if part.headers["content-encoding"] == "gzip" { content = try CBLDatabase.syncGunzip(content) }
                    contents[try XCTUnwrap(filename(part))] = content
                }
                pushed.append((parts[0].dict, contents))
            }
        }
        XCTAssertEqual(pushed.count, 23)   // doc00…doc19 (doc05 twice: two branches), doc99; doc98 in the second run
        XCTAssertEqual(pushed.filter { !$0.attachments.isEmpty }.count, 3)
        for (body, attachments) in pushed {
            try checkStored(body, attachments: attachments, in: target)
        }

        // The conflict keeps both branches under their common ancestor, 2-bbb… winning.
        let doc05 = try target.syncLeaves(docID: "doc05", withBodies: true)
        XCTAssertEqual(doc05.map(\.revID), ["2-bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", "2-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"])
        XCTAssertEqual(doc05.map { $0.properties?["side"] as? String }, ["b", "a"])
        XCTAssertEqual(try target.syncHistory(docID: "doc05", revID: "2-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa").map(\.revID),
                       ["2-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "1-ada1750335606031d314b18567fbed2f"])
        let conflicts = try get("/rec_push_target/doc05?conflicts=true").dict
        XCTAssertEqual(conflicts["_conflicts"] as? [String], ["2-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"])
        // Tombstones.
        for docID in ["doc10", "doc11"] {
            expectError(try get("/rec_push_target/\(docID)"), 404, "not_found", "deleted")
            XCTAssertEqual(try target.syncWinningRevision(docID: docID)?.deleted, true)
        }
        XCTAssertEqual(target.documentCount, 20)
        XCTAssertEqual(target.syncDeletedDocumentCount, 2)
        // Attachments over HTTP: the bytes CouchDB sent, decoded; the gzip-encoded one too.
        let doc01 = try get("/rec_push_target/doc01/file0")
        XCTAssertEqual(doc01.body.count, 21)
        XCTAssertEqual(doc01.header("content-type"), "text/plain")
        XCTAssertEqual(try get("/rec_push_target/doc02/file1").body.count, 120_000)
        XCTAssertEqual(try get("/rec_push_target/doc03/file2").header("content-type"), "image/png")

        // What arrived gzip-encoded goes back out to a pulling replicator as stored, marked
        // gzip, with the decoded length, as CouchDB sends it.
        let again = try get("/rec_push_target/doc01?revs=true&open_revs=%5B%222-d3863f1f8eeb2b2251c70696509deee3%22%5D&latest=true",
                            headers: ["Accept": "multipart/mixed"])
        let againParts = try MultipartBody.parts(again.body, contentType: try XCTUnwrap(again.header("content-type")))
        let againInner = try XCTUnwrap(againParts.first).subparts()
        XCTAssertEqual(againInner.count, 2)
        let file0 = (againInner.first?.dict["_attachments"] as? [String: Any])?["file0"] as? [String: Any]
        XCTAssertEqual(file0?["length"] as? Int, 21)
        XCTAssertEqual(file0?["encoding"] as? String, "gzip")
        XCTAssertEqual(file0?["follows"] as? Bool, true)
        XCTAssertEqual(againInner.last?.headers["content-encoding"], "gzip")
        XCTAssertEqual(try againInner.last.map { try CBLDatabase.syncGunzip(Data($0.body)) }, Data(doc01.body))

        // The checkpoint: the second run's body, without the `_revisions` CouchDB sent with it.
        let checkpoint = try get("/rec_push_target/_local/fe0b3c1c1dc9328c472da1ecffc10151")
        var expected = try XCTUnwrap(substitute(try XCTUnwrap(exchanges[28].requestJSON)) as? [String: Any])
        expected["_revisions"] = nil
        expected["_rev"] = "2-local"
        XCTAssertEqual(jsonDifferences(expected, checkpoint.dict), [])
        XCTAssertEqual((checkpoint.dict["history"] as? [Any])?.count, 2)
    }

    /// A pushed revision as the target holds it.
    private func checkStored(_ body: [String: Any], attachments: [String: Data], in db: CBLDatabase) throws {
        let docID = try XCTUnwrap(body["_id"] as? String)
        let revID = try XCTUnwrap(body["_rev"] as? String)
        let label = "\(docID) \(revID)"
        let rev = try XCTUnwrap(try db.syncRevision(docID: docID, revID: revID), label)
        XCTAssertEqual(rev.deleted, body["_deleted"] as? Bool ?? false, label)
        let revisions = try XCTUnwrap(body["_revisions"] as? [String: Any])
        XCTAssertEqual(try db.syncHistory(docID: docID, revID: revID).map(\.revID),
                       CBLDatabase.syncHistory(fromRevisions: revisions), label)
        var stored = try XCTUnwrap(rev.properties, label)
        let storedAttachments = stored.removeValue(forKey: "_attachments") as? [String: Any] ?? [:]
        let sent = body.filter { !$0.key.hasPrefix("_") }
        XCTAssertEqual(jsonDifferences(sent, stored), [], label)
        let sentAttachments = body["_attachments"] as? [String: Any] ?? [:]
        XCTAssertEqual(Set(storedAttachments.keys), Set(sentAttachments.keys), label)
        for (name, value) in sentAttachments {
            let sentMeta = try XCTUnwrap(value as? [String: Any])
            let meta = try XCTUnwrap(storedAttachments[name] as? [String: Any], "\(label)/\(name)")
            for key in ["content_type", "revpos", "length"] {
                XCTAssertTrue(jsonEqual(meta[key], sentMeta[key]), "\(label)/\(name).\(key): \(meta[key] ?? "nil")")
            }
            let content = try db.syncAttachmentContent(meta: meta, docID: docID, name: name)
            XCTAssertEqual(content, try XCTUnwrap(attachments[name], "\(label)/\(name) had no part"), "\(label)/\(name)")
        }
    }

    // MARK: Checks shared by both directions

    private func checkDatabaseInfo(_ exchange: RecordedExchange, _ ours: HTTPResult, _ db: CBLDatabase) throws {
        let expected = try XCTUnwrap(exchange.responseJSON as? [String: Any])
        let info = ours.dict
        for key in ["db_name", "doc_count", "doc_del_count", "compact_running"] {
            XCTAssertTrue(jsonEqual(info[key], expected[key]), "\(exchange.label) \(key): \(info[key] ?? "nil")")
        }
        // What the replicator requires (else "db_not_found"), and uses for pending counts.
        XCTAssertNotNil(info["instance_start_time"] as? String, exchange.label)
        XCTAssertEqual(seqNumber(info["update_seq"]), Int(db.lastSequenceNumber), exchange.label)
        if let seq = expected["update_seq"] as? String { learned[seq] = info["update_seq"] }
    }

    private func checkLocalGet(_ exchange: RecordedExchange, _ ours: HTTPResult) throws {
        if exchange.status == 404 {
            XCTAssertEqual(ours.text, String(decoding: exchange.responseBody, as: UTF8.self), exchange.label)
            return
        }
        let expected = try XCTUnwrap(substitute(try XCTUnwrap(exchange.responseJSON)))
        XCTAssertEqual(jsonDifferences(expected, ours.dict), [], exchange.label)
        XCTAssertEqual(ours.header("etag"), "\"\(ours.dict["_rev"] as? String ?? "?")\"")
    }

    private func checkLocalPut(_ exchange: RecordedExchange, _ ours: HTTPResult) throws {
        let expected = try XCTUnwrap(exchange.responseJSON as? [String: Any])
        let rev = try XCTUnwrap(ours.dict["rev"] as? String)
        // 1.x local revisions: `N-local`, where CouchDB writes `0-N`.
        let couchRev = try XCTUnwrap(expected["rev"] as? String)
        XCTAssertEqual(rev, "\(couchRev.dropFirst(2))-local", exchange.label)
        learned[couchRev] = rev
        XCTAssertEqual(jsonDifferences(expected, ours.dict, opaque: ["rev"]), [], exchange.label)
        XCTAssertEqual(ours.header("etag"), "\"\(rev)\"")
        XCTAssertEqual(ours.header("location").flatMap(urlPath), exchange.responseHeaders["Location"].flatMap(urlPath))
    }

    private func checkChanges(_ exchange: RecordedExchange, _ ours: HTTPResult) throws {
        let expected = try XCTUnwrap(exchange.responseJSON as? [String: Any])
        let expectedRows = try XCTUnwrap(expected["results"] as? [[String: Any]])
        let rows = try XCTUnwrap(ours.dict["results"] as? [[String: Any]], ours.text)
        // Same documents in the same order, the same leaves (winner first), the same deletions.
        XCTAssertEqual(rows.compactMap { $0["id"] as? String }, expectedRows.compactMap { $0["id"] as? String }, exchange.label)
        for (row, expectedRow) in zip(rows, expectedRows) {
            XCTAssertEqual(jsonDifferences(expectedRow, row, opaque: ["seq"]), [], exchange.label)
            XCTAssertNotNil(seqNumber(row["seq"]))
            if let seq = expectedRow["seq"] as? String { learned[seq] = row["seq"] }
        }
        let lastSeq = try XCTUnwrap(seqNumber(ours.dict["last_seq"]))
        XCTAssertEqual(lastSeq, seqNumber(rows.last?["seq"]))
        learned[try XCTUnwrap(expected["last_seq"] as? String)] = lastSeq
    }

    /// `GET …?revs=true&open_revs=["rev"]&latest=true` with `Accept: multipart/mixed`: one
    /// `multipart/related` part per revision, its JSON then one part per attachment body.
    private func checkOpenRevs(_ exchange: RecordedExchange, _ ours: HTTPResult) throws {
        let contentType = try XCTUnwrap(ours.header("content-type"))
        XCTAssertTrue(contentType.hasPrefix("multipart/mixed; boundary=\""), contentType)
        let expectedParts = try MultipartBody.parts(exchange.responseBody, contentType: try XCTUnwrap(exchange.responseHeaders["Content-Type"]))
        let parts = try MultipartBody.parts(ours.body, contentType: contentType)
        XCTAssertEqual(parts.count, expectedParts.count, exchange.label)
        for (part, expectedPart) in zip(parts, expectedParts) {
            let type = try XCTUnwrap(part.contentType)
            XCTAssertTrue(type.hasPrefix("multipart/related; boundary=\""), type)
            let inner = try part.subparts(), expectedInner = try expectedPart.subparts()
            XCTAssertEqual(inner.count, expectedInner.count, exchange.label)
            XCTAssertEqual(inner.first?.contentType, "application/json")

            // The JSON: CouchDB's members and values; gzip transfer and digests aside.
            var expectedDoc = try XCTUnwrap(expectedInner.first?.dict)
            var expectedAttachments = try XCTUnwrap(expectedDoc["_attachments"] as? [String: Any])
            for (name, value) in expectedAttachments {
                var meta = try XCTUnwrap(value as? [String: Any])
                XCTAssertEqual(meta["follows"] as? Bool, true)
                meta["encoding"] = nil
                meta["encoded_length"] = nil
                expectedAttachments[name] = meta
            }
            expectedDoc["_attachments"] = expectedAttachments
            var doc = try XCTUnwrap(inner.first?.dict)
            let sent = doc["_attachments"] as? [String: Any] ?? [:]
            doc["_attachments"] = sent.mapValues { value -> Any in
                var meta = value as? [String: Any] ?? [:]
                meta["encoding"] = nil
                meta["encoded_length"] = nil
                return meta
            }
            XCTAssertEqual(jsonDifferences(expectedDoc, doc, opaque: ["digest"]), [], exchange.label)

            // The attachment parts: same headers; the bytes as stored (gzip ones marked so, as
            // CouchDB sends them), decoded lengths, and `md5-` digests of the bytes sent.
            let recorded = try recordedAttachments(exchange)
            for (attachment, (name, content, expectedAttachment)) in zip(inner.dropFirst(), recorded) {
                XCTAssertEqual(attachment.headers["content-disposition"], expectedAttachment.headers["content-disposition"])
                XCTAssertEqual(attachment.headers["content-type"], expectedAttachment.headers["content-type"])
                XCTAssertEqual(attachment.headers["content-length"], String(attachment.body.count), name)
                XCTAssertEqual(expectedAttachment.headers["content-length"], String(expectedAttachment.body.count), name)
                let meta = try XCTUnwrap(sent[name] as? [String: Any])
                var body = Data(attachment.body)
                if attachment.headers["content-encoding"] == "gzip" {
                    XCTAssertEqual(meta["encoding"] as? String, "gzip", name)
                    XCTAssertEqual(meta["encoded_length"] as? Int, body.count, name)
                    body = try CBLDatabase.syncGunzip(body)
                } else {
                    XCTAssertNil(meta["encoding"], name)
                }
                XCTAssertEqual(body, content, name)
                XCTAssertEqual(meta["length"] as? Int, content.count, name)
                XCTAssertEqual(meta["digest"] as? String,
                               "md5-" + Data(Insecure.MD5.hash(data: Data(attachment.body))).base64EncodedString(), name)
            }
        }
    }

    // MARK: Helpers

    /// Sends a recorded request with its headers (`Accept`, `Content-Type`).
    private func send(_ exchange: RecordedExchange, path: String? = nil, body: [UInt8]? = nil) throws -> HTTPResult {
        try client.send(exchange.method, path ?? exchange.path, headers: exchange.requestHeaders,
                        body: body ?? exchange.requestBody, timeout: 30)
    }

    /// Replaces CouchDB's sequences and `_local` revisions by ours; `_revisions` of a `_local`
    /// body is what the replicator derives from our revision (`couch_doc:to_json_obj`).
    private func substitute(_ value: Any) -> Any? {
        switch value {
        case let s as String: return learned[s] ?? s
        case let array as [Any]: return array.map { substitute($0) ?? NSNull() }
        case let dict as [String: Any]:
            var out: [String: Any] = [:]
            for (key, v) in dict { out[key] = substitute(v) }
            if dict["_revisions"] != nil, let rev = out["_rev"] as? String, let dash = rev.firstIndex(of: "-") {
                out["_revisions"] = ["start": Int(rev[..<dash]) ?? 0, "ids": [String(rev[rev.index(after: dash)...])]]
            }
            return out
        default: return value
        }
    }

    private func query(_ path: String) -> [String: String] {
        var out: [String: String] = [:]
        for pair in (path.split(separator: "?", maxSplits: 1).dropFirst().first ?? "").split(separator: "&") {
            let kv = pair.split(separator: "=", maxSplits: 1)
            out[String(kv[0])] = kv.count > 1 ? String(kv[1]).removingPercentEncoding : ""
        }
        return out
    }

    /// The path of an absolute URL as sent (`%2F` kept).
    private func urlPath(_ url: String) -> String? {
        let pieces = url.split(separator: "/", maxSplits: 3, omittingEmptySubsequences: false)   // "http:", "", host, path
        return pieces.count == 4 ? "/" + pieces[3] : nil
    }
}
