import Foundation

/// Binary content referenced from a document: a `"@type": "blob"` dict or, in databases upgraded
/// from 1.x, an entry of the top-level `_attachments` dict (spec 7). Content is read on demand
/// from the database's `Attachments/` store, by digest.
// @unchecked because its fields are lets (`properties` is immutable JSON); content is read on demand from a thread-safe store.
public final class Blob: @unchecked Sendable {
    /// The blob's metadata as stored in the document.
    public let properties: [String: Any]
    private let blobStore: BlobStore?
    private let inlineContent: Data?

    init(properties: [String: Any], blobStore: BlobStore?) {
        self.properties = properties
        self.blobStore = blobStore
        self.inlineContent = nil
    }

    /// A new blob with in-memory content (to be saved with a document).
    public init(contentType: String, data: Data) {
        self.inlineContent = data
        self.blobStore = nil
        self.properties = ["@type": "blob", "content_type": contentType, "length": data.count,
                           "digest": BlobStore.digest(forKey: SHA1Digest.hash(data))]
    }

    /// Created in memory and not yet written to a blob store.
    var isNew: Bool { inlineContent != nil && blobStore == nil }

    /// The MIME type (`content_type`).
    public var contentType: String? { properties["content_type"] as? String }

    /// Length of the content in bytes (`length`).
    public var length: UInt64 {
        if let n = properties["length"] as? Int { return UInt64(max(n, 0)) }
        if let n = properties["length"] as? UInt64 { return n }
        if let d = properties["length"] as? Double, d >= 0 { return UInt64(d) }
        return 0
    }

    /// `sha1-<base64>` of the stored bytes.
    public var digest: String? { properties["digest"] as? String }

    /// The content, or nil when the blob file is missing. Legacy attachments that 1.x stored
    /// gzip-encoded (`"encoding": "gzip"`) are returned as stored, as in Couchbase Lite 2.x.
    public var content: Data? {
        if let inlineContent { return inlineContent }
        guard let digest, let blobStore else { return nil }
        return blobStore.contents(ofDigest: digest)
    }

    /// A stream over the content, or nil when the blob file is missing.
    public var contentStream: InputStream? {
        if let inlineContent { return InputStream(data: inlineContent) }
        guard let digest, let url = blobStore?.url(forDigest: digest),
              FileManager.default.fileExists(atPath: url.path) else { return nil }
        return InputStream(url: url)
    }
}
