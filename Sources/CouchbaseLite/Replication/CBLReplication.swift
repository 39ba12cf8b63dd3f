import Foundation
import JSONCore
import NIOSSL

/// The state of a replication, as 1.x reports it.
public enum CBLReplicationStatus: Int32, Sendable {
    /// Not running: never started, finished (one-shot) or stopped, possibly with `lastError`.
    case stopped = 0
    /// Running but unable to reach the remote; it retries by itself.
    case offline = 1
    /// Continuous and caught up, waiting for changes.
    case idle = 2
    /// Transferring changes.
    case active = 3
}

/// A snapshot of a replication's progress, as delivered by ``CBLReplication/changes()``.
public struct CBLReplicationChange: Sendable {
    public let status: CBLReplicationStatus
    public let completedChangesCount: UInt32
    public let changesCount: UInt32
    /// The error's status code and message, when there is one.
    public let lastError: CBLError?
}

extension Notification.Name {
    /// Posted on `NotificationCenter.default` (object = the ``CBLReplication``) whenever a
    /// replication's status, progress or error changes.
    public static let cblReplicationChange = Notification.Name("CBLReplicationChange")
}

/// 1.x's string constant for ``Foundation/NSNotification/Name/cblReplicationChange``.
public let kCBLReplicationChangeNotification = Notification.Name.cblReplicationChange.rawValue

/// A pull or push replication between a local database and a CouchDB-protocol peer (Apache
/// CouchDB 2.x/3.x, Sync Gateway, PouchDB-server, another Couchbase Lite listener), with the
/// 1.x API: configure, `start()`, observe `status` and the counts, `stop()`.
///
/// Checkpoints use the 1.x checkpoint ID and live where 1.x keeps them (the remote
/// `_local/<id>` document and the local `info` row), so a database a 1.x app replicated resumes
/// where it stopped. Safe to use from any thread; notifications arrive on a private queue.
// @unchecked because every mutable property is behind its lock (configuration, status, the running Replicator).
public final class CBLReplication: NSObject, @unchecked Sendable {
    /// The local database.
    public let localDatabase: CBLDatabase
    /// The remote database URL.
    public let remoteURL: URL
    /// True for a pull (remote → local), false for a push.
    public let pull: Bool

    /// What a run is started with (a copy, `Sendable`: the replication tasks share it).
    struct Configuration: Sendable {
        var continuous = false
        var createTarget = false
        var filter: String?
        /// The app's filter parameters, typed (`Sendable`, unlike the `[String: Any]` the app gives).
        var filterParams: JSONObject?
        var channels: [String]?
        var documentIDs: [String]?
        var headers: [String: String] = [:]
        var authenticator: CBLAuthenticatorProtocol?
        var remoteUUID: String?
        var trustedRootCertificates: [NIOSSLCertificate] = []
        var onlyTrustedRoots = true
        var retryTimeLimit: TimeInterval = 600
        var tuning = ReplicationTuning()
        var actingUser: CBLRequestUser?
    }

    struct Progress {
        var status: CBLReplicationStatus = .stopped
        var completed: UInt32 = 0
        var total: UInt32 = 0
        var lastError: Error?
        var remoteUUID: String?
        var running = false
        var suspended = false
        var resumeWhenUnsuspended = false
        var task: Task<Void, Never>?
        var runID = 0
        var lastPushedSequence: Int64?
        /// The transient failure being retried, as set in `lastError` (which is cleared when a
        /// retry gets through, unless something else was reported since).
        var retryingError: String?
        /// The status to return to when a retry succeeds.
        var statusBeforeOffline: CBLReplicationStatus?
    }

    private let configuration: Locked<Configuration>
    /// The cookies sent to the remote: those the app set and those the remote set (a login's
    /// session cookie), kept across runs as 1.x's cookie storage kept them.
    let cookieJar = Locked<[String: String]>([:])
    private let progress = Locked(Progress())
    private let listeners = Locked<[ObjectIdentifier: (CBLReplication) -> Void]>([:])
    private let continuations = Locked<[UUID: AsyncStream<CBLReplicationChange>.Continuation]>([:])
    private let observers = Locked<[ReplicationObserver]>([])
    private let notificationQueue = DispatchQueue(label: "CouchbaseLite.replication.notifications")
    let databaseQueue = DispatchQueue(label: "CouchbaseLite.replication.database")
    let readQueue = DispatchQueue(label: "CouchbaseLite.replication.reads")

