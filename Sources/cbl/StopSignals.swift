import Foundation

/// SIGINT and SIGTERM turned into a request to stop: long-running commands (`cbl serve`,
/// `cbl upgrade --follow`) finish what they are doing and exit cleanly instead of dying.
/// Installed by ``init()``, removed by ``cancel()``.
final class StopSignals: @unchecked Sendable {
    private let lock = NSLock()
    private var requested = false
    private let stopped = DispatchSemaphore(value: 0)
    private var sources: [DispatchSourceSignal] = []

    init() {
        for sig in [SIGINT, SIGTERM] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler { [weak self] in self?.request() }
            source.resume()
            sources.append(source)
        }
    }

    /// True once a stop signal arrived.
    var isRequested: Bool {
        lock.lock(); defer { lock.unlock() }
        return requested
    }

    /// Blocks until a stop signal arrives.
    func wait() { stopped.wait() }

    /// Stops listening for the signals.
    func cancel() { sources.forEach { $0.cancel() } }

    private func request() {
        lock.lock()
        let first = !requested
        requested = true
        lock.unlock()
        if first { stopped.signal() }
    }
}
