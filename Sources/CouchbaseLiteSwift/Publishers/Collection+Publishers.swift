import Foundation
import OpenCombine

extension Collection {
    // MARK: Change publishers (3.2.3; OpenCombine on Linux)

    /// A publisher of this collection's changes: one `CollectionChange` per committed transaction
    /// that changed its documents (a whole `inBatch` is one), sent on `queue` (default: a serial
    /// queue of its own, as for `addChangeListener`; pass `.main` for Apple's default). Each
    /// subscription adds a change listener and removes it when cancelled. Give a serial queue.
    public func changePublisher(on queue: DispatchQueue? = nil) -> AnyPublisher<CollectionChange, Never> {
        ListenerPublisher(queue: listenerQueue(queue, "collection-publisher")) { [self] queue, send in
            addChangeListener(queue: queue, listener: send)
        }.eraseToAnyPublisher()
    }

    /// A publisher of the changes to document `id` of this collection: one `DocumentChange` per
    /// committed transaction that saved, deleted or purged it, sent on `queue` (default: a serial
    /// queue of its own). Each subscription adds a listener and removes it when cancelled.
    public func documentChangePublisher(for id: String, on queue: DispatchQueue? = nil) -> AnyPublisher<DocumentChange, Never> {
        ListenerPublisher(queue: listenerQueue(queue, "document-publisher")) { [self] queue, send in
            addDocumentChangeListener(id: id, queue: queue, listener: send)
        }.eraseToAnyPublisher()
    }
}
