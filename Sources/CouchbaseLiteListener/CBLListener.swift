import CouchbaseLite
import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOPosix

/// An HTTP server exposing a manager's databases through CouchDB's REST API, as 1.x's
/// `CBLListener` did: apps and replicators (PouchDB, CouchDB clients, another Couchbase Lite)
/// can read, write, replicate and query over HTTP.
///
/// ```swift
/// let listener = CBLListener(manager: manager, port: 5984)
/// listener.setPasswords(["admin": "secret"])
/// try listener.start()
/// print(listener.url!)   // http://127.0.0.1:5984/
/// ```
///
/// Safe to use from any thread. Settings should be made before `start()`; `passwords`,
/// `readOnly` and `maxBodySize` can also be changed while running.
// @unchecked because its mutable state (run task, port) is behind `lock`; settings live in the lock-guarded ListenerState.
public final class CBLListener: @unchecked Sendable {
    /// The manager whose databases are served.
    public let manager: CBLManager
    private let requestedPort: UInt16
    let state: ListenerState

    private let lock = NSLock()
    private var runTask: Task<Void, Never>?
    private var boundPort: UInt16?
    private var tlsIdentity: TLSIdentity?

    /// A listener for `manager` on `port` (0 picks a free port; `port` then reports it once started).
    public init(manager: CBLManager, port: UInt16) {
        self.manager = manager
        self.requestedPort = port
        self.state = ListenerState(manager: manager)
    }

    deinit {
        runTask?.cancel()
    }

    /// The interface to listen on: `0.0.0.0` (all, the 1.x behaviour) by default; `127.0.0.1`
    /// keeps the server private to this machine. Set before `start()`.
    public var bindAddress: String {
        get { state.withLock { $0.bindAddress } }
        set { state.withLock { $0.bindAddress = newValue } }
    }

    /// The TCP port: the bound one while running (useful with port 0), else the requested one.
    public var port: UInt16 {
        lock.lock(); defer { lock.unlock() }
        return boundPort ?? requestedPort
    }

    /// The server's root URL while running (`http://127.0.0.1:PORT/` when bound to all
    /// interfaces; `https://…` with an SSL identity).
    public var url: Foundation.URL? {
        lock.lock(); defer { lock.unlock() }
        guard let boundPort else { return nil }
        var host = state.withLock { $0.bindAddress }
        if host == "0.0.0.0" || host == "::" || host.isEmpty { host = "127.0.0.1" }
        if host.contains(":") { host = "[\(host)]" }
        return Foundation.URL(string: "\(tlsIdentity == nil ? "http" : "https")://\(host):\(boundPort)/")
    }

    // MARK: TLS

    /// Serves HTTPS with a self-signed certificate made for `label` (1.x's
    /// `setAnonymousSSLIdentityWithLabel:`, as Swift 4+ imports it). The identity is kept in the
    /// manager directory (`.listener-tls/`), so the same label gives the same certificate across
    /// restarts and clients can pin it (``sslCertificatePEM``). Takes effect at the next `start()`.
    public func setAnonymousSSLIdentity(withLabel label: String) throws {
        let identity = try TLSIdentity.anonymous(label: label, directory: manager.directory)
        lock.lock(); defer { lock.unlock() }
        tlsIdentity = identity
    }

    /// Serves HTTPS with this certificate chain (leaf first) and private key, both PEM; nil
    /// arguments return to plain HTTP. Takes effect at the next `start()`.
    public func setSSLIdentity(certificateChainPEM: String?, privateKeyPEM: String?) throws {
        var identity: TLSIdentity?
        if let certificateChainPEM, let privateKeyPEM {
            let candidate = TLSIdentity(certificateChainPEM: certificateChainPEM, privateKeyPEM: privateKeyPEM)
            do {
                _ = try candidate.serverConfiguration()
            } catch {
                throw CBLError(400, "Invalid SSL identity: \(error)")
            }
            identity = candidate
        }
        lock.lock(); defer { lock.unlock() }
        tlsIdentity = identity
    }

    /// The PEM certificate chain served over HTTPS, or nil for plain HTTP.
    public var sslCertificatePEM: String? {
        lock.lock(); defer { lock.unlock() }
        return tlsIdentity?.certificateChainPEM
    }

    /// SHA-1 of the served certificate (DER), for clients that pin it (1.x `SSLIdentityDigest`).
    public var sslIdentityDigest: Data? {
        lock.lock(); defer { lock.unlock() }
        return tlsIdentity?.leafDigest
    }

