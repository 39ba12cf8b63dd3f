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
// Sendable without `@unchecked`: every stored property is a `let`. Mutable state lives in `lock`
// (`GuardedState`: any thread, holding the lock) or in `writer` (`WriterState`: the thread holding
// the writer), so a new field's home says which rule keeps it safe.
public final class CBLDatabase: NSObject, Sendable {
    /// The database name.
    public let name: String
    /// The manager that opened it.
    public let manager: CBLManager
    /// The `.cblite2` directory.
    public let directoryURL: URL

    /// The lock and the fields it guards (``GuardedState``); it also guards documents' cached
    /// state and views' functions.
    let lock: DatabaseLock
    /// The writer connection (serialising every write, see `write`) and the reader connections (`read`).
    let pool: SQLiteConnectionPool
    /// The fields only the thread holding the writer touches (``WriterState``).
    let writer: WriterOwned
    let isReadOnly: Bool

    /// Reader connections per database: enough for the listener's concurrent GETs on a small
    /// machine, few enough that each keeps a useful page cache.
    static let readerConnectionLimit = 3

    /// Makes every read take the writer, as all access did before the reader pool: only for
    /// measuring what the pool buys (the `readers` benchmark).
    package var readsWaitForWriter: Bool {
        get { lock.withLock { $0.readsWaitForWriter } }
        set { lock.withLock { $0.readsWaitForWriter = newValue } }
    }

    /// Why the last `inTransaction` could not commit (a full disk: 507), nil when it committed;
    /// read by callers that must not take a `false` for "nothing to do".
    var lastCommitError: CBLError? { lock.withLock { $0.lastCommitError } }

    init(name: String, directory: URL, manager: CBLManager, create: Bool, readOnly: Bool,
         encryptionKey: CBLSymmetricKey? = nil) throws {
        self.name = name
        self.manager = manager
        self.directoryURL = directory
        self.isReadOnly = readOnly
        let store = try SQLiteStore(directory: directory, create: create, readOnly: readOnly, encryptionKey: encryptionKey)
        let pool = SQLiteConnectionPool(writer: store.connection, maximumReaderCount: Self.readerConnectionLimit,
                                        openReader: store.openReader)
        self.pool = pool
        self.lock = DatabaseLock(GuardedState(store: store))
        self.writer = WriterOwned(WriterState(store: store), pool: pool)
        super.init()
        if !readOnly {
            purgeExpiredDocuments()
        }
    }

    deinit {
        lock.withLock { $0.expirationTimer?.cancel() }
        pool.close()
    }

    var closedError: CBLError { CBLError.notFound("Database '\(name)' is closed") }

    /// The store on the writer connection, or nil when closed.
    var openStore: SQLiteStore? {
        lock.withLock { $0.store }
    }

    /// ``openStore`` for the thread holding the writer, read without taking `lock` (once per saved document).
    var storeOnWriter: SQLiteStore? {
        writer.withState { $0.store }
    }

    /// Replaces (or with nil, forgets) the store on the writer connection: its copies in both
    /// states. Called holding the writer.
    func replaceStore(_ store: SQLiteStore?) {
        writer.withState { $0.store = store }
        lock.withLock { $0.store = store }
    }