    init(database: CBLDatabase, remote: URL, pull: Bool) {
        localDatabase = database
        remoteURL = remote
        self.pull = pull
        configuration = Locked(Configuration())
        super.init()
    }

    // MARK: Configuration

    private func config<T>(_ keyPath: KeyPath<Configuration, T>) -> T { configuration.withLock { $0[keyPath: keyPath] } }
    private func setConfig<T>(_ keyPath: WritableKeyPath<Configuration, T>, _ value: T) {
        configuration.withLock { $0[keyPath: keyPath] = value }
    }

    /// Keeps running after catching up, transferring new changes as they happen.
    public var continuous: Bool {
        get { config(\.continuous) }
        set { setConfig(\.continuous, newValue) }
    }

    /// Push only: create the remote database if it does not exist.
    public var createTarget: Bool {
        get { config(\.createTarget) }
        set { setConfig(\.createTarget, newValue) }
    }

    /// Push: the name of a filter registered with `setFilterNamed(_:as:)`; pull: a server-side
    /// filter (`designdoc/filtername`).
    public var filter: String? {
        get { config(\.filter) }
        set { setConfig(\.filter, newValue) }
    }

    /// Parameters passed to the filter.
    public var filterParams: [String: Any]? {
        get { config(\.filterParams)?.foundation }
        set {
            let typed = newValue.flatMap { try? JSONObject(foundation: $0) }
            if newValue != nil && typed == nil { CBLLog.warning("Sync", "\(self): filterParams are not JSON; ignored") }
            setConfig(\.filterParams, typed)
        }
    }

    /// Pull from Sync Gateway: only these channels (`filter=sync_gateway/bychannel`).
    public var channels: [String]? {
        get { config(\.channels) }
        set { setConfig(\.channels, newValue) }
    }

    /// Only these documents.
    public var documentIDs: [String]? {
        get { config(\.documentIDs) }
        set { setConfig(\.documentIDs, newValue) }
    }

    /// Extra HTTP headers sent with every request.
    public var headers: [String: String] {
        get { config(\.headers) }
        set { setConfig(\.headers, newValue) }
    }

    /// Extra options (1.x keys such as `"heartbeat"`, `"poll"`); kept for apps that set them.
    public var customProperties: [String: Any] {
        get { customPropertyStore.withLock { $0 } }
        set { customPropertyStore.withLock { $0 = newValue } }
    }
    /// Kept apart from ``Configuration`` (no run reads them), so the configuration stays `Sendable`.
    private let customPropertyStore = Locked<[String: Any]>([:])

    /// How to authenticate (``CBLAuthenticator``); credentials in `remoteURL` work too.
    public var authenticator: CBLAuthenticatorProtocol? {
        get { config(\.authenticator) }
        set { setConfig(\.authenticator, newValue) }
    }

    /// A stable identifier of the remote, used in the checkpoint ID instead of its URL (so a
    /// server that moves keeps its checkpoints).
    public var remoteUUID: String? {
        get { config(\.remoteUUID) }
        set { setConfig(\.remoteUUID, newValue) }
    }

    /// Trusts these certificates (PEM text: a CA, or a peer's self-signed certificate to pin)
    /// for an HTTPS remote. With `onlyThese`, the system's roots are not trusted.
    public func setAnchorCertificates(pem: [String], onlyThese: Bool = true) throws {
        var certificates: [NIOSSLCertificate] = []
        for text in pem {
            do {
                certificates += try NIOSSLCertificate.fromPEMBytes(Array(text.utf8))
            } catch {
                throw CBLError(400, "Invalid PEM certificate: \(error)")
            }
        }
        configuration.withLock {
            $0.trustedRootCertificates = certificates
            $0.onlyTrustedRoots = onlyThese
        }
    }

    /// Sets a cookie sent with every request (Sync Gateway session cookies).
    public func setCookieNamed(_ name: String, withValue value: String, path: String? = nil,
                               expirationDate: Date? = nil, secure: Bool = false) {
        if let expirationDate, expirationDate < Date() {
            deleteCookieNamed(name)
            return
        }
        cookieJar.withLock { $0[name] = value }
    }

