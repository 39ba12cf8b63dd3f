import Foundation

/// A value guarded by a lock, for state that holds non-Sendable JSON values (`[String: Any]`),
/// which `Synchronization.Mutex`'s region checking refuses.
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
