import Foundation

/// A handle returned by `addChangeListener`, used to remove the listener.
public final class CBLListenerToken: NSObject, Sendable {}

extension CBLDatabase {
    /// Records a change made inside the current transaction and updates the cached document
    /// (its uncommitted state, seen only on the writer's thread until the commit).
    func noteChange(_ change: RevisionChange, revision: CBLSavedRevision?) {
        let recorded = CBLDatabaseChange(change)
        let serial = writer.withState { w in
            w.pendingChanges.append(recorded)
            return w.transactionSerial
        }
        let stale = lock.withLock { s in
            s.cachedDocument(change.docID)?.revisionAdded(recorded, revision: revision, serial: serial)
            return s.designDocumentChanged(change.docID)
        }
        _ = stale   // released here, after the lock
    }

    /// Called on the writer just before the outermost commit: the changed documents that are in
    /// memory drop their committed state (readers load it from their snapshot until the commit
    /// has landed, and cache nothing meanwhile). Returns them, each with its change.
    func commitWillLand() -> [(CBLDocument, CBLDatabaseChange)] {
        writer.withState { w in
            guard !w.pendingChanges.isEmpty else { return [] }
            return lock.withLock { s in
                let documents = s.documentsToNotify(w.pendingChanges)
                s.commitGeneration &+= 1
                s.isCommitting = true
                for (document, _) in documents { document.commitWillLand() }
                return documents
            }
        }
    }

    /// Called on the writer after the outermost commit landed (or failed): the documents take
    /// their state from the transaction (or reload it).
    func commitDidEnd(_ documents: [(CBLDocument, CBLDatabaseChange)], landed: Bool) {
        writer.withState { w in
            guard !w.pendingChanges.isEmpty else { return }
            lock.withLock { s in
                for (document, _) in documents { document.commitDidEnd(serial: w.transactionSerial, landed: landed) }
                s.commitGeneration &+= 1
                s.isCommitting = false
            }
        }
    }

    /// At most this many changes go in one database notification: a bigger transaction is
    /// announced in several, so its notification objects are never all in memory at once.
    static let changesPerNotification = 10_000

    /// Delivers the changes of a committed transaction (`documents`: from `commitWillLand`):
    /// each changed document in memory hears its change, then the database's listeners, change
    /// streams and `cblDatabaseChange` observers hear every change, in commit order, in batches
    /// of at most ``changesPerNotification``.
    func postPendingChanges(_ documents: [(CBLDocument, CBLDatabaseChange)]) {
        let log = writer.withState { w in
            let log = w.pendingChanges
            w.pendingChanges.removeAll()
            return log
        }
        guard !log.isEmpty else { return }
        let (listeners, continuations) = lock.withLock { s in
            (Array(s.changeListeners.values), Array(s.changeContinuations.values))
        }
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

    /// Calls `listener` with the changes of every committed transaction.
    @discardableResult
    public func addChangeListener(_ listener: @escaping ([CBLDatabaseChange]) -> Void) -> CBLListenerToken {
        let token = CBLListenerToken()
        lock.withLock { $0.changeListeners[ObjectIdentifier(token)] = listener }
        return token
    }

    /// Removes a listener added with ``addChangeListener(_:)``.
    public func removeChangeListener(_ token: CBLListenerToken) {
        let removed = lock.withLock { $0.changeListeners.removeValue(forKey: ObjectIdentifier(token)) }
        _ = removed   // released here, after the lock
    }

    /// An asynchronous sequence of every change committed from now on. It ends when the database closes.
    public func changes() -> AsyncStream<CBLDatabaseChange> {
        let id = UUID()
        let (stream, continuation) = AsyncStream<CBLDatabaseChange>.makeStream(bufferingPolicy: .unbounded)
        let closed = lock.withLock { s in
            if s.store == nil { return true }
            s.changeContinuations[id] = continuation
            return false
        }
        if closed { continuation.finish() }
        continuation.onTermination = { [weak self] _ in
            self?.lock.withLock { $0.changeContinuations[id] = nil }
        }
        return stream
    }
}
