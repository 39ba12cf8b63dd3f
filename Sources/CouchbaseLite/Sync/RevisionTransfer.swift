import Foundation
import JSONCore

/// What a revision body sent to a peer carries besides its properties (CouchDB's `GET`
/// options, `_bulk_get` options, and what the replicator's push sends).
package struct SyncBodyOptions: Sendable {
    /// `_revisions`: the history, newest first.
    package var revs = false
    package var revsInfo = false
    package var conflicts = false
    package var deletedConflicts = false
    package var localSeq = false
    /// Attachment bodies (newer than `attsSince`) instead of stubs.
    package var attachments = false
    /// Revisions the receiver already has: attachments at or before the newest of them that
    /// is an ancestor stay stubs, and `_revisions` may stop there (spec 9.5).
    package var attsSince: [String]?
    /// Sync Gateway's extension 1.x pullers send: trim `_revisions` after the first of these.
    package var revsFrom: [String]?
    package var revsLimit: Int?
    /// With `followsAttachments`: gzip-stored attachments follow as stored, `encoding` and
    /// `encoded_length` kept (the receiver sends `X-Accept-Part-Encoding: gzip`, as 1.x
    /// pullers do, spec 9.4), instead of inflated.
    package var encodedAttachmentParts = false
    /// CouchDB's `att_encoding_info`: true shows `encoding` and `encoded_length` of gzip-stored
    /// attachments (stubs and inline `data` alike), false leaves them out of stubs; nil keeps
    /// 1.x's answer (stubs as stored, inline `data` without them).
    package var attEncodingInfo: Bool?

    package init() {}
}

extension CBLDatabase {
    /// A revision as CouchDB returns it: its properties plus `_id`, `_rev`, `_deleted` and the
    /// members the options ask for. Attachments newer than `atts_since` carry inline base64
    /// `data` (or `follows` plus `length` when `followsAttachments`, for multipart bodies whose
    /// parts ``syncAttachmentContent(meta:docID:name:)`` supplies); older ones are stubs.
    package func syncDocumentBody(_ rev: SyncRevision, _ options: SyncBodyOptions,
                                  followsAttachments: Bool = false) throws -> [String: Any] {
        try syncTypedDocumentBody(rev, options, followsAttachments: followsAttachments).foundation
    }

