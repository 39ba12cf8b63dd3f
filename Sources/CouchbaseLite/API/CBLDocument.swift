import Foundation

/// A document: a JSON object with a revision history, identified by its ID.
///
/// One instance per ID while referenced (`database.document(withID:)` returns the same object).
/// Safe to use from any thread: its cached state is guarded by the database lock. It caches
/// the state of the last commit, which every thread sees, and, while a transaction on the
/// writer changes the document, that transaction's state, which only the writer's thread sees.
// @unchecked because its cached state is only touched under the database lock (see the type's comment).
public final class CBLDocument: NSObject, @unchecked Sendable {
    /// The database holding the document.
    public let database: CBLDatabase
    /// The document ID.
    public let documentID: String

    /// What the document knows of its current revision.
    struct State {
        /// The live winning revision's data (not a `CBLSavedRevision`: that would hold this document and leak it).
        var current: RevisionBody?
        var hasLeaves: Bool
        var purged: Bool

        init(current: RevisionBody?, hasLeaves: Bool, purged: Bool = false) {
            self.current = current
            self.hasLeaves = hasLeaves
            self.purged = purged
        }

        /// From the winning revision as stored (nil: the document has none).
        init(winner: StoredRevision?) {
            hasLeaves = winner != nil
            purged = false
            if let winner, !winner.deleted {
                current = RevisionBody(winner, bodyMissing: winner.body == nil)
            } else {
                current = nil
            }
        }
    }

    // Guarded by database.lock (`database.lock.withLockHeld`, or `withLock` where the database's
    // commit generation is read too):
    /// The state as of the last commit; nil until loaded, and while a commit changing it lands.
    private var committed: State?
    /// The state inside transaction `pendingSerial` on the writer (nil: load it from the writer).
    private var pending: State?
    /// The outermost transaction `pending` belongs to; 0 for none (serials start at 1).
    private var pendingSerial: UInt64 = 0
    private var listeners: [ObjectIdentifier: (CBLDatabaseChange) -> Void] = [:]
    private weak var model: AnyObject?

    /// The model object for this document (1.x `modelObject`): a ``CBLModel`` sets itself here,
    /// so `X(for: doc)` finds it again. Held weakly.
    public var modelObject: AnyObject? {
        get { database.lock.withLockHeld { model } }
        set { database.lock.withLockHeld { model = newValue } }
    }

    init(database: CBLDatabase, documentID: String) {
        self.database = database
        self.documentID = documentID
    }

    /// A shortened document ID for display (first 10 characters).
    public var abbreviatedID: String {
        documentID.count > 10 ? String(documentID.prefix(10)) + "…" : documentID
    }

    // MARK: Current revision

    /// The state this thread sees: the open transaction's on the writer's thread inside one, else
    /// the last commit's. Loaded outside the lock when not cached, on a reader (or the writer).
    private func state() -> State {
        let serial = database.currentTransactionSerial
        let lock = database.lock
        let (cached, generation) = lock.withLock { s -> (State?, UInt64) in
            if let serial {
                if pendingSerial == serial, let pending { return (pending, 0) }
            } else if let committed {
                return (committed, 0)
            }
            return (nil, s.commitGeneration)
        }
        if let cached { return cached }

        let loaded: State
        do {
            loaded = State(winner: try database.read { try $0.winningRevision(docID: documentID) })
        } catch {
            return State(winner: nil)   // closed or unreadable: nothing to show, nothing cached
        }
        lock.withLock { s in
            if let serial {
                pending = loaded
                pendingSerial = serial
            } else if committed == nil, s.commitGeneration == generation, !s.isCommitting {
                // No commit started since the read began, so its snapshot is still the latest.
                committed = loaded
            }
        }
        return loaded
    }

    /// The current (winning, non-deleted) revision, or nil if the document is new or deleted.
    public var currentRevision: CBLSavedRevision? {
        state().current.map { CBLSavedRevision(document: self, data: $0) }
    }

    /// The current revision's ID.
    public var currentRevisionID: String? {
        state().current?.revID
    }

    /// True if the document has been deleted (its winning revision is a tombstone).
    public var isDeleted: Bool {
        let s = state()
        return s.current == nil && s.hasLeaves
    }

