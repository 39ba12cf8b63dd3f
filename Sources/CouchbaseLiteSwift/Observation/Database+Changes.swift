import Foundation

/// The documents of the default collection one committed transaction changed (2.x `DatabaseChange`).
public struct DatabaseChange: Sendable {
    /// The database written to.
    public let database: Database
    /// The IDs of the saved, deleted or purged documents, in the order they were written.
    public let documentIDs: [String]
}

/// One document changed by a committed transaction (3.x `DocumentChange`).
public struct DocumentChange: Sendable {
    /// The database written to.
    public let database: Database
    /// The document's ID.
    public let documentID: String
    /// The collection written to.
    public let collection: Collection
}

extension Database {
    // MARK: Change listeners

    /// Calls `listener` on `queue` (default: a serial queue of its own) after each committed
    /// transaction that changed documents of the default collection.
    @discardableResult
    public func addChangeListener(withQueue queue: DispatchQueue? = nil,
                                  listener: @escaping @Sendable (DatabaseChange) -> Void) -> ListenerToken {
        let queue = listenerQueue(queue, "database-change")
        let active = ListenerSwitch()
        let id = observers.add { [unowned self] changes in
            let ids = changes.ids(in: .default)
            guard !ids.isEmpty else { return }
            queue.async {
                guard active.isOn else { return }
                listener(DatabaseChange(database: self, documentIDs: ids))
            }
        }
        return ListenerToken { [observers] in
            active.turnOff()
            observers.remove(id)
        }
    }

    /// Calls `listener` on `queue` (default: a serial queue of its own) after each committed
    /// transaction that changed the document `id` of the default collection.
    @discardableResult
    public func addDocumentChangeListener(withID id: String, queue: DispatchQueue? = nil,
                                          listener: @escaping @Sendable (DocumentChange) -> Void) -> ListenerToken {
        addDocumentChangeListener(id: id, in: .default, queue: queue, listener: listener)
    }

    func addDocumentChangeListener(id: String, in keyStore: KeyStore, queue: DispatchQueue?,
                                   listener: @escaping @Sendable (DocumentChange) -> Void) -> ListenerToken {
        let queue = listenerQueue(queue, "document-change")
        let active = ListenerSwitch()
        let observerID = observers.add { [unowned self] changes in
            guard changes.ids(in: keyStore).contains(id) else { return }
            queue.async {
                guard active.isOn else { return }
                listener(DocumentChange(database: self, documentID: id,
                                        collection: Collection(database: self, keyStore: keyStore)))
            }
        }
        return ListenerToken { [observers] in
            active.turnOff()
            observers.remove(observerID)
        }
    }

    /// Stops the listener `token` came from.
    public func removeChangeListener(withToken token: ListenerToken) {
        token.remove()
    }

    /// Records that `docID` of `keyStore` changed in `file`'s transaction and, when that was the
    /// outermost one, tells the listeners (called with the database lock held, right after the commit).
    func didChange(_ docID: String, in keyStore: KeyStore, file: DataFile) {
        observers.recordChange(docID, in: keyStore)
        if !file.connection.isInTransaction { observers.committed() }
    }
}
