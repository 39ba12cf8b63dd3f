import Foundation

/// The attachment half of ``CBLDatabase/changeEncryptionKey(_:)``: where the blob store's re-key
/// (`Attachments/BlobStore+Rekey.swift`) plugs into the crash-safe protocol of ``DatabaseRekey``.
///
/// The three steps mirror the database file's: `stage` (needs both keys, changes nothing a reader
/// sees), then — after the commit marker is on disk — `commit` (needs no key, must be idempotent:
/// recovery after a crash runs it again), or `discard` when the re-key did not reach its commit point.
enum AttachmentRekey {
    /// Writes every blob of `attachments` re-encrypted from `oldKey` to `newKey` into
    /// `attachments.rekey-new` beside it (ready flag last); a wrong old key fails here, changing nothing.
    static func stage(attachments: URL, from oldKey: CBLSymmetricKey?, to newKey: CBLSymmetricKey?) throws {
        let store = try BlobStore(directory: attachments, encryptionKey: oldKey)
        _ = try store.prepareKeyChange(from: oldKey, to: newKey)
    }

    /// Makes the staged blobs (and the `_encryption` marker) the live ones. Idempotent; no key:
    /// when nothing is staged any more (the switch already happened), only leftovers are removed.
    static func commit(attachments: URL) throws {
        let staged = BlobStore.sibling(of: attachments, suffix: BlobStore.rekeyNewSuffix)
        if FileManager.default.fileExists(atPath: staged.path) {
            try BlobStore.commitKeyChange(directory: attachments)
        } else {
            try? FileManager.default.removeItem(at: BlobStore.sibling(of: attachments, suffix: BlobStore.rekeyOldSuffix))
            try? FileManager.default.removeItem(at: attachments.appendingPathComponent(BlobStore.rekeyReadyName))
        }
    }

    /// Removes whatever `stage` left. Idempotent; no key.
    static func discard(attachments: URL) {
        try? FileManager.default.removeItem(at: BlobStore.sibling(of: attachments, suffix: BlobStore.rekeyNewSuffix))
    }
}
