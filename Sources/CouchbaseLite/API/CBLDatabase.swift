import Foundation
import JSONCore
import SQLiteKit

/// A 1.x database: documents with revision trees, attachments, local documents, views.
///
/// Safe to use from any thread or task. Writes are serialised on one writer connection; reads
/// run on a small pool of reader connections and see the last committed state, so they never
/// wait for a write in progress on another thread (WAL). A read made on the thread that is
/// inside a write (an `inTransaction` block, a validation or map block) runs on the writer and
/// sees that write's own uncommitted changes. Change notifications are delivered after the
/// outermost transaction commits.
// @unchecked because its mutable state is only touched under `lock` (or on the writer inside a transaction), as its comment says.
public final class CBLDatabase: NSObject, @unchecked Sendable {
    /// The database name.
    public let name: String
    /// The manager that opened it.
    public let manager: CBLManager
    /// The `.cblite2` directory.
    public let directoryURL: URL

    /// Guards the in-memory state marked below, documents' cached state and views' functions.
    /// Held briefly: never while waiting for the writer, running SQL or calling app code (so a
    /// read never waits for a write through it). Recursive for the rare nested use.
    let lock = NSRecursiveLock()
    /// The writer connection (serialising every write, see `write`) and the reader connections (`read`).
    let pool: SQLiteConnectionPool
    let isReadOnly: Bool

    /// Reader connections per database: enough for the listener's concurrent GETs on a small
    /// machine, few enough that each keeps a useful page cache.
    static let readerConnectionLimit = 3

    // Guarded by `lock` (and changed only by the thread holding the writer, for `storeIfOpen`).
    // The properties a save touches are `@exclusivity(unchecked)`: the lock or the writer already
    // serialises every access, and the runtime's access tracking cost ~800 instructions per saved document.
    /// The store on the writer connection; nil once closed.
    var storeIfOpen: SQLiteStore?
    @exclusivity(unchecked) var documentCache: [String: WeakDocument] = [:]
    var documentCacheSweepThreshold = 256
    @exclusivity(unchecked) var validations: [String: CBLValidationBlock] = [:]
    var filters: [String: CBLFilterBlock] = [:]
    var changeListeners: [ObjectIdentifier: ([CBLDatabaseChange]) -> Void] = [:]
    var changeContinuations: [UUID: AsyncStream<CBLDatabaseChange>.Continuation] = [:]
    var expirationTimer: DispatchSourceTimer?
    var cachedMaxRevTreeDepth: Int?
    var views: [String: CBLView] = [:]
    /// What was compiled from design documents, by the revision it came from (`DesignDocuments/`).
    @exclusivity(unchecked) var designDocumentCache = DesignDocumentCache()
    /// The model factory, unsaved models and autosave queue (`Models/`), made on first use.
    var modelRegistryStorage: ModelRegistry?
    /// Moves when a commit that changes documents starts and when it ends: a document state
    /// loaded on a reader is cached only if it did not move meanwhile (see `CBLDocument.state`).
    var commitGeneration: UInt64 = 0
    /// True between the start and the end of such a commit.
    var isCommitting = false

    // Owned by the writer (touched only by the thread holding it):
    /// The changes of the open transaction, as delivered after it commits.
    @exclusivity(unchecked) var pendingChanges = PendingChanges()
    /// Set when a non-atomic nested write failed half-way: the outermost transaction must roll back.
    var transactionPoisoned = false
    /// Why the last `inTransaction` on this thread's writer could not commit (a full disk: 507),
    /// nil when it committed; read by callers that must not take a `false` for "nothing to do".
    var lastCommitError: CBLError?
    /// Numbers the outermost transactions (from 1): a document's uncommitted state names the one it belongs to.
    @exclusivity(unchecked) var transactionSerial: UInt64 = 0
    /// Reused to encode the body of a new document (see `insertNewDocument`), so a save
    /// allocates no JSON buffer.
    @exclusivity(unchecked) var bodyWriter = JSONWriter(capacity: 1024)

    /// Makes every read take the writer, as all access did before the reader pool: only for
    /// measuring what the pool buys (the `readers` benchmark).
    package var readsWaitForWriter: Bool {
        get { lock.lock(); defer { lock.unlock() }; return forcedWriterReads }
        set { lock.lock(); defer { lock.unlock() }; forcedWriterReads = newValue }
    }
    private var forcedWriterReads = false