    /// When true every request that would change something is refused with 403.
    public var readOnly: Bool {
        get { state.readOnly }
        set { state.withLock { $0.readOnly = newValue } }
    }

    /// When true, sequences (`update_seq`, `last_seq`, each change's `seq`) are written as 1.x's
    /// LiteServ wrote them, as JSON numbers; by default they are CouchDB 2+'s opaque strings
    /// (`"12-cbl"`, the number before the `-` being the 1.x sequence), which clients written for
    /// CouchDB 2 and 3 expect. Both forms are accepted in `since` either way.
    public var integerSequences: Bool {
        get { state.integerSequences }
        set { state.withLock { $0.integerSequences = newValue } }
    }

    /// The largest JSON (or other collected) request body accepted (bytes); larger ones get 413.
    /// Attachment and `multipart/related` document uploads stream to disk and are not limited
    /// (a multipart body's JSON part is). Default 64 MiB.
    public var maxBodySize: Int {
        get { state.maxBodySize }
        set { state.withLock { $0.maxBodySize = max(0, newValue) } }
    }

    /// User names and passwords for HTTP Basic authentication; nil (default, or after setting
    /// an empty dictionary) = no authentication.
    public var passwords: [String: String]? { state.passwords }

    /// Requires HTTP Basic authentication (or a `_session` cookie) with one of these
    /// credentials on every request; nil turns authentication off.
    public func setPasswords(_ passwords: [String: String]?) {
        // As in 1.x, an empty dictionary means no authentication.
        state.authenticator.plainAdmins = (passwords?.isEmpty ?? true) ? nil : passwords
    }

    /// Starts listening. Returns once the socket is bound (so `port` and `url` are valid);
    /// throws if it cannot be bound. Calling it while running does nothing.
    public func start() throws {
        lock.lock()
        defer { lock.unlock() }
        guard runTask == nil else { return }
        let started = StartSignal()
        let host = state.withLock { $0.bindAddress }
        var logger = Logger(label: "CouchbaseLite.Listener")
        logger.logLevel = .critical
        let router = RESTRouter(state: state)
        // A CouchDB client relies on validate_doc_update: without a compiler, refuse writes it guards.
        manager.refusesWritesWithUnrunnableValidations = true
        let configuration = ApplicationConfiguration(
            address: .hostname(host, port: Int(requestedPort)),
            serverName: "CouchbaseLite/\(CBLVersion()) (Swift; Linux)")
        let onRunning: @Sendable (any Channel) async -> Void = { channel in
            started.finish(.success(UInt16(channel.localAddress?.port ?? 0)))
        }
        // HTTP/1 with the WebSocket upgrade of `_changes?feed=websocket` (ChangesWebSocket).
        // NotModifiedContentLength: CouchDB's `Content-Length: 0` on 304 answers (HTTP connections only).
        let http1 = HTTP1Channel.Configuration(additionalChannelHandlers: [NotModifiedContentLength()])
        let http: HTTPServerBuilder = .http1WebSocketUpgrade(webSocketRouter: ChangesWebSocket.UpgradeResponder(router: router),
                                                             configuration: .init(http1: http1))
        let app: Application<ListenerApplicationResponder>
        if let tlsIdentity {
            do {
                app = Application(responder: ListenerApplicationResponder(router: router),
                                  server: try .tls(http, tlsConfiguration: tlsIdentity.serverConfiguration()),
                                  configuration: configuration, onServerRunning: onRunning, logger: logger)
            } catch {
                throw CBLError(500, "Cannot use the SSL identity: \(error)")
            }
        } else {
            app = Application(responder: ListenerApplicationResponder(router: router), server: http,
                              configuration: configuration, onServerRunning: onRunning, logger: logger)
        }
        state.beginServing()
        runTask = Task.detached {
            do {
                try await app.run()
                started.finish(.failure(CBLListenerError("The listener stopped before it started")))
            } catch {
                started.finish(.failure(error))
            }
        }
        switch started.wait(timeout: 30) {
        case .success(let port):
            boundPort = port
        case .failure(let error):
            runTask?.cancel()
            runTask = nil
            state.endServing()
            state.releaseWorkers()
            throw CBLError(500, "Cannot start the listener on \(host):\(requestedPort): \(error)")
        case nil:
            runTask?.cancel()
            runTask = nil
            state.endServing()
            state.releaseWorkers()
            throw CBLError(500, "The listener did not start within 30 seconds")
        }
    }