    /// True if the document is deleted or was purged.
    public var isGone: Bool {
        let s = state()
        return s.purged || (s.current == nil && s.hasLeaves)
    }

    /// Called on the writer, under the database lock, after a revision of this document was
    /// inserted in transaction `serial`.
    func revisionAdded(_ change: CBLDatabaseChange, revision: CBLSavedRevision?, serial: UInt64) {
        let before = pendingSerial == serial ? pending : nil
        if change.isPurge {
            pending = State(current: nil, hasLeaves: false, purged: true)
        } else if change.isCurrentRevision, let revision {
            pending = State(current: change.isDeletion ? nil : revision.data, hasLeaves: true)
        } else if let before, change.winningRevisionID == before.current?.revID {
            pending = State(current: before.current, hasLeaves: true)
        } else {
            pending = nil
        }
        pendingSerial = serial
    }

    /// `revisionAdded` for a new document's first revision (current, live, no conflict), whose
    /// change record is made only when it is posted.
    func firstRevisionAdded(_ revision: CBLSavedRevision, serial: UInt64) {
        pending = State(current: revision.data, hasLeaves: true)
        pendingSerial = serial
    }

    /// Called on the writer, under the database lock, when a change of this document made in
    /// transaction `serial` was rolled back: the transaction's state is reloaded when next read.
    func forgetPendingState(serial: UInt64) {
        pending = nil
        pendingSerial = serial
    }

    /// Called under the database lock just before a commit that changed this document.
    func commitWillLand() {
        committed = nil
    }

    /// Called under the database lock after that commit landed (the transaction's state becomes
    /// the committed one) or failed (the committed state is reloaded when next read).
    func commitDidEnd(serial: UInt64, landed: Bool) {
        if landed && pendingSerial == serial { committed = pending }
        pending = nil
        pendingSerial = 0
    }

    /// Drops the state this thread sees, so it is reloaded.
    private func forgetState() {
        let serial = database.currentTransactionSerial
        database.lock.withLockHeld {
            if let serial {
                pending = nil
                pendingSerial = serial
            } else {
                committed = nil
            }
        }
    }

    // MARK: Properties

    /// The current revision's properties (with `_id`, `_rev`, `_attachments`), or nil.
    public var properties: [String: Any]? { currentRevision?.properties }
    /// The properties without `_`-prefixed keys.
    public var userProperties: [String: Any]? { currentRevision?.userProperties }
    /// One property of the current revision.
    public func property(forKey key: String) -> Any? { currentRevision?.property(forKey: key) }
    /// Deprecated 1.x spelling of ``property(forKey:)``.
    public func propertyForKey(_ key: String) -> Any? { property(forKey: key) }
    /// Reads one property (`doc["title"]`).
    public subscript(key: String) -> Any? { property(forKey: key) }

    // MARK: Saving

    /// Saves a new revision with these properties. `_rev` must name the current revision
    /// (409 otherwise); `_deleted: true` deletes; `_attachments` may carry inline base64 `data`.
    @discardableResult
    public func putProperties(_ properties: [String: Any]) throws -> CBLSavedRevision {
        // `_rev`, `_id` and `_deleted` can only be present if some key starts with `_`.
        guard CBLDatabase.hasSpecialKeys(properties) else {
            return try database.putRevision(docID: documentID, prevRevID: nil, properties: properties,
                                            deleting: false, allowConflict: false, document: self,
                                            knownWithoutSpecialKeys: true)
        }
        let prevRevID = properties["_rev"] as? String
        if let id = properties["_id"] as? String, id != documentID {
            throw CBLError.badRequest("_id '\(id)' does not match document ID '\(documentID)'")
        }
        return try putProperties(properties, prevRevID: prevRevID, allowConflict: false)
    }

    func putProperties(_ properties: [String: Any], prevRevID: String?, allowConflict: Bool) throws -> CBLSavedRevision {
        let deleting = properties["_deleted"] as? Bool ?? false
        return try database.putRevision(docID: documentID, prevRevID: prevRevID, properties: properties,
                                        deleting: deleting, allowConflict: allowConflict, document: self)
    }

