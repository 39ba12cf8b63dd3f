import Fleece
import Foundation

/// A document read from a 2.x database: its ID, current revision and properties (read-only).
/// Properties are read lazily from the stored Fleece body; nothing is decoded up front.
public class Document: DictionaryObject, @unchecked Sendable {
    /// The document ID.
    public internal(set) var id: String
    /// The current revision ID (`GEN-DIGEST`); nil for version-vector databases.
    public internal(set) var revisionID: String?
    /// The sequence at which the current revision was saved.
    public internal(set) var sequence: UInt64
    /// Whether the current revision is a deletion (tombstone).
    public internal(set) var isDeleted: Bool
    /// The database and key-store it was read from or saved to (nil for a new document).
    var owner: (database: Database, keyStore: KeyStore)?

    /// The collection it was read from or saved to (3.x `collection`); nil for a new document.
    public var collection: Collection? {
        owner.map { Collection(database: $0.database, keyStore: $0.keyStore) }
    }

    init(record: DocumentRecord, context: DocumentContext?) {
        self.id = record.docID
        self.revisionID = record.revisionID
        self.sequence = record.sequence
        self.isDeleted = record.isDeleted
        super.init(context?.fleece.root.dictValue, context: context, isDocumentRoot: true)
    }

    /// For `MutableDocument`, whose properties live outside Fleece until saved.
    init(id: String, revisionID: String?, sequence: UInt64, isDeleted: Bool) {
        self.id = id
        self.revisionID = revisionID
        self.sequence = sequence
        self.isDeleted = isDeleted
        super.init(nil, context: nil, isDocumentRoot: true)
    }

    /// A mutable copy of this document, to change and save (its revision becomes the parent).
    public func toMutable() -> MutableDocument {
        MutableDocument(copying: self)
    }
}
