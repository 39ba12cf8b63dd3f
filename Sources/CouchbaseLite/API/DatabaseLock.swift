import Foundation
import SQLiteKit

/// The fields of a ``CBLDatabase`` that any thread may touch, holding the database's lock: they
/// are reachable only through ``DatabaseLock/withLock(_:)``. A field touched only by the thread
/// holding the writer belongs in ``WriterState`` instead.
struct GuardedState {
    /// The store on the writer connection, as any thread sees it (`read`, `openStore`); nil once
    /// closed. Changed only holding the writer as well, together with `WriterState.store`
    /// (`CBLDatabase.replaceStore`).
    var store: SQLiteStore?
    /// The identity map: the live document object of each ID (`document(withID:)`).
    var documentCache: [String: WeakDocument] = [:]
    /// The map's size at which the next lookup sweeps out its dead entries.
    var documentCacheSweepThreshold = 256
    /// The app's validation functions (`setValidationNamed`).
    var validations: [String: CBLValidationBlock] = [:]
    /// The app's replication filter functions (`setFilterNamed`).
    var filters: [String: CBLFilterBlock] = [:]
    var changeListeners: [ObjectIdentifier: ([CBLDatabaseChange]) -> Void] = [:]
    var changeContinuations: [UUID: AsyncStream<CBLDatabaseChange>.Continuation] = [:]
    /// Fires at the next document expiration.
    var expirationTimer: DispatchSourceTimer?
    /// `info.max_revs`, once read.
    var cachedMaxRevTreeDepth: Int?
    /// One view object per name (`viewNamed`).
    var views: [String: CBLView] = [:]
    /// What was compiled from design documents, by the revision it came from (`DesignDocuments/`).
    var designDocumentCache = DesignDocumentCache()
    /// Swift functions standing for design documents' `validate_doc_update`, by design document
    /// ID (`setBuiltInValidation(_:forDesignDocument:)`).
    var builtInValidations: [String: CBLDesignValidation] = [:]
    /// Moves with every change to `builtInValidations`: what was counted or compiled from an
    /// earlier set is not cached.
    var builtInValidationsGeneration = 0
    /// The model factory, unsaved models and autosave queue (`Models/`), made on first use.
    var modelRegistry: ModelRegistry?
    /// Moves when a commit that changes documents starts and when it ends: a document state
    /// loaded on a reader is cached only if it did not move meanwhile (see `CBLDocument.state`).
    var commitGeneration: UInt64 = 0
    /// True between the start and the end of such a commit.
    var isCommitting = false
    /// Why the last `inTransaction` could not commit (a full disk: 507), nil when it committed;
    /// read by callers that must not take a `false` for "nothing to do". Set holding the writer,
    /// read after the transaction by its caller (which no longer holds the writer).
    var lastCommitError: CBLError?
    /// Makes every read take the writer (`readsWaitForWriter`).
    var readsWaitForWriter = false

    init(store: SQLiteStore) {
        self.store = store
    }

    // MARK: The identity map

    /// The live document of `docID`, made (and entered in the map) if there is none.
    mutating func document(withID docID: String, database: CBLDatabase) -> CBLDocument {
        // One hash lookup finds the entry or makes room for it.
        let doc = Self.documentCacheEntry(&documentCache[docID, default: WeakDocument()], docID: docID, database: database)
        if documentCache.count > documentCacheSweepThreshold { sweepDocumentCache() }
        return doc
    }

    private static func documentCacheEntry(_ entry: inout WeakDocument, docID: String, database: CBLDatabase) -> CBLDocument {
        if let doc = entry.document { return doc }
        let doc = CBLDocument(database: database, documentID: docID)
        entry.document = doc
        return doc
    }

    /// The live document of `docID`, if it is in memory.
    func cachedDocument(_ docID: String) -> CBLDocument? {
        documentCache[docID]?.document
    }

    /// The identity map's documents still alive, found by index with each weak reference read
    /// where it is (no copy of an entry: most are dead after a bulk insert).
    func liveCachedDocuments() -> [CBLDocument] {
        var live: [CBLDocument] = []
        var index = documentCache.startIndex
        while index != documentCache.endIndex {
            if let document = documentCache.values[index].document { live.append(document) }
            documentCache.formIndex(after: &index)
        }
        return live
    }