    /// Runs a read on a store that sees the last committed state, without waiting for a write in
    /// progress on another thread. On the thread inside a write it runs on the writer, and sees
    /// that write's uncommitted changes. Reads nested in `body` share its snapshot.
    func read<R>(_ body: (SQLiteStore) throws -> R) throws -> R {
        let (writerStore, forced) = lock.withLock { ($0.store, $0.readsWaitForWriter) }
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
            guard let store = storeOnWriter else { throw closedError }
            return try body(store)
        }
    }

    /// The serial of the transaction the calling thread has open on the writer; nil when it has none.
    var currentTransactionSerial: UInt64? {
        guard pool.currentThreadIsWriter else { return nil }
        return writer.withState { w in
            guard let store = w.store, store.connection.transactionDepth > 0 else { return nil }
            return w.transactionSerial
        }
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
    ///
    /// Kept in the file, so it holds after the database is closed and reopened. Every edit prunes
    /// its document to it, and ``compact()`` prunes every document to it; 0 means the default.
    public var maxRevTreeDepth: UInt {
        get { UInt(maxDepth) }
        set {
            _ = try? write(atomic: true) { store in
                try store.setInfo("max_revs", String(newValue))
                lock.withLock { $0.cachedMaxRevTreeDepth = newValue > 0 ? Int(newValue) : CBLDatabase.defaultMaxRevTreeDepth }
            }
        }
    }

    static let defaultMaxRevTreeDepth = 20

    var maxDepth: Int {
        if let cached = lock.withLock({ $0.cachedMaxRevTreeDepth }) { return cached }
        let value = (try? read { try $0.info("max_revs") }).flatMap { $0.flatMap { Int($0) } } ?? CBLDatabase.defaultMaxRevTreeDepth
        let depth = value > 0 ? value : CBLDatabase.defaultMaxRevTreeDepth
        lock.withLock { s in
            if s.cachedMaxRevTreeDepth == nil { s.cachedMaxRevTreeDepth = depth }
        }
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
            guard let store = storeOnWriter else { return false }
            let mark = writer.withState { $0.pendingChanges.count }
            do {
                try begin(store)
            } catch {
                return false
            }
            if store.connection.transactionDepth == 1 { writer.withState { $0.transactionPoisoned = false } }
            let committed: Bool
            do {
                committed = try block()
            } catch {
                rollBack(store: store, to: mark)
                throw error
            }
            lock.withLock { $0.lastCommitError = nil }
            let poisoned = writer.withState { $0.transactionPoisoned }
            if committed && !(poisoned && store.connection.transactionDepth == 1) {
                do {
                    try commit(store)
                } catch {
                    let reason = (error as? SQLiteError).map(CBLError.database) ?? CBLReplication.asCBLError(error)
                    lock.withLock { $0.lastCommitError = reason }
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
        if store.connection.transactionDepth == 1 { writer.withState { $0.transactionSerial &+= 1 } }
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
        let outermost = store.connection.transactionDepth == 0
        let stale = writer.withState { w in
            if outermost { w.transactionPoisoned = false }
            let stale = lock.withLock { s in
                var stale: [DesignDocumentCache] = []
                for i in mark..<w.pendingChanges.count {
                    let docID = w.pendingChanges.documentID(at: i)
                    s.cachedDocument(docID)?.forgetPendingState(serial: w.transactionSerial)
                    // What was compiled or counted from a design document the rollback undid is stale.
                    if let dropped = s.designDocumentChanged(docID) { stale.append(dropped) }
                }
                return stale
            }
            w.pendingChanges.removeSuffix(from: mark)
            return stale
        }
        _ = stale   // released here, after the lock
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
                    writer.withState { $0.transactionPoisoned = true }
                    throw CBLError.database(e)
                }
            }
            let mark = writer.withState { $0.pendingChanges.count }
            do {
                try begin(store)
            } catch let e as SQLiteError {
                throw CBLError.database(e)
            }
            let result: R
            do {
                result = try body(store)
                if store.connection.transactionDepth == 1 && writer.withState({ $0.transactionPoisoned }) {
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
            guard let store = storeOnWriter else { return false }
            if store.connection.transactionDepth > 0 {
                throw CBLError.conflict("Cannot close database '\(name)' inside a transaction")
            }
            writer.withState { $0.store = nil }
            let continuations = lock.withLock { s in
                s.expirationTimer?.cancel()
                s.expirationTimer = nil
                let continuations = Array(s.changeContinuations.values)
                s.changeContinuations.removeAll()
                s.store = nil
                s.documentCache.removeAll()
                return continuations
            }
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
