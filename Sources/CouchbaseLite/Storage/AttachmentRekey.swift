import Foundation

/// The attachment half of ``CBLDatabase/changeEncryptionKey(_:)``: where the blob store's re-key
/// plugs into the crash-safe protocol of ``DatabaseRekey`` (issue 19; the blob store's own
/// encryption lives in `Attachments/`). Until it is wired these do nothing, so only the database
/// file changes key.
///
/// The three steps mirror the database file's: `stage` (needs both keys, changes nothing a reader
/// sees), then — after the commit marker is on disk — `commit` (needs no key, must be idempotent:
/// recovery after a crash runs it again), or `discard` when the re-key did not reach its commit point.
enum AttachmentRekey {
    /// Writes every blob of `attachments` re-encrypted from `oldKey` to `newKey` into a staging
    /// place beside it. Wire here: the blob store's `changeEncryptionKey(from:to:)` (staging part).
    static func stage(attachments: URL, from oldKey: CBLSymmetricKey?, to newKey: CBLSymmetricKey?) throws {}

    /// Makes the staged blobs (and the `_encryption` marker) the live ones. Idempotent; no key.
    static func commit(attachments: URL) throws {}

    /// Removes whatever `stage` left. Idempotent; no key.
    static func discard(attachments: URL) {}
}
