import Foundation
import JSONCore

/// Attachment processing when a revision is saved (spec 4.3).
extension CBLDatabase {
    /// The metadata keys 1.x keeps in a stored stub (spec 4.1).
    static let storedAttachmentKeys: Set<String> = ["content_type", "digest", "length", "revpos", "stub", "encoding", "encoded_length"]

    /// Writes new attachment bodies (inline `data`, and bodies set on an unsaved revision) to the
    /// blob store and replaces them in `_attachments` with metadata. Returns the new entries by name.
    func installNewAttachmentBodies(properties: inout [String: Any],
                                    pending: [String: PendingAttachment?]) throws -> [String: [String: Any]] {
        let raw = properties["_attachments"]
        if raw == nil && pending.isEmpty { return [:] }
        guard raw == nil || raw is [String: Any] else {
            throw CBLError.badAttachment("_attachments must be an object")
        }
        var attachments = raw as? [String: Any] ?? [:]
        var installed: [String: [String: Any]] = [:]
        guard let blobs = storeIfOpenForBlobs else { throw CBLError.notFound("Database '\(name)' is closed") }
        // CouchDB's compression of compressible types (listener saves only; 1.x never compresses).
        let compression = AttachmentCompression.current

        for (name, entry) in pending {
            guard let entry else {
                attachments[name] = nil
                continue
            }
            var meta: [String: Any] = [:]
            switch entry.body {
            case .data(let data):
                if let compression, compression.compresses(contentType: entry.contentType) {
                    try compression.store(data, in: blobs, meta: &meta)
                } else {
                    let result = try blobs.store(data)
                    meta = ["digest": result.key.digest, "length": Int(result.length)]
                }
            case .file(let url):
                let result = try blobs.store(contentsOf: url)
                meta = ["digest": result.key.digest, "length": Int(result.length)]
            }
            if let type = entry.contentType { meta["content_type"] = type }
            installed[name] = meta
            attachments[name] = meta
        }

        for (name, value) in attachments where installed[name] == nil {
            guard let meta = value as? [String: Any] else {
                throw CBLError.badAttachment("metadata of '\(name)' must be an object")
            }
            guard let dataValue = meta["data"] else {
                if let compression, let compressed = try compressedFollowingBody(meta, compression, blobs) {
                    installed[name] = compressed
                    attachments[name] = compressed
                }
                continue
            }
            let bytes: Data
            if let base64 = dataValue as? String {
                guard let decoded = Data(base64Encoded: base64, options: .ignoreUnknownCharacters) else {
                    throw CBLError.badAttachment("'\(name)' has invalid base64 data")
                }
                bytes = decoded
            } else if let data = dataValue as? Data {
                bytes = data
            } else {
                throw CBLError.badAttachment("'\(name)' data must be a base64 string")
            }
            var stored = meta
            stored["data"] = nil
            stored["follows"] = nil
            stored["stub"] = nil
            if let compression, meta["encoding"] == nil, compression.compresses(contentType: meta["content_type"] as? String) {
                try compression.store(bytes, in: blobs, meta: &stored)
            } else {
                let result = try blobs.store(bytes)
                stored["digest"] = result.key.digest
                if (meta["encoding"] as? String) == "gzip" {
                    stored["encoded_length"] = Int(result.length)
                    if stored["length"] == nil { stored["length"] = (try? Gzip.decompress(bytes).count) ?? Int(result.length) }
                } else if meta["encoding"] != nil {
                    throw CBLError.badAttachment("'\(name)' has unknown encoding \(meta["encoding"]!)")
                } else {
                    stored["length"] = Int(result.length)
                }
            }
            installed[name] = stored
            attachments[name] = stored
        }
        properties["_attachments"] = attachments
        return installed
    }

    /// A `follows` attachment whose unencoded body is already in the blob store (a streamed
    /// upload) stored again gzipped when `compression` says so; nil when it stays as it is. The
    /// unencoded blob is left for compaction, as any blob no revision names.
    private func compressedFollowingBody(_ meta: [String: Any], _ compression: AttachmentCompression,
                                         _ blobs: BlobStore) throws -> [String: Any]? {
        guard (meta["follows"] as? Bool) == true, meta["encoding"] == nil,
              compression.compresses(contentType: meta["content_type"] as? String),
              let digest = meta["digest"] as? String, let key = BlobKey(digest: digest),
              let content = try blobs.read(key) else { return nil }
        var stored = meta
        stored["follows"] = nil
        try compression.store(content, in: blobs, meta: &stored)
        return stored
    }

