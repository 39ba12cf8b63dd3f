import CouchbaseLite
import Foundation
import JSONCore

/// `/{db}`, `_revs_limit`, `_bulk_docs`, `_bulk_get`, `_revs_diff`, `_purge`, `_compact`.
extension RESTRouter {
    func databaseRoot(_ name: String, _ request: RESTRequest) throws -> RESTResponse {
        switch request.method {
        case "PUT":
            guard CBLManager.isServableDatabaseName(name) else {
                throw RESTError(400, "illegal_database_name", Self.illegalNameReason(name))
            }
            if manager.databaseExistsNamed(name) {
                throw RESTError(412, "file_exists", "The database could not be created, the file already exists.")
            }
            let created = try manager.databaseNamed(name)
            state.forgetDatabase(name)
            if name == state.configuration.authenticationDatabase { try prepareAuthenticationDatabase(created, creating: true) }
            return .json(201, ["ok": true], headers: [("Location", state.absoluteURL(request, path: [name]))])
        case "GET", "HEAD":
            let db = try openDatabase(name)
            return .json(200, databaseInfo(db))
        case "DELETE":
            if request.query["rev"] != nil {
                throw RESTError(400, "bad_request",
                                "You tried to DELETE a database with a ?=rev parameter. Did you mean to DELETE a document instead?")
            }
            let db = try openDatabase(name)
            try db.delete()
            state.forgetDatabase(name)
            state.wakeAll()
            return .json(200, ["ok": true])
        case "POST":
            let db = try openDatabase(name)
            try requireJSONBody(request)
            let body = try JSONText.parseObject(request.body, what: "Document")
            if let id = body["_id"] { try Self.validateDocumentID(id) }
            let docID = (body["_id"] as? String) ?? state.newUUID()
            if request.query["batch"] == "ok" { return try batchSave(db, docID: docID, body: body) }
            let (revID, status) = try saveDocument(db, docID: docID, body: body, request: request,
                                                   memberOrder: JSONMemberOrder.unsorted(in: request.body))
            return .json(status, ["ok": true, "id": docID, "rev": revID],
                         headers: [("Location", state.absoluteURL(request, path: [name, docID])), ("ETag", "\"\(revID)\"")])
        default:
            throw RESTError.methodNotAllowed("GET,HEAD,PUT,POST,DELETE")
        }
    }

    func databaseInfo(_ db: CBLDatabase) -> [String: Any] {
        let seq = state.sequenceValue(db.lastSequenceNumber)
        let sizes = db.syncDataSizes
        return [
            "db_name": db.name,
            "doc_count": Int(db.documentCount),
            "doc_del_count": Int(db.syncDeletedDocumentCount),
            "update_seq": seq,
            "committed_update_seq": seq,
            // A string like update_seq in CouchDB 3 (a number with --integer-sequences).
            "purge_seq": state.sequenceValue(Int64(db.purgeSequence)),
            "disk_size": Int(sizes.file),
            "sizes": ["file": Int(sizes.file), "active": Int(sizes.active), "external": Int(sizes.external)],
            "data_size": Int(sizes.active),
            // As `_ensure_full_commit` answers (CouchDB 2.x–3.3 always said "0"): a replicator
            // compares the two to notice a restarted database, and takes "0" as "unchanged".
            "instance_start_time": "0",
            "disk_format_version": 102,
            "compact_running": false,
        ]
    }

    // MARK: _revs_limit

    /// `GET|PUT /{db}/_revs_limit`: how many generations of history each document keeps, which
    /// 1.x stores as `maxRevTreeDepth` (`info.max_revs`) and prunes to on every edit.
    func revsLimit(_ db: CBLDatabase, _ request: RESTRequest) throws -> RESTResponse {
        switch request.method {
        case "GET", "HEAD":
            return .json(200, Int(db.maxRevTreeDepth))
        case "PUT":
            guard let limit = try JSONText.parse(request.body) as? Int, limit > 0 else {
                throw RESTError(400, "bad_request", "Rev limit has to be an integer")
            }
            db.maxRevTreeDepth = UInt(limit)
            return .json(200, ["ok": true])
        default:
            throw RESTError.methodNotAllowed("PUT,GET")
        }
    }

