import Foundation

/// What `addChangeListener` returns: removing it (`remove()` or `removeChangeListener(withToken:)`)
/// stops the listener; no call starts after that.
// @unchecked because `removal` (not `@Sendable`: it captures observers that lock) is only touched under `lock`.
public final class ListenerToken: @unchecked Sendable {
    private let lock = NSLock()
    private var removal: (() -> Void)?

    init(removal: @escaping () -> Void) {
        self.removal = removal
    }

    /// Stops the listener (again: nothing happens).
    public func remove() {
        lock.lock()
        let r = removal
        removal = nil
        lock.unlock()
        r?()
    }
}

/// A listener's on/off switch, read on its queue just before each call.
// @unchecked because `on` is only touched under `lock`.
final class ListenerSwitch: @unchecked Sendable {
    private let lock = NSLock()
    private var on = true

    var isOn: Bool {
        lock.lock()
        defer { lock.unlock() }
        return on
    }

    func turnOff() {
        lock.lock()
        on = false
        lock.unlock()
    }
}

/// The queue a listener is called on when the caller gives none. Couchbase Lite uses the main
/// queue; a server on Linux often runs no main loop, so each listener gets a serial queue.
func listenerQueue(_ queue: DispatchQueue?, _ label: String) -> DispatchQueue {
    queue ?? DispatchQueue(label: "CouchbaseLiteSwift.\(label)")
}