    init(name: String, directory: URL, manager: CBLManager, create: Bool, readOnly: Bool,
         encryptionKey: CBLSymmetricKey? = nil) throws {
        self.name = name
        self.manager = manager
        self.directoryURL = directory
        self.isReadOnly = readOnly
        let store = try SQLiteStore(directory: directory, create: create, readOnly: readOnly, encryptionKey: encryptionKey)
        self.storeIfOpen = store
        self.pool = SQLiteConnectionPool(writer: store.connection, maximumReaderCount: Self.readerConnectionLimit,
                                         openReader: store.openReader)
        super.init()
        if !readOnly {
            purgeExpiredDocuments()
        }
    }

    deinit {
        expirationTimer?.cancel()
        pool.close()
    }

    var closedError: CBLError { CBLError.notFound("Database '\(name)' is closed") }

    /// The store on the writer connection, or nil when closed.
    var openStore: SQLiteStore? {
        lock.lock(); defer { lock.unlock() }
        return storeIfOpen
    }

    /// ``openStore`` for the thread holding the writer: every assignment of `storeIfOpen` is made
    /// holding the writer too, so this reads it without taking `lock` (once per saved document).
    private var storeOnWriter: SQLiteStore? { storeIfOpen }

    /// Runs a read on a store that sees the last committed state, without waiting for a write in
    /// progress on another thread. On the thread inside a write it runs on the writer, and sees
    /// that write's uncommitted changes. Reads nested in `body` share its snapshot.
    func read<R>(_ body: (SQLiteStore) throws -> R) throws -> R {
        lock.lock()
        let writerStore = storeIfOpen, forced = forcedWriterReads
        lock.unlock()
        if forced { return try withWriter(body) }
        guard let writerStore else { throw closedError }
        do {
            return try pool.read { connection in
                try body(connection === writerStore.connection
                         ? writerStore : SQLiteStore(reader: connection, sharing: writerStore))
            }
        } catch let e as SQLiteError where e.message == SQLiteConnectionPool.closedError.message {
            throw closedError
        }
    }

    /// Runs `body` with the writer's store outside any transaction it does not open itself,
    /// after any write in progress (compaction, which cannot run inside a transaction).
    func withWriter<R>(_ body: (SQLiteStore) throws -> R) throws -> R {
        try pool.write { _ in
            guard let store = openStore else { throw closedError }
            return try body(store)
        }
    }

    /// The serial of the transaction the calling thread has open on the writer; nil when it has none.
    var currentTransactionSerial: UInt64? {
        guard pool.currentThreadIsWriter, let store = storeIfOpen,
              store.connection.transactionDepth > 0 else { return nil }
        return transactionSerial
    }

    func checkWritable() throws {
        if isReadOnly { throw CBLError.forbidden("Database '\(name)' is read-only") }
    }

    // MARK: Properties

    /// The number of live (non-deleted) documents.
    public var documentCount: UInt {
        UInt((try? read { try $0.documentCount }) ?? 0)
    }

    /// The latest sequence number used (each new revision gets the next one).
    public var lastSequenceNumber: Int64 {
        (try? read { try $0.lastSequence }) ?? 0
    }

    /// The location of the database directory.
    public var internalURL: URL { directoryURL }

    /// True while the database is open.
    public var isOpen: Bool { openStore != nil }

    /// How many generations of revision history each document keeps (default 20; `info.max_revs`).
    public var maxRevTreeDepth: UInt {
        get { UInt(maxDepth) }
        set {
            _ = try? write(atomic: true) { store in
                try store.setInfo("max_revs", String(newValue))
                lock.lock()
                cachedMaxRevTreeDepth = Int(newValue)
                lock.unlock()
            }
        }
    }

    static let defaultMaxRevTreeDepth = 20

    var maxDepth: Int {
        lock.lock()
        let cached = cachedMaxRevTreeDepth
        lock.unlock()
        if let cached { return cached }
        let value = (try? read { try $0.info("max_revs") }).flatMap { $0.flatMap { Int($0) } } ?? CBLDatabase.defaultMaxRevTreeDepth
        let depth = value > 0 ? value : CBLDatabase.defaultMaxRevTreeDepth
        lock.lock()
        if cachedMaxRevTreeDepth == nil { cachedMaxRevTreeDepth = depth }
        lock.unlock()
        return depth
    }

    /// The private UUID (never shared; used in replication checkpoint IDs).
    public var privateUUID: String? { try? read { try $0.info("privateUUID") } }
    /// The public UUID.
    public var publicUUID: String? { try? read { try $0.info("publicUUID") } }

