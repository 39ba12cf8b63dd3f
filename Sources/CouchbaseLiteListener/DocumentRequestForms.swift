import CouchbaseLite
import Foundation

/// The other ways CouchDB lets a client write a document: `COPY /{db}/{doc}` with a
/// `Destination` header, and an HTML form (`multipart/form-data`) POSTed to the document.
extension RESTRouter {
    // MARK: COPY

    /// `COPY /{db}/{doc}` (chttpd_db): the source revision (`?rev=` / `If-Match`, else the
    /// winner), with its attachments, saved as the document the `Destination` header names;
    /// `Destination: target?rev=R` overwrites revision R of an existing target.
    func copyDocument(_ db: CBLDatabase, docID: String, _ request: RESTRequest) throws -> RESTResponse {
        guard let destination = request.header("destination"), !destination.isEmpty else {
            throw RESTError(400, "bad_request", "Destination header is mandatory for COPY.")
        }
        if destination.hasPrefix("http://") || destination.hasPrefix("https://") {
            throw RESTError(400, "bad_request", "Destination URL must be relative.")
        }
        let (targetID, targetRev) = try Self.parseDestination(destination)
        try Self.validateDocumentID(targetID)

        let source: SyncRevision
        if let revID = try request.namedRevision() {
            guard let rev = try db.syncRevision(docID: docID, revID: revID), rev.body != nil, !rev.deleted else {
                throw RESTError.missing
            }
            source = rev
        } else {
            guard let winner = try db.syncWinningRevision(docID: docID) else { throw RESTError.missing }
            if winner.deleted { throw RESTError.deleted }
            source = winner
        }
        var body = (source.properties ?? [:]).filter { !$0.key.hasPrefix("_") || $0.key == "_attachments" }
        // Attachments go over as content: a stub would name the source document's revisions.
        if let atts = body["_attachments"] as? [String: Any] {
            var copied: [String: Any] = [:]
            for (name, value) in atts {
                guard let meta = value as? [String: Any] else { continue }
                let content = try attachmentContent(db, meta: meta, docID: docID, name: name)
                var copy: [String: Any] = ["data": content]
                if let type = meta["content_type"] { copy["content_type"] = type }
                copied[name] = copy
            }
            body["_attachments"] = copied
        }
        if let targetRev { body["_rev"] = targetRev }
        let (revID, status) = try saveDocument(db, docID: targetID, body: body, request: nil)
        return .json(status, ["ok": true, "id": targetID, "rev": revID],
                     headers: [("Location", state.absoluteURL(request, path: [db.name, targetID])),
                               ("ETag", "\"\(revID)\"")])
    }

    /// The target ID (percent-decoded) and the `rev` of a `Destination: id[?rev=R]` header.
    static func parseDestination(_ destination: String) throws -> (String, String?) {
        let (segments, query) = try RESTRequest.parseTarget("/" + destination)
        return (segments.joined(separator: "/"), query["rev"])
    }

    // MARK: HTML form upload

    /// `POST /{db}/{doc}` with `multipart/form-data`, what an HTML form sends (chttpd_db): a
    /// `_rev` field (or a `_doc` field holding the document JSON) names the revision to update,
    /// and each `_attachments` file field becomes an attachment named by its filename,
    /// replacing one of that name and keeping the others.
    func postForm(_ db: CBLDatabase, docID: String, _ request: RESTRequest) throws -> RESTResponse {
        try validateReferer(request)
        try Self.validateDocumentID(docID)
        guard request.contentType == "multipart/form-data", let type = request.header("content-type") else {
            throw RESTError(415, "bad_content_type", "Content-Type must be multipart/form-data")
        }
        let parts: [MIMEPart]
        do {
            parts = try MultipartReader.parts(of: request.body, contentType: type, depth: 0)
        } catch let error as MultipartError {
            throw RESTError(400, "bad_request", error.message)
        }
        var revID: String?
        var docJSON: [String: Any]?
        var uploads: [(name: String, type: String, content: Data)] = []
        for part in parts {
            let disposition = part.header("content-disposition") ?? ""
            guard let field = MIMEHeader.parameter("name", in: disposition) else { continue }
            switch field {
            case "_rev":
                revID = String(decoding: part.body, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            case "_doc":
                docJSON = try JSONText.parseObject(part.bodyBytes, what: "Document")
            case "_attachments":
                guard let filename = MIMEHeader.parameter("filename", in: disposition), !filename.isEmpty else { continue }
                uploads.append((filename, part.header("content-type") ?? "application/octet-stream", Data(part.body)))
            default:
                continue
            }
        }

        var body: [String: Any]
        if let docJSON {
            body = docJSON
        } else if let revID, !revID.isEmpty {
            guard CBLDatabase.syncGeneration(revID) > 0 else { throw RESTError.badRev }
            guard let rev = try db.syncRevision(docID: docID, revID: revID), let props = rev.properties else {
                throw RESTError.missing
            }
            body = props.filter { !$0.key.hasPrefix("_") || $0.key == "_attachments" }
            body["_rev"] = revID
        } else {
            body = [:]
        }
        var atts = body["_attachments"] as? [String: Any] ?? [:]
        for name in atts.keys {
            if var meta = atts[name] as? [String: Any], meta["data"] == nil {
                meta["stub"] = true
                atts[name] = meta
            }
        }
        for upload in uploads {
            atts[upload.name] = ["content_type": upload.type, "data": upload.content]
        }
        if !atts.isEmpty { body["_attachments"] = atts }
        let (newRev, status) = try saveDocument(db, docID: docID, body: body, request: nil)
        return .json(status, ["ok": true, "id": docID, "rev": newRev], headers: [("ETag", "\"\(newRev)\"")])
    }

    /// couch_httpd:validate_referer: a form POST must come from a page of this server (a
    /// cross-site form could otherwise write to it).
    func validateReferer(_ request: RESTRequest) throws {
        guard let referer = request.header("referer") else {
            throw RESTError(400, "bad_request", "Referer header required.")
        }
        let host = request.header("x-forwarded-host") ?? request.header("host") ?? ""
        let refererHost = URLComponents(string: referer).map { components -> String in
            (components.host ?? "") + (components.port.map { ":\($0)" } ?? "")
        } ?? ""
        guard !host.isEmpty, refererHost.lowercased() == host.lowercased() else {
            throw RESTError(400, "bad_request", "Referer header must match host.")
        }
    }
}
