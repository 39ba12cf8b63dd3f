import CouchbaseLite
import Foundation
import JSONCore

/// `/{db}`, `_all_docs`, `_bulk_docs`, `_bulk_get`, `_revs_diff`, `_purge`, `_compact`.
extension RESTRouter {
    func databaseRoot(_ name: String, _ request: RESTRequest) throws -> RESTResponse {
        switch request.method {
        case "PUT":
            guard CBLManager.isValidDatabaseName(name) else {
                throw RESTError(400, "illegal_database_name", Self.illegalNameReason(name))
            }
            if manager.databaseExistsNamed(name) {
                throw RESTError(412, "file_exists", "The database could not be created, the file already exists.")
            }
            _ = try manager.databaseNamed(name)
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
            state.wakeAll()
            return .json(200, ["ok": true])
        case "POST":
            let db = try openDatabase(name)
            try requireJSONBody(request)
            let body = try JSONText.parseObject(request.body, what: "Document")
            let docID = (body["_id"] as? String) ?? CBLDatabase.syncGenerateDocumentID()
            if body["_id"] != nil && !(body["_id"] is String) { throw RESTError(400, "bad_request", "Document id must be a string") }
            let (revID, status) = try saveDocument(db, docID: docID, body: body, request: request)
            return .json(status, ["ok": true, "id": docID, "rev": revID],
                         headers: [("Location", state.absoluteURL(request, path: [name, docID])), ("ETag", "\"\(revID)\"")])
        default:
            throw RESTError.methodNotAllowed("GET,HEAD,PUT,POST,DELETE")
        }
    }

    func databaseInfo(_ db: CBLDatabase) -> [String: Any] {
        let seq = Int(db.lastSequenceNumber)
        let size = Int(db.syncDiskSize)
        return [
            "db_name": db.name,
            "doc_count": Int(db.documentCount),
            "doc_del_count": Int(db.syncDeletedDocumentCount),
            "update_seq": seq,
            "committed_update_seq": seq,
            "purge_seq": 0,
            "disk_size": size,
            "sizes": ["file": size, "active": size, "external": size],
            "data_size": size,
            "instance_start_time": state.instanceStartTime,
            "disk_format_version": 102,
            "compact_running": false,
        ]
    }

    // MARK: _all_docs

    func allDocs(_ db: CBLDatabase, _ request: RESTRequest, prefix: String? = nil) throws -> RESTResponse {
        try requireMethod(request, "GET", "POST")
        let (_, q, keys) = try rowQueryParameters(request)
        let query = db.createAllDocumentsQuery()
        let includeDocs = try q.bool("include_docs")
        let conflicts = try q.bool("conflicts")
        query.prefetch = includeDocs
        let skip = try applyRowOptions(q, keys: keys, to: query)
        if try q.bool("only_conflicts") {
            query.allDocsMode = .onlyConflicts
        } else if conflicts {
            query.allDocsMode = .showConflicts
        }
        if let prefix, keys == nil {
            if query.startKey == nil || (query.startKey as? String).map({ $0 < prefix }) == true { query.startKey = prefix }
            let end = prefix + "\u{FFFF}"
            if query.endKey == nil || (query.endKey as? String).map({ $0 > end }) == true { query.endKey = end }
            if query.descending { swap(&query.startKey, &query.endKey) }
        }
        let result = try query.run()
        // CouchDB's offset counts the rows before the start key (and those skipped).
        var offset = skip
        if keys == nil, prefix == nil, let start = query.startKey {
            let before = db.createAllDocumentsQuery()
            before.descending = query.descending
            before.allDocsMode = query.allDocsMode
            before.endKey = start
            before.inclusiveEnd = false
            offset += Int(try before.run().count)
        }
        var rows: [Any] = []
        for row in result {
            let key = row.key ?? NSNull()
            guard let docID = row.sourceDocumentID, let value = row.value as? [String: Any] else {
                rows.append(["key": key, "error": "not_found"])
                continue
            }
            if let prefix, !docID.hasPrefix(prefix) { continue }
            var out: [String: Any] = ["id": docID, "key": key, "value": value]
            if includeDocs {
                if value["deleted"] as? Bool == true {
                    out["doc"] = NSNull()
                } else if var doc = row.documentProperties {
                    if conflicts, let leaves = value["_conflicts"] as? [String] {
                        let others = leaves.filter { $0 != value["rev"] as? String }
                        if !others.isEmpty { doc["_conflicts"] = others }
                    }
                    out["doc"] = doc
                }
            }
            rows.append(out)
        }
        var response: [String: Any] = [
            "total_rows": Int(db.documentCount),
            "offset": keys == nil ? offset as Any : NSNull(),
            "rows": rows,
        ]
        if try q.bool("update_seq") { response["update_seq"] = Int(result.sequenceNumber) }
        return .json(200, response)
    }

    // MARK: _bulk_docs

