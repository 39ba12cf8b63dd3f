import Foundation

/// A weak reference for the document identity map.
struct WeakDocument {
    weak var document: CBLDocument?
}

extension CBLDatabase {
    /// Creates a new document with a generated ID (not saved until you put properties).
    public func createDocument() -> CBLDocument {
        document(withID: CBLDatabase.generateDocumentID())!   // kept: a generated ID (a UUID) is always valid
    }

    /// The document with this ID: an existing one, or an empty one that is saved when you put
    /// properties. Nil only if the ID is invalid. One object per ID while it is referenced.
    public func document(withID docID: String) -> CBLDocument? {
        guard CBLDatabase.isValidDocumentID(docID) else { return nil }
        return lock.withLock { $0.document(withID: docID, database: self) }
    }

    /// The document with this ID if it exists and is not deleted, else nil.
    public func existingDocument(withID docID: String) -> CBLDocument? {
        guard let doc = document(withID: docID), doc.currentRevision != nil else { return nil }
        return doc
    }

    /// Same as ``document(withID:)``.
    public subscript(docID: String) -> CBLDocument? {
        document(withID: docID)
    }

    /// Deprecated 1.x spelling.
    public func documentWithID(_ docID: String) -> CBLDocument? { document(withID: docID) }
    /// Deprecated 1.x spelling.
    public func existingDocumentWithID(_ docID: String) -> CBLDocument? { existingDocument(withID: docID) }

    /// A 1.x-style random document ID: `-` + 22 URL-safe base64 characters (spec 3.1).
    static func generateDocumentID() -> String { SQLiteStore.generateUUID() }

    /// Any non-empty string not starting with `_`, or one starting with `_design/` (spec 3.1).
    static func isValidDocumentID(_ docID: String) -> Bool {
        guard !docID.isEmpty else { return false }
        if startsWithUnderscore(docID) { return docID.hasPrefix("_design/") && docID.utf8.count > 8 }
        return true
    }
}