    private mutating func sweepDocumentCache() {
        // Emptied keeping the table's capacity, so refilling it does not rehash.
        let live = liveCachedDocuments()
        documentCache.removeAll(keepingCapacity: true)
        for document in live { documentCache[document.documentID] = WeakDocument(document: document) }
        documentCacheSweepThreshold = max(256, documentCache.count * 2)
    }

    /// The live cached document of each change, in the changes' order (the documents whose
    /// listeners hear about it), with its change record. For a transaction with more changes
    /// than the identity map has entries, the map is scanned once for live documents instead of
    /// being looked up per change: after a bulk insert whose documents are gone that is one
    /// short scan and no lookups.
    func documentsToNotify(_ changes: PendingChanges) -> [(CBLDocument, CBLDatabaseChange)] {
        guard documentCache.count < changes.count else {
            return (0..<changes.count).compactMap { i in
                cachedDocument(changes.documentID(at: i)).map { ($0, changes.change(at: i)) }
            }
        }
        let documents = liveCachedDocuments()
        guard !documents.isEmpty else { return [] }
        var live: [String: CBLDocument] = [:]
        for document in documents { live[document.documentID] = document }
        return (0..<changes.count).compactMap { i in
            live[changes.documentID(at: i)].map { ($0, changes.change(at: i)) }
        }
    }

    // MARK: Design documents

    /// A revision of `docID` was noted or rolled back: when it is a design document, what was
    /// compiled or counted from the design documents is stale. Returns what it dropped, for the
    /// caller to release after the lock (see ``DatabaseLock``).
    mutating func designDocumentChanged(_ docID: String) -> DesignDocumentCache? {
        // Tested on the first byte first: this runs on every save.
        guard CBLDatabase.startsWithUnderscore(docID), docID.hasPrefix("_design/") else { return nil }
        let stale = designDocumentCache
        designDocumentCache.validations = nil
        designDocumentCache.validateFunctionCount = nil
        designDocumentCache.filters = [:]
        return stale
    }
}

/// A database's lock, and the ``GuardedState`` it guards.
///
/// Held briefly: never while waiting for the writer, running SQL or calling app code (so a read
/// never waits for a write through it). The lock also guards the cached state of the database's
/// documents and the functions of its views (fields of ``CBLDocument`` and ``CBLView``, taken with
/// ``withLockHeld(_:)``); it is recursive so that those can be read while the state is held.
/// ``withLock(_:)`` itself does not nest: the state is lent `inout`, and a second `withLock` on
/// the same thread inside the first is an exclusivity violation the runtime stops. So a body calls
/// no app code, and does not release the last reference to an app's closure (a validation, a
/// listener, a map function) either, whose captures' `deinit` could come back: it hands what it
/// removes out, to be released after the lock.
// @unchecked because `state` is reached only through `withLock`, which holds `lock`.
final class DatabaseLock: @unchecked Sendable {
    private let lock = NSRecursiveLock()
    /// Keeps the runtime's exclusivity check (one per `withLock`), which is what stops a nested
    /// `withLock`. Measured (callgrind, `CBLBenchmarks --quick --only docs`, the API insert loop):
    /// this box and ``WriterOwned``, with their checks, in place of six `@exclusivity(unchecked)`
    /// fields cost 480 instructions per saved document, 0.76% of its 63,600; the timed bulk insert
    /// ratio did not move (API/raw 1.31–1.35 before and after, 20,000 documents, 9 rounds).
    private var state: GuardedState

    init(_ state: GuardedState) {
        self.state = state
    }

    /// Runs `body` holding the lock, with the database's guarded fields.
    @inline(__always)
    func withLock<R>(_ body: (inout GuardedState) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&state)
    }

    /// Runs `body` holding the lock, without the database's fields: for the fields of its
    /// documents and views that the same lock guards.
    @inline(__always)
    func withLockHeld<R>(_ body: () throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }
}