    func bulkDocs(_ db: CBLDatabase, _ request: RESTRequest) throws -> RESTResponse {
        try requireMethod(request, "POST")
        try requireJSONBody(request)
        let body = try JSONText.parseObject(request.body)
        guard let docs = body["docs"] as? [Any] else {
            throw RESTError(400, "bad_request", "POST body must include `docs` parameter.")
        }
        if body["all_or_nothing"] as? Bool == true {
            throw RESTError(501, "not_implemented", "all_or_nothing is not supported: each document is saved on its own")
        }
        let newEdits = try (body["new_edits"] as? Bool) ?? (QueryParams(values: request.query).bool("new_edits", default: true))
        var results: [Any] = []
        db.inTransaction {
            for item in docs {
                guard let doc = item as? [String: Any] else {
                    results.append(["error": "bad_request", "reason": "Document must be a JSON object"])
                    continue
                }
                let docID = (doc["_id"] as? String) ?? (newEdits ? CBLDatabase.syncGenerateDocumentID() : "")
                do {
                    if newEdits {
                        let (revID, _) = try saveDocument(db, docID: docID, body: doc, request: nil)
                        results.append(["ok": true, "id": docID, "rev": revID])
                    } else {
                        try insertWithHistory(db, docID: docID, body: doc)
                    }
                } catch {
                    let e = RESTError.from(error)
                    var entry: [String: Any] = ["id": docID, "error": e.error, "reason": e.reason]
                    if !newEdits, let rev = doc["_rev"] as? String { entry["rev"] = rev }
                    results.append(entry)
                }
            }
            return true
        }
        return .json(201, results)
    }

    // MARK: _bulk_get

    func bulkGet(_ db: CBLDatabase, _ request: RESTRequest) throws -> RESTResponse {
        try requireMethod(request, "POST")
        try requireJSONBody(request)
        let body = try JSONText.parseObject(request.body)
        guard let docs = body["docs"] as? [Any] else {
            throw RESTError(400, "bad_request", "Missing JSON list of 'docs'.")
        }
        let q = QueryParams(values: request.query)
        var queryOptions = try DocumentOptions(q)
        queryOptions.encodedAttachmentParts = request.acceptsGzipParts
        let latest = try q.bool("latest")
        // As CouchDB: JSON for a client that accepts it, multipart only for one that asks for
        // nothing else (1.x pullers: `multipart/related`; PouchDB: `multipart/mixed`).
        let multipart = !request.accepts("application/json")
            && (request.accepts("multipart/mixed") || request.accepts("multipart/related"))
        var results: [Any] = []
        var parts: [MultipartPart] = []
        for item in docs {
            guard let spec = item as? [String: Any], let docID = spec["id"] as? String else {
                let error: [String: Any] = ["id": NSNull(), "rev": NSNull(), "error": "bad_request",
                                            "reason": "Each doc needs an `id`"]
                results.append(["id": NSNull(), "docs": [["error": error]]])
                if multipart { parts.append(Self.errorPart(error)) }
                continue
            }
            let revID = spec["rev"] as? String
            var options = queryOptions
            // A non-empty `atts_since` asks for the attachments newer than those revisions; an
            // empty one (what CouchDB's replicator sends, with `attachments=false`) asks nothing.
            if let since = spec["atts_since"] as? [String], !since.isEmpty {
                options.attsSince = since
                options.attachments = true
            }
            func failure(_ rev: String?, _ error: String, _ reason: String) -> [String: Any] {
                ["error": ["id": docID, "rev": rev ?? "undefined", "error": error, "reason": reason]]
            }
            // Each entry is `{"ok":doc}` or `{"error":…}`; in multipart form, each is a part.
            var entries: [[String: Any]] = []
            var entryParts: [MultipartPart] = []
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
                        entryParts.append(try documentPart(db, doc: doc, rev: rev,
                                                           relatedHeaders: [("X-Doc-Id", docID), ("X-Rev-Id", rev.revID)]))
                    } else {
                        entries.append(["ok": try documentJSON(db, rev, options)])
                    }
                }
            } catch {
                let e = RESTError.from(error)
                entries = [failure(revID, e.error, e.reason)]
                entryParts = []
            }
            if multipart {
                parts += entryParts
                for entry in entries {
                    if let error = entry["error"] as? [String: Any] { parts.append(Self.errorPart(error)) }
                }
            }
            results.append(["id": docID, "docs": entries])
        }
        if multipart {
            return MultipartWriter.response(subtype: request.accepts("multipart/mixed") ? "mixed" : "related", parts: parts)
        }
        return .json(200, ["results": results])
    }

    // MARK: _revs_diff

    func revsDiff(_ db: CBLDatabase, _ request: RESTRequest) throws -> RESTResponse {
        try requireMethod(request, "POST")
        try requireJSONBody(request)
        let body = try JSONText.parseObject(request.body)
        var asked: [String: [String]] = [:]
        for (docID, value) in body {
            guard let revs = value as? [Any], revs.allSatisfy({ $0 is String }) else {
                throw RESTError(400, "bad_request", "Revisions of '\(docID)' must be an array of strings")
            }
            asked[docID] = revs as? [String]
        }
        let diff = try db.syncRevsDiff(asked)
        var out: [String: Any] = [:]
        for (docID, d) in diff {
            var entry: [String: Any] = ["missing": d.missing]
            if !d.possibleAncestors.isEmpty { entry["possible_ancestors"] = d.possibleAncestors }
            out[docID] = entry
        }
        return .json(200, out)
    }

    // MARK: _purge, _compact

    func purge(_ db: CBLDatabase, _ request: RESTRequest) throws -> RESTResponse {
        try requireMethod(request, "POST")
        try requireJSONBody(request)
        let body = try JSONText.parseObject(request.body)
        var purged: [String: Any] = [:]
        for (docID, value) in body {
            guard let revs = value as? [Any], let revIDs = revs as? [String] else {
                throw RESTError(400, "bad_request", "Revisions of '\(docID)' must be an array of strings")
            }
            purged[docID] = try db.syncPurge(docID: docID, revIDs: revIDs)
        }
        return .json(201, ["purge_seq": NSNull(), "purged": purged])
    }

    func compact(_ db: CBLDatabase, _ request: RESTRequest) throws -> RESTResponse {
        try requireMethod(request, "POST")
        try requireJSONBody(request)
        try db.compact()
        return .json(202, ["ok": true])
    }
}
