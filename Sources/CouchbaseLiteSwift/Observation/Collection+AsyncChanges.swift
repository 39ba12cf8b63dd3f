import Foundation

extension Collection {
    // MARK: Change streams (the AsyncSequence face of the change publishers)

    /// This collection's changes as an `AsyncSequence`: one `CollectionChange` per committed
    /// transaction that changed its documents, from the moment this is called. Ending the
    /// iteration (or cancelling its task) removes the listener. Nothing is dropped.
    public func changes() -> AsyncStream<CollectionChange> {
        AsyncStream { continuation in
            let token = addChangeListener { continuation.yield($0) }
            continuation.onTermination = { _ in token.remove() }
        }
    }

    /// The changes to document `id` of this collection as an `AsyncSequence`: one
    /// `DocumentChange` per committed transaction that saved, deleted or purged it.
    public func documentChanges(for id: String) -> AsyncStream<DocumentChange> {
        AsyncStream { continuation in
            let token = addDocumentChangeListener(id: id) { continuation.yield($0) }
            continuation.onTermination = { _ in token.remove() }
        }
    }
}
