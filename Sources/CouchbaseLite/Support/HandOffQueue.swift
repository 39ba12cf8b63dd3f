import DequeModule
import Foundation

/// A queue handing batches of work from one thread to another: a producer blocks while it
/// holds `capacity` items, a consumer blocks while it is empty. Used where one thread runs
/// SQLite and another does CPU work (view indexing, the 2.x upgrader).
// @unchecked because `items`, `finished` and `cancelled` are only touched under `condition`.
package final class HandOffQueue<Element: Sendable>: @unchecked Sendable {
    private let condition = NSCondition()
    private var items = Deque<Element>()
    private var finished = false
    private var cancelled = false
    private let capacity: Int

    /// - Parameter capacity: items the queue holds before `push` blocks (`Int.max`: never).
    package init(capacity: Int) {
        // Kept: every caller passes a constant (a zero capacity would block the first push forever).
        precondition(capacity > 0)
        self.capacity = capacity
    }

    /// Adds `item`, blocking while the queue is full. Returns false, dropping `item`, once
    /// either side has called `cancel()`.
    @discardableResult
    package func push(_ item: Element) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while items.count >= capacity && !cancelled { condition.wait() }
        guard !cancelled else { return false }
        items.append(item)
        condition.broadcast()
        return true
    }

    /// The next item, blocking while the queue is empty; nil once the producer has called
    /// `finish()` and everything was taken, or after `cancel()`.
    package func pop() -> Element? {
        condition.lock()
        defer { condition.unlock() }
        while items.isEmpty && !finished && !cancelled { condition.wait() }
        return takeFirst()
    }

    /// The next item if one is waiting; never blocks.
    package func tryPop() -> Element? {
        condition.lock()
        defer { condition.unlock() }
        return takeFirst()
    }

    private func takeFirst() -> Element? {
        guard !cancelled, let item = items.popFirst() else { return nil }
        condition.broadcast()
        return item
    }

    /// No more items will come: `pop` returns nil once the queue is empty.
    package func finish() {
        condition.lock()
        finished = true
        condition.broadcast()
        condition.unlock()
    }

    /// Stops both sides: pending items are dropped, `push` returns false and `pop` nil.
    package func cancel() {
        condition.lock()
        cancelled = true
        items.removeAll()
        condition.broadcast()
        condition.unlock()
    }
}