    /// Removes a cookie set with ``setCookieNamed(_:withValue:path:expirationDate:secure:)``.
    public func deleteCookieNamed(_ name: String) {
        cookieJar.withLock { $0[name] = nil }
    }

    /// How long, in seconds, a one-shot replication keeps retrying transient failures (timeouts,
    /// dropped connections, 5xx) without making progress before it stops with `lastError`
    /// (default 600). While it waits to retry, `status` is `.offline`. A continuous replication
    /// retries for as long as it runs. An addition to the 1.x API, which gave up after a
    /// request's retries.
    public var retryTimeLimit: TimeInterval {
        get { config(\.retryTimeLimit) }
        set { setConfig(\.retryTimeLimit, max(0, newValue)) }
    }

    /// Retry and batching knobs (1.x's constants by default; tests shorten the delays).
    package var tuning: ReplicationTuning {
        get { config(\.tuning) }
        set { setConfig(\.tuning, newValue) }
    }

    /// Pull: the user every revision is inserted into the local database as
    /// (``CBLRequestUser/acting(as:_:)``), so its design documents' validations see that user and
    /// a design document is refused unless the user is the database's admin (a replication a
    /// CouchDB user started through the listener); nil (the default): as the app, unchecked.
    /// Read when the replication starts.
    package var actingUser: CBLRequestUser? {
        get { config(\.actingUser) }
        set { setConfig(\.actingUser, newValue) }
    }

    // MARK: Status

    /// The current state.
    public var status: CBLReplicationStatus { progress.withLock { $0.status } }
    /// True between `start()` and the end of the replication.
    public var running: Bool { progress.withLock { $0.running } }
    /// Why the replication stopped or went offline, as a ``CBLError`` (`code` = HTTP status).
    public var lastError: Error? { progress.withLock { $0.lastError } }
    /// Revisions processed so far in this run.
    public var completedChangesCount: UInt32 { progress.withLock { $0.completed } }
    /// Revisions known to need processing in this run (grows as changes are discovered).
    public var changesCount: UInt32 { progress.withLock { $0.total } }

    /// Pausing a running replication (1.x: app in background); un-suspending starts it again.
    public var suspended: Bool {
        get { progress.withLock { $0.suspended } }
        set {
            let action = progress.withLock { p -> Int in
                guard p.suspended != newValue else { return 0 }
                p.suspended = newValue
                if newValue, p.running {
                    p.resumeWhenUnsuspended = true
                    return 1
                }
                if !newValue, p.resumeWhenUnsuspended {
                    p.resumeWhenUnsuspended = false
                    return 2
                }
                return 0
            }
            if action == 1 { cancelRun() } else if action == 2 { start() }
        }
    }

    /// The peer's unique ID when it told us (the server's `uuid`).
    public var serverUUID: String? { progress.withLock { $0.remoteUUID } }

    // MARK: Control

    /// Starts the replication (does nothing if it is running).
    public func start() {
        let started = progress.withLock { p -> Bool in
            guard !p.running else { return false }
            p.running = true
            p.status = .active
            p.lastError = nil
            p.retryingError = nil
            p.statusBeforeOffline = nil
            p.completed = 0
            p.total = 0
            p.runID += 1
            return true
        }
        guard started else { return }
        localDatabase.registerReplication(self)
        let runID = progress.withLock { $0.runID }
        let task = Task.detached { [self] in
            await self.run(runID: runID)
        }
        progress.withLock { if $0.runID == runID { $0.task = task } }
        notifyChanged()
    }

    /// Stops the replication; `status` becomes `.stopped` once it has wound down.
    public func stop() {
        cancelRun()
    }

    /// Stops and starts again (e.g. after changing credentials).
    public func restart() {
        let task = progress.withLock { p -> Task<Void, Never>? in
            let t = p.task
            p.task = nil
            p.runID += 1
            p.running = false
            return t
        }
        task?.cancel()
        start()
    }

    /// Forgets the local checkpoint, so the next run starts from the beginning.
    public func resetCheckpoint() {
        let spec = checkpointSpec(configuration.withLock { $0 })
        if let (id, _, _) = try? localDatabase.localCheckpoint(spec) {
            try? localDatabase.setLocalCheckpoint(id, lastSequence: nil)
        }
    }

