import Foundation
import JSONCore

/// An attachment body arriving from a peer, streamed into the blob store as it comes (never
/// held whole in memory): `append` each chunk, then `finish` installs it under its SHA-1.
// @unchecked because its BlobWriter is fed by one task at a time (append, then finish or cancel), in order.
package final class SyncBlobDownload: @unchecked Sendable {
    private let writer: BlobWriter
    private let deflater: GzipDeflater?
    /// The bytes received so far (before any compression).
    package private(set) var receivedLength = 0

    fileprivate init(writer: BlobWriter, deflater: GzipDeflater? = nil) {
        self.writer = writer
        self.deflater = deflater
    }

    /// True when the body is stored gzip-compressed (``CBLDatabase/syncBeginBlobDownload(compression:)``).
    package var isCompressing: Bool { deflater != nil }

    package func append(_ bytes: UnsafeRawBufferPointer) throws {
        receivedLength += bytes.count
        if let deflater {
            let out = deflater.update(Data(bytes))
            if !out.isEmpty { try writer.append(out) }
        } else {
            try writer.append(Data(bytes))
        }
    }

    /// Installs the blob; returns its `sha1-…` digest, CouchDB's `md5-…` digest and its
    /// (stored) length.
    package func finish() throws -> (digest: String, md5Digest: String, length: Int) {
        if let deflater { try writer.append(deflater.finish()) }
        let (key, length) = try writer.install()
        return (key.digest, writer.md5Digest, Int(length))
    }

    /// Drops what was received.
    package func cancel() { writer.cancel() }
}

extension CBLDatabase {
    /// Starts streaming an attachment body into the blob store.
    package func syncBeginBlobDownload() throws -> SyncBlobDownload {
        try syncBeginBlobDownload(compression: nil)
    }

    /// Starts streaming an attachment body into the blob store, gzip-compressed at the rule's
    /// level as it arrives when `compression` is given (an upload CouchDB would store compressed:
    /// the unencoded body never lands in the store).
    package func syncBeginBlobDownload(compression: AttachmentCompression?) throws -> SyncBlobDownload {
        guard let blobs = storeIfOpenForBlobs else { throw CBLError.notFound("Database '\(name)' is closed") }
        let deflater = try compression.map { try GzipDeflater(level: Int32($0.level)) }
        return SyncBlobDownload(writer: try BlobWriter(store: blobs), deflater: deflater)
    }

    /// The `_attachments` of the newest revision of `history` (newest first) whose body is
    /// stored here: what a pulled revision's stubs refer to (spec 4.3). Nil when none is stored.
    package func syncAncestorAttachments(docID: String, history: [String]) throws -> [String: IncomingAttachment]? {
        for revID in history {
            guard let rev = try syncRevision(docID: docID, revID: revID) else { continue }
            guard let body = rev.body else { continue }
            var out: [String: IncomingAttachment] = [:]
            let attachments = body.isEmpty ? nil : (try? JSON.value(body))?["_attachments"]?.objectValue
            for (name, meta) in attachments ?? [:] {
                out[name] = try? IncomingAttachment(json: meta, name: name)
            }
            return out
        }
        return nil
    }
}
