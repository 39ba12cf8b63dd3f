import Foundation

/// A value the calling thread carries while a closure runs (``with(_:_:)``), read anywhere below
/// it through ``current``; the innermost call wins and the previous value comes back afterwards,
/// also when the closure throws. A thread-local, not a task-local: the listener writes
/// synchronously on its thread pool's threads, and a database write runs its body on the calling
/// thread.
// @unchecked because the slot is per thread: each thread only ever sees the values it set itself.
final class ThreadLocalScope<Value>: @unchecked Sendable {
    /// What the slot points at: the value of the innermost `with` on the thread.
    private final class Box {
        let value: Value
        init(_ value: Value) { self.value = value }
    }

    /// One key per scope for the life of the process. No destructor: a value set by `with` is
    /// removed before it returns, so a thread never ends holding one.
    private let key: pthread_key_t

    /// `purpose` names the value in the (fatal) message of a process out of thread-local keys.
    init(purpose: String) {
        var key = pthread_key_t()
        let status = pthread_key_create(&key, nil)
        precondition(status == 0, "pthread_key_create failed (\(status)): no thread-local slot for \(purpose)")
        self.key = key
    }

    /// Runs `body` with `value` as the calling thread's value (nil: none).
    func with<R>(_ value: Value?, _ body: () throws -> R) rethrows -> R {
        let previous = pthread_getspecific(key)
        // The box lives in this frame for as long as `body` runs; the slot holds it unretained.
        let box = value.map(Box.init)
        pthread_setspecific(key, box.map { Unmanaged.passUnretained($0).toOpaque() })
        defer { pthread_setspecific(key, previous) }
        return try withExtendedLifetime(box) { try body() }
    }

    /// The calling thread's value (set by ``with(_:_:)``), nil when there is none.
    var current: Value? {
        guard let pointer = pthread_getspecific(key) else { return nil }
        return Unmanaged<Box>.fromOpaque(pointer).takeUnretainedValue().value
    }
}
