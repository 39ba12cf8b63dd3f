/// One attachment of a stored revision naming a blob by its digest (spec 4.1): what keeps a blob
/// file alive through compaction (spec 4.5) and what `cbl check` audits.
package struct BlobReference: Sendable {
    package let documentID: String
    package let revisionID: String
    /// The attachment's name in `_attachments`.
    package let attachmentName: String
    /// The `digest` as stored.
    package let digest: String
    /// The blob the digest names; nil when it is not a `sha1-` digest of 20 bytes (no 1.x file can hold it).
    package let key: BlobKey?
    /// The blob file's content length the stub promises: `encoded_length` for a gzip-encoded
    /// attachment, else `length`; nil when the stub does not say.
    package let storedLength: Int?
}
