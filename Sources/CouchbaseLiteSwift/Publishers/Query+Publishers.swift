import Foundation
import OpenCombine

extension Query {
    // MARK: Change publishers (3.2.3; OpenCombine on Linux)

    /// A publisher of the query's results: a `QueryChange` with the whole result set when
    /// subscribed, then again after each commit that changes the results (or with the error a
    /// re-run throws), sent on `queue` (default: a serial queue of its own, as for
    /// `addChangeListener`; pass `.main` for Apple's default). Each subscription makes the query
    /// live and stops it when cancelled. Give a serial queue.
    public func changePublisher(on queue: DispatchQueue? = nil) -> AnyPublisher<QueryChange, Never> {
        ListenerPublisher(queue: listenerQueue(queue, "query-publisher")) { [self] queue, send in
            addChangeListener(withQueue: queue, send)
        }.eraseToAnyPublisher()
    }

    /// ``changePublisher(on:)`` under the name the 3.2.3 documentation's view models use.
    public func publish(on queue: DispatchQueue? = nil) -> AnyPublisher<QueryChange, Never> {
        changePublisher(on: queue)
    }
}
