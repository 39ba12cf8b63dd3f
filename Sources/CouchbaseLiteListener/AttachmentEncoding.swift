import CouchbaseLite

extension ListenerState {
    /// The configuration's `[attachments]` rule for listener writes (see ``AttachmentCompression``),
    /// parsed once per configuration change with the other settings requests read.
    var attachmentCompression: AttachmentCompression { configuration.settings.attachmentCompression }
}

extension RESTRouter {
    /// An `include_docs` document (`_all_docs`, views) with its `_attachments` as CouchDB gives
    /// them: bodies inline with `attachments=true`, and `encoding`/`encoded_length` of gzip-stored
    /// ones only with `att_encoding_info=true` (couch_att's `to_json`).
    static func includedDocument(_ db: CBLDatabase, _ doc: [String: Any], attachments: Bool,
                                 encodingInfo: Bool) -> [String: Any] {
        guard let stubs = doc["_attachments"] as? [String: Any] else { return doc }
        if attachments, let id = doc["_id"] as? String, let rev = doc["_rev"] as? String,
           let revision = try? db.syncRevision(docID: id, revID: rev) {
            var options = SyncBodyOptions()
            options.attachments = true
            options.attEncodingInfo = encodingInfo
            if var full = try? db.syncDocumentBody(revision, options) {
                if let conflicts = doc["_conflicts"] { full["_conflicts"] = conflicts }
                return full
            }
        }
        if encodingInfo { return doc }
        var copy = doc
        copy["_attachments"] = stubs.mapValues { value -> Any in
            guard var meta = value as? [String: Any], meta["encoding"] != nil else { return value }
            meta["encoding"] = nil
            meta["encoded_length"] = nil
            return meta
        }
        return copy
    }
}