    /// ``syncDocumentBody(_:_:followsAttachments:)`` typed: the stored body read once, its members
    /// in stored order after `_id` and `_rev`.
    /// `properties`: the revision's stored properties when the caller has already read them.
    package func syncTypedDocumentBody(_ rev: SyncRevision, _ options: SyncBodyOptions,
                                       followsAttachments: Bool = false, properties: JSONObject? = nil) throws -> JSONObject {
        var doc: JSONObject = ["_id": .string(rev.docID), "_rev": .string(rev.revID)]
        for (key, value) in properties ?? rev.typedProperties ?? [:] where key != "_id" && key != "_rev" { doc[key] = value }
        if rev.deleted { doc["_deleted"] = true }
        var history: [SyncHistoryEntry]?
        func loadHistory() throws -> [SyncHistoryEntry] {
            if let history { return history }
            let h = try syncHistory(docID: rev.docID, revID: rev.revID)
            history = h
            return h
        }
        if options.revs {
            var ids = try loadHistory().map(\.revID)
            // CouchDB reads a history no longer than the database's `_revs_limit` (couch_db:make_doc),
            // so a lowered limit shows before compaction prunes older documents.
            let limit = min(options.revsLimit ?? maxDepth, maxDepth)
            ids = Array(ids.prefix(max(limit, 1)))
            if let from = options.revsFrom, let cut = ids.firstIndex(where: from.contains) {
                ids = Array(ids.prefix(cut + 1))
            }
            doc["_revisions"] = RevisionID.typedRevisions(ids)
        }
        if options.revsInfo {
            doc["_revs_info"] = .array(try loadHistory().map { entry -> JSONValue in
                ["rev": .string(entry.revID), "status": .string(entry.available ? "available" : (entry.deleted ? "deleted" : "missing"))]
            })
        }
        if options.conflicts || options.deletedConflicts {
            let leaves = try syncLeaves(docID: rev.docID, withBodies: false).filter { $0.revID != rev.revID }
            if options.conflicts {
                let live = leaves.filter { !$0.deleted }.map { JSONValue.string($0.revID) }
                if !live.isEmpty { doc["_conflicts"] = .array(live) }
            }
            if options.deletedConflicts {
                let dead = leaves.filter(\.deleted).map { JSONValue.string($0.revID) }
                if !dead.isEmpty { doc["_deleted_conflicts"] = .array(dead) }
            }
        }
        if options.localSeq { doc["_local_seq"] = .int(rev.sequence) }
        if case .object(var atts)? = doc["_attachments"] {
            var minRevpos = 0
            if let since = options.attsSince {
                let ancestors = Set(try loadHistory().map(\.revID))
                minRevpos = since.filter(ancestors.contains).map(RevisionID.generation).max() ?? 0
            }
            for (name, value) in atts {
                guard case .object(var meta) = value else { continue }
                let revpos = meta["revpos"]?.intValue ?? 0
                if options.attachments && revpos > minRevpos {
                    meta["stub"] = nil
                    if followsAttachments, meta["encoding"] == nil || options.encodedAttachmentParts,
                       let length = meta["length"]?.intValue {
                        // The part is the stored file itself: no need to read it here.
                        meta["follows"] = true
                        meta["length"] = .int(Int64(length))
                        atts[name] = .object(meta)
                        continue
                    }
                    // Sent decoded (a gzip-stored body is inflated), as CouchDB sends them.
                    let content = try syncAttachmentContent(meta: meta, docID: rev.docID, name: name)
                    if options.attEncodingInfo != true || followsAttachments {
                        meta["encoding"] = nil
                        meta["encoded_length"] = nil
                    }
                    if followsAttachments {
                        meta["follows"] = true
                        meta["length"] = .int(Int64(content.count))
                        // The part holds the inflated bytes, so its digest names them (1.x and
                        // our multipart reader check parts against digests; the stored one
                        // names the gzip file).
                        if meta["digest"] != nil { meta["digest"] = .string(BlobKey(content: content).digest) }
                    } else {
                        meta["data"] = .string(content.base64EncodedString())
                        meta["length"] = nil
                    }
                } else {
                    meta["stub"] = true
                    meta["follows"] = nil
                    meta["data"] = nil
                    if options.attEncodingInfo == false {
                        meta["encoding"] = nil
                        meta["encoded_length"] = nil
                    }
                }
                atts[name] = .object(meta)
            }
            doc["_attachments"] = .object(atts)
        }
        return doc
    }

    /// The decoded content of an attachment described by typed stored metadata.
    package func syncAttachmentContent(meta: JSONObject, docID: String, name: String) throws -> Data {
        let raw = try syncAttachmentStoredContent(meta: meta, docID: docID, name: name)
        if meta["encoding"]?.stringValue == "gzip" { return try Gzip.decompress(raw) }
        return raw
    }

    /// The content of an attachment as stored, from typed metadata (see the dictionary form).
    package func syncAttachmentStoredContent(meta: JSONObject, docID: String, name: String) throws -> Data {
        guard let digest = meta["digest"]?.stringValue, let key = BlobKey(digest: digest),
              let raw = try storeIfOpenForBlobs?.read(key) else {
            throw CBLError(500, "The content of attachment '\(name)' of '\(docID)' is missing")
        }
        return raw
    }

    /// The blob-store file of an attachment, from typed metadata (see the dictionary form).
    package func syncAttachmentFile(meta: JSONObject) -> URL? {
        guard let digest = meta["digest"]?.stringValue, let key = BlobKey(digest: digest) else { return nil }
        return storeIfOpenForBlobs?.plaintextURL(for: key)
    }

