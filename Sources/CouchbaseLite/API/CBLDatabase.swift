import Foundation
import JSONCore
import SQLiteKit

/// A 1.x database: documents with revision trees, attachments, local documents, views.
///
/// Safe to use from any thread or task: every operation takes the database's lock, and
/// change notifications are delivered after the outermost transaction commits.
public final class CBLDatabase: NSObject, @unchecked Sendable {
    /// The database name.
    public let name: String
    /// The manager that opened it.
    public let manager: CBLManager
    /// The `.cblite2` directory.
    public let directoryURL: URL

    /// Serialises every access to the store and to cached document state. Recursive, because
    /// `inTransaction` blocks, validation and change listeners call back into the database.
    let lock = NSRecursiveLock()
    var storeIfOpen: SQLiteStore?
    let isReadOnly: Bool

    // Guarded by `lock`:
    var documentCache: [String: WeakDocument] = [:]
    var documentCacheSweepThreshold = 256
    /// The changes of the open transaction, as delivered after it commits.
    var pendingChanges: [CBLDatabaseChange] = []
    var validations: [String: CBLValidationBlock] = [:]
    var filters: [String: CBLFilterBlock] = [:]
    var changeListeners: [ObjectIdentifier: ([CBLDatabaseChange]) -> Void] = [:]
    var changeContinuations: [UUID: AsyncStream<CBLDatabaseChange>.Continuation] = [:]
    var expirationTimer: DispatchSourceTimer?
    var cachedMaxRevTreeDepth: Int?
    var views: [String: CBLView] = [:]
    /// Set when a non-atomic nested write failed half-way: the outermost transaction must roll back.
    var transactionPoisoned = false
    /// Reused to encode the body of a new document (see `insertNewDocument`), so a save
    /// allocates no JSON buffer.
    var bodyWriter = JSONWriter(capacity: 1024)

    init(name: String, directory: URL, manager: CBLManager, create: Bool, readOnly: Bool) throws {
        self.name = name
        self.manager = manager
        self.directoryURL = directory
        self.isReadOnly = readOnly
        self.storeIfOpen = try SQLiteStore(directory: directory, create: create, readOnly: readOnly)
        super.init()
        if !readOnly {
            purgeExpiredDocuments()
        }
    }

    deinit {
        expirationTimer?.cancel()
        storeIfOpen?.close()
    }

    /// Runs `body` with the store under the database lock; throws 404-style if closed.
    func withStore<R>(_ body: (SQLiteStore) throws -> R) throws -> R {
        lock.lock()
        defer { lock.unlock() }
        guard let store = storeIfOpen else { throw CBLError.notFound("Database '\(name)' is closed") }
        return try body(store)
    }

    func checkWritable() throws {
        if isReadOnly { throw CBLError.forbidden("Database '\(name)' is read-only") }
    }

    // MARK: Properties

    /// The number of live (non-deleted) documents.
    public var documentCount: UInt {
        UInt((try? withStore { try $0.documentCount }) ?? 0)
    }

    /// The latest sequence number used (each new revision gets the next one).
    public var lastSequenceNumber: Int64 {
        (try? withStore { try $0.lastSequence }) ?? 0
    }

    /// The location of the database directory.
    public var internalURL: URL { directoryURL }

    /// True while the database is open.
    public var isOpen: Bool {
        lock.lock(); defer { lock.unlock() }
        return storeIfOpen != nil
    }

    /// How many generations of revision history each document keeps (default 20; `info.max_revs`).
    public var maxRevTreeDepth: UInt {
        get { UInt(maxDepth) }
        set {
            _ = try? withStore { store in
                try store.setInfo("max_revs", String(newValue))
                cachedMaxRevTreeDepth = Int(newValue)
            }
        }
    }

    static let defaultMaxRevTreeDepth = 20

    var maxDepth: Int {
        lock.lock(); defer { lock.unlock() }
        if let cached = cachedMaxRevTreeDepth { return cached }
        let value = (try? storeIfOpen?.info("max_revs")).flatMap { $0.flatMap { Int($0) } } ?? CBLDatabase.defaultMaxRevTreeDepth
        let depth = value > 0 ? value : CBLDatabase.defaultMaxRevTreeDepth
        cachedMaxRevTreeDepth = depth
        return depth
    }

