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
        attEncodingInfo = try q.bool("att_encoding_info")
        revsLimit = try q.int("revs_limit")
        if let since = try q.json("atts_since") {
            guard let list = since as? [String] else { throw RESTError.queryParse("atts_since must be an array of revision IDs") }
            attsSince = list
            // CouchDB: asking which attachments are newer than some revisions asks for them.
            attachments = true
        }
        if let from = try q.json("revs_from") {
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
    /// For a multipart body (`followsAttachments`) CouchDB always adds `att_encoding_info` and sends
    /// gzip-stored attachments as stored, in parts marked `Content-Encoding: gzip` (chttpd_db's
    /// `send_doc_efficiently`, `send_docs_multipart`); 1.x pullers ask for the same with
    /// `X-Accept-Part-Encoding: gzip`.
    func documentJSON(_ db: CBLDatabase, _ rev: SyncRevision, _ options: DocumentOptions,
                      followsAttachments: Bool = false) throws -> [String: Any] {
        var options = options
        if followsAttachments {
            options.attEncodingInfo = true
            options.encodedAttachmentParts = true
        }
        var doc = try db.syncDocumentBody(rev, options, followsAttachments: followsAttachments)
        if followsAttachments, var attachments = doc["_attachments"] as? [String: Any] {
            // A part that follows is the stored bytes; its `digest` names them as CouchDB does,
            // `md5-` (what CouchDB's replicator checks, and 1.x pullers and ours accept). Stubs,
            // and the stored metadata, keep 1.x's `sha1-`.
            for (name, value) in attachments {
                guard var meta = value as? [String: Any], meta["follows"] as? Bool == true,
                      let md5 = try db.syncAttachmentMD5(meta: meta) else { continue }
                meta["digest"] = "md5-" + Data(md5).base64EncodedString()
                attachments[name] = meta
            }
            doc["_attachments"] = attachments
        }
        return doc
    }

    /// The decoded content of an attachment described by stored metadata.
    func attachmentContent(_ db: CBLDatabase, meta: [String: Any], docID: String, name: String) throws -> Data {
        try db.syncAttachmentContent(meta: meta, docID: docID, name: name)
    }

    // MARK: Saving

    /// CouchDB's `couch_doc:validate_docid`: 400 `illegal_docid` with its reason for each case.
    static func validateDocumentID(_ value: Any) throws {
        guard let docID = value as? String else {
            throw RESTError(400, "illegal_docid", "Document id must be a string")
        }
        switch docID {
        case "": throw RESTError(400, "illegal_docid", "Document id must not be empty")
        case "_design/": throw RESTError(400, "illegal_docid", "Illegal document id `_design/`")
        case "_local/": throw RESTError(400, "illegal_docid", "Illegal document id `_local/`")
        default:
            if docID.hasPrefix("_"), !docID.hasPrefix("_design/"), !docID.hasPrefix("_local/") {
                throw RESTError.illegalDocID
            }
        }
    }

    /// Checks the ID and special members of a body about to be saved.
    func validateForSave(docID: String, body: [String: Any]) throws {
        let attachments = body["_attachments"]
        if let attachments, !(attachments is [String: Any]) {
            throw RESTError(400, "bad_request", "_attachments must be a JSON object")
        }
        try validateForSave(docID: docID, memberNames: body.keys, rev: body["_rev"].map { $0 as? String },
                            attachments: (attachments as? [String: Any] ?? [:]).map { ($0.key, ($0.value as? [String: Any])?["data"] as? String) })
    }

    /// `[couchdb] max_document_size`, as CouchDB measures it: the JSON of the body without its
    /// `_` members (attachments included only as stubs). Too large: 413 `document_too_large`,
    /// the reason the body's `_id` (empty when the ID is only in the URL, as CouchDB answers).
    func checkDocumentSize(_ body: JSONObject) throws {
        guard let limit = state.configuration.settings.maxDocumentSize else { return }
        var content = JSONObject()
        for (key, value) in body where !key.hasPrefix("_") { content[key] = value }
        if let size = try? JSON.data(.object(content), sortedKeys: false).count, size > limit {
            throw RESTError(413, "document_too_large", body["_id"]?.stringValue ?? "")
        }
    }

    /// ``validateForSave(docID:body:)`` for a typed body.
    func validateForSave(docID: String, body: JSONObject) throws {
        let attachments = body["_attachments"]
        if let attachments, attachments.objectValue == nil {
            throw RESTError(400, "bad_request", "_attachments must be a JSON object")
        }
        try validateForSave(docID: docID, memberNames: body.keys, rev: body["_rev"].map(\.stringValue),
                            attachments: (attachments?.objectValue ?? [:]).map { ($0.key, $0.value["data"]?.stringValue) })
    }

    /// The checks of a save: the ID, special members, `_rev` (`.some(nil)`: present but not a
    /// string), and each attachment's name and inline `data`.
    private func validateForSave(docID: String, memberNames: some Sequence<String>, rev: String??,
                                 attachments: [(name: String, data: String?)]) throws {
        try Self.validateDocumentID(docID)
        guard CBLDatabase.syncIsValidDocumentID(docID) else { throw RESTError.illegalDocID }
        for key in memberNames where key.hasPrefix("_") && !allowedSpecialMembers.contains(key) {
            throw RESTError(400, "doc_validation", "Bad special document member: \(key)")
        }
        if let rev, rev.map(CBLDatabase.syncGeneration) ?? 0 == 0 { throw RESTError.badRev }
        // couch_att: inline data that is not base64 is the client's error, named as CouchDB names it.
        for (name, data) in attachments {
            try Self.validateAttachmentName(name)
            // Strict base64 (line breaks aside), as Erlang's base64:decode is.
            if let data, !Self.isStrictBase64(data) {
                throw RESTError(400, "bad_request", "Invalid attachment data for \(name)")
            }
        }
    }

    /// chttpd_db:validate_attachment_name: names starting with `_` are reserved.
    static func validateAttachmentName(_ name: String) throws {
        if name.hasPrefix("_") {
            throw RESTError(400, "bad_request", "Attachment name '\(name)' starts with prohibited character '_'")
        }
    }

    /// Padded standard base64 (whitespace ignored): a length that is a multiple of 4, at most
    /// two `=` and only at the end. Foundation's decoder tolerates more than Erlang's does.
    static func isStrictBase64(_ text: String) -> Bool {
        let chars = Array(text.utf8.filter { $0 != 0x20 && $0 != 0x0A && $0 != 0x0D && $0 != 0x09 })
        guard chars.count % 4 == 0 else { return false }
        let padding = chars.reversed().prefix { $0 == UInt8(ascii: "=") }.count
        guard padding <= 2 else { return false }
        return chars.dropLast(padding).allSatisfy { c in
            (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || (c >= 0x30 && c <= 0x39)
                || c == UInt8(ascii: "+") || c == UInt8(ascii: "/")
        }
    }

    /// CouchDB's `412 missing_stub` for a local edit whose stub gives a `revpos` other than the
    /// one the attachment has in the parent revision (the stub then names another attachment).
    func checkStubRevpos(_ db: CBLDatabase, docID: String, prevRevID: String?, body: [String: Any]) throws {
        guard let atts = body["_attachments"] as? [String: Any] else { return }
        var parentAtts: [String: Any]?
        for (name, value) in atts {
            guard let meta = value as? [String: Any], meta["stub"] as? Bool == true,
                  let revpos = meta["revpos"] as? Int else { continue }
            if parentAtts == nil {
                parentAtts = try prevRevID.flatMap { try db.syncRevision(docID: docID, revID: $0) }?
                    .properties?["_attachments"] as? [String: Any] ?? [:]
            }
            guard let stored = parentAtts?[name] as? [String: Any], stored["revpos"] as? Int == revpos else {
                throw RESTError(412, "missing_stub", "Invalid attachment stub in \(docID) for \(name)")
            }
        }
    }

    /// `batch=ok`: CouchDB answers `202 {"ok":true,"id":…}` at once and saves later, dropping
    /// the write when it conflicts. Here the save happens before the answer; a write that
    /// fails after the request was validated (a conflict) is dropped the same way, so it never
    /// becomes a conflicting revision.
    func batchSave(_ db: CBLDatabase, docID: String, body: [String: Any]) throws -> RESTResponse {
        try validateForSave(docID: docID, body: body)
        _ = try? saveDocument(db, docID: docID, body: body, request: nil)
        return .json(202, ["ok": true, "id": docID])
    }

    /// A local edit (new_edits=true): the parent comes from `_rev`, `?rev=` or `If-Match`.
    /// Returns the new revision ID and the status to answer (201, or 202 with `batch=ok`).
    /// `memberOrder`: the order of the body's members in the request text, which the stored body
    /// keeps as CouchDB does (see ``JSONMemberOrder``).
    func saveDocument(_ db: CBLDatabase, docID: String, body givenBody: [String: Any],
                      request: RESTRequest?, memberOrder: JSONMemberOrder? = nil) throws -> (String, Int) {
        try validateForSave(docID: docID, body: givenBody)
        if state.configuration.settings.maxDocumentSize != nil, let typed = try? JSONObject(foundation: givenBody) {
            try checkDocumentSize(typed)
        }
        let body = try usersDatabaseDocument(db, docID: docID, body: givenBody)
        var prevRevID = body["_rev"] as? String
        if let request { prevRevID = try request.namedRevision(body: prevRevID) }
        let deleting = body["_deleted"] as? Bool == true
        try checkStubRevpos(db, docID: docID, prevRevID: prevRevID, body: body)
        let revID: String
        do {
            (revID, _) = try db.syncPutRevision(docID: docID, prevRevID: prevRevID, properties: body,
                                                deleting: deleting, allowConflict: false, memberOrder: memberOrder)
        } catch let e as CBLError where e.code == 404 && prevRevID != nil {
            // 1.x finds no parent; CouchDB sees a revision that is not a leaf of the document's
            // tree, a conflict, when the document exists, deleted or not (recreate_doc_test).
            if try db.syncWinningRevision(docID: docID) != nil { throw RESTError.conflict }
            throw e
        }
        let batch = request?.query["batch"] == "ok"
        return (revID, batch ? 202 : 201)
    }

    /// new_edits=false: inserts the revision named by `_rev` with the history in `_revisions`.
    @discardableResult
    func insertWithHistory(_ db: CBLDatabase, docID: String, body givenBody: [String: Any],
                           memberOrder: JSONMemberOrder? = nil) throws -> String {
        try validateForSave(docID: docID, body: givenBody)
        let body = try usersDatabaseDocument(db, docID: docID, body: givenBody)
        guard body["_rev"] is String else {
            throw RESTError(400, "bad_request", "new_edits=false requires a _rev")
        }
        return try reportingMissingStub(docID: docID) { try db.syncInsertRevision(docID: docID, body: body, memberOrder: memberOrder) }
    }

    /// new_edits=false for a typed body (`_bulk_docs`): read once, stored in the client's member order.
    @discardableResult
    func insertWithHistory(_ db: CBLDatabase, docID: String, body: JSONObject) throws -> String {
        try validateForSave(docID: docID, body: body)
        guard body["_rev"]?.stringValue != nil else {
            throw RESTError(400, "bad_request", "new_edits=false requires a _rev")
        }
        var doc = try usersDatabaseDocument(db, docID: docID, body: body)
        doc["_id"] = .string(docID)
        let revision = try IncomingRevision(json: doc, keepsMemberOrder: true)
        return try reportingMissingStub(docID: docID) { try db.syncInsert(revision) }
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
        if docID == "_design/_auth", db.name == state.configuration.authenticationDatabase {
            try prepareAuthenticationDatabase(db, creating: true)
        }
        switch request.method {
        case "GET", "HEAD":
            return .response(try getDocument(db, docID: docID, request))
        case "PUT":
            try Self.validateDocumentID(docID)
            var body: [String: Any]
            var memberOrder: JSONMemberOrder?
            if let parts = request.relatedParts {
                body = try MultipartUpload.documentWithStreamedAttachments(parts)
                // The JSON part's member order is kept, `_attachments` included, as for a JSON body.
                memberOrder = parts.first.flatMap { JSONMemberOrder.unsorted(in: $0.bytes) }
            } else if request.contentType == "multipart/related" {
                body = try MultipartUpload.documentWithAttachments(request)
            } else {
                body = try JSONText.parseObject(request.body, what: "Document")
                memberOrder = JSONMemberOrder.unsorted(in: request.body)
            }
            let q = QueryParams(values: request.query)
            if request.query["batch"] == "ok", try q.bool("new_edits", default: true) {
                return .response(try batchSave(db, docID: docID, body: body))
            }
            let revID: String
            let status: Int
            if try !q.bool("new_edits", default: true) {
                // CouchDB takes the revision from `?rev=` (or `If-Match`) when the body has none.
                if body["_rev"] == nil, let rev = request.query["rev"] ?? request.ifMatchRevision { body["_rev"] = rev }
                revID = try insertWithHistory(db, docID: docID, body: body, memberOrder: memberOrder)
                status = 201
            } else {
                (revID, status) = try saveDocument(db, docID: docID, body: body, request: request, memberOrder: memberOrder)
            }
            return .response(.json(status, ["ok": true, "id": docID, "rev": revID],
                                   headers: [("ETag", "\"\(revID)\""),
                                             ("Location", state.absoluteURL(request, path: [db.name, docID]))]))
        case "DELETE":
            guard CBLDatabase.syncIsValidDocumentID(docID) else { throw RESTError.illegalDocID }
            // CouchDB opens the document first: deleting one that does not exist (or is
            // already deleted) is a 404, whatever the revision.
            guard let winner = try db.syncWinningRevision(docID: docID) else { throw RESTError.missing }
            if winner.deleted { throw RESTError.deleted }
            guard let revID = try request.namedRevision() else { throw RESTError.conflict }
            let (newRev, _) = try db.syncPutRevision(docID: docID, prevRevID: revID, properties: [:],
                                                     deleting: true, allowConflict: false)
            return .response(.json(200, ["ok": true, "id": docID, "rev": newRev], headers: [("ETag", "\"\(newRev)\"")]))
        case "COPY":
            return .response(try copyDocument(db, docID: docID, request))
        case "POST":
            return .response(try postForm(db, docID: docID, request))
        default:
            throw RESTError.methodNotAllowed("DELETE,GET,HEAD,POST,PUT,COPY")
        }
    }

    private func getDocument(_ db: CBLDatabase, docID: String, _ request: RESTRequest) throws -> RESTResponse {
        let q = QueryParams(values: request.query)
        var options = try DocumentOptions(q)
        if let openRevs = q["open_revs"] {
            return try getOpenRevs(db, docID: docID, openRevs, options, request)
        }
        if let revID = q["rev"], CBLDatabase.syncGeneration(revID) == 0 { throw RESTError.badRev }
        // `latest=true` without `open_revs`: CouchDB opens the winning revision whatever `rev` says.
        let rev = try requestedRevision(db, docID: docID, revID: try q.bool("latest") ? nil : q["rev"])
        let etag = "\"\(rev.revID)\""
        if request.ifNoneMatch(etag) { return .notModified(etag: etag) }
        if options.attachments && request.accepts("multipart/related") {
            let doc = try documentJSON(db, rev, options, followsAttachments: true)
            let part = try documentPart(db, doc: doc, rev: rev)
            var response = RESTResponse(status: 200, headers: part.headers, body: part.body)
            response.headers.append(("ETag", etag))
            return response
        }
        // The stored body read once, typed: it gives the answer's members and their order.
        let properties = rev.typedProperties ?? [:]
        let doc = JSONValue.object(try db.syncTypedDocumentBody(rev, options, properties: properties))
        let body: [UInt8]
        if case .object(let members)? = JSONMemberOrder(unsortedIn: .object(properties)) {
            // A body written through the listener keeps the client's order: `_id` and `_rev` first,
            // as CouchDB answers, then the body's members, then what the options added, sorted.
            let order = JSONMemberOrder.object([.init(name: "_id", order: nil), .init(name: "_rev", order: nil)] + members)
            body = try JSON.data(doc.ordered(by: order), sortedKeys: false)
        } else {
            body = try JSON.data(doc, sortedKeys: true)
        }
        return .json(200, encoded: body, headers: [("ETag", etag)])
    }

    /// The revision `revID` names (404 `missing` unless its body is kept), or with none the
    /// winning revision (404 `missing`, or `deleted` when the document is).
    private func requestedRevision(_ db: CBLDatabase, docID: String, revID: String?) throws -> SyncRevision {
        if let revID {
            guard let rev = try db.syncRevision(docID: docID, revID: revID), rev.body != nil else { throw RESTError.missing }
            return rev
        }
        guard let winner = try db.syncWinningRevision(docID: docID) else { throw RESTError.missing }
        if winner.deleted { throw RESTError.deleted }
        return winner
    }

    // MARK: /{db}/{docid}/{attachment}

    func attachment(_ db: CBLDatabase, docID: String, name: String, _ request: RESTRequest) throws -> RESTResponse {
        if request.method != "GET" && request.method != "HEAD" { try Self.validateDocumentID(docID) }
        guard CBLDatabase.syncIsValidDocumentID(docID) else { throw RESTError.illegalDocID }
        let revParam = try request.namedRevision()
        switch request.method {
        case "GET", "HEAD":
            let rev = try requestedRevision(db, docID: docID, revID: request.query["rev"])
            guard let meta = (rev.properties?["_attachments"] as? [String: Any])?[name] as? [String: Any] else {
                throw RESTError(404, "not_found", "Document is missing attachment")
            }
            let etag = AttachmentRanges.etag(md5: try db.syncAttachmentMD5(meta: meta), revID: rev.revID)
            if request.ifNoneMatch(etag) { return .notModified(etag: etag) }
            let contentType = meta["content_type"] as? String ?? "application/octet-stream"
            if let stream = try db.syncOpenAttachmentStream(meta: meta, docID: docID, name: name) {
                let headers = [("ETag", etag), ("Cache-Control", "must-revalidate"), ("Accept-Ranges", "bytes")]
                return try streamedAttachment(stream, db: db, meta: meta, docID: docID, name: name,
                                              contentType: contentType, headers: headers, request)
            }
            // Stored gzip-encoded: CouchDB ignores `Range` then (`Accept-Ranges: none`), and sends the
            // stored bytes to a client whose `Accept-Encoding` takes gzip, else decodes them. Decoded
            // whole (such attachments are compressed text, not large media).
            let headers = [("ETag", etag), ("Cache-Control", "must-revalidate"), ("Content-Type", contentType)]
            if request.acceptsContentCoding("gzip") {
                let stored = try db.syncAttachmentStoredContent(meta: meta, docID: docID, name: name)
                return RESTResponse(status: 200, headers: headers + [("Content-Encoding", "gzip"), ("Accept-Ranges", "none")],
                                    body: Array(stored))
            }
            let content = try attachmentContent(db, meta: meta, docID: docID, name: name)
            return RESTResponse(status: 200, headers: headers + [("Accept-Ranges", "none")], body: Array(content))
        case "PUT":
            try Self.validateAttachmentName(name)
            let contentType = request.header("content-type")
            let gzipped = try Self.uploadIsGzipped(request)
            // CouchDB opens the named revision first: one the document lacks is `409 not_found missing_rev`.
            if let revParam, try db.syncRevision(docID: docID, revID: revParam) == nil {
                throw RESTError(409, "not_found", "missing_rev")
            }
            let newRev: String
            if let upload = request.upload {
                // The body was streamed into the blob store as it arrived (ListenerResponder).
                let installed = try upload.finish()
                newRev = try db.syncPutAttachment(docID: docID, prevRevID: revParam, name: name, contentType: contentType,
                                                  installed: (installed.digest, installed.length),
                                                  gzipped: gzipped || upload.isCompressing,
                                                  decodedLength: upload.isCompressing ? upload.receivedLength : nil)
            } else {
                newRev = try db.syncPutAttachment(docID: docID, prevRevID: revParam, name: name,
                                                  contentType: contentType, content: Data(request.body), gzipped: gzipped)
            }
            return .json(201, ["ok": true, "id": docID, "rev": newRev],
                         headers: [("ETag", "\"\(newRev)\""),
                                   ("Location", state.absoluteURL(request, path: [db.name, docID, name]))])
        case "DELETE":
            guard let revParam else { throw RESTError.conflict }
            guard try db.syncRevision(docID: docID, revID: revParam) != nil else {
                throw RESTError(409, "not_found", "missing_rev")
            }
            let newRev = try db.syncPutAttachment(docID: docID, prevRevID: revParam, name: name,
                                                  contentType: nil, content: nil)
            return .json(200, ["ok": true, "id": docID, "rev": newRev], headers: [("ETag", "\"\(newRev)\"")])
        default:
            throw RESTError.methodNotAllowed("GET,HEAD,PUT,DELETE")
        }
    }

    /// The `Content-Encoding` of an attachment upload: true for `gzip` (kept encoded), false for
    /// none or `identity`; CouchDB's 415 for any other.
    static func uploadIsGzipped(_ request: RESTRequest) throws -> Bool {
        switch request.header("content-encoding")?.trimmingCharacters(in: .whitespaces).lowercased() {
        case nil, "identity": return false
        case "gzip": return true
        default: throw RESTError(415, "bad_content_type", "Only gzip and identity content-encodings are supported")
        }
    }

    /// An attachment GET answered from its blob file as the client reads it: the whole
    /// content, one range, or `multipart/byteranges`.
    private func streamedAttachment(_ stream: SyncBlobStream, db: CBLDatabase, meta: [String: Any], docID: String,
                                    name: String, contentType: String, headers: [(String, String)],
                                    _ request: RESTRequest) throws -> RESTResponse {
        let digest = meta["digest"] as? String ?? ""
        let open: @Sendable () throws -> SyncBlobStream = {
            guard let reopened = try db.syncOpenAttachmentStream(meta: ["digest": digest], docID: docID, name: name) else {
                throw RESTError(500, "internal_server_error", "The attachment '\(name)' changed while being read")
            }
            return reopened
        }
        let plan: AttachmentRanges.Plan
        do {
            plan = try AttachmentRanges.plan(request.header("range"), length: stream.length, contentType: contentType,
                                             headers: headers)
                ?? AttachmentRanges.Plan(status: 200, headers: [("Content-Type", contentType)] + headers,
                                         pieces: stream.length > 0 ? [.content(0...(stream.length - 1))] : [])
        } catch {
            stream.close()
            throw error
        }
        let streamer = AttachmentStreamer(pieces: plan.pieces, first: stream, open: open)
        return RESTResponse(status: plan.status, headers: plan.headers, stream: streamer.body())
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
            guard let revID = request.query["rev"] ?? request.ifMatchRevision else {
                throw RESTError.conflict
            }
            try db.syncDeleteLocalDocument(withID: docID, revID: revID)
            return .json(200, ["ok": true, "id": docID, "rev": "0-0"])
        default:
            throw RESTError.methodNotAllowed("GET,HEAD,PUT,DELETE")
        }
    }
}