    // MARK: Transactions

    /// Runs `block` in a transaction: committed if it returns true, rolled back if it returns
    /// false or throws. Transactions nest; change notifications go out after the outermost commit.
    ///
    /// The block runs holding the writer: other threads' writes wait, their reads do not (they
    /// see the state before the transaction until it commits).
    @discardableResult
    public func inTransaction(_ block: () throws -> Bool) rethrows -> Bool {
        try pool.write { _ in
            guard let store = openStore else { return false }
            let mark = pendingChanges.count
            do {
                try begin(store)
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
            lastCommitError = nil
            if committed && !(transactionPoisoned && store.connection.transactionDepth == 1) {
                do {
                    try commit(store)
                } catch {
                    lastCommitError = (error as? SQLiteError).map(CBLError.database) ?? CBLReplication.asCBLError(error)
                    rollBack(store: store, to: mark)
                    return false
                }
                return true
            }
            rollBack(store: store, to: mark)
            return false
        }
    }

    /// Opens a transaction level on the writer (called holding it).
    private func begin(_ store: SQLiteStore) throws {
        try store.connection.begin()
        if store.connection.transactionDepth == 1 { transactionSerial &+= 1 }
    }

    /// Commits the innermost transaction level (called holding the writer). The outermost commit
    /// updates the cached state of the documents it changed and posts the changes.
    private func commit(_ store: SQLiteStore) throws {
        guard store.connection.transactionDepth == 1 else {
            try store.connection.commit()
            return
        }
        let documents = commitWillLand()
        do {
            try store.connection.commit()
        } catch {
            commitDidEnd(documents, landed: false)
            throw error
        }
        commitDidEnd(documents, landed: true)
        postPendingChanges(documents)
    }

    private func rollBack(store: SQLiteStore, to mark: Int) {
        try? store.connection.rollback()
        if store.connection.transactionDepth == 0 { transactionPoisoned = false }
        lock.lock()
        for i in mark..<pendingChanges.count {
            let docID = pendingChanges.documentID(at: i)
            cachedDocument(docID)?.forgetPendingState(serial: transactionSerial)
            // What was compiled or counted from a design document the rollback undid is stale.
            designDocumentChanged(docID)
        }
        lock.unlock()
        pendingChanges.removeSuffix(from: mark)
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
        return try pool.write { _ in
            guard let store = storeOnWriter else { throw closedError }
            let nested = store.connection.transactionDepth > 0
            if nested && !atomic {
                do {
                    return try body(store)
                } catch let e as SQLiteError {
                    transactionPoisoned = true
                    throw CBLError.database(e)
                }
            }
            let mark = pendingChanges.count
            do {
                try begin(store)
            } catch let e as SQLiteError {
                throw CBLError.database(e)
            }
            let result: R
            do {
                result = try body(store)
                if store.connection.transactionDepth == 1 && transactionPoisoned {
                    throw CBLError.dbError("Transaction rolled back after a failed write")
                }
                try commit(store)
            } catch let e as SQLiteError {
                rollBack(store: store, to: mark)
                throw CBLError.database(e)
            } catch {
                rollBack(store: store, to: mark)
                throw error
            }
            return result
        }
    }

    // MARK: Lifecycle

    /// Closes the database (its writer and reader connections). Further calls on it fail until it
    /// is reopened through the manager. Waits for a write in progress on another thread.
    public func close() throws {
        stopReplications()
        let closed = try pool.write { _ -> Bool in
            lock.lock()
            guard let store = storeIfOpen else {
                lock.unlock()
                return false
            }
            if store.connection.transactionDepth > 0 {
                lock.unlock()
                throw CBLError.conflict("Cannot close database '\(name)' inside a transaction")
            }
            expirationTimer?.cancel()
            expirationTimer = nil
            let continuations = Array(changeContinuations.values)
            changeContinuations.removeAll()
            storeIfOpen = nil
            documentCache.removeAll()
            lock.unlock()
            for continuation in continuations { continuation.finish() }
            pool.close()
            return true
        }
        if closed { manager.databaseDidClose(self) }
    }

    /// Deletes the database and its attachments from disk.
    public func delete() throws {
        try checkWritable()
        try close()
        // 1.x forgets a deleted database's key: a database re-created under the name starts plain.
        manager.setRegisteredEncryptionKey(nil, forDatabaseNamed: name)
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