    /// The private UUID (never shared; used in replication checkpoint IDs).
    public var privateUUID: String? { try? withStore { try $0.info("privateUUID") } }
    /// The public UUID.
    public var publicUUID: String? { try? withStore { try $0.info("publicUUID") } }

    // MARK: Transactions

    /// Runs `block` in a transaction: committed if it returns true, rolled back if it returns
    /// false or throws. Transactions nest; change notifications go out after the outermost commit.
    @discardableResult
    public func inTransaction(_ block: () throws -> Bool) rethrows -> Bool {
        lock.lock()
        defer { lock.unlock() }
        guard let store = storeIfOpen else { return false }
        let mark = pendingChanges.count
        do {
            try store.connection.begin()
        } catch {
            return false
        }
        if store.connection.transactionDepth == 1 { transactionPoisoned = false }
        let committed: Bool
        do {
            committed = try block()
        } catch {
            rollBack(store: store, to: mark)
            throw error
        }
        if committed && !(transactionPoisoned && store.connection.transactionDepth == 1) {
            do {
                try store.connection.commit()
            } catch {
                rollBack(store: store, to: mark)
                return false
            }
            if store.connection.transactionDepth == 0 { postPendingChanges() }
            return true
        }
        rollBack(store: store, to: mark)
        return false
    }

    private func rollBack(store: SQLiteStore, to mark: Int) {
        try? store.connection.rollback()
        if store.connection.transactionDepth == 0 { transactionPoisoned = false }
        let undone = pendingChanges[mark...]
        for change in undone { cachedDocument(change.documentID)?.forgetCurrentRevision() }
        pendingChanges.removeSubrange(mark...)
    }

    /// Runs a write inside a transaction and posts notifications after the outermost commit.
    ///
    /// At top level this is one SQLite transaction. Nested inside `inTransaction`, an `atomic`
    /// write gets a savepoint; a non-atomic one (document saves, which check everything before
    /// their first write) runs directly, because a savepoint makes SQLite copy every page it
    /// touches into a sub-journal. If such a write fails with an SQLite error after it began
    /// writing, the enclosing transaction is poisoned and rolls back instead of committing.
    func write<R>(atomic: Bool = false, _ body: (SQLiteStore) throws -> R) throws -> R {
        try checkWritable()
        lock.lock()
        defer { lock.unlock() }
        guard let store = storeIfOpen else { throw CBLError.notFound("Database '\(name)' is closed") }
        let nested = store.connection.transactionDepth > 0
        if nested && !atomic {
            do {
                return try body(store)
            } catch let e as SQLiteError {
                transactionPoisoned = true
                throw CBLError.dbError(e.description)
            }
        }
        let mark = pendingChanges.count
        do {
            try store.connection.begin()
        } catch let e as SQLiteError {
            throw CBLError.dbError(e.description)
        }
        let result: R
        do {
            result = try body(store)
            if store.connection.transactionDepth == 1 && transactionPoisoned {
                throw CBLError.dbError("Transaction rolled back after a failed write")
            }
            try store.connection.commit()
        } catch let e as SQLiteError {
            rollBack(store: store, to: mark)
            throw CBLError.dbError(e.description)
        } catch {
            rollBack(store: store, to: mark)
            throw error
        }
        if store.connection.transactionDepth == 0 { postPendingChanges() }
        return result
    }

    // MARK: Lifecycle

    /// Closes the database. Further calls on it fail until it is reopened through the manager.
    public func close() throws {
        stopReplications()
        lock.lock()
        defer { lock.unlock() }
        guard let store = storeIfOpen else { return }
        if store.connection.transactionDepth > 0 {
            throw CBLError.conflict("Cannot close database '\(name)' inside a transaction")
        }
        expirationTimer?.cancel()
        expirationTimer = nil
        for continuation in changeContinuations.values { continuation.finish() }
        changeContinuations.removeAll()
        store.close()
        storeIfOpen = nil
        documentCache.removeAll()
        manager.databaseDidClose(self)
    }

    /// Deletes the database and its attachments from disk.
    public func delete() throws {
        try checkWritable()
        try close()
        do {
            try FileManager.default.removeItem(at: directoryURL)
        } catch {
            throw CBLError.dbError("Cannot delete database '\(name)': \(error.localizedDescription)")
        }
    }

    /// Deprecated 1.x spelling of ``delete()``.
    public func deleteDatabase() throws { try delete() }

    public override var description: String { "CBLDatabase[\(name)]" }
}