    // MARK: _purged_infos_limit

    /// `GET|PUT /{db}/_purged_infos_limit`: how many purges CouchDB keeps for its replicas
    /// (default 1000). Stored in the database's `info` table and reported; a 1.x file keeps no
    /// purge history for it to trim.
    func purgedInfosLimit(_ db: CBLDatabase, _ request: RESTRequest) throws -> RESTResponse {
        switch request.method {
        case "GET", "HEAD":
            return .json(200, db.purgedInfosLimit)
        case "PUT":
            guard let limit = try? JSONText.parse(request.body) as? Int, limit > 0 else {
                throw RESTError(400, "bad_request", "`purged_infos_limit` must be positive integer")
            }
            db.purgedInfosLimit = limit
            return .json(200, ["ok": true])
        default:
            throw RESTError.methodNotAllowed("GET,PUT")
        }
    }

    // MARK: _bulk_docs

    /// `POST /{db}/_bulk_docs`. Every document is checked (ID, special members, `_rev`) before
    /// any is saved, and a bad one fails the whole request, as in CouchDB. `_local/` documents
    /// are saved as local documents. `all_or_nothing: true` (with `new_edits` true) saves
    /// nothing and answers `417`, each document refused as `not_implemented`, as CouchDB 3 answers.
    func bulkDocs(_ db: CBLDatabase, _ request: RESTRequest) throws -> RESTResponse {
        try requireJSONBody(request)
        // Read once, typed: each document keeps its members in the order the request lists them.
        let body = try JSONText.object(request.body)
        guard let docsValue = body["docs"] else {
            throw RESTError(400, "bad_request", "POST body must include `docs` parameter.")
        }
        guard case .array(let docs) = docsValue else {
            throw RESTError(400, "bad_request", "`docs` parameter must be an array.")
        }
        let newEdits: Bool
        switch body["new_edits"] {
        case nil: newEdits = try QueryParams(values: request.query).bool("new_edits", default: true)
        case .bool(let flag)?: newEdits = flag
        default: throw RESTError(400, "bad_request", "`new_edits` parameter must be a boolean.")
        }
        let allOrNothing = body["all_or_nothing"]?.boolValue == true
        var bodies: [JSONObject] = []
        for item in docs {
            guard case .object(let doc) = item else {
                throw RESTError(400, "bad_request", "Document must be a JSON object")
            }
            if let id = doc["_id"] { try Self.validateDocumentID(id.foundation) }
            try checkDocumentSize(doc)
            bodies.append(doc)
        }

        if allOrNothing && newEdits && !bodies.isEmpty {
            // CouchDB 3's fabric refuses the option for every document (its entry names the
            // document's `_rev`, or "0-" for none) and saves none of them.
            return Self.typedJSON(417, .array(bodies.map { doc in
                ["id": .string(doc["_id"]?.stringValue ?? CBLDatabase.syncGenerateDocumentID()),
                 "rev": .string(doc["_rev"]?.stringValue ?? "0-"),
                 "error": "not_implemented", "reason": "all_or_nothing is not supported"]
            }))
        }

        var results: [JSONValue] = []
        db.inTransaction {
            for doc in bodies {
                let docID = doc["_id"]?.stringValue ?? (newEdits ? self.state.newUUID() : "")
                do {
                    if docID.hasPrefix("_local/") {
                        let rev = try self.saveLocalDocument(db, docID: docID, body: doc.foundation)
                        results.append(["ok": true, "id": .string(docID), "rev": .string(rev)])
                    } else if newEdits {
                        let (revID, _) = try self.saveDocument(db, docID: docID, body: doc.foundation, request: nil,
                                                               memberOrder: JSONMemberOrder(unsortedIn: .object(doc)))
                        results.append(["ok": true, "id": .string(docID), "rev": .string(revID)])
                    } else {
                        try self.insertWithHistory(db, docID: docID, body: doc)
                    }
                } catch {
                    let e = RESTError.from(error)
                    var entry: JSONObject = ["id": .string(docID), "error": .string(e.error), "reason": .string(e.reason)]
                    if !newEdits, let rev = doc["_rev"]?.stringValue { entry["rev"] = .string(rev) }
                    results.append(.object(entry))
                }
            }
            return true
        }
        return Self.typedJSON(201, .array(results))
    }