    private func cancelRun() {
        let task = progress.withLock { p -> Task<Void, Never>? in
            let t = p.task
            p.task = nil
            return t
        }
        task?.cancel()
    }

    /// Cancels and waits (bounded) for the run to end; used when the database closes.
    func stopAndWait(timeout: TimeInterval) {
        let task = progress.withLock { p -> Task<Void, Never>? in
            let t = p.task
            p.task = nil
            return t
        }
        guard let task else { return }
        task.cancel()
        task.waitBlocking(timeout: timeout)
    }

    // MARK: Push helpers

    /// Push only: IDs of local documents with changes not yet pushed (nil for a pull).
    public var pendingDocumentIDs: Set<String>? {
        guard !pull else { return nil }
        let configuration = self.configuration.withLock { $0 }
        let since: Int64
        if let pushed = progress.withLock({ $0.lastPushedSequence }) {
            since = pushed
        } else {
            let spec = checkpointSpec(configuration)
            since = (try? localDatabase.localCheckpoint(spec)).flatMap { $0.lastSequence.flatMap { Int64($0) } } ?? 0
        }
        guard let changes = try? localDatabase.syncChanges(since: since, limit: nil, descending: false, allLeaves: true,
                                                           docIDs: configuration.documentIDs, activeOnly: false,
                                                           includeDocs: false) else { return [] }
        var ids = Set<String>()
        let filterBlock = configuration.filter.flatMap { try? localDatabase.filterNamedOrCompiled($0) }
        let params = configuration.filterParams?.foundation   // converted once, not per change
        for change in changes {
            if let filterBlock {
                guard let rev = localDatabase.existingDocument(withID: change.docID)?.revision(withID: change.winnerRevID),
                      filterBlock(rev, params) else { continue }
            }
            ids.insert(change.docID)
        }
        return ids
    }

    /// Push only: true if the document has changes not yet pushed.
    public func isDocumentPending(_ document: CBLDocument) -> Bool {
        pendingDocumentIDs?.contains(document.documentID) ?? false
    }

    // MARK: Observation

    /// Calls `listener` (on a private queue) after every change of status, progress or error.
    @discardableResult
    public func addChangeListener(_ listener: @escaping (CBLReplication) -> Void) -> CBLListenerToken {
        let token = CBLListenerToken()
        listeners.withLock { $0[ObjectIdentifier(token)] = listener }
        return token
    }

    /// Removes a listener added with ``addChangeListener(_:)``.
    public func removeChangeListener(_ token: CBLListenerToken) {
        listeners.withLock { $0[ObjectIdentifier(token)] = nil }
    }

    /// The replication's changes as an async sequence; it ends when the replication stops.
    public func changes() -> AsyncStream<CBLReplicationChange> {
        let id = UUID()
        let (stream, continuation) = AsyncStream<CBLReplicationChange>.makeStream(bufferingPolicy: .bufferingNewest(64))
        continuation.onTermination = { [weak self] _ in self?.continuations.withLock { $0[id] = nil } }
        continuations.withLock { $0[id] = continuation }
        return stream
    }

    /// KVO-shaped observation of `status`, `completedChangesCount`, `changesCount`, `lastError`
    /// and `running` for code that used key-value observing on 1.x (see ``CBLKeyValueObserving``).
    public func addObserver(_ observer: CBLKeyValueObserving, forKeyPath keyPath: String,
                            options: NSKeyValueObservingOptions = [], context: UnsafeMutableRawPointer? = nil) {
        let snapshot = self.snapshot()
        observers.withLock {
            $0.append(ReplicationObserver(target: observer, keyPath: keyPath, options: options,
                                          context: context.map { UInt(bitPattern: $0) }, last: snapshot))
        }
        if options.contains(.initial) {
            observer.observeValue(forKeyPath: keyPath, of: self,
                                  change: [.kindKey: 1, .newKey: snapshot.value(forKey: keyPath)], context: context)
        }
    }

    /// Removes a KVO-style observer.
    public func removeObserver(_ observer: CBLKeyValueObserving, forKeyPath keyPath: String) {
        observers.withLock { $0.removeAll { $0.target === observer && $0.keyPath == keyPath || $0.target == nil } }
    }

