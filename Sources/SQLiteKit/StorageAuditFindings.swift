import Foundation

/// What a read-only audit of a Couchbase Lite bundle found: SQLite's integrity check, the live
/// documents, and the blob files against the references the documents hold. The 1.x store's
/// audit (`StoreAudit`, spec 2, 4.1, 4.2, 4.5) and the 2.x/3.x file's (`DataFileAudit`,
/// cbl2-format 1.1, 2.3) both fill it in; `cbl check` prints it.
package struct StorageAuditFindings: Sendable {
    /// Where a blob is referred to: a 1.x revision's attachment, or a 2.x document (its bodies name
    /// digests, not revisions or attachments) in a collection.
    package struct Reference: Sendable {
        package var documentID: String
        /// The 1.x revision; nil in 2.x.
        package var revisionID: String?
        /// The 1.x attachment name; nil in 2.x.
        package var attachment: String?
        /// The 2.x collection (`store.tasks`, `local`); nil for the default one and in 1.x.
        package var collection: String?

        package init(documentID: String, revisionID: String? = nil, attachment: String? = nil, collection: String? = nil) {
            self.documentID = documentID
            self.revisionID = revisionID
            self.attachment = attachment
            self.collection = collection
        }
    }

    /// A blob documents refer to that no file holds (`file` is "-" when the digest names no file).
    package struct MissingBlob: Sendable {
        package var digest: String
        package var file: String
        package var references: [Reference]

        package init(digest: String, file: String, references: [Reference]) {
            self.digest = digest
            self.file = file
            self.references = references
        }
    }

    /// A blob file no document refers to: left by a save that failed after storing its blob (a
    /// full disk, a crash), by design; compaction deletes it, so it is no problem.
    package struct OrphanedBlob: Sendable {
        package var file: String
        package var size: Int64

        package init(file: String, size: Int64) {
            self.file = file
            self.size = size
        }
    }

    /// A blob file whose size is not the one the first revision referring to it promises (1.x
    /// stores the length; 2.x audits find none).
    package struct MismatchedBlob: Sendable {
        package var file: String
        package var size: Int64
        package var expectedSize: Int64
        package var reference: Reference

        package init(file: String, size: Int64, expectedSize: Int64, reference: Reference) {
            self.file = file
            self.size = size
            self.expectedSize = expectedSize
            self.reference = reference
        }
    }

    /// SQLite's integrity check: `["ok"]` when it found nothing wrong, else its lines.
    package var integrity: [String] = []
    /// Documents (of the default collection in 2.x) whose current revision is not deleted.
    package var liveDocuments = 0
    /// Files in the attachments directory named like blobs.
    package var blobFiles = 0
    /// Distinct blobs the documents refer to.
    package var referencedBlobs = 0
    /// By digest; 1.x references whose digest names no file last.
    package var missing: [MissingBlob] = []
    /// By file name.
    package var orphans: [OrphanedBlob] = []
    package var mismatched: [MismatchedBlob] = []

    package init() {}

    /// True when SQLite's integrity check found nothing wrong.
    package var integrityOK: Bool { integrity == ["ok"] }

    /// A file's size in bytes; 0 when it cannot be read.
    package static func fileSize(_ url: URL) -> Int64 {
        ((try? FileManager.default.attributesOfItem(atPath: url.path))?[.size] as? NSNumber)?.int64Value ?? 0
    }
}
