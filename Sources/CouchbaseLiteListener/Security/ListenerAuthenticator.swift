import CouchbaseLite
import Crypto
import Foundation
import JSONCore

/// Who a request is: HTTP Basic credentials or an `AuthSession` cookie checked against the server
/// admins (the listener's passwords and the `[admins]` configuration section) and the user
/// documents of the authentication database (`_users`), as CouchDB's `chttpd_auth` does.
///
/// - Checks that succeeded are cached (keyed by a SHA-256 of the credentials, never the
///   credentials themselves), so PBKDF2 with CouchDB's 600000 iterations runs once per user and
///   password, not per request; the cache is dropped when a user document or the admins change,
///   and entries expire after `[chttpd_auth_cache] max_lifetime` (600 s).
/// - Repeated failures for one name from one address lock that name out for a while
///   (`[chttpd_auth_lockout]`: `mode = enforce`, `threshold = 5`, `max_lifetime = 300000` ms), as
///   CouchDB 3.4 does: a locked name is refused (`403`) before its password is looked at.
/// - Secrets are compared in constant time; nothing secret is logged.
// @unchecked because its caches and counters are only touched under `lock`.
final class ListenerAuthenticator: @unchecked Sendable {
    /// What the credentials of a request come to.
    enum Outcome: Sendable {
        /// No credentials (or CouchDB's `_:_` "log out" pair, or a cookie that is not valid now).
        case anonymous
        case user(UserContext)
        /// The credentials are wrong (`401`), malformed (`400`) or locked out (`403`).
        case refused(RESTError)
    }

    /// The outcome, and a refreshed `AuthSession` cookie to send back, if any.
    struct Result: Sendable {
        var outcome: Outcome
        var setCookie: String?
    }

    /// A user's credentials as stored: an admin's plain password (the 1.x `CBLListener`
    /// passwords), or a hash (`[admins]` entry or user document).
    private struct Credentials {
        enum Secret {
            case plain(String)
            case hashed(JSONObject)
        }
        var secret: Secret
        var roles: [String]
        /// What sessions are signed with besides the server secret: a new password ends them.
        var salt: String
    }

    private struct Verified {
        var user: UserContext
        var salt: String
        var generation: Int
        var expires: Date
    }

    private struct Failures {
        var count: Int
        var first: Date
    }

    let configuration: ListenerConfiguration
    private let manager: CBLManager
    private let lock = NSLock()
    private var passwords: [String: String]?
    private var verified: [String: Verified] = [:]
    private var failures: [String: Failures] = [:]
    private var checking: [String: DispatchGroup] = [:]
    private var generation = 0
    private var observed: (database: CBLDatabase, token: CBLListenerToken)?

    init(configuration: ListenerConfiguration, manager: CBLManager) {
        self.configuration = configuration
        self.manager = manager
    }

    /// Called with the authentication database the first time a user is looked up in it.
    var readyAuthenticationDatabase: (@Sendable (CBLDatabase) -> Void)? {
        get { lock.withLock { ready } }
        set { lock.withLock { ready = newValue } }
    }
    private var ready: (@Sendable (CBLDatabase) -> Void)?

    /// Server admins by plain password (1.x `CBLListener.setPasswords`, `cbl serve
    /// --credentials`); nil for none. Setting them drops the cache.
    var plainAdmins: [String: String]? {
        get { lock.withLock { passwords } }
        set {
            lock.withLock {
                passwords = newValue
                generation += 1
                verified.removeAll(keepingCapacity: true)
            }
        }
    }

    // MARK: Requests

    /// True when the listener has a server admin: otherwise everyone is one (admin party).
    var hasAdmins: Bool {
        plainAdmins != nil || !configuration.section("admins").isEmpty
    }

    /// The user of a request. With `slowPathAllowed` false it answers only from the cache (no
    /// database read, no PBKDF2) and returns nil when it would have to do more: the caller then
    /// asks again on a worker thread.
    func authenticate(_ request: RESTRequest, slowPathAllowed: Bool) -> Result? {
        if let (name, password) = Self.basicCredentials(request) {
            guard let outcome = checkPassword(name: name, password: password, peer: request.peerAddress,
                                              slowPathAllowed: slowPathAllowed) else { return nil }
            if case .user(var user) = outcome {
                user.authenticatedBy = "default"
                return Result(outcome: .user(user))
            }
            return Result(outcome: outcome)
        }
        if let cookie = Self.cookie(named: "AuthSession", in: request) {
            return checkCookie(cookie, slowPathAllowed: slowPathAllowed)
        }
        return Result(outcome: .anonymous)
    }