    /// A `_local/` document of a `_bulk_docs` request: written, or deleted (`_deleted`, CouchDB's
    /// revision `0-0`); a stale or unknown `_rev` is a conflict, as for `PUT /{db}/_local/{id}`.
    func saveLocalDocument(_ db: CBLDatabase, docID: String, body: [String: Any]) throws -> String {
        let prevRevID = body["_rev"] as? String
        do {
            if body["_deleted"] as? Bool == true {
                try db.syncDeleteLocalDocument(withID: docID, revID: prevRevID)
                return "0-0"
            }
            let props = body.filter { !["_id", "_rev", "_deleted"].contains($0.key) }
            return try db.syncPutLocalDocument(props, withID: docID, prevRevID: prevRevID)
        } catch let e as CBLError where e.code == 404 {
            throw RESTError.conflict
        }
    }

    // MARK: _bulk_get

    /// One entry of a `_bulk_get` request: a document, optionally a revision and `atts_since`.
    struct BulkGetRequestItem: Sendable {
        var docID: String?
        var revID: String?
        var attsSince: [String]?
    }

    /// `POST /{db}/_bulk_get`: JSON streamed one result at a time, or multipart for a client
    /// that accepts nothing else.
    func bulkGet(_ db: CBLDatabase, _ request: RESTRequest) throws -> RESTOutcome {
        try requireJSONBody(request)
        let body = try JSONText.parseObject(request.body)
        guard let docs = body["docs"] as? [Any] else {
            throw RESTError(400, "bad_request", "Missing JSON list of 'docs'.")
        }
        let items = docs.map { item -> BulkGetRequestItem in
            guard let spec = item as? [String: Any], let docID = spec["id"] as? String else { return BulkGetRequestItem() }
            return BulkGetRequestItem(docID: docID, revID: spec["rev"] as? String, attsSince: spec["atts_since"] as? [String])
        }
        let q = QueryParams(values: request.query)
        var queryOptions = try DocumentOptions(q)
        let latest = try q.bool("latest")
        // As CouchDB: JSON for a client that accepts it, multipart only for one that asks for
        // nothing else (1.x pullers: `multipart/related`; PouchDB: `multipart/mixed`).
        let multipart = !request.accepts("application/json")
            && (request.accepts("multipart/mixed") || request.accepts("multipart/related"))
        if multipart {
            var parts: [MultipartPart] = []
            for item in items {
                parts += bulkGetEntry(db, item, queryOptions, latest: latest, multipart: true).parts
            }
            return .response(MultipartWriter.response(subtype: request.accepts("multipart/mixed") ? "mixed" : "related",
                                                      parts: parts))
        }
        let options = queryOptions
        return .response(RESTResponse(
            status: 200, headers: [("Content-Type", "application/json"), ("Cache-Control", "must-revalidate")],
            stream: .json(head: BulkGetResult.answerPrefix, items: items, separator: [UInt8(ascii: ",")],
                          tail: BulkGetResult.answerSuffix + [0x0A]) { item, writer in
                self.bulkGetEntry(db, item, options, latest: latest, multipart: false).result.encode(into: &writer)
            }))
    }