    struct Snapshot {
        var status: CBLReplicationStatus
        var completed: UInt32
        var total: UInt32
        var error: Error?
        var running: Bool

        func value(forKey key: String) -> Any {
            switch key {
            case "status": return status.rawValue
            case "completedChangesCount": return completed
            case "changesCount": return total
            case "lastError": return error ?? NSNull()
            case "running": return running
            default: return NSNull()
            }
        }
    }

    private func snapshot() -> Snapshot {
        progress.withLock { Snapshot(status: $0.status, completed: $0.completed, total: $0.total, error: $0.lastError, running: $0.running) }
    }

    /// Delivers the current state to listeners, the notification center, streams and observers.
    func notifyChanged(final: Bool = false) {
        let snap = snapshot()
        notificationQueue.async { [self] in
            NotificationCenter.default.post(name: .cblReplicationChange, object: self)
            for listener in listeners.withLock({ Array($0.values) }) { listener(self) }
            let change = CBLReplicationChange(status: snap.status, completedChangesCount: snap.completed,
                                              changesCount: snap.total, lastError: snap.error.map(CBLReplication.asCBLError))
            for continuation in continuations.withLock({ Array($0.values) }) {
                continuation.yield(change)
            }
            let current = observers.withLock { list -> [ReplicationObserver] in
                list.removeAll { $0.target == nil }
                return list
            }
            for (index, observer) in current.enumerated() {
                let old = observer.last.value(forKey: observer.keyPath)
                let new = snap.value(forKey: observer.keyPath)
                guard "\(old)" != "\(new)" else { continue }
                var change: [NSKeyValueChangeKey: Any] = [.kindKey: 1]
                if observer.options.contains(.new) { change[.newKey] = new }
                if observer.options.contains(.old) { change[.oldKey] = old }
                observer.target?.observeValue(forKeyPath: observer.keyPath, of: self, change: change,
                                              context: observer.context.map { UnsafeMutableRawPointer(bitPattern: $0) } ?? nil)
                observers.withLock { list in
                    if index < list.count, list[index].target === observer.target { list[index].last = snap }
                }
            }
        }
    }

    static func asCBLError(_ error: Error) -> CBLError {
        if let e = error as? CBLError { return e }
        return CBLError(503, "\(error)")
    }

    // MARK: Engine hooks

    func checkpointSpec(_ configuration: Configuration) -> CheckpointSpec {
        var filter = configuration.filter
        var params = configuration.filterParams.map { $0.foundation.mapValues { "\($0)" } }
        if pull, filter == nil, let channels = configuration.channels {
            filter = "sync_gateway/bychannel"
            params = ["channels": channels.joined(separator: ",")]
        }
        return CheckpointSpec(push: !pull, continuous: configuration.continuous, filter: filter, filterParams: params,
                              docIDs: configuration.documentIDs, remoteURL: remoteURL.absoluteString,
                              remoteUUID: configuration.remoteUUID)
    }

    /// Applies a progress update from the engine and notifies when something visible changed.
    func update(runID: Int, _ body: (inout Progress) -> Void) {
        let changed = progress.withLock { p -> Bool in
            guard p.runID == runID else { return false }
            let before = (p.status, p.completed, p.total, p.lastError.map { "\($0)" }, p.running)
            body(&p)
            let after = (p.status, p.completed, p.total, p.lastError.map { "\($0)" }, p.running)
            return before != after
        }
        if changed { notifyChanged() }
    }

    private func run(runID: Int) async {
        let configuration = self.configuration.withLock { $0 }
        let engine = Replicator(replication: self, configuration: configuration, runID: runID)
        await engine.run()
        let ended = progress.withLock { p -> Bool in
            guard p.runID == runID else { return false }
            p.running = false
            p.status = .stopped
            p.task = nil
            return true
        }
        if ended {
            localDatabase.unregisterReplication(self)
            notifyChanged()
            // After the final state was delivered (same queue), the streams end.
            notificationQueue.async { [self] in
                for continuation in continuations.withLock({ Array($0.values) }) { continuation.finish() }
            }
        }
    }

    public override var description: String {
        "CBLReplication[\(pull ? "pull from" : "push to") \(remoteURL.absoluteString)]"
    }
}