    /// `Authorization: Basic …` as CouchDB reads it: the name before the first `:`; `_:_` means
    /// no credentials (a client's way to log out).
    static func basicCredentials(_ request: RESTRequest) -> (String, String)? {
        guard let header = request.header("authorization") else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "basic",
              let data = Data(base64Encoded: parts[1].trimmingCharacters(in: .whitespaces)),
              let text = String(data: data, encoding: .utf8), let colon = text.firstIndex(of: ":") else { return nil }
        let name = String(text[..<colon]), password = String(text[text.index(after: colon)...])
        if name == "_" && password == "_" { return nil }
        return (name, password)
    }

    static func cookie(named name: String, in request: RESTRequest) -> String? {
        guard let cookies = request.header("cookie") else { return nil }
        for cookie in cookies.split(separator: ";") {
            let kv = cookie.split(separator: "=", maxSplits: 1)
            if kv.count == 2, kv[0].trimmingCharacters(in: .whitespaces) == name {
                return kv[1].trimmingCharacters(in: .whitespaces)
            }
        }
        return nil
    }

    // MARK: Passwords

    /// Checks a name and password (Basic credentials or `POST /_session`); nil when the answer is
    /// not cached and `slowPathAllowed` is false.
    func checkPassword(name: String, password: String, peer: String?, slowPathAllowed: Bool) -> Outcome? {
        let lockKey = (peer ?? "") + "\u{0}" + name
        if isLockedOut(lockKey) {
            return .refused(RESTError(403, "forbidden", "Account is temporarily locked due to multiple authentication failures"))
        }
        let key = Self.digest("basic", name, password)
        let now = Date()
        if let hit = lock.withLock({ () -> UserContext? in
            guard let entry = verified[key], entry.generation == generation, entry.expires > now else { return nil }
            return entry.user
        }) {
            return .user(hit)
        }
        guard slowPathAllowed else { return nil }
        // One check at a time per credentials: a burst of clients with the same ones (a restart,
        // a replicator's parallel connections) waits for the first PBKDF2 instead of each running it.
        let (group, waited) = lock.withLock { () -> (DispatchGroup, Bool) in
            if let running = checking[key] { return (running, true) }
            let group = DispatchGroup()
            group.enter()
            checking[key] = group
            return (group, false)
        }
        if waited {
            group.wait()
            return checkPassword(name: name, password: password, peer: peer, slowPathAllowed: true)
        }
        defer {
            lock.withLock { _ = checking.removeValue(forKey: key) }
            group.leave()
        }
        let startGeneration = lock.withLock { generation }
        let credentials: Credentials
        switch lookUp(name) {
        case .success(let found?):
            credentials = found
        case .success(nil):
            recordFailure(lockKey)
            return .refused(Self.incorrect)
        case .failure(let error):
            return .refused(error)
        }
        let matches: Bool
        switch credentials.secret {
        case .plain(let expected): matches = CouchPasswords.constantTimeEqual(expected, password)
        case .hashed(let stored): matches = CouchPasswords.verify(password: password, against: stored)
        }
        guard matches else {
            recordFailure(lockKey)
            return .refused(Self.incorrect)
        }
        let user = UserContext(name: name, roles: credentials.roles, authenticatedBy: nil)
        remember(key, Verified(user: user, salt: credentials.salt, generation: startGeneration, expires: now + cacheLifetime))
        lock.withLock { _ = failures.removeValue(forKey: lockKey) }
        return .user(user)
    }

    static let incorrect = RESTError(401, "unauthorized", "Name or password is incorrect.")

    // MARK: Cookies