    /// What one `_bulk_get` request entry answers: its result (`{"ok":doc}` or `{"error":…}`
    /// per revision), and in multipart form one part per revision or error.
    func bulkGetEntry(_ db: CBLDatabase, _ item: BulkGetRequestItem, _ queryOptions: DocumentOptions, latest: Bool,
                      multipart: Bool) -> (result: BulkGetResult, parts: [MultipartPart]) {
        guard let docID = item.docID else {
            let failure = BulkGetResult.Failure(docID: nil, revID: nil, error: "bad_request", reason: "Each doc needs an `id`")
            return (BulkGetResult(docID: nil, docs: [.failure(failure)]), multipart ? [Self.errorPart(failure)] : [])
        }
        let revID = item.revID
        var options = queryOptions
        // A non-empty `atts_since` asks for the attachments newer than those revisions; an
        // empty one (what CouchDB's replicator sends, with `attachments=false`) asks nothing.
        if let since = item.attsSince, !since.isEmpty {
            options.attsSince = since
            options.attachments = true
        }
        func failure(_ rev: String?, _ error: String, _ reason: String) -> BulkGetResult.Entry {
            .failure(BulkGetResult.Failure(docID: docID, revID: rev ?? "undefined", error: error, reason: reason))
        }
        var entries: [BulkGetResult.Entry] = []
        var parts: [MultipartPart] = []
        do {
            var revisions: [SyncRevision] = []
            if let revID {
                for resolved in try openRevisions(db, docID: docID, revIDs: [revID], latest: latest) {
                    switch resolved {
                    case .found(let rev): revisions.append(rev)
                    case .missing(let missing): entries.append(failure(missing, "not_found", "missing"))
                    }
                }
            } else {
                // No `rev`: the winner, as 1.x answered (CouchDB would list every leaf).
                let winner = try db.syncWinningRevision(docID: docID)
                if let winner, !winner.deleted, winner.body != nil {
                    revisions.append(winner)
                } else {
                    entries.append(failure(nil, "not_found", winner?.deleted == true ? "deleted" : "missing"))
                }
            }
            for rev in revisions {
                if multipart {
                    let doc = try documentJSON(db, rev, options, followsAttachments: true)
                    parts.append(try documentPart(db, doc: doc, rev: rev,
                                                  relatedHeaders: [("X-Doc-Id", docID), ("X-Rev-Id", rev.revID)]))
                } else {
                    entries.append(.encodedRevision(JSONText.bytes(try documentJSON(db, rev, options))))
                }
            }
        } catch {
            let e = RESTError.from(error)
            entries = [failure(revID, e.error, e.reason)]
            parts = []
        }
        if multipart {
            for case .failure(let failure) in entries { parts.append(Self.errorPart(failure)) }
        }
        return (BulkGetResult(docID: docID, docs: entries), parts)
    }

    // MARK: _revs_diff

    func revsDiff(_ db: CBLDatabase, _ request: RESTRequest) throws -> RESTResponse {
        try requireJSONBody(request)
        let offers: [RevsDiff.Offer]
        do {
            offers = try RevsDiff.decodeRequest(json: try JSONText.object(request.body))
        } catch let e as CBLError {
            throw RESTError(400, "bad_request", e.message)
        }
        let answer = try db.syncRevsDiff(offers)
        return Self.encodedJSON(200, RevsDiff.encodeAnswer(answer))
    }

    /// A JSON response whose body a protocol message wrote (as `RESTResponse.json` would).
    static func encodedJSON(_ status: Int, _ body: [UInt8]) -> RESTResponse {
        .json(status, encoded: body)
    }

    // MARK: _purge, _compact

    /// `POST /{db}/_purge`: `{docID: [revID…]}`, every entry checked before any is purged. The
    /// answer lists, per document, the named leaves purged; `purge_seq` is null in CouchDB 3's
    /// answer (the database info has the advanced sequence). `["*"]` (1.x's form) purges the
    /// whole document.
    func purge(_ db: CBLDatabase, _ request: RESTRequest) throws -> RESTResponse {
        try requireJSONBody(request)
        let body = try JSONText.parseObject(request.body)
        var requests: [(docID: String, revIDs: [String])] = []
        for (docID, value) in body {
            guard let revIDs = value as? [String] else {
                throw RESTError(400, "bad_request", "Invalid list of revisions")
            }
            if revIDs != ["*"], revIDs.contains(where: { CBLDatabase.syncGeneration($0) == 0 }) { throw RESTError.badRev }
            requests.append((docID, revIDs))
        }
        let results = try db.syncPurge(requests)
        var purged: [String: Any] = [:]
        for (request, revIDs) in zip(requests, results) { purged[request.docID] = revIDs }
        return .json(201, ["purge_seq": NSNull(), "purged": purged])
    }

    func compact(_ db: CBLDatabase, _ request: RESTRequest) throws -> RESTResponse {
        try requireJSONBody(request)
        try db.compact()
        return .json(202, ["ok": true])
    }
}
