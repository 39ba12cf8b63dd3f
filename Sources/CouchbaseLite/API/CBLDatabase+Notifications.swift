import Foundation

/// A handle returned by `addChangeListener`, used to remove the listener.
public final class CBLListenerToken: NSObject, Sendable {}

extension CBLDatabase {
    /// Records a change made inside the current transaction and updates the cached document
    /// (its uncommitted state, seen only on the writer's thread until the commit).
    func noteChange(_ change: RevisionChange, revision: CBLSavedRevision?) {
        let recorded = CBLDatabaseChange(change)
        pendingChanges.append(recorded)
        designDocumentChanged(change.docID)
        lock.lock()
        cachedDocument(change.docID)?.revisionAdded(recorded, revision: revision, serial: transactionSerial)
        lock.unlock()
    }

    /// Called on the writer just before the outermost commit: the changed documents that are in
    /// memory drop their committed state (readers load it from their snapshot until the commit
    /// has landed, and cache nothing meanwhile). Returns them, each with its change.
    func commitWillLand() -> [(CBLDocument, CBLDatabaseChange)] {
        guard !pendingChanges.isEmpty else { return [] }
        lock.lock()
        defer { lock.unlock() }
        let documents = documentsToNotify(pendingChanges)
        commitGeneration &+= 1
        isCommitting = true
        for (document, _) in documents { document.commitWillLand() }
        return documents
    }

    /// Called on the writer after the outermost commit landed (or failed): the documents take
    /// their state from the transaction (or reload it).
    func commitDidEnd(_ documents: [(CBLDocument, CBLDatabaseChange)], landed: Bool) {
        guard !pendingChanges.isEmpty else { return }
        lock.lock()
        defer { lock.unlock() }
        for (document, _) in documents { document.commitDidEnd(serial: transactionSerial, landed: landed) }
        commitGeneration &+= 1
        isCommitting = false
    }

    /// At most this many changes go in one database notification: a bigger transaction is
    /// announced in several, so its notification objects are never all in memory at once.
    static let changesPerNotification = 10_000

    /// Delivers the changes of a committed transaction (`documents`: from `commitWillLand`):
    /// each changed document in memory hears its change, then the database's listeners, change
    /// streams and `cblDatabaseChange` observers hear every change, in commit order, in batches
    /// of at most ``changesPerNotification``.
    func postPendingChanges(_ documents: [(CBLDocument, CBLDatabaseChange)]) {
        guard !pendingChanges.isEmpty else { return }
        let log = pendingChanges
        pendingChanges.removeAll()
        lock.lock()
        let listeners = Array(changeListeners.values)
        let continuations = Array(changeContinuations.values)
        lock.unlock()
        let deliver = { [self] in
            for (document, change) in documents { document.postChange(change) }
            var start = 0
            while start < log.count {
                let end = min(log.count, start + CBLDatabase.changesPerNotification)
                let changes = log.changes(start..<end)
                for listener in listeners { listener(changes) }
                for continuation in continuations { for change in changes { continuation.yield(change) } }
                let external = changes.contains { $0.source != nil }
                NotificationCenter.default.post(name: .cblDatabaseChange, object: self,
                                                userInfo: ["changes": changes, "external": external])
                start = end
            }
        }
        if let queue = manager.dispatchQueue {
            nonisolated(unsafe) let work = deliver
            queue.async { work() }
        } else {
            deliver()
        }
    }

    /// The live cached document of each change, in the changes' order (the documents whose
    /// listeners hear about it), with its change record. For a transaction with more changes
    /// than the identity map has entries, the map is scanned once for live documents instead of
    /// being looked up per change: after a bulk insert whose documents are gone that is one
    /// short scan and no lookups. Called under `lock`.
    private func documentsToNotify(_ changes: PendingChanges) -> [(CBLDocument, CBLDatabaseChange)] {
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

    /// Calls `listener` with the changes of every committed transaction.
    @discardableResult
    public func addChangeListener(_ listener: @escaping ([CBLDatabaseChange]) -> Void) -> CBLListenerToken {
        let token = CBLListenerToken()
        lock.lock(); defer { lock.unlock() }
        changeListeners[ObjectIdentifier(token)] = listener
        return token
    }

    /// Removes a listener added with ``addChangeListener(_:)``.
    public func removeChangeListener(_ token: CBLListenerToken) {
        lock.lock(); defer { lock.unlock() }
        changeListeners[ObjectIdentifier(token)] = nil
    }

    /// An asynchronous sequence of every change committed from now on. It ends when the database closes.
    public func changes() -> AsyncStream<CBLDatabaseChange> {
        let id = UUID()
        let (stream, continuation) = AsyncStream<CBLDatabaseChange>.makeStream(bufferingPolicy: .unbounded)
        lock.lock()
        if storeIfOpen == nil {
            continuation.finish()
        } else {
            changeContinuations[id] = continuation
        }
        lock.unlock()
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            self.lock.lock(); defer { self.lock.unlock() }
            self.changeContinuations[id] = nil
        }
        return stream
    }
}
