import Crypto
import Foundation

/// The MD5 of blobs' stored bytes: what CouchDB names an attachment by in its ETag (the quoted
/// base64 of `couch_att`'s `md5`, which covers the stored form — the gzip bytes of a compressed
/// attachment). The 1.x file keeps only SHA-1 digests, and stays so.
///
/// Kept in memory, keyed by the blob's SHA-1 key, rather than in the 1.x file or beside the blobs:
/// - nothing is added to a file or directory a 1.x app (or its compaction) opens;
/// - the key names the content, so an entry never goes stale and needs no invalidation
///   (compaction, purges and re-keys cannot make it wrong: an encrypted blob's MD5 is its
///   plaintext's, as its SHA-1 is);
/// - every blob written by this process gets its entry for free (``BlobWriter`` hashes MD5 beside
///   SHA-1 as the bytes arrive); a blob written before costs one streamed read on the first
///   request that needs its ETag.
/// The table is bounded (``capacity``); when full it starts again empty.
enum BlobMD5 {
    /// Entries kept at most (about 100 bytes each).
    static let capacity = 65_536
    private static let table = Locked<[BlobKey: [UInt8]]>([:])

    /// Records the MD5 of a blob just written.
    static func remember(_ md5: [UInt8], for key: BlobKey) {
        table.withLock { entries in
            if entries.count >= capacity, entries[key] == nil { entries.removeAll(keepingCapacity: true) }
            entries[key] = md5
        }
    }

    /// The recorded MD5 of a blob, nil when unknown.
    static func known(_ key: BlobKey) -> [UInt8]? {
        table.withLock { $0[key] }
    }
}

extension BlobStore {
    /// The MD5 of a blob's content (decrypted), from the table or read once; nil when the blob is missing.
    func md5(of key: BlobKey) throws -> [UInt8]? {
        if let known = BlobMD5.known(key) { return known }
        guard let reader = try openReader(for: key) else { return nil }
        defer { reader.close() }
        var md5 = Insecure.MD5()
        while let piece = try reader.read(upToCount: 256 * 1024), !piece.isEmpty { md5.update(data: piece) }
        let digest = Array(md5.finalize())
        BlobMD5.remember(digest, for: key)
        return digest
    }
}

extension CBLDatabase {
    /// The MD5 of an attachment's stored bytes (gzip bytes when it is stored gzip-encoded), as
    /// CouchDB's attachment ETag names it; nil when the metadata names no blob present. 1.x's own
    /// `digest` (SHA-1) is unchanged.
    package func syncAttachmentMD5(meta: [String: Any]) throws -> [UInt8]? {
        guard let digest = meta["digest"] as? String, let key = BlobKey(digest: digest),
              let blobs = storeIfOpenForBlobs else { return nil }
        return try blobs.md5(of: key)
    }
}