    var storeIfOpenForBlobs: BlobStore? {
        lock.withLock { $0.store?.blobStore }
    }

    /// Turns every `_attachments` entry into the stored stub form, resolving stubs against the
    /// parent revision and checking `follows` bodies are present (spec 4.3).
    func finishAttachments(properties: inout [String: Any], newBlobs: [String: [String: Any]], generation: Int,
                           parent: StoredRevision?, store: SQLiteStore, keepRevpos: Bool = false) throws {
        guard let attachments = properties["_attachments"] as? [String: Any] else {
            throw CBLError.badAttachment("_attachments must be an object")
        }
        var parentAttachments: [String: Any]?
        var parentLoaded = false
        func parentStub(_ name: String) throws -> [String: Any]? {
            if !parentLoaded {
                parentLoaded = true
                if let parent {
                    let body = parent.body != nil ? parent.body : try store.body(sequence: parent.sequence)
                    if let body, !body.isEmpty, let dict = try? JSON.parseObject(body) {
                        parentAttachments = dict["_attachments"] as? [String: Any]
                    }
                }
            }
            return parentAttachments?[name] as? [String: Any]
        }

        var result: [String: Any] = [:]
        for (name, value) in attachments {
            guard var meta = value as? [String: Any] else {
                throw CBLError.badAttachment("metadata of '\(name)' must be an object")
            }
            if let installed = newBlobs[name] {
                let givenRevpos = meta["revpos"] as? Int
                meta = installed
                meta["revpos"] = (keepRevpos && givenRevpos != nil && givenRevpos! > 0) ? givenRevpos! : generation
            } else if (meta["stub"] as? Bool) == true {
                if let fromParent = try parentStub(name) {
                    meta = fromParent
                } else if let digest = meta["digest"] as? String, let key = BlobKey(digest: digest),
                          store.blobStore.contains(key) {
                    if meta["revpos"] == nil { meta["revpos"] = generation }
                } else {
                    throw CBLError.missingStub(name)
                }
            } else if (meta["follows"] as? Bool) == true {
                guard let digest = meta["digest"] as? String, let key = BlobKey(digest: digest),
                      store.blobStore.contains(key) else {
                    throw CBLError.badAttachment("body of '\(name)' was not received")
                }
                if meta["revpos"] == nil || !keepRevpos { meta["revpos"] = generation }
            } else {
                throw CBLError.badAttachment("'\(name)' has no data, stub or follows")
            }
            if let revpos = meta["revpos"] as? Int {
                if revpos < 0 || revpos > generation {
                    throw CBLError.badAttachment("'\(name)' has invalid revpos \(revpos)")
                }
                if revpos == 0 { meta["revpos"] = generation }   // tolerated (PouchDB bug, spec 4.3)
            }
            meta["stub"] = true
            for key in meta.keys where !CBLDatabase.storedAttachmentKeys.contains(key) { meta[key] = nil }
            result[name] = meta
        }
        properties["_attachments"] = result.isEmpty ? nil : result
    }
}

extension CBLError {
    private static let missingStubPrefix = "Invalid attachment: stub '"
    private static let missingStubSuffix = "' refers to an unknown attachment"

    /// A stub naming an attachment that neither the revision's ancestors nor the blob store
    /// have (spec 4.3); a 400 "bad attachment", as 1.x answers.
    static func missingStub(_ name: String) -> CBLError {
        CBLError(400, missingStubPrefix + name + missingStubSuffix)
    }

    /// The attachment named by a ``missingStub(_:)`` error.
    var missingStubName: String? {
        guard code == 400, message.hasPrefix(Self.missingStubPrefix), message.hasSuffix(Self.missingStubSuffix),
              message.count >= Self.missingStubPrefix.count + Self.missingStubSuffix.count else { return nil }
        return String(message.dropFirst(Self.missingStubPrefix.count).dropLast(Self.missingStubSuffix.count))
    }
}
