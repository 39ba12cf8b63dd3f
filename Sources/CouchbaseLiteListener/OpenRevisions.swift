import CouchbaseLite
import Foundation
import JSONCore

/// One revision asked for by `open_revs` or `_bulk_get`: found (with its body), or missing.
enum OpenRevision {
    case found(SyncRevision)
    case missing(String)
}

/// `GET /{db}/{doc}?open_revs=…` and the revision parts `_bulk_get` shares with it: how
/// requested revisions are resolved, and how a revision is written as a MIME part.
extension RESTRouter {
    /// Resolves requested revisions as CouchDB's `open_revs` does: with `latest`, a revision
    /// stands for the leaves of its branch (itself when it is a leaf), so a replicator asking
    /// for a revision superseded since the changes feed listed it gets the current one; without,
    /// for itself when its body is still stored. Unknown revisions are missing.
    func openRevisions(_ db: CBLDatabase, docID: String, revIDs: [String], latest: Bool) throws -> [OpenRevision] {
        var resolved: [OpenRevision] = []
        var seen = Set<String>()
        for revID in revIDs {
            guard CBLDatabase.syncGeneration(revID) > 0 else { throw RESTError.badRev }
            let found: [SyncRevision]
            if latest {
                found = try db.syncLatestLeaves(docID: docID, from: revID).filter { $0.body != nil }
            } else if let rev = try db.syncRevision(docID: docID, revID: revID), rev.body != nil {
                found = [rev]
            } else {
                found = []
            }
            if found.isEmpty { resolved.append(.missing(revID)) }
            for rev in found where seen.insert(rev.revID).inserted { resolved.append(.found(rev)) }
        }
        return resolved
    }

    /// `open_revs=all` or `open_revs=[…]`: a JSON array of `{"ok":doc}` / `{"missing":rev}`, or,
    /// for a client accepting `multipart/mixed`, one part per revision.
    func getOpenRevs(_ db: CBLDatabase, docID: String, _ param: String, _ options: DocumentOptions,
                     _ request: RESTRequest) throws -> RESTResponse {
        let resolved: [OpenRevision]
        if param == "all" {
            let leaves = try db.syncLeaves(docID: docID, withBodies: true).sorted { $0.revID < $1.revID }
            if leaves.isEmpty { throw RESTError.missing }
            resolved = leaves.map { .found($0) }
        } else {
            guard let list = try? JSONText.parse(param) as? [Any], let revIDs = list as? [String] else {
                throw RESTError(400, "bad_request", "Invalid open_revs: expected \"all\" or a JSON array of revision IDs")
            }
            resolved = try openRevisions(db, docID: docID, revIDs: revIDs, latest: QueryParams(values: request.query).bool("latest"))
        }

        if request.acceptsMediaRange("multipart/mixed") {
            // CouchDB sends the bodies of the attachments newer than `atts_since` as parts here
            // whether or not `attachments=true` was asked: its replicator fetches documents with
            // attachments this way (after `_bulk_get?attachments=false`) and writes them to its
            // target as they come; stubs for attachments the target lacks fail there.
            var partOptions = options
            partOptions.attachments = true
            var parts: [MultipartPart] = []
            for revision in resolved {
                switch revision {
                case .found(let rev):
                    let doc = try documentJSON(db, rev, partOptions, followsAttachments: true)
                    parts.append(try documentPart(db, doc: doc, rev: rev))
                case .missing(let revID):
                    parts.append(Self.errorPart(["missing": revID]))
                }
            }
            return MultipartWriter.response(subtype: "mixed", parts: parts)
        }
        var entries: [[String: Any]] = []
        for revision in resolved {
            switch revision {
            case .found(let rev): entries.append(["ok": try documentJSON(db, rev, options)])
            case .missing(let revID): entries.append(["missing": revID])
            }
        }
        return .json(200, entries)
    }

