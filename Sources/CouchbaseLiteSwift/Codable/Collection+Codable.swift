import Foundation

extension Collection {
    // MARK: Codable models (3.2.3)

    /// The document `id` decoded as a `T` (its `@DocumentID` gets the ID and current revision),
    /// or nil when there is no such document or it is deleted. Throws `DecodingError` when the
    /// document does not fit `T`.
    public func document<T: DocumentDecodable>(id: String, as type: T.Type) throws -> T? {
        guard let document = try document(id: id) else { return nil }
        return try DocumentDecoder.decode(T.self, from: document)
    }

    /// Saves `object` as a document; on a conflict the save wins (`.lastWriteWins`). A nil
    /// `@DocumentID` gets a generated ID; the ID and the new revision are assigned to `object`.
    public func save<T: DocumentEncodable>(from object: T) throws {
        _ = try save(from: object, concurrencyControl: .lastWriteWins)
    }

    /// Saves `object` as a document. Returns false (saving nothing) when `object` was read at, or
    /// last saved as, a revision that is no longer current and `concurrencyControl` is
    /// `.failOnConflict`. A model tied to no revision is saved over the current one.
    @discardableResult
    public func save<T: DocumentEncodable>(from object: T, concurrencyControl: ConcurrencyControl) throws -> Bool {
        let documentID = try DocumentID.of(object)
        // Holding the writer: the revision read here stays current until the write.
        return try database.withWriteFile { _ in
            let document = try baseDocument(for: documentID)
            try DocumentEncoder.encode(object, into: document)
            guard try database.save(document, concurrencyControl: concurrencyControl, in: keyStore) else { return false }
            documentID.assign(id: document.id, revisionID: document.revisionID)
            return true
        }
    }

    /// Saves `object` as a document; on a conflict calls `conflictHandler(object, current)` with
    /// the stored document decoded as a `T` (nil when it is deleted). When the handler returns
    /// true, `object` as the handler left it is saved over the current revision; when false,
    /// nothing is saved and the call returns false.
    @discardableResult
    public func save<T: DocumentCodable>(from object: T, conflictHandler: (T, T?) throws -> Bool) throws -> Bool {
        let documentID = try DocumentID.of(object)
        // Holding the writer: the revision read here stays current until the write.
        return try database.withWriteFile { _ in
            let document = try baseDocument(for: documentID)
            try DocumentEncoder.encode(object, into: document)
            let saved = try database.save(document, conflictHandler: { document, current in
                let existing = try current.map { try DocumentDecoder.decode(T.self, from: $0) }
                guard try conflictHandler(object, existing) else { return false }
                try DocumentEncoder.encode(object, into: document)
                return true
            }, in: keyStore)
            guard saved else { return false }
            documentID.assign(id: document.id, revisionID: document.revisionID)
            return true
        }
    }

    /// Deletes the document `object` was read from or saved as; on a conflict the delete wins.
    /// Throws `.notFound` when `object` has no ID or the document does not exist.
    public func delete<T: DocumentEncodable>(for object: T) throws {
        _ = try delete(for: object, concurrencyControl: .lastWriteWins)
    }

    /// Deletes the document `object` was read from or saved as; returns false (deleting nothing)
    /// when its revision is no longer current and `concurrencyControl` is `.failOnConflict`.
    @discardableResult
    public func delete<T: DocumentEncodable>(for object: T, concurrencyControl: ConcurrencyControl) throws -> Bool {
        let documentID = try DocumentID.of(object)
        let (id, revisionID) = try documentID.snapshot
        guard let id else { throw CouchbaseLiteError(.notFound, "The \(T.self) has no document ID: it was never saved") }
        // Holding the writer: the revision read here stays current until the write.
        return try database.withWriteFile { _ in
            let document: Document
            if let revisionID {
                document = Document(id: id, revisionID: revisionID, sequence: 0, isDeleted: false)
                document.owner = (database, keyStore)
            } else {
                guard let current = try self.document(id: id) else {
                    throw CouchbaseLiteError(.notFound, "Document '\(id)' not found")
                }
                document = current
            }
            guard try database.putRevision(document, deletion: true, concurrencyControl, in: keyStore) else { return false }
            documentID.assign(id: id, revisionID: document.revisionID)
            return true
        }
    }

    /// Removes every trace of the document `object` was read from or saved as (no tombstone);
    /// throws `.notFound` when `object` has no ID or there is no such document. The model keeps
    /// its ID; saving it again creates the document anew.
    public func purge<T: DocumentEncodable>(for object: T) throws {
        let documentID = try DocumentID.of(object)
        guard let id = documentID.wrappedValue else {
            throw CouchbaseLiteError(.notFound, "The \(T.self) has no document ID: it was never saved")
        }
        try purge(id: id)
        documentID.assign(id: id, revisionID: nil)
    }

    /// The document a model is saved into: a new one (generated ID), one based on the model's
    /// revision, or — for a model tied to no revision — one based on the current revision.
    /// Called holding the writer, so "current" stays current until the save.
    private func baseDocument(for documentID: DocumentID) throws -> MutableDocument {
        let (id, revisionID) = try documentID.snapshot
        guard let id else { return MutableDocument() }
        let document = MutableDocument(id: id)
        if let revisionID {
            document.revisionID = revisionID
        } else if let current = try database.documentIncludingDeleted(withID: id, in: keyStore) {
            document.revisionID = current.revisionID
            document.sequence = current.sequence
        }
        document.owner = (database, keyStore)
        return document
    }
}
