import Foundation

/// An attachment of a revision: a named blob with a content type.
// @unchecked because its fields are immutable after init except the weak `revision`, and `metadata` holds JSON values (not Sendable in type).
public final class CBLAttachment: NSObject, @unchecked Sendable {
    /// The revision this attachment belongs to.
    public weak var revision: CBLRevision?
    private let owningDocument: CBLDocument
    /// The attachment name.
    public let name: String
    /// The metadata dictionary as stored in `_attachments` (`content_type`, `digest`, `length`, `revpos`, …).
    public let metadata: [String: Any]
    private let pending: PendingAttachment?

    init(revision: CBLRevision, name: String, metadata: [String: Any]) {
        self.revision = revision
        self.owningDocument = revision.document
        self.name = name
        self.metadata = metadata
        self.pending = nil
    }

    init(revision: CBLRevision, name: String, pending: PendingAttachment) {
        self.revision = revision
        self.owningDocument = revision.document
        self.name = name
        var meta: [String: Any] = ["follows": true]
        if let type = pending.contentType { meta["content_type"] = type }
        self.metadata = meta
        self.pending = pending
    }

    /// The document this attachment belongs to.
    public var document: CBLDocument { owningDocument }
    /// The MIME type.
    public var contentType: String? { metadata["content_type"] as? String }
    /// The decoded length in bytes.
    public var length: UInt64 {
        if let n = metadata["length"] as? Int { return UInt64(max(n, 0)) }
        if let pending, case .data(let d) = pending.body { return UInt64(d.count) }
        return 0
    }
    /// The stored (encoded) length: equals `length` unless the attachment is gzip-encoded.
    public var encodedLength: UInt64 {
        if let n = metadata["encoded_length"] as? Int { return UInt64(max(n, 0)) }
        return length
    }
    /// The content encoding (`"gzip"`) or nil.
    public var encoding: String? { metadata["encoding"] as? String }
    /// The `sha1-…` digest of the stored bytes.
    public var digest: String? { metadata["digest"] as? String }
    /// The generation of the revision where the attachment last changed.
    public var revpos: Int { metadata["revpos"] as? Int ?? 0 }

    var blobKey: BlobKey? { digest.flatMap(BlobKey.init(digest:)) }

    private var blobStore: BlobStore? { owningDocument.database.storeIfOpenForBlobs }

    /// The content, decoded if it is stored gzip-encoded. Nil if the blob is missing.
    public var content: Data? {
        if let pending {
            switch pending.body {
            case .data(let d): return d
            case .file(let url): return try? Data(contentsOf: url)
            }
        }
        guard let key = blobKey, let raw = blobStore?.contents(of: key) else { return nil }
        if encoding == "gzip" { return try? Gzip.decompress(raw) }
        return raw
    }

    /// The blob file holding the content; nil if the content is encoded (the file is gzip),
    /// missing, or encrypted (an encrypted database's files are not readable as is, as in 1.x).
    public var contentURL: URL? {
        if let pending, case .file(let url) = pending.body { return url }
        guard encoding == nil, let key = blobKey else { return nil }
        return blobStore?.plaintextURL(for: key)
    }

    /// A stream over the (decoded) content, for reading large attachments without loading them whole.
    public func openContentStream() -> InputStream? {
        if encoding != nil { return content.map(InputStream.init(data:)) }
        if let url = contentURL { return InputStream(url: url) }
        // An encrypted blob is decrypted as it is read (1.x `decryptStream:`).
        if pending == nil, let key = blobKey, let store = blobStore, let encryptionKey = store.encryptionKey,
           let url = store.url(for: key), let raw = InputStream(url: url) {
            return encryptionKey.decryptStream(raw)
        }
        return content.map(InputStream.init(data:))
    }

    public override var description: String { "CBLAttachment[\(name) \(contentType ?? "") \(length)B]" }
}