    /// A revision as one MIME part: `multipart/related` (the JSON, then one part per `follows`
    /// attachment) when some attachment follows, else the JSON alone, as CouchDB writes them.
    ///
    /// Attachment parts come in the order their names have in the JSON (sorted by UTF-16 code
    /// units, as `JSONText` writes keys): CouchDB's parser hands the parts to the `follows`
    /// attachments in the order of the `_attachments` object, whatever the part headers say.
    /// - Parameter relatedHeaders: extra headers of the `multipart/related` part (`_bulk_get`'s
    ///   `X-Doc-Id`/`X-Rev-Id`).
    func documentPart(_ db: CBLDatabase, doc: [String: Any], rev: SyncRevision,
                      relatedHeaders: [(String, String)] = []) throws -> MultipartPart {
        // The stored member order (`_id` and `_rev` first), as CouchDB writes the document: the
        // attachments in the order they were given, and their parts in that order.
        var order: JSONMemberOrder?
        if let properties = rev.typedProperties, case .object(let members)? = JSONMemberOrder(unsortedIn: .object(properties)) {
            order = .object([.init(name: "_id", order: nil), .init(name: "_rev", order: nil)] + members)
        }
        var body = JSONText.bytes(doc)
        if let order, let typed = try? JSONValue(foundation: doc), let ordered = try? JSON.data(typed.ordered(by: order), sortedKeys: false) {
            body = ordered
        }
        let json = MultipartPart(headers: [("Content-Type", "application/json")], body: body)
        guard let atts = doc["_attachments"] as? [String: Any] else { return json }
        let given = order?.member("_attachments")?.memberNames ?? []
        let sorted = atts.keys.filter { !given.contains($0) }.sorted { $0.utf16.lexicographicallyPrecedes($1.utf16) }
        let following = (given.filter { atts[$0] != nil } + sorted)
            .filter { ((atts[$0] as? [String: Any])?["follows"] as? Bool) == true }
        if following.isEmpty { return json }
        let stored = rev.properties?["_attachments"] as? [String: Any] ?? [:]
        var parts = [json]
        for name in following {
            let meta = atts[name] as? [String: Any] ?? [:]
            let storedMeta = stored[name] as? [String: Any] ?? meta
            // Still `"encoding":"gzip"` in the JSON: the part is the stored gzip file.
            let encoded = meta["encoding"] as? String == "gzip"
            let content = encoded ? try db.syncAttachmentStoredContent(meta: storedMeta, docID: rev.docID, name: name)
                                  : try attachmentContent(db, meta: storedMeta, docID: rev.docID, name: name)
            parts.append(MultipartPart(headers: [
                ("Content-Disposition", "attachment; filename=\"\(MultipartWriter.quoted(name))\""),
                ("Content-Type", meta["content_type"] as? String ?? "application/octet-stream"),
                ("Content-Length", String(content.count)),
            ] + (encoded ? [("Content-Encoding", "gzip")] : []), body: Array(content)))
        }
        let boundary = MultipartWriter.newBoundary()
        return MultipartPart(headers: relatedHeaders + [("Content-Type", "multipart/related; boundary=\"\(boundary)\"")],
                             body: MultipartWriter.encode(parts, boundary: boundary))
    }

    /// A per-revision error inside a multipart response (`{"missing":rev}` for `open_revs`, the
    /// error object for `_bulk_get`).
    static func errorPart(_ error: [String: Any]) -> MultipartPart {
        MultipartPart(headers: [("Content-Type", "application/json; error=\"true\"")], body: JSONText.bytes(error))
    }

    /// A `_bulk_get` revision's failure as a multipart error part.
    static func errorPart(_ failure: BulkGetResult.Failure) -> MultipartPart {
        var writer = JSONWriter(capacity: 128)
        failure.encode(into: &writer)
        return MultipartPart(headers: [("Content-Type", "application/json; error=\"true\"")], body: writer.bytes)
    }
}
