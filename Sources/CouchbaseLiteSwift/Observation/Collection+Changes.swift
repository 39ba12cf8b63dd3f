import Foundation

/// The documents of one collection a committed transaction changed (3.x `CollectionChange`).
public struct CollectionChange: Sendable {
    /// The collection written to.
    public let collection: Collection
    /// The IDs of the saved, deleted or purged documents, in the order they were written.
    public let documentIDs: [String]
}

extension Collection {
    // MARK: Change listeners

    /// Calls `listener` on `queue` (default: a serial queue of its own) after each committed
    /// transaction that changed documents of this collection.
    @discardableResult
    public func addChangeListener(queue: DispatchQueue? = nil,
                                  listener: @escaping @Sendable (CollectionChange) -> Void) -> ListenerToken {
        let queue = listenerQueue(queue, "collection-change")
        let active = ListenerSwitch()
        let keyStore = self.keyStore
        let database = self.database
        let observers = database.observers
        let id = observers.add { [unowned database] changes in
            let ids = changes.ids(in: keyStore)
            guard !ids.isEmpty else { return }
            queue.async {
                guard active.isOn else { return }
                listener(CollectionChange(collection: Collection(database: database, keyStore: keyStore), documentIDs: ids))
            }
        }
        return ListenerToken {
            active.turnOff()
            observers.remove(id)
        }
    }

    /// Calls `listener` on `queue` (default: a serial queue of its own) after each committed
    /// transaction that changed the document `id` of this collection.
    @discardableResult
    public func addDocumentChangeListener(id: String, queue: DispatchQueue? = nil,
                                          listener: @escaping @Sendable (DocumentChange) -> Void) -> ListenerToken {
        database.addDocumentChangeListener(id: id, in: keyStore, queue: queue, listener: listener)
    }

    /// Stops the listener `token` came from.
    public func removeChangeListener(withToken token: ListenerToken) {
        token.remove()
    }
}
