import Foundation

/// Who hears about committed writes (database, document and query listeners): each gets the IDs
/// of the documents a transaction changed once it commits, on the writing thread, and only
/// dispatches from there. Writes inside `inBatch` are reported together when the batch commits.
final class DatabaseObservers: @unchecked Sendable {
    typealias Observer = @Sendable ([String]) -> Void

    private let lock = NSLock()
    private var observers: [UUID: Observer] = [:]
    private var pending: [String] = []
    private var pendingSet: Set<String> = []

    func add(_ observer: @escaping Observer) -> UUID {
        let id = UUID()
        lock.lock()
        observers[id] = observer
        lock.unlock()
        return id
    }

    func remove(_ id: UUID) {
        lock.lock()
        observers[id] = nil
        lock.unlock()
    }

    /// The database closed: nothing will be written any more.
    func removeAll() {
        lock.lock()
        observers = [:]
        pending = []
        pendingSet = []
        lock.unlock()
    }

    /// Notes that `docID` changed in the open transaction.
    func recordChange(_ docID: String) {
        lock.lock()
        if pendingSet.insert(docID).inserted { pending.append(docID) }
        lock.unlock()
    }

    /// The transaction rolled back: its changes never happened.
    func discardPending() {
        lock.lock()
        pending = []
        pendingSet = []
        lock.unlock()
    }

    /// The outermost transaction committed: tells every observer what it changed.
    func committed() {
        lock.lock()
        let ids = pending
        pending = []
        pendingSet = []
        let targets = Array(observers.values)
        lock.unlock()
        guard !ids.isEmpty else { return }
        for observer in targets { observer(ids) }
    }
}
