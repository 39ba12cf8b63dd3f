import CouchbaseLite
import Foundation
import JSONCore

/// Options that shape a document body (`GET /{db}/{doc}`, `_bulk_get`, `open_revs`).
typealias DocumentOptions = SyncBodyOptions

extension SyncBodyOptions {
    init(_ q: QueryParams) throws {
        self.init()
        revs = try q.bool("revs")
        revsInfo = try q.bool("revs_info")
        conflicts = try q.bool("conflicts")
        deletedConflicts = try q.bool("deleted_conflicts")
        localSeq = try q.bool("local_seq")
        attachments = try q.bool("attachments")
        revsLimit = try q.int("revs_limit")
        if let since = try q.json("atts_since", lenient: false) {
            guard let list = since as? [String] else { throw RESTError.queryParse("atts_since must be an array of revision IDs") }
            attsSince = list
            // CouchDB: asking which attachments are newer than some revisions asks for them.
            attachments = true
        }
        if let from = try q.json("revs_from", lenient: false) {
            guard let list = from as? [String] else { throw RESTError.queryParse("revs_from must be an array of revision IDs") }
            revsFrom = list
        }
        if try q.bool("meta") {
            revsInfo = true
            conflicts = true
            deletedConflicts = true
        }
    }
}

/// The special members a document body may carry (anything else starting with `_` is refused).
let allowedSpecialMembers: Set<String> = [
    "_id", "_rev", "_deleted", "_attachments", "_revisions", "_revs_info", "_conflicts",
    "_deleted_conflicts", "_local_seq", "_removed",
]

extension RESTRouter {
    // MARK: Building document bodies

    /// A revision as CouchDB returns it (see ``CBLDatabase/syncDocumentBody(_:_:followsAttachments:)``).
    func documentJSON(_ db: CBLDatabase, _ rev: SyncRevision, _ options: DocumentOptions,
                      followsAttachments: Bool = false) throws -> [String: Any] {
        try db.syncDocumentBody(rev, options, followsAttachments: followsAttachments)
    }

    /// The decoded content of an attachment described by stored metadata.
    func attachmentContent(_ db: CBLDatabase, meta: [String: Any], docID: String, name: String) throws -> Data {
        try db.syncAttachmentContent(meta: meta, docID: docID, name: name)
    }

    // MARK: Saving

    /// Checks the ID and special members of a body about to be saved.
    func validateForSave(docID: String, body: [String: Any]) throws {
        guard !docID.isEmpty else { throw RESTError(400, "bad_request", "Document id must not be empty") }
        guard CBLDatabase.syncIsValidDocumentID(docID) else { throw RESTError.illegalDocID }
        for key in body.keys where key.hasPrefix("_") && !allowedSpecialMembers.contains(key) {
            throw RESTError(400, "doc_validation", "Bad special document member: \(key)")
        }
        if let rev = body["_rev"], !(rev is String) || CBLDatabase.syncGeneration(rev as! String) == 0 {
            throw RESTError.badRev
        }
        if let atts = body["_attachments"], !(atts is [String: Any]) {
            throw RESTError(400, "bad_request", "_attachments must be a JSON object")
        }
    }