    /// Stops listening: waiting changes feeds are answered, connections closed. Returns when the
    /// port is free again (at most a few seconds).
    public func stop() {
        lock.lock()
        let task = runTask
        runTask = nil
        boundPort = nil
        lock.unlock()
        guard let task else { return }
        state.replicationTasks.stopAll()
        state.endServing()
        task.cancel()
        task.waitBlocking(timeout: 10)
        state.releaseWorkers()
    }
}

struct CBLListenerError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A one-shot result a synchronous caller waits for.
// @unchecked because `result` is only touched under `lock`; the semaphore is thread-safe.
private final class StartSignal: @unchecked Sendable {
    private let lock = NSLock()
    private let semaphore = DispatchSemaphore(value: 0)
    private var result: Result<UInt16, Error>?

    func finish(_ value: Result<UInt16, Error>) {
        lock.lock()
        let first = result == nil
        if first { result = value }
        lock.unlock()
        if first { semaphore.signal() }
    }

    func wait(timeout: TimeInterval) -> Result<UInt16, Error>? {
        guard semaphore.wait(timeout: .now() + timeout) == .success else { return nil }
        lock.lock(); defer { lock.unlock() }
        return result
    }
}

/// Settings and session state shared by the listener and its request handlers.
// @unchecked because `settings` and the session table are only touched under its lock.
final class ListenerState: @unchecked Sendable {
    struct Settings {
        var bindAddress = "0.0.0.0"
        var readOnly = false
        var maxBodySize = 64 * 1024 * 1024
        var integerSequences = false
        var serving = false
        var waiters: [ObjectIdentifier: ChangeSignal] = [:]
        /// Threads for the blocking database work of requests (never Dispatch's or Swift's
        /// shared pools, which app code or clients in the same process may saturate).
        var pool: NIOThreadPool?
        var bonjourName: String?
        var bonjourType: String?
        var txtRecord: [String: String]?
    }

    /// How many requests may do database work at the same time.
    static let workerThreads = 8

    let manager: CBLManager
    /// Replications started with `POST /_replicate`.
    let replicationTasks = ReplicationTasks()
    let serverUUID = UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
    /// Microseconds since 1970 when the listener object was made (CouchDB's `instance_start_time`).
    let instanceStartTime = String(Int64(Date().timeIntervalSince1970 * 1_000_000))
    /// The CouchDB-style configuration (`_node/_local/_config`), persisted beside the databases.
    let configuration: ListenerConfiguration
    /// Who requests are (Basic credentials, session cookies), with its caches.
    let authenticator: ListenerAuthenticator
    /// `_uuids` and new document IDs (`[uuids] algorithm`).
    let uuids = ListenerUUIDs()
    private let lock = NSLock()
    private let securityLock = NSLock()
    private var securityCache: [String: SecurityObject] = [:]
    private var preparedDatabases: [String: CBLDatabase] = [:]
    private var settings = Settings()

    init(manager: CBLManager) {
        self.manager = manager
        let configuration = ListenerConfiguration(file: ListenerConfiguration.file(in: manager.directory))
        self.configuration = configuration
        self.authenticator = ListenerAuthenticator(configuration: configuration, manager: manager)
    }

    func withLock<R>(_ body: (inout Settings) throws -> R) rethrows -> R {
        lock.lock(); defer { lock.unlock() }
        return try body(&settings)
    }

    var readOnly: Bool { withLock { $0.readOnly } }
    var maxBodySize: Int { withLock { $0.maxBodySize } }
    /// The largest request body accepted now: `[chttpd] max_http_request_size` when set, else
    /// ``CBLListener/maxBodySize``.
    var requestSizeLimit: Int { configuration.settings.maxHTTPRequestSize ?? maxBodySize }
    /// True when sequences are written as 1.x's numbers (see ``ListenerState/sequence(_:)``).
    var integerSequences: Bool { withLock { $0.integerSequences } }
    /// The 1.x passwords (server admins), kept by the authenticator.
    var passwords: [String: String]? { authenticator.plainAdmins }

    /// `http://<Host>/` + escaped path segments, for `Location` headers (as CouchDB sends them).
    func absoluteURL(_ request: RESTRequest, path: [String]) -> String {
        let allowed = CharacterSet.urlPathAllowed.subtracting(CharacterSet(charactersIn: "/?#"))
        let escaped = path.map { $0.addingPercentEncoding(withAllowedCharacters: allowed) ?? $0 }
        let relative = "/" + escaped.joined(separator: "/")
        // A proxy's `X-Forwarded-Host` / `X-Forwarded-Proto` name the address clients use (chttpd's absolute_uri).
        guard let host = request.header(configuration.settings.forwardedHostHeader) ?? request.header("host"), !host.isEmpty,
              host.allSatisfy({ $0.isLetter || $0.isNumber || ".-:[]".contains($0) }) else { return relative }
        let scheme = request.header("x-forwarded-ssl") == "on" || request.header("x-forwarded-proto") == "https" ? "https" : "http"
        return "\(scheme)://\(host)\(relative)"
    }

