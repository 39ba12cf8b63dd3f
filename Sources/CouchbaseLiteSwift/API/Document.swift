import Fleece
import Foundation

/// A document read from a 2.x database: its ID, current revision and properties (read-only).
/// Properties are read lazily from the stored Fleece body; nothing is decoded up front.
public final class Document: DictionaryObject, @unchecked Sendable {
    /// The document ID.
    public let id: String
    /// The current revision ID (`GEN-DIGEST`); nil for version-vector databases.
    public let revisionID: String?
    /// The sequence at which the current revision was saved.
    public let sequence: UInt64
    /// Whether the current revision is a deletion (tombstone).
    public let isDeleted: Bool

    init(record: DocumentRecord, context: DocumentContext?) {
        self.id = record.docID
        self.revisionID = record.revisionID
        self.sequence = record.sequence
        self.isDeleted = record.isDeleted
        super.init(context?.fleece.root.dictValue, context: context, isDocumentRoot: true)
    }
}
