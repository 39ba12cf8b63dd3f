import Foundation

/// The documents one committed transaction changed, per collection (key-store name), each list
/// in the order they were first written.
struct CommittedChanges: Sendable {
    private(set) var documentIDs: [String: [String]] = [:]
    private var seen: [String: Set<String>] = [:]

    var isEmpty: Bool { documentIDs.isEmpty }

    /// The IDs changed in `keyStore`.
    func ids(in keyStore: KeyStore) -> [String] { documentIDs[keyStore.name] ?? [] }

    /// Whether any of `keyStores` changed.
    func touches(_ keyStores: Set<KeyStore>) -> Bool {
        keyStores.contains { documentIDs[$0.name] != nil }
    }

    mutating func insert(_ docID: String, in keyStore: KeyStore) {
        if seen[keyStore.name, default: []].insert(docID).inserted {
            documentIDs[keyStore.name, default: []].append(docID)
        }
    }
}

/// Who hears about committed writes (database, collection, document and query listeners): each
/// gets what a transaction changed once it commits, on the writing thread, and only dispatches
/// from there. Writes inside `inBatch` are reported together when the batch commits.
// @unchecked because `observers` and `pending` are only touched under `lock`.
final class DatabaseObservers: @unchecked Sendable {
    typealias Observer = @Sendable (CommittedChanges) -> Void

    private let lock = NSLock()
    private var observers: [UUID: Observer] = [:]
    private var pending = CommittedChanges()

    func add(_ observer: @escaping Observer) -> UUID {
        let id = UUID()
        lock.lock()
        observers[id] = observer
        lock.unlock()
        return id
    }

    /// How many observers are registered (for tests: a cancelled publisher leaves none behind).
    var count: Int {
        lock.lock()
        defer { lock.unlock() }
        return observers.count
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
        pending = CommittedChanges()
        lock.unlock()
    }

    /// Notes that `docID` of `keyStore` changed in the open transaction.
    func recordChange(_ docID: String, in keyStore: KeyStore) {
        lock.lock()
        pending.insert(docID, in: keyStore)
        lock.unlock()
    }

    /// The transaction rolled back: its changes never happened.
    func discardPending() {
        lock.lock()
        pending = CommittedChanges()
        lock.unlock()
    }

    /// The outermost transaction committed: tells every observer what it changed.
    func committed() {
        lock.lock()
        let changes = pending
        pending = CommittedChanges()
        let targets = Array(observers.values)
        lock.unlock()
        guard !changes.isEmpty else { return }
        for observer in targets { observer(changes) }
    }
}