    /// Edits the document with `block`, retrying on conflict. The block gets a new unsaved
    /// revision to modify; returning false cancels (the call then throws 304).
    @discardableResult
    public func update(_ block: (CBLUnsavedRevision) throws -> Bool) throws -> CBLSavedRevision {
        while true {
            let revision = newRevision()
            guard try block(revision) else {
                throw CBLError(304, "Update of '\(documentID)' cancelled by its block")
            }
            do {
                return try revision.save()
            } catch let error as CBLError where error.code == 409 {
                forgetState()
                continue
            }
        }
    }

    /// A new unsaved revision based on the current one.
    public func newRevision() -> CBLUnsavedRevision {
        CBLUnsavedRevision(document: self, parent: currentRevision)
    }

    /// Deletes the document (saves a tombstone revision).
    public func delete() throws {
        guard let current = currentRevision else {
            throw CBLError.notFound("Cannot delete '\(documentID)': document not found")
        }
        try current.deleteDocument()
    }

    /// Deprecated 1.x spelling of ``delete()``.
    public func deleteDocument() throws { try delete() }

    /// Removes the document and all its revisions from the database, leaving no tombstone.
    public func purgeDocument() throws {
        try database.purgeDocuments([documentID])
    }

    // MARK: Revisions

    /// The revision with this ID, or nil.
    public func revision(withID revID: String) -> CBLSavedRevision? {
        if let current = currentRevision, current.revisionID == revID { return current }
        guard let stored = try? database.read({ try $0.revision(docID: documentID, revID: revID) }) else { return nil }
        return CBLSavedRevision(document: self, stored: stored, bodyMissing: stored.body == nil)
    }

    /// Deprecated 1.x spelling.
    public func revisionWithID(_ revID: String) -> CBLSavedRevision? { revision(withID: revID) }

    /// The current revision's history, oldest first.
    public func getRevisionHistory() throws -> [CBLSavedRevision] {
        try currentRevision?.getHistory() ?? []
    }

    /// Same as ``getRevisionHistory()``.
    public func getHistory() throws -> [CBLSavedRevision] { try getRevisionHistory() }

    /// Every leaf revision, deleted ones included (winner first).
    public func getLeafRevisions() throws -> [CBLSavedRevision] {
        try leafRevisions(includeDeleted: true)
    }

    /// The live leaf revisions: more than one means the document is in conflict.
    public func getConflictingRevisions() throws -> [CBLSavedRevision] {
        try leafRevisions(includeDeleted: false)
    }

    private func leafRevisions(includeDeleted: Bool) throws -> [CBLSavedRevision] {
        let leaves = try database.read { store -> [StoredRevision] in
            guard let numericID = try store.numericID(of: documentID) else { return [] }
            return try store.leaves(docID: documentID, numericID: numericID, withBodies: true)
        }
        return leaves.filter { includeDeleted || !$0.deleted }
            .map { CBLSavedRevision(document: self, stored: $0, bodyMissing: $0.body == nil) }
    }

    // MARK: Expiration

    /// When the document will be purged automatically (local only; not replicated). nil = never.
    public var expirationDate: Date? {
        get { try? database.expirationDate(ofDocument: documentID) }
        set { try? database.setExpirationDate(newValue, ofDocument: documentID) }
    }

    /// Sets the expiration date (1.x `setExpirationDate:`).
    public func setExpirationDate(_ date: Date?) {
        expirationDate = date
    }

    // MARK: Change listeners

    /// Calls `listener` after every committed change to this document.
    @discardableResult
    public func addChangeListener(_ listener: @escaping (CBLDatabaseChange) -> Void) -> CBLListenerToken {
        let token = CBLListenerToken()
        database.lock.withLockHeld { listeners[ObjectIdentifier(token)] = listener }
        return token
    }

    /// Removes a listener added with ``addChangeListener(_:)``.
    public func removeChangeListener(_ token: CBLListenerToken) {
        database.lock.withLockHeld { listeners[ObjectIdentifier(token)] = nil }
    }

    func postChange(_ change: CBLDatabaseChange) {
        let (current, model) = database.lock.withLockHeld { (Array(listeners.values), self.model as? CBLDocumentModel) }
        // Like 1.x, the model hears of the change before the listeners and the notification.
        model?.document(self, didChange: change)
        for listener in current { listener(change) }
        NotificationCenter.default.post(name: .cblDocumentChange, object: self, userInfo: ["change": change])
    }

    public override var description: String { "CBLDocument[\(abbreviatedID)]" }
}
