import Foundation

/// A value guarded by a lock, for state that holds non-Sendable JSON values (`[String: Any]`),
/// which `Synchronization.Mutex`'s region checking refuses.
// @unchecked because `value` is only touched under `lock` (Mutex's region checking refuses `[String: Any]` values).
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