    /// Checks an `AuthSession` cookie: a malformed one is `400`; a valid signature within the
    /// timeout is the user (with a refreshed cookie once a tenth of the timeout has passed); any
    /// other is no user at all, as in CouchDB (the request goes on anonymously).
    private func checkCookie(_ value: String, slowPathAllowed: Bool) -> Result? {
        guard !value.isEmpty else { return Result(outcome: .anonymous) }
        guard let (cookie, mac) = AuthSessionCookie.parse(value) else {
            return Result(outcome: .refused(RESTError(400, "bad_request", "Malformed AuthSession cookie. Please clear your cookies.")))
        }
        let now = Int(Date().timeIntervalSince1970)
        let timeout = configuration.sessionTimeout
        guard cookie.timestamp + timeout > now else { return Result(outcome: .anonymous) }
        let key = Self.digest("cookie", value, "")
        let cached = lock.withLock { () -> Verified? in
            guard let entry = verified[key], entry.generation == generation, entry.expires > Date() else { return nil }
            return entry
        }
        var entry: Verified
        if let cached {
            entry = cached
        } else {
            guard slowPathAllowed else { return nil }
            let startGeneration = lock.withLock { generation }
            guard case .success(let credentials?) = lookUp(cookie.name),
                  cookie.verify(mac: mac, secret: configuration.cookieSecret(), salt: credentials.salt) else {
                return Result(outcome: .anonymous)
            }
            entry = Verified(user: UserContext(name: cookie.name, roles: credentials.roles, authenticatedBy: nil),
                             salt: credentials.salt, generation: startGeneration, expires: Date() + cacheLifetime)
            remember(key, entry)
        }
        entry.user.authenticatedBy = "cookie"
        var refreshed: String?
        // CouchDB sends a new cookie once less than 90% of the timeout is left.
        if cookie.timestamp + timeout - now < timeout * 9 / 10 {
            refreshed = sessionCookieHeader(name: cookie.name, salt: entry.salt, now: now)
        }
        return Result(outcome: .user(entry.user), setCookie: refreshed)
    }

    /// `POST /_session`: checks the name and password (blocking) and makes the session cookie.
    func logIn(name: String, password: String, peer: String?) -> (Outcome, setCookie: String?) {
        let outcome = checkPassword(name: name, password: password, peer: peer, slowPathAllowed: true) ?? .refused(Self.incorrect)
        guard case .user(let user) = outcome, case .success(let credentials?) = lookUp(name) else { return (outcome, nil) }
        return (.user(user), sessionCookieHeader(name: name, salt: credentials.salt, now: Int(Date().timeIntervalSince1970)))
    }

    /// The `Set-Cookie` value of a session for `name` made at `now`.
    func sessionCookieHeader(name: String, salt: String, now: Int) -> String {
        let value = AuthSessionCookie(name: name, timestamp: now).value(secret: configuration.cookieSecret(), salt: salt)
        var header = "AuthSession=\(value); Version=1"
        if configuration.bool("chttpd_auth", "allow_persistent_cookies", default: true) {
            let timeout = configuration.sessionTimeout
            header += "; Expires=\(Self.cookieDate(Date(timeIntervalSince1970: TimeInterval(now + timeout)))); Max-Age=\(timeout)"
        }
        header += "; Path=/; HttpOnly"
        if let sameSite = configuration.authSetting("same_site"), ["strict", "lax", "none"].contains(sameSite.lowercased()) {
            header += "; SameSite=\(sameSite.prefix(1).uppercased() + sameSite.dropFirst().lowercased())"
        }
        return header
    }

    /// The `Set-Cookie` value that ends a session.
    static let endedSessionCookie = "AuthSession=; Version=1; Expires=Thu, 01-Jan-1970 00:00:00 GMT; Max-Age=0; Path=/; HttpOnly"

    private static func cookieDate(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd-MMM-yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }

    // MARK: Looking users up

    /// A user's credentials: a server admin's (the listener's passwords, then `[admins]`),
    /// else the user document's; nil when there is no such user; a failure when the user
    /// document cannot be used (it is in conflict).
    private func lookUp(_ name: String) -> Swift.Result<Credentials?, RESTError> {
        if let password = plainAdmins?[name] {
            // A salt that changes with the password, so its sessions end when it does.
            let salt = CouchPasswords.hex(SHA256.hash(data: Array("\(configuration.cookieSecret()):\(name):\(password)".utf8)).prefix(16))
            return .success(Credentials(secret: .plain(password), roles: ["_admin"], salt: salt))
        }
        if let entry = configuration.value("admins", name), let stored = ListenerConfiguration.adminCredentials(entry),
           let salt = stored["salt"]?.stringValue {
            return .success(Credentials(secret: .hashed(stored), roles: ["_admin"], salt: salt))
        }
        let dbName = configuration.authenticationDatabase
        guard manager.databaseExistsNamed(dbName), let db = try? manager.existingDatabaseNamed(dbName) else {
            return .success(nil)
        }
        observe(db)
        readyAuthenticationDatabase?(db)
        guard let document = db.existingDocument(withID: "org.couchdb.user:" + name),
              let revision = document.currentRevision, !revision.isDeletion,
              let properties = revision.properties else { return .success(nil) }
        if let conflicts = try? document.getConflictingRevisions(), conflicts.count > 1 {
            return .failure(RESTError(401, "unauthorized",
                                      "User document conflicts must be resolved before the document is used for authentication purposes."))
        }
        guard let body = try? JSONObject(foundation: properties), body["name"]?.stringValue == name,
              let salt = body["salt"]?.stringValue else { return .success(nil) }
        let roles = body["roles"]?.arrayValue?.compactMap(\.stringValue) ?? []
        return .success(Credentials(secret: .hashed(body), roles: roles, salt: salt))
    }