    /// A local edit (new_edits=true): the parent comes from `_rev`, `?rev=` or `If-Match`.
    /// Returns the new revision ID and the status to answer (201, or 202 with `batch=ok`).
    func saveDocument(_ db: CBLDatabase, docID: String, body: [String: Any],
                      request: RESTRequest?) throws -> (String, Int) {
        try validateForSave(docID: docID, body: body)
        var prevRevID = body["_rev"] as? String
        if let request {
            let fromQuery = request.query["rev"] ?? request.header("if-match").map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "\" ")) }
            if let fromQuery {
                guard CBLDatabase.syncGeneration(fromQuery) > 0 else { throw RESTError.badRev }
                if let prevRevID, prevRevID != fromQuery {
                    throw RESTError(400, "bad_request", "Document rev from request body and query string have different values")
                }
                prevRevID = fromQuery
            }
        }
        let deleting = body["_deleted"] as? Bool == true
        let (revID, _) = try db.syncPutRevision(docID: docID, prevRevID: prevRevID, properties: body,
                                                deleting: deleting, allowConflict: false)
        let batch = request?.query["batch"] == "ok"
        return (revID, batch ? 202 : 201)
    }

    /// new_edits=false: inserts the revision named by `_rev` with the history in `_revisions`.
    @discardableResult
    func insertWithHistory(_ db: CBLDatabase, docID: String, body: [String: Any]) throws -> String {
        try validateForSave(docID: docID, body: body)
        guard body["_rev"] is String else {
            throw RESTError(400, "bad_request", "new_edits=false requires a _rev")
        }
        return try reportingMissingStub(docID: docID) { try db.syncInsertRevision(docID: docID, body: body) }
    }

    /// CouchDB's `412 missing_stub` for a replicated revision whose stub names an attachment the
    /// database does not have: its replicator answers that by fetching the revision again
    /// without `atts_since` and sending it with the attachment bodies. (Local edits keep 1.x's
    /// 400 "bad attachment".)
    func reportingMissingStub<T>(docID: String, _ save: () throws -> T) throws -> T {
        do {
            return try save()
        } catch {
            guard let name = CBLDatabase.syncMissingStubAttachment(in: error) else { throw error }
            throw RESTError(412, "missing_stub", "Invalid attachment stub in \(docID) for \(name)")
        }
    }

    // MARK: /{db}/{docid}

    func document(_ db: CBLDatabase, docID: String, _ request: RESTRequest) throws -> RESTOutcome {
        switch request.method {
        case "GET", "HEAD":
            return .response(try getDocument(db, docID: docID, request))
        case "PUT":
            var body: [String: Any]
            if request.contentType == "multipart/related" {
                body = try MultipartUpload.documentWithAttachments(request)
            } else {
                body = try JSONText.parseObject(request.body, what: "Document")
            }
            let q = QueryParams(values: request.query)
            let revID: String
            let status: Int
            if try !q.bool("new_edits", default: true) {
                revID = try insertWithHistory(db, docID: docID, body: body)
                status = 201
            } else {
                (revID, status) = try saveDocument(db, docID: docID, body: body, request: request)
            }
            return .response(.json(status, ["ok": true, "id": docID, "rev": revID],
                                   headers: [("ETag", "\"\(revID)\""),
                                             ("Location", state.absoluteURL(request, path: [db.name, docID]))]))
        case "DELETE":
            guard CBLDatabase.syncIsValidDocumentID(docID) else { throw RESTError.illegalDocID }
            guard let revID = request.query["rev"] ?? request.header("if-match").map({ $0.trimmingCharacters(in: CharacterSet(charactersIn: "\" ")) }) else {
                throw RESTError.conflict
            }
            guard CBLDatabase.syncGeneration(revID) > 0 else { throw RESTError.badRev }
            let (newRev, _) = try db.syncPutRevision(docID: docID, prevRevID: revID, properties: [:],
                                                     deleting: true, allowConflict: false)
            return .response(.json(200, ["ok": true, "id": docID, "rev": newRev], headers: [("ETag", "\"\(newRev)\"")]))
        default:
            throw RESTError.methodNotAllowed("GET,HEAD,PUT,DELETE")
        }
    }

    private func getDocument(_ db: CBLDatabase, docID: String, _ request: RESTRequest) throws -> RESTResponse {
        let q = QueryParams(values: request.query)
        var options = try DocumentOptions(q)
        options.encodedAttachmentParts = request.acceptsGzipParts
        if let openRevs = q["open_revs"] {
            return try getOpenRevs(db, docID: docID, openRevs, options, request)
        }
        let rev: SyncRevision
        if let revID = q["rev"], CBLDatabase.syncGeneration(revID) == 0 { throw RESTError.badRev }
        // `latest=true` without `open_revs`: CouchDB opens the winning revision whatever `rev` says.
        if let revID = q["rev"], try !q.bool("latest") {
            guard let r = try db.syncRevision(docID: docID, revID: revID), r.body != nil else { throw RESTError.missing }
            rev = r
        } else {
            guard let w = try db.syncWinningRevision(docID: docID) else { throw RESTError.missing }
            if w.deleted { throw RESTError.deleted }
            rev = w
        }
        let etag = "\"\(rev.revID)\""
        if request.header("if-none-match") == etag {
            return RESTResponse(status: 304, headers: [("ETag", etag)])
        }
        let multipart = options.attachments && request.accepts("multipart/related")
        let doc = try documentJSON(db, rev, options, followsAttachments: multipart)
        if multipart {
            let part = try documentPart(db, doc: doc, rev: rev)
            var response = RESTResponse(status: 200, headers: part.headers, body: part.body)
            response.headers.append(("ETag", etag))
            return response
        }
        return .json(200, doc, headers: [("ETag", etag)])
    }

    // MARK: /{db}/{docid}/{attachment}

    func attachment(_ db: CBLDatabase, docID: String, name: String, _ request: RESTRequest) throws -> RESTResponse {
        guard CBLDatabase.syncIsValidDocumentID(docID) else { throw RESTError.illegalDocID }
        let revParam = request.query["rev"] ?? request.header("if-match").map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "\" ")) }
        if let revParam, CBLDatabase.syncGeneration(revParam) == 0 { throw RESTError.badRev }
        switch request.method {
        case "GET", "HEAD":
            let rev: SyncRevision
            if let revID = request.query["rev"] {
                guard let r = try db.syncRevision(docID: docID, revID: revID), r.body != nil else { throw RESTError.missing }
                rev = r
            } else {
                guard let w = try db.syncWinningRevision(docID: docID) else { throw RESTError.missing }
                if w.deleted { throw RESTError.deleted }
                rev = w
            }
            guard let meta = (rev.properties?["_attachments"] as? [String: Any])?[name] as? [String: Any] else {
                throw RESTError(404, "not_found", "Document is missing attachment")
            }
            let digest = meta["digest"] as? String ?? ""
            let etag = "\"\(digest)\""
            if request.header("if-none-match") == etag {
                return RESTResponse(status: 304, headers: [("ETag", etag)])
            }
            let content = try attachmentContent(db, meta: meta, docID: docID, name: name)
            return RESTResponse(status: 200, headers: [
                ("Content-Type", meta["content_type"] as? String ?? "application/octet-stream"),
                ("ETag", etag), ("Cache-Control", "must-revalidate"),
            ], body: Array(content))
        case "PUT":
            let contentType = request.header("content-type")
            let newRev = try db.syncPutAttachment(docID: docID, prevRevID: revParam, name: name,
                                                  contentType: contentType, content: Data(request.body))
            return .json(201, ["ok": true, "id": docID, "rev": newRev],
                         headers: [("ETag", "\"\(newRev)\""),
                                   ("Location", state.absoluteURL(request, path: [db.name, docID, name]))])
        case "DELETE":
            guard let revParam else { throw RESTError.conflict }
            let newRev = try db.syncPutAttachment(docID: docID, prevRevID: revParam, name: name,
                                                  contentType: nil, content: nil)
            return .json(200, ["ok": true, "id": docID, "rev": newRev], headers: [("ETag", "\"\(newRev)\"")])
        default:
            throw RESTError.methodNotAllowed("GET,HEAD,PUT,DELETE")
        }
    }

    // MARK: /{db}/_local/{id}

    func localDocument(_ db: CBLDatabase, docID: String, _ request: RESTRequest) throws -> RESTResponse {
        guard docID.count > "_local/".count else { throw RESTError(400, "bad_request", "Invalid local document ID") }
        switch request.method {
        case "GET", "HEAD":
            guard let doc = db.existingLocalDocument(withID: docID) else { throw RESTError.missing }
            return .json(200, doc, headers: [("ETag", "\"\(doc["_rev"] as? String ?? "")\"")])
        case "PUT":
            let body = try JSONText.parseObject(request.body, what: "Document")
            for key in body.keys where key.hasPrefix("_") && !allowedSpecialMembers.contains(key) {
                throw RESTError(400, "doc_validation", "Bad special document member: \(key)")
            }
            if let rev = body["_rev"], !(rev is String) { throw RESTError.badRev }
            let prevRevID = (body["_rev"] as? String) ?? request.query["rev"]
            do {
                let revID = try db.syncPutLocalDocument(body, withID: docID, prevRevID: prevRevID)
                return .json(201, ["ok": true, "id": docID, "rev": revID],
                             headers: [("ETag", "\"\(revID)\""),
                                       ("Location", state.absoluteURL(request, path: [db.name, docID]))])
            } catch let e as CBLError where e.code == 404 {
                throw RESTError.conflict
            }
        case "DELETE":
            guard let revID = request.query["rev"] ?? request.header("if-match").map({ $0.trimmingCharacters(in: CharacterSet(charactersIn: "\" ")) }) else {
                throw RESTError.conflict
            }
            try db.syncDeleteLocalDocument(withID: docID, revID: revID)
            return .json(200, ["ok": true, "id": docID, "rev": "0-0"])
        default:
            throw RESTError.methodNotAllowed("GET,HEAD,PUT,DELETE")
        }
    }
}
