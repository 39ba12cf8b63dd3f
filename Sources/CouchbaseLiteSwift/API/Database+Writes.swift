import Fleece
import Foundation

/// How a save or delete treats a document changed by someone else since it was read.
public enum ConcurrencyControl: Sendable {
    /// The save wins: it becomes a child of the current revision.
    case lastWriteWins
    /// The save is refused (the call returns false).
    case failOnConflict
}

extension Database {
    // MARK: Saving and deleting (the default collection, as in 3.x)

    /// Saves `document` to the default collection as a new revision; on a conflict the save wins
    /// (`.lastWriteWins`).
    public func saveDocument(_ document: MutableDocument) throws {
        _ = try save(document, concurrencyControl: .lastWriteWins, in: .default)
    }

    /// Saves `document` to the default collection as a new revision. Returns false (saving
    /// nothing) when the document changed since `document` was read and `concurrencyControl` is
    /// `.failOnConflict`.
    @discardableResult
    public func saveDocument(_ document: MutableDocument, concurrencyControl: ConcurrencyControl) throws -> Bool {
        try save(document, concurrencyControl: concurrencyControl, in: .default)
    }

    /// Saves `document` to the default collection; on a conflict calls
    /// `conflictHandler(document, current)` (current is nil when the stored document is deleted).
    /// When it returns true, `document` (as the handler left it) is saved as a child of the
    /// current revision; when false, nothing is saved and the call returns false.
    @discardableResult
    public func saveDocument(_ document: MutableDocument,
                             conflictHandler: (MutableDocument, Document?) throws -> Bool) throws -> Bool {
        try save(document, conflictHandler: conflictHandler, in: .default)
    }

    /// Deletes `document` from the default collection: its current revision becomes a tombstone
    /// (still replicated, not returned).
    public func deleteDocument(_ document: Document) throws {
        _ = try putRevision(document, deletion: true, .lastWriteWins, in: .default)
    }

    /// Deletes `document` from the default collection; returns false on a conflict with
    /// `.failOnConflict` (see `saveDocument`).
    @discardableResult
    public func deleteDocument(_ document: Document, concurrencyControl: ConcurrencyControl) throws -> Bool {
        try putRevision(document, deletion: true, concurrencyControl, in: .default)
    }

    /// Removes every trace of `document` from the default collection (no tombstone; nothing to replicate).
    public func purgeDocument(_ document: Document) throws {
        try checkOwner(document, .default)
        try purge(id: document.id, in: .default)
    }

    /// Removes every trace of the document `id` from the default collection; throws `.notFound`
    /// when there is none.
    public func purgeDocument(withID id: String) throws {
        try purge(id: id, in: .default)
    }

    /// Sets when the document `id` of the default collection expires (nil: never), stored in
    /// milliseconds (spec 5).
    public func setDocumentExpiration(withID id: String, expiration: Date?) throws {
        try setExpiration(id: id, expiration, in: .default)
    }

    // MARK: Writes to any collection

    func save(_ document: MutableDocument, concurrencyControl: ConcurrencyControl, in keyStore: KeyStore) throws -> Bool {
        try putRevision(document, deletion: false, concurrencyControl, in: keyStore)
    }

    func save(_ document: MutableDocument, conflictHandler: (MutableDocument, Document?) throws -> Bool,
              in keyStore: KeyStore) throws -> Bool {
        // Holding the writer throughout: the document read here is the one the next try replaces.
        try withWriteFile { _ in
            while true {
                if try putRevision(document, deletion: false, .failOnConflict, in: keyStore) { return true }
                let current = try documentIncludingDeleted(withID: document.id, in: keyStore)
                guard try conflictHandler(document, current?.isDeleted == true ? nil : current) else { return false }
                document.revisionID = current?.revisionID
                document.sequence = current?.sequence ?? 0
            }
        }
    }

    func purge(id: String, in keyStore: KeyStore) throws {
        try withWriteFile { file in
            guard try file.inTransaction({ try file.purgeRecord(docID: id, in: keyStore) }) else {
                throw CouchbaseLiteError(.notFound, "Document '\(id)' not found")
            }
            didChange(id, in: keyStore, file: file)
        }
    }

    func setExpiration(id: String, _ expiration: Date?, in keyStore: KeyStore) throws {
        try withWriteFile { file in
            guard try file.record(forDocumentID: id, in: keyStore) != nil else {
                throw CouchbaseLiteError(.notFound, "Document '\(id)' not found")
            }
            let milliseconds = expiration.map { Int64(($0.timeIntervalSince1970 * 1000).rounded()) }
            try file.inTransaction { try file.updateExpiration(docID: id, milliseconds: milliseconds, in: keyStore) }
        }
    }

