import Foundation

/// An attachment's stored content read piece by piece (decrypted when the store is encrypted),
/// so the listener can answer a GET or a `Range` of any size without holding it in memory.
// @unchecked because its BlobReader is used by one reader at a time (the listener's streamer serialises its reads under a lock).
package final class SyncBlobStream: @unchecked Sendable {
    private let reader: BlobReader
    /// The content length (plaintext).
    package let length: Int

    fileprivate init(reader: BlobReader, length: Int) {
        self.reader = reader
        self.length = length
    }

    /// The next piece (at most about `count` bytes); nil at the end.
    package func read(upToCount count: Int) throws -> Data? {
        try reader.read(upToCount: count)
    }

    /// Moves `count` bytes further on (a seek in a plain store; reading and dropping them when
    /// the store is encrypted, since CBC decrypts in order).
    package func skip(_ count: Int) throws {
        try reader.skip(count)
    }

    package func close() { reader.close() }
}

extension CBLDatabase {
    /// Opens an attachment's content for streaming; nil when it is stored gzip-encoded (the
    /// caller decodes it whole) and a 500 naming the document when the blob is missing.
    package func syncOpenAttachmentStream(meta: [String: Any], docID: String, name: String) throws -> SyncBlobStream? {
        if meta["encoding"] != nil { return nil }
        guard let digest = meta["digest"] as? String, let key = BlobKey(digest: digest),
              let blobs = storeIfOpenForBlobs, let size = blobs.size(of: key),
              let reader = try blobs.openReader(for: key) else {
            throw CBLError(500, "The content of attachment '\(name)' of '\(docID)' is missing")
        }
        return SyncBlobStream(reader: reader, length: Int(size))
    }

    /// Adds or replaces one attachment whose body was already streamed into the blob store
    /// (``syncBeginBlobDownload()``), making a new revision on top of `prevRevID` (or a new
    /// document). Returns the new revision ID.
    ///
    /// - Parameter gzipped: the body was uploaded gzip-encoded (`Content-Encoding: gzip`): it is
    ///   kept so, with `"encoding":"gzip"`, `encoded_length` and the decoded `length` (CouchDB
    ///   gives the encoded length there; 1.x's `length` is the decoded one, spec 4.1).
    /// - Parameter decodedLength: with `gzipped`, the decoded length when known (the body was
    ///   compressed here as it arrived); else it is found by inflating the stored body.
    package func syncPutAttachment(docID: String, prevRevID: String?, name: String, contentType: String?,
                                   installed: (digest: String, length: Int), gzipped: Bool = false,
                                   decodedLength: Int? = nil) throws -> String {
        var properties = try attachmentEditBase(docID: docID, prevRevID: prevRevID)
        // A `follows` entry whose digest names a blob present is taken as it is (spec 4.3).
        var meta: [String: Any] = ["follows": true, "digest": installed.digest, "length": installed.length]
        if gzipped {
            meta["encoding"] = "gzip"
            meta["encoded_length"] = installed.length
            if let decodedLength {
                meta["length"] = decodedLength
            } else if let key = BlobKey(digest: installed.digest), let stored = try storeIfOpenForBlobs?.read(key),
                      let decoded = try? Gzip.decompress(stored) {
                meta["length"] = decoded.count
            }
        }
        if let contentType { meta["content_type"] = contentType }
        var attachments = properties["_attachments"] as? [String: Any] ?? [:]
        attachments[name] = meta
        properties["_attachments"] = attachments
        let saved = try putRevision(docID: docID, prevRevID: prevRevID, properties: properties, deleting: false,
                                    allowConflict: false)
        return saved.revisionID ?? ""
    }
}