    /// Watches the authentication database, so a changed user document drops the cache.
    private func observe(_ db: CBLDatabase) {
        let current = lock.withLock { observed?.database }
        guard current !== db else { return }
        let token = db.addChangeListener { [weak self] changes in
            guard changes.contains(where: { $0.documentID.hasPrefix("org.couchdb.user:") }) else { return }
            self?.invalidate()
        }
        let previous = lock.withLock { () -> (CBLDatabase, CBLListenerToken)? in
            defer {
                // Another database object (the database was deleted and made again): forget
                // what was checked against the old one.
                if observed != nil { generation += 1 }
                observed = (db, token)
            }
            return observed
        }
        if let previous { previous.0.removeChangeListener(previous.1) }
    }

    /// Forgets every checked credential (a user document, the admins or the authentication
    /// database changed).
    func invalidate() {
        lock.withLock {
            generation += 1
            verified.removeAll(keepingCapacity: true)
        }
    }

    // MARK: Cache and lockout

    private var cacheLifetime: TimeInterval {
        TimeInterval(configuration.integer("chttpd_auth_cache", "max_lifetime", default: 600_000)) / 1000
    }

    private func remember(_ key: String, _ entry: Verified) {
        let limit = max(configuration.integer("chttpd_auth_cache", "max_objects", default: 10_000), 1)
        lock.withLock {
            guard entry.generation == generation else { return }
            if verified.count >= limit { verified.removeAll(keepingCapacity: true) }
            verified[key] = entry
        }
    }

    private func isLockedOut(_ key: String) -> Bool {
        guard configuration.value("chttpd_auth_lockout", "mode") ?? "enforce" == "enforce" else { return false }
        let threshold = configuration.integer("chttpd_auth_lockout", "threshold", default: 5)
        let lifetime = TimeInterval(configuration.integer("chttpd_auth_lockout", "max_lifetime", default: 300_000)) / 1000
        return lock.withLock {
            guard let entry = failures[key] else { return false }
            if Date().timeIntervalSince(entry.first) > lifetime {
                failures[key] = nil
                return false
            }
            return entry.count >= threshold
        }
    }

    private func recordFailure(_ key: String) {
        guard configuration.value("chttpd_auth_lockout", "mode") ?? "enforce" != "off" else { return }
        let lifetime = TimeInterval(configuration.integer("chttpd_auth_lockout", "max_lifetime", default: 300_000)) / 1000
        let limit = max(configuration.integer("chttpd_auth_lockout", "max_objects", default: 10_000), 1)
        let now = Date()
        lock.withLock {
            if failures.count >= limit {
                failures = failures.filter { now.timeIntervalSince($0.value.first) <= lifetime }
                if failures.count >= limit { failures.removeAll() }
            }
            if var entry = failures[key], now.timeIntervalSince(entry.first) <= lifetime {
                entry.count += 1
                failures[key] = entry
            } else {
                failures[key] = Failures(count: 1, first: now)
            }
        }
    }

    /// The cache key of some credentials: SHA-256 of their parts (the secret itself is never kept).
    private static func digest(_ kind: String, _ a: String, _ b: String) -> String {
        var hasher = SHA256()
        hasher.update(data: Array(kind.utf8))
        hasher.update(data: [0])
        hasher.update(data: Array(a.utf8))
        hasher.update(data: [0])
        hasher.update(data: Array(b.utf8))
        return CouchPasswords.hex(hasher.finalize())
    }
}
