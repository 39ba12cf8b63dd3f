import Fleece
import Foundation
import Synchronization

/// A document read from a 2.x database: its ID, current revision and properties (read-only).
/// Properties are read lazily from the stored Fleece body; nothing is decoded up front.
// @unchecked because the Fleece body is read-only and shared, and the fields a save changes live in `state` (a Mutex).
public class Document: DictionaryObject, @unchecked Sendable {
    /// What a save (of a `MutableDocument`) changes; read and written under the mutex, since a
    /// document may be saved on one thread while another reads it.
    private struct State: Sendable {
        var id: String
        var revisionID: String?
        var sequence: UInt64
        var isDeleted: Bool
        var owner: (database: Database, keyStore: KeyStore)?
    }
    private let state: Mutex<State>

    /// The document ID.
    public internal(set) var id: String {
        get { state.withLock { $0.id } }
        set { state.withLock { $0.id = newValue } }
    }
    /// The current revision ID (`GEN-DIGEST`); nil for version-vector databases.
    public internal(set) var revisionID: String? {
        get { state.withLock { $0.revisionID } }
        set { state.withLock { $0.revisionID = newValue } }
    }
    /// The sequence at which the current revision was saved.
    public internal(set) var sequence: UInt64 {
        get { state.withLock { $0.sequence } }
        set { state.withLock { $0.sequence = newValue } }
    }
    /// Whether the current revision is a deletion (tombstone).
    public internal(set) var isDeleted: Bool {
        get { state.withLock { $0.isDeleted } }
        set { state.withLock { $0.isDeleted = newValue } }
    }
    /// The database and key-store it was read from or saved to (nil for a new document).
    var owner: (database: Database, keyStore: KeyStore)? {
        get { state.withLock { $0.owner } }
        set { state.withLock { $0.owner = newValue } }
    }

    /// The collection it was read from or saved to (3.x `collection`); nil for a new document.
    public var collection: Collection? {
        owner.map { Collection(database: $0.database, keyStore: $0.keyStore) }
    }

    init(record: DocumentRecord, context: DocumentContext?) {
        state = Mutex(State(id: record.docID, revisionID: record.revisionID, sequence: record.sequence,
                            isDeleted: record.isDeleted))
        super.init(context?.fleece.root.dictValue, context: context, isDocumentRoot: true)
    }

    /// For `MutableDocument`, whose properties live outside Fleece until saved.
    init(id: String, revisionID: String?, sequence: UInt64, isDeleted: Bool) {
        state = Mutex(State(id: id, revisionID: revisionID, sequence: sequence, isDeleted: isDeleted))
        super.init(nil, context: nil, isDocumentRoot: true)
    }

    /// A mutable copy of this document, to change and save (its revision becomes the parent).
    public func toMutable() -> MutableDocument {
        MutableDocument(copying: self)
    }
}