struct ReplicationObserver {
    weak var target: CBLKeyValueObserving?
    let keyPath: String
    let options: NSKeyValueObservingOptions
    let context: UInt?
    var last: CBLReplication.Snapshot
}

/// Timing and batching constants (spec 9.7; iOS values by default).
package struct ReplicationTuning: Sendable {
    /// Delays before each retry of one failed request (1.x: 4 s then 8 s, doubling); each is
    /// jittered to between half and all of its value, so clients that failed together do
    /// not retry together.
    package var requestRetryDelays: [Duration] = [.seconds(4), .seconds(8)]
    /// First delay before a run retries after going offline (doubles with jitter, capped);
    /// a one-shot run stops once `retryTimeLimit` has passed without progress.
    package var offlineRetryDelay: Duration = .seconds(2)
    package var maxOfflineRetryDelay: Duration = .seconds(600)
    /// Timeout of one request with no body; a body adds its length at `minimumUploadRate`.
    package var requestTimeout: Duration = .seconds(60)
    /// Bytes per second a request body is assumed to travel at least (sizes its timeout: a
    /// 5 MB `_bulk_docs` gets 50 s more than an empty request).
    package var minimumUploadRate = 100_000
    /// How long a longpoll `_changes` request waits for a change before the server answers.
    package var longpollTimeout: Duration = .seconds(30)
    /// Changes read per `_changes` page (pull) or local changes page (push).
    package var changesPageSize = 1000
    /// Revisions per `_bulk_get` request.
    package var revsPerBulkGet = 100
    /// Concurrent fetch requests.
    package var maxConcurrentFetches = 4
    /// How often checkpoints are saved while a replication is transferring (1.x: 5 s after a
    /// change; always when it catches up, goes idle or stops).
    package var checkpointInterval: Duration = .seconds(2)
    /// Attachments at least this long go as multipart `follows` parts.
    package var multipartThreshold = 2048
    /// `_bulk_docs` requests are flushed when their estimated size exceeds this.
    package var bulkDocsMaxBytes = 5 << 20
    /// The pull asks for multipart answers only (`Accept: multipart/related`, as 1.x did),
    /// so a peer that prefers JSON (CouchDB 2+, our listener) answers multipart too.
    package var preferMultipart = false

    package init() {}
}

// MARK: - Database integration

extension CBLDatabase {
    /// A replication that pulls from `url` (not started).
    public func createPullReplication(_ url: URL) -> CBLReplication {
        CBLReplication(database: self, remote: url, pull: true)
    }

    /// A replication that pushes to `url` (not started).
    public func createPushReplication(_ url: URL) -> CBLReplication {
        CBLReplication(database: self, remote: url, pull: false)
    }

    /// The replications of this database that are running.
    public var allReplications: [CBLReplication] {
        ReplicationRegistry.shared.replications(of: self)
    }

    func registerReplication(_ replication: CBLReplication) {
        ReplicationRegistry.shared.add(replication, to: self)
    }

    func unregisterReplication(_ replication: CBLReplication) {
        ReplicationRegistry.shared.remove(replication, from: self)
    }

    /// Stops this database's replications and waits (bounded) for them to wind down.
    func stopReplications() {
        for replication in allReplications { replication.stopAndWait(timeout: 5) }
    }
}

/// Running replications by database.
final class ReplicationRegistry: Sendable {
    static let shared = ReplicationRegistry()
    private let running = Locked<[ObjectIdentifier: [CBLReplication]]>([:])

    func add(_ replication: CBLReplication, to db: CBLDatabase) {
        running.withLock { map in
            var list = map[ObjectIdentifier(db)] ?? []
            if !list.contains(where: { $0 === replication }) { list.append(replication) }
            map[ObjectIdentifier(db)] = list
        }
    }

    func remove(_ replication: CBLReplication, from db: CBLDatabase) {
        running.withLock { map in
            map[ObjectIdentifier(db)]?.removeAll { $0 === replication }
            if map[ObjectIdentifier(db)]?.isEmpty == true { map[ObjectIdentifier(db)] = nil }
        }
    }

    func replications(of db: CBLDatabase) -> [CBLReplication] {
        running.withLock { $0[ObjectIdentifier(db)] ?? [] }
    }
}

