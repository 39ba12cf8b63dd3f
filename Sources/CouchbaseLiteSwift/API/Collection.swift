import Foundation

/// A container of documents in a scope of a database (3.x `Collection`), stored as LiteCore 3.x
/// stores it: its own key-store table (`kv_.name`, `kv_.scope.name`), its own sequences.
///
/// Every database has the default collection `_default` in the default scope `_default`; the
/// 2.x document calls on ``Database`` act on it. A `Collection` stays usable while its database
/// is open and the collection exists: after ``Database/deleteCollection(name:scope:)`` or
/// ``Database/close()`` its calls throw `.notOpen`. Safe to use from any thread or task.
// @unchecked because its fields are lets; the database it calls is thread-safe.
public final class Collection: @unchecked Sendable, Hashable, CustomStringConvertible {
    /// The name of the default collection, `_default`.
    public static let defaultCollectionName = KeyStore.defaultCollectionName

    /// The collection's name (unique in its scope; case-sensitive).
    public let name: String
    /// The scope the collection belongs to.
    public let scope: Scope
    /// The key-store holding its documents.
    let keyStore: KeyStore

    init(database: Database, keyStore: KeyStore) {
        let spec = keyStore.collectionSpec ?? (KeyStore.defaultScopeName, keyStore.name)
        self.keyStore = keyStore
        self.name = spec.collection
        self.scope = Scope(name: spec.scope, database: database)
    }

    /// `scope.name`, e.g. `_default.tasks`.
    public var fullName: String { scope.name + "." + name }

    /// The database the collection belongs to.
    public var database: Database { scope.database }

    /// The number of live (non-deleted) documents; 0 when the collection no longer exists.
    public var count: UInt64 {
        (try? database.withReadFile { try $0.liveDocumentCount(in: keyStore) }) ?? 0
    }

    public var description: String { "Collection(\(fullName))" }

    static func fullName(of keyStore: KeyStore) -> String {
        keyStore.collectionSpec.map { "\($0.scope).\($0.collection)" } ?? keyStore.name
    }

    // MARK: Reading

    /// The document `id`, or nil when it does not exist or is deleted.
    public func document(id: String) throws -> Document? {
        try database.liveDocument(withID: id, in: keyStore)
    }

    /// The document `id` (its `document` is nil when absent or deleted).
    public subscript(id: String) -> DocumentFragment {
        DocumentFragment(try? document(id: id))
    }

    /// The expiration time of the document `id`, or nil when it has none; throws `.notFound`
    /// when there is no such document.
    public func getDocumentExpiration(id: String) throws -> Date? {
        try database.documentExpiration(id: id, in: keyStore)
    }

    // MARK: Writing

    /// Saves `document` as a new revision; on a conflict the save wins (`.lastWriteWins`).
    /// A document read from another collection of this database is refused (`.invalidParameter`).
    public func save(document: MutableDocument) throws {
        _ = try database.save(document, concurrencyControl: .lastWriteWins, in: keyStore)
    }

    /// Saves `document` as a new revision. Returns false (saving nothing) when the document
    /// changed since it was read and `concurrencyControl` is `.failOnConflict`.
    @discardableResult
    public func save(document: MutableDocument, concurrencyControl: ConcurrencyControl) throws -> Bool {
        try database.save(document, concurrencyControl: concurrencyControl, in: keyStore)
    }

    /// Saves `document`; on a conflict calls `conflictHandler(document, current)` (current is nil
    /// when the stored document is deleted). When it returns true, `document` (as the handler
    /// left it) is saved as a child of the current revision; when false, nothing is saved and the
    /// call returns false.
    @discardableResult
    public func save(document: MutableDocument,
                     conflictHandler: (MutableDocument, Document?) throws -> Bool) throws -> Bool {
        try database.save(document, conflictHandler: conflictHandler, in: keyStore)
    }

    /// Deletes `document`: its current revision becomes a tombstone (still replicated, not returned).
    public func delete(document: Document) throws {
        _ = try database.putRevision(document, deletion: true, .lastWriteWins, in: keyStore)
    }

    /// Deletes `document`; returns false on a conflict with `.failOnConflict`.
    @discardableResult
    public func delete(document: Document, concurrencyControl: ConcurrencyControl) throws -> Bool {
        try database.putRevision(document, deletion: true, concurrencyControl, in: keyStore)
    }

    /// Removes every trace of `document` (no tombstone; nothing to replicate).
    public func purge(document: Document) throws {
        try database.checkOwner(document, keyStore)
        try database.purge(id: document.id, in: keyStore)
    }

    /// Removes every trace of the document `id`; throws `.notFound` when there is none.
    public func purge(id: String) throws {
        try database.purge(id: id, in: keyStore)
    }

    /// Sets when the document `id` expires (nil: never), stored in milliseconds (spec 5).
    public func setDocumentExpiration(id: String, expiration: Date?) throws {
        try database.setExpiration(id: id, expiration, in: keyStore)
    }

    // MARK: Indexes

    /// Creates the index `name` on this collection described by `config`; replaces an index of
    /// that name (index names are unique in the database, as in LiteCore), does nothing when an
    /// identical one exists.
    public func createIndex(withName name: String, config: IndexConfiguration) throws {
        try database.createIndex(config, name: name, on: keyStore)
    }

    /// Creates the index `name` on this collection (the 2.x-style index description).
    public func createIndex(_ index: Index, name: String) throws {
        try database.createIndex(index, name: name, on: keyStore)
    }

    /// Deletes this collection's index `name`; nothing happens when there is none.
    public func deleteIndex(forName name: String) throws {
        try database.withReadFile { file in _ = try file.existingLayout(of: keyStore) }
        try database.deleteIndex(forName: name, in: keyStore)
    }

    /// The names of this collection's indexes, sorted.
    public func indexes() throws -> [String] {
        try database.withReadFile { file in
            _ = try file.existingLayout(of: keyStore)
            return try file.indexRecords(keyStore: keyStore).map(\.name)
        }
    }

    // MARK: Equality

    /// Two collections are equal when they are the same collection of the same database object.
    public static func == (lhs: Collection, rhs: Collection) -> Bool {
        lhs.database === rhs.database && lhs.keyStore == rhs.keyStore
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(ObjectIdentifier(database))
        hasher.combine(keyStore)
    }
}
