import Foundation

/// A query's new results, or why re-running it failed (2.x `QueryChange`).
public struct QueryChange: Sendable {
    /// The query that was re-run.
    public let query: Query
    /// Its results, or nil when `error` is set.
    public let results: ResultSet?
    /// Why it could not run.
    public let error: Error?
}

/// A live query: runs the query when added and after every commit that changed documents of the
/// collections it reads, and calls its listener only when the rows differ from the last ones it
/// reported.
// @unchecked because `lastRows` is only touched under `lock`; the rest are lets of Sendable types.
final class LiveQuery: @unchecked Sendable {
    private let query: Query
    private let queue: DispatchQueue
    private let listener: @Sendable (QueryChange) -> Void
    let active = ListenerSwitch()
    private let lock = NSLock()
    private var lastRows: [String]?

    init(query: Query, queue: DispatchQueue, listener: @escaping @Sendable (QueryChange) -> Void) {
        self.query = query
        self.queue = queue
        self.listener = listener
    }

    /// Re-runs the query on the listener's queue.
    func refresh() {
        queue.async { [self] in
            guard active.isOn else { return }
            let change: QueryChange
            do {
                let results = try query.execute()
                let rows = results.rows.map { $0.toJSON() }
                lock.lock()
                let unchanged = rows == lastRows
                lastRows = rows
                lock.unlock()
                if unchanged { return }
                change = QueryChange(query: query, results: results, error: nil)
            } catch {
                lock.lock()
                lastRows = nil
                lock.unlock()
                change = QueryChange(query: query, results: nil, error: error)
            }
            guard active.isOn else { return }
            listener(change)
        }
    }
}

extension Query {
    // MARK: Change listeners

    /// Makes the query live: `listener` gets its results now, then again on `queue` (default: a
    /// serial queue of its own) after each commit that changes them. Give a serial queue.
    @discardableResult
    public func addChangeListener(withQueue queue: DispatchQueue? = nil,
                                  _ listener: @escaping @Sendable (QueryChange) -> Void) -> ListenerToken {
        let live = LiveQuery(query: self, queue: listenerQueue(queue, "query-change"), listener: listener)
        // A query with no database (see `Query.noDataSource`) reports its error once.
        guard let observers = try? database.observers else {
            live.refresh()
            return ListenerToken { live.active.turnOff() }
        }
        // The collections it reads, found now: observers run with the database locked, where
        // compiling (which takes the query's lock, then the database's) could deadlock.
        // A query that does not compile is re-run on every commit (and reports its error).
        let keyStores = try? translation.keyStores
        let id = observers.add { changes in
            if let keyStores, !changes.touches(keyStores) { return }
            live.refresh()
        }
        live.refresh()
        return ListenerToken {
            live.active.turnOff()
            observers.remove(id)
        }
    }

    /// Stops the listener `token` came from.
    public func removeChangeListener(withToken token: ListenerToken) {
        token.remove()
    }

    /// The query's results now, then each time a commit changes them; ends with the error a
    /// re-run throws. Cancelling the iterating task removes the listener.
    public func changes() -> AsyncThrowingStream<ResultSet, Error> {
        AsyncThrowingStream { continuation in
            let token = addChangeListener { change in
                if let results = change.results {
                    continuation.yield(results)
                } else {
                    continuation.finish(throwing: change.error ?? CouchbaseLiteError(.unexpectedError, "Query failed"))
                }
            }
            continuation.onTermination = { _ in token.remove() }
        }
    }
}