    /// A document read from (or saved to) one collection of this database cannot be written to
    /// another one (3.x refuses it the same way).
    func checkOwner(_ document: Document, _ keyStore: KeyStore) throws {
        guard let owner = document.owner, owner.database === self, owner.keyStore != keyStore else { return }
        throw CouchbaseLiteError(.invalidParameter,
            "Document '\(document.id)' belongs to collection \(Collection.fullName(of: owner.keyStore)), not \(Collection.fullName(of: keyStore))")
    }

    /// Runs `block` in one transaction: its saves and deletes are committed together, or not at
    /// all when it throws. Other threads' writes wait until it returns; their reads and queries
    /// go on, seeing the last commit, while the block's own reads see its writes.
    public func inBatch(using block: () throws -> Void) throws {
        try withWriteFile { file in
            do {
                try file.inTransaction { try block() }
            } catch {
                if !file.connection.isInTransaction { observers.discardPending() }
                throw error
            }
            // The batch's saves were recorded as they happened; the commit reports them together.
            if !file.connection.isInTransaction { observers.committed() }
        }
    }

    // MARK: Blobs

    /// Writes the blob's content to the database's blob store (saving a document does it too).
    public func saveBlob(blob: Blob) throws {
        try withWriteFile { file in
            guard blob.isNew, let content = blob.content else { return }
            try file.blobStore.store(content)
        }
    }

    /// The blob whose metadata is `properties` (it needs a `digest`), or nil when the store lacks it.
    public func getBlob(properties: [String: Any]) -> Blob? {
        guard let digest = properties["digest"] as? String else { return nil }
        return try? withReadFile { file in
            guard let url = file.blobStore.url(forDigest: digest), FileManager.default.fileExists(atPath: url.path) else {
                return nil
            }
            return Blob(properties: properties, blobStore: file.blobStore)
        }
    }

    // MARK: Internals

    /// Adds a revision (LiteCore's `putNewRevision`): a child of the current revision with a
    /// generated ID, the tree re-sorted and pruned, the row rewritten with the next sequence.
    func putRevision(_ document: Document, deletion: Bool, _ concurrencyControl: ConcurrencyControl,
                     in keyStore: KeyStore) throws -> Bool {
        try checkOwner(document, keyStore)
        return try withWriteFile { file in
            try file.checkWritable()
            let saved = try file.inTransaction {
                let existing = try file.record(forDocumentID: document.id, in: keyStore)
                let base = document.revisionID.flatMap(BinaryRevisionID.encode)
                var tree = LiteCoreRevTree(revisions: [])
                var parentIndex: Int?
                if let existing {
                    let changed = base != existing.version && !(base == nil && existing.isDeleted)
                    if changed && concurrencyControl == .failOnConflict { return false }
                    if deletion && existing.isDeleted {
                        throw CouchbaseLiteError(.notFound, "Document '\(document.id)' is already deleted")
                    }
                    tree = existing.tree
                    // 3.x rows keep the current body outside the tree (spec 3.4).
                    if tree.revisions[0].body == nil { tree.revisions[0].body = existing.body }
                    parentIndex = 0
                } else {
                    if base != nil && concurrencyControl == .failOnConflict { return false }
                    if deletion { throw CouchbaseLiteError(.notFound, "Document '\(document.id)' not found") }
                }

                let encoded: MutableValues.EncodingResult
                if deletion {
                    var encoder = FleeceEncoder(sharedKeys: file.sharedKeys)
                    encoder.beginDict()
                    encoder.endDict()
                    encoded = .init(body: try encoder.finish(), hasAttachments: false, newBlobs: [])
                } else {
                    let root = (document as? MutableDocument)?.root ?? MutableDictionaryObject(data: document.toDictionary())
                    encoded = try MutableValues.encodeDocument(root, sharedKeys: file.sharedKeys)
                }
                for blob in encoded.newBlobs {
                    if let content = blob.content { try file.blobStore.store(content) }
                }

                let revID = BinaryRevisionID.generate(parent: parentIndex.map { tree.revisions[$0].revID },
                                                      deleted: deletion, body: encoded.body)
                tree.addRevision(revID, parentIndex: parentIndex,
                                 flags: .leaf(deleted: deletion, hasAttachments: encoded.hasAttachments),
                                 body: encoded.body, recordSequence: existing?.sequence ?? 0,
                                 maxDepth: try file.maxRevTreeDepth())
                let sequence = try file.writeRecord(docID: document.id, tree: tree, existing: existing, in: keyStore)
                document.revisionID = BinaryRevisionID.decode(revID)
                document.sequence = sequence
                document.isDeleted = deletion
                document.owner = (self, keyStore)
                return true
            }
            if saved { didChange(document.id, in: keyStore, file: file) }
            return saved
        }
    }
}
