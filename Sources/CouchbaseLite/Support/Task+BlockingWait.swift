import Foundation

extension Task {
    /// Blocks the calling thread until the task ends or `timeout` passes; true when it ended.
    /// The one way synchronous code (1.x's `stop()`-style API, which cannot be `async`) waits on
    /// a task: never call it on a thread the task itself needs (a cooperative-pool thread).
    @discardableResult
    package func waitBlocking(timeout: TimeInterval) -> Bool {
        let done = DispatchSemaphore(value: 0)
        Task<Void, Never>.detached {
            _ = await self.result
            done.signal()
        }
        return done.wait(timeout: .now() + timeout) == .success
    }
}
