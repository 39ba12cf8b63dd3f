import Foundation

/// A query that keeps its result up to date: it re-runs (debounced by `updateInterval`) after
/// database changes and notifies only when the rows actually changed.
// @unchecked because its rows, observers and generation are only touched under `stateLock`.
public final class CBLLiveQuery: CBLQuery, @unchecked Sendable {
    private struct Observer {
        weak var target: CBLKeyValueObserving?
        let keyPath: String
        let options: NSKeyValueObservingOptions
        let context: UnsafeMutableRawPointer?
    }

    private let stateLock = NSRecursiveLock()
    private let queue = DispatchQueue(label: "CBLLiveQuery")
    private var currentRows: CBLQueryEnumerator?
    private var error: Error?
    private var running = false
    private var updatePending = false
    private var generation = 0
    private var databaseToken: CBLListenerToken?
    private var listeners: [ObjectIdentifier: (CBLQueryEnumerator) -> Void] = [:]
    private var continuations: [UUID: AsyncStream<CBLQueryEnumerator>.Continuation] = [:]
    private var observers: [Observer] = []
    private let rowsReady = NSCondition()
    private var interval: TimeInterval = 0.2

    /// The latest result, or nil until the first run finishes. Starts the query if needed.
    public var rows: CBLQueryEnumerator? {
        start()
        stateLock.lock(); defer { stateLock.unlock() }
        return currentRows
    }

    /// The error of the last run, if it failed.
    public var lastError: Error? {
        stateLock.lock(); defer { stateLock.unlock() }
        return error
    }

    /// The minimum delay between re-runs after changes (default 0.2 s).
    public var updateInterval: TimeInterval {
        get { stateLock.lock(); defer { stateLock.unlock() }; return interval }
        set { stateLock.lock(); defer { stateLock.unlock() }; interval = max(0, newValue) }
    }

    /// Starts observing the database and runs the query in the background.
    public func start() {
        stateLock.lock()
        defer { stateLock.unlock() }
        guard !running else { return }
        running = true
        databaseToken = database.addChangeListener { [weak self] _ in self?.databaseChanged() }
        scheduleUpdate(after: 0)
    }

    /// Stops observing; `rows` keeps the last result.
    public func stop() {
        stateLock.lock()
        defer { stateLock.unlock() }
        guard running else { return }
        running = false
        generation += 1
        updatePending = false
        if let token = databaseToken { database.removeChangeListener(token) }
        databaseToken = nil
        for continuation in continuations.values { continuation.finish() }
        continuations.removeAll()
    }

    deinit {
        if let token = databaseToken { database.removeChangeListener(token) }
    }

    /// Starts the query if needed and blocks until the first result is available. Returns false on error.
    @discardableResult
    public func waitForRows() -> Bool {
        start()
        rowsReady.lock()
        defer { rowsReady.unlock() }
        while true {
            stateLock.lock()
            let done = currentRows != nil || error != nil || !running
            let ok = currentRows != nil
            stateLock.unlock()
            if done { return ok }
            _ = rowsReady.wait(until: Date().addingTimeInterval(0.05))
        }
    }

    /// Re-runs the query now (e.g. after changing its options).
    public func queryOptionsChanged() {
        scheduleUpdate(after: 0)
    }

    private func databaseChanged() {
        stateLock.lock()
        let delay = interval
        stateLock.unlock()
        scheduleUpdate(after: delay)
    }

    private func scheduleUpdate(after delay: TimeInterval) {
        stateLock.lock()
        guard running, !updatePending else { stateLock.unlock(); return }
        updatePending = true
        let gen = generation
        stateLock.unlock()
        queue.asyncAfter(deadline: .now() + delay) { [weak self] in self?.update(generation: gen) }
    }

    private func update(generation gen: Int) {
        stateLock.lock()
        guard running, gen == generation else { stateLock.unlock(); return }
        updatePending = false
        stateLock.unlock()

        let result: Result<CBLQueryEnumerator, Error> = Result { try run() }

        stateLock.lock()
        guard gen == generation else { stateLock.unlock(); return }
        var changed: CBLQueryEnumerator?
        var old: CBLQueryEnumerator?
        switch result {
        case .success(let enumerator):
            error = nil
            if currentRows == nil || !(currentRows!.isEqual(enumerator)) {
                old = currentRows
                currentRows = enumerator
                changed = enumerator
            }
        case .failure(let e):
            error = e
        }
        let listeners = Array(self.listeners.values)
        let continuations = Array(self.continuations.values)
        observers.removeAll { $0.target == nil }
        let observers = self.observers
        stateLock.unlock()
        rowsReady.lock(); rowsReady.broadcast(); rowsReady.unlock()

        guard let changed else { return }
        for listener in listeners { listener(changed) }
        for continuation in continuations { continuation.yield(changed) }
        for observer in observers where observer.keyPath == "rows" {
            var change: [NSKeyValueChangeKey: Any] = [.kindKey: 1]
            if observer.options.contains(.new) { change[.newKey] = changed }
            if observer.options.contains(.old) { change[.oldKey] = old ?? NSNull() }
            observer.target?.observeValue(forKeyPath: "rows", of: self, change: change, context: observer.context)
        }
    }

    // MARK: Observation

    /// Calls `listener` (on a background queue) each time the rows change.
    @discardableResult
    public func addChangeListener(_ listener: @escaping (CBLQueryEnumerator) -> Void) -> CBLListenerToken {
        let token = CBLListenerToken()
        stateLock.lock(); defer { stateLock.unlock() }
        listeners[ObjectIdentifier(token)] = listener
        return token
    }

    public func removeChangeListener(_ token: CBLListenerToken) {
        stateLock.lock(); defer { stateLock.unlock() }
        listeners[ObjectIdentifier(token)] = nil
    }

    /// Every new result set, starting with the first. Starts the query.
    public func changes() -> AsyncStream<CBLQueryEnumerator> {
        let id = UUID()
        let (stream, continuation) = AsyncStream<CBLQueryEnumerator>.makeStream(bufferingPolicy: .bufferingNewest(8))
        stateLock.lock()
        continuations[id] = continuation
        if let rows = currentRows { continuation.yield(rows) }
        stateLock.unlock()
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            self.stateLock.lock(); defer { self.stateLock.unlock() }
            self.continuations[id] = nil
        }
        start()
        return stream
    }

    /// KVO-style registration for `"rows"`, as 1.x apps wrote it:
    /// `liveQuery.addObserver(self, forKeyPath: "rows", options: .new, context: nil)`.
    public func addObserver(_ observer: CBLKeyValueObserving, forKeyPath keyPath: String,
                            options: NSKeyValueObservingOptions = [], context: UnsafeMutableRawPointer? = nil) {
        stateLock.lock()
        nonisolated(unsafe) let ctx = context
        observers.append(Observer(target: observer, keyPath: keyPath, options: options, context: ctx))
        let initial = options.contains(.initial) ? currentRows : nil
        stateLock.unlock()
        if options.contains(.initial) {
            observer.observeValue(forKeyPath: keyPath, of: self, change: [.kindKey: 1, .newKey: initial ?? NSNull()],
                                  context: context)
        }
        start()
    }

    /// Removes a KVO-style observer.
    public func removeObserver(_ observer: CBLKeyValueObserving, forKeyPath keyPath: String) {
        stateLock.lock(); defer { stateLock.unlock() }
        observers.removeAll { $0.target === observer && $0.keyPath == keyPath || $0.target == nil }
    }
}
