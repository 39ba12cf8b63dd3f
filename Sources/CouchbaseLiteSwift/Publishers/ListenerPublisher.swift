import Foundation
import OpenCombine

/// A Combine (OpenCombine) publisher over one of the change listeners: each subscription adds its
/// own listener and removes it when cancelled. Events are delivered on `queue`, one per event of
/// the listener (one per committed transaction), in order; when the subscriber has no demand
/// left they wait in order until it asks for more. It never completes.
struct ListenerPublisher<Output: Sendable>: Publisher {
    typealias Failure = Never
    typealias Register = @Sendable (DispatchQueue, @escaping @Sendable (Output) -> Void) -> ListenerToken

    /// The queue the listener is called on and the subscriber is sent values on.
    let queue: DispatchQueue
    /// Adds the listener (called on the given queue); its token stops it.
    let register: Register

    func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Never {
        let subscription = ListenerSubscription(subscriber: AnySubscriber(subscriber), queue: queue)
        subscriber.receive(subscription: subscription)
        subscription.start(register)
    }
}

/// One subscriber's listener. The subscriber is only called on `queue`, never with `lock` held
/// (it may request or cancel from inside `receive`); `request` and `cancel` may come from any
/// thread, hence `@unchecked Sendable` with every mutable field behind `lock`.
// @unchecked because every mutable field is only touched under `lock` (see above).
private final class ListenerSubscription<Output: Sendable>: Subscription, @unchecked Sendable {
    private let lock = NSLock()
    private let queue: DispatchQueue
    /// Nil once cancelled.
    private var subscriber: AnySubscriber<Output, Never>?
    private var token: ListenerToken?
    private var demand = Subscribers.Demand.none
    private var pending: [Output] = []
    private var nextPending = 0

    init(subscriber: AnySubscriber<Output, Never>, queue: DispatchQueue) {
        self.subscriber = subscriber
        self.queue = queue
    }

    func start(_ register: ListenerPublisher<Output>.Register) {
        let token = register(queue) { [weak self] value in self?.enqueue(value) }
        lock.lock()
        let cancelled = subscriber == nil
        if !cancelled { self.token = token }
        lock.unlock()
        if cancelled { token.remove() }
    }

    /// On `queue`: a new event from the listener.
    private func enqueue(_ value: Output) {
        lock.lock()
        guard subscriber != nil else { lock.unlock(); return }
        pending.append(value)
        lock.unlock()
        deliver()
    }

    /// On `queue`: sends what the demand allows.
    private func deliver() {
        while true {
            lock.lock()
            guard let subscriber, demand > 0, nextPending < pending.count else { lock.unlock(); return }
            let value = pending[nextPending]
            nextPending += 1
            if nextPending == pending.count {
                pending.removeAll(keepingCapacity: true)
                nextPending = 0
            }
            demand -= 1
            lock.unlock()
            let more = subscriber.receive(value)
            lock.lock()
            demand += more
            lock.unlock()
        }
    }

    func request(_ demand: Subscribers.Demand) {
        lock.lock()
        self.demand += demand
        let waiting = nextPending < pending.count
        lock.unlock()
        // Waiting events are sent on the subscriber's queue, as every other event.
        if waiting { queue.async { self.deliver() } }
    }

    func cancel() {
        lock.lock()
        subscriber = nil
        pending = []
        nextPending = 0
        let token = self.token
        self.token = nil
        lock.unlock()
        token?.remove()
    }
}
