import Foundation

extension CBLDatabase {
    /// True when the database's attachments are stored encrypted (the blob store's `_encryption`).
    package var attachmentsAreEncrypted: Bool { storeIfOpenForBlobs?.encryptionKey != nil }

    /// Re-encrypts the attachments alone with `newKey` (nil = plain), crash-safely
    /// (``BlobStore/changeEncryptionKey(from:to:between:)``). `CBLDatabase.changeEncryptionKey`
    /// re-keys the SQLite file in `between`; tests and tools use this directly. Writers must
    /// be stopped meanwhile.
    package func changeAttachmentEncryptionKey(to newKey: CBLSymmetricKey?, between: () throws -> Void = {}) throws {
        guard let blobs = storeIfOpenForBlobs else { throw CBLError.notFound("Database '\(name)' is closed") }
        try blobs.changeEncryptionKey(from: blobs.encryptionKey, to: newKey, between: between)
    }

    /// The raw bytes of an attachment's blob file (ciphertext when encrypted), for checks.
    package func attachmentBlobFileContents(digest: String) -> Data? {
        guard let key = BlobKey(digest: digest), let url = storeIfOpenForBlobs?.url(for: key) else { return nil }
        return try? Data(contentsOf: url)
    }
}