    /// Where an attachment's encrypted blob is, from typed metadata (see the dictionary form).
    func syncEncryptedAttachment(meta: JSONObject) -> (url: URL, key: CBLSymmetricKey, digest: BlobKey)? {
        guard let digest = meta["digest"]?.stringValue else { return nil }
        return syncEncryptedAttachment(meta: ["digest": digest] as [String: Any])
    }

    /// The decoded content of an attachment described by stored metadata (404-style error
    /// naming the document when the blob is missing).
    package func syncAttachmentContent(meta: [String: Any], docID: String, name: String) throws -> Data {
        let raw = try syncAttachmentStoredContent(meta: meta, docID: docID, name: name)
        if meta["encoding"] as? String == "gzip" { return try Gzip.decompress(raw) }
        return raw
    }

    /// The blob-store file holding an attachment's stored bytes, nil when missing or when the
    /// store is encrypted (the file is ciphertext; use ``syncAttachmentReader(meta:)``).
    package func syncAttachmentFile(meta: [String: Any]) -> URL? {
        guard let digest = meta["digest"] as? String, let key = BlobKey(digest: digest) else { return nil }
        return storeIfOpenForBlobs?.plaintextURL(for: key)
    }

    /// Where an attachment's encrypted blob is and the key that decrypts it; nil when the
    /// store is not encrypted or the blob is missing.
    func syncEncryptedAttachment(meta: [String: Any]) -> (url: URL, key: CBLSymmetricKey, digest: BlobKey)? {
        guard let digest = meta["digest"] as? String, let blob = BlobKey(digest: digest),
              let store = storeIfOpenForBlobs, let key = store.encryptionKey, let url = store.url(for: blob) else { return nil }
        return (url, key, blob)
    }

    /// The content of an attachment as stored (still gzip-encoded when its metadata says so);
    /// 401 when the blob store's key does not decrypt it.
    package func syncAttachmentStoredContent(meta: [String: Any], docID: String, name: String) throws -> Data {
        guard let digest = meta["digest"] as? String, let key = BlobKey(digest: digest),
              let raw = try storeIfOpenForBlobs?.read(key) else {
            throw CBLError(500, "The content of attachment '\(name)' of '\(docID)' is missing")
        }
        return raw
    }

    /// The attachment name when `error` says a revision's stub refers to an attachment this
    /// database has nowhere (no ancestor has it, no blob matches its digest). CouchDB answers
    /// that with `412 missing_stub`, and its replicator then fetches the revision again
    /// without `atts_since`, so the bodies come along.
    package static func syncMissingStubAttachment(in error: Error) -> String? {
        (error as? CBLError)?.missingStubName
    }

    /// `new_edits=false`: inserts the revision named by `_rev` of `body`, with the history in
    /// `_revisions` (the revision alone when absent, allowed only for generation 1 by CouchDB but
    /// accepted here as 1.x did). Returns the revision ID; nothing changes when it was present.
    @discardableResult
    package func syncInsertRevision(docID: String, body: [String: Any], memberOrder: JSONMemberOrder? = nil,
                                    source: String? = nil) throws -> String {
        var doc = body
        doc["_id"] = docID
        return try syncInsert(IncomingRevision(foundation: doc, memberOrder: memberOrder), source: source)
    }

    /// Inserts a revision from a peer with its history (`new_edits=false`, spec 9.4), the one
    /// implementation behind the puller, `_bulk_docs` and `PUT ?new_edits=false`. A revision
    /// without attachments or special keys is stored as it was read, unless validations run.
    @discardableResult
    package func syncInsert(_ revision: IncomingRevision, source: String? = nil) throws -> String {
        let plain = (revision.attachments?.isEmpty ?? true) || revision.deleted
        if plain && revision.specialKeys.isEmpty && !hasValidationsToRun {
            try forceInsert(docID: revision.docID, history: revision.history, storedBody: revision.storedBody(),
                            deleted: revision.deleted, docType: revision.docType, source: source)
        } else {
            try forceInsert(docID: revision.docID, history: revision.history,
                            properties: try revision.insertionProperties(), memberOrder: revision.storedMemberOrder,
                            source: source)
        }
        return revision.revID
    }
}