    // MARK: Security

    /// CouchDB's system databases, served beside the 1.x ones (their names start with `_`).
    static func isSystemDatabase(_ name: String) -> Bool {
        CBLManager.systemDatabaseNames.contains(name)
    }

    /// The `_security` of a database (CouchDB 3's `admin_only` default when it never had one),
    /// or nil when there is no such database. Cached; read on a worker thread the first time.
    func security(ofDatabase name: String) async -> SecurityObject? {
        if let cached = securityLock.withLock({ securityCache[name] }) { return cached }
        return await onWorker { self.loadSecurity(ofDatabase: name) } ?? nil
    }

    /// ``security(ofDatabase:)`` on the calling thread.
    func loadSecurity(ofDatabase name: String) -> SecurityObject? {
        if let cached = securityLock.withLock({ securityCache[name] }) { return cached }
        guard manager.databaseExistsNamed(name), let db = try? manager.existingDatabaseNamed(name) else { return nil }
        let security: SecurityObject
        if let stored = try? db.storedSecurityObject() {
            security = SecurityObject(stored)
        } else {
            security = configuration.value("couchdb", "default_security") == "everyone" ? .everyone : .adminOnly
        }
        securityLock.withLock { securityCache[name] = security }
        return security
    }

    /// Stores a database's `_security` and makes it the one requests see.
    func setSecurity(_ security: SecurityObject, of db: CBLDatabase) throws {
        try db.setStoredSecurityObject(security.json)
        securityLock.withLock { securityCache[db.name] = security }
    }

    /// Forgets every database's security (the default or the authentication database changed).
    func forgetAllSecurity() {
        securityLock.withLock { securityCache.removeAll() }
    }

    /// True when ``markPrepared(_:)`` was called for this database object.
    func isPrepared(_ db: CBLDatabase) -> Bool {
        securityLock.withLock { preparedDatabases[db.name] === db }
    }

    /// True the first time it is called for this database object (see
    /// `RESTRouter.prepareAuthenticationDatabase`).
    func markPrepared(_ db: CBLDatabase) -> Bool {
        securityLock.withLock {
            if preparedDatabases[db.name] === db { return false }
            preparedDatabases[db.name] = db
            return true
        }
    }

    /// Forgets what is known of a database that was deleted or created.
    func forgetDatabase(_ name: String) {
        securityLock.withLock { _ = securityCache.removeValue(forKey: name) }
        if name == configuration.authenticationDatabase { authenticator.invalidate() }
    }

    // MARK: Waiting feeds

    func beginServing() {
        let pool = NIOThreadPool(numberOfThreads: Self.workerThreads)
        pool.start()
        withLock {
            $0.serving = true
            $0.pool = pool
        }
    }

    /// Shuts the worker threads down once the server has stopped.
    func releaseWorkers() {
        let pool = withLock { s -> NIOThreadPool? in
            defer { s.pool = nil }
            return s.pool
        }
        pool?.shutdownGracefully { _ in }
    }

    /// Runs blocking work on the listener's worker threads; nil when the listener is stopped.
    func onWorker<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T? {
        guard let pool = withLock({ $0.pool }) else { return nil }
        return try? await pool.runIfActive(work)
    }

    /// Stops accepting waits and wakes every waiting changes feed.
    func endServing() {
        let waiters = withLock { s -> [ChangeSignal] in
            s.serving = false
            defer { s.waiters.removeAll() }
            return Array(s.waiters.values)
        }
        for waiter in waiters { waiter.fire(stopping: true) }
    }

    /// Wakes every waiting feed (they re-check their database), e.g. after a database is deleted.
    func wakeAll() {
        let waiters = withLock { Array($0.waiters.values) }
        for waiter in waiters { waiter.fire() }
    }

    /// Registers a waiting feed; false when the listener is stopping.
    func register(_ signal: ChangeSignal) -> Bool {
        withLock { s in
            guard s.serving else { return false }
            s.waiters[ObjectIdentifier(signal)] = signal
            return true
        }
    }

    func unregister(_ signal: ChangeSignal) {
        withLock { _ = $0.waiters.removeValue(forKey: ObjectIdentifier(signal)) }
    }
}
