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
        /// For a session cookie: the time it was made (seconds since 1970), and the refreshed
        /// cookie last made for it (one per second at most, however many requests send it).
        var cookieTimestamp: Int?
        var refreshed: (second: Int, header: String)?
    }

    /// What verified credentials are cached under: a SHA-256 of them (of the `Authorization`
    /// token, of a name and password, or of a cookie), never the credentials themselves.
    struct CacheKey: Hashable {
        let words: (UInt64, UInt64, UInt64, UInt64)

        init(_ kind: UInt8, _ first: Substring, _ second: Substring? = nil) {
            var hasher = SHA256()
            withUnsafeBytes(of: kind) { hasher.update(bufferPointer: $0) }
            var first = first
            first.withUTF8 { hasher.update(bufferPointer: UnsafeRawBufferPointer($0)) }
            if var second {
                // A NUL between the parts: no name and password run together like another pair.
                withUnsafeBytes(of: UInt8(0)) { hasher.update(bufferPointer: $0) }
                second.withUTF8 { hasher.update(bufferPointer: UnsafeRawBufferPointer($0)) }
            }
            words = hasher.finalize().withUnsafeBytes { raw in
                (raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self), raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self),
                 raw.loadUnaligned(fromByteOffset: 16, as: UInt64.self), raw.loadUnaligned(fromByteOffset: 24, as: UInt64.self))
            }
        }

        static func == (a: CacheKey, b: CacheKey) -> Bool {
            a.words.0 == b.words.0 && a.words.1 == b.words.1 && a.words.2 == b.words.2 && a.words.3 == b.words.3
        }

        func hash(into hasher: inout Hasher) { hasher.combine(words.0) }
    }

    private struct Failures {
        var count: Int
        var first: Date
    }

    let configuration: ListenerConfiguration
    private let manager: CBLManager
    private let lock = NSLock()
    private var passwords: [String: String]?
    private var verified: [CacheKey: Verified] = [:]
    private var failures: [String: Failures] = [:]
    private var checking: [CacheKey: DispatchGroup] = [:]
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
        lock.withLock { passwords != nil } || configuration.settings.hasAdminsSection
    }

    /// The user of a request. With `slowPathAllowed` false it answers only from the cache (no
    /// database read, no PBKDF2) and returns nil when it would have to do more: the caller then
    /// asks again on a worker thread.
    func authenticate(_ request: RESTRequest, slowPathAllowed: Bool) -> Result? {
        if let header = request.header("authorization"), let token = Self.basicToken(header) {
            // Credentials seen before are found by the token's digest, without decoding it.
            let key = CacheKey(1, token)
            let outcome: Outcome?
            if let hit = cachedUser(key, peer: request.peerAddress) {
                outcome = hit
            } else if let (name, password) = Self.basicCredentials(token) {
                outcome = checkPassword(name: name, password: password, peer: request.peerAddress,
                                        slowPathAllowed: slowPathAllowed, key: key)
            } else {
                outcome = .anonymous   // `_:_`, or not Basic credentials after all: as if none were sent
            }
            guard let outcome else { return nil }
            if case .user(var user) = outcome {
                user.authenticatedBy = "default"
                return Result(outcome: .user(user))
            }
            if case .anonymous = outcome, let cookie = Self.cookie(named: "AuthSession", in: request) {
                return checkCookie(cookie, slowPathAllowed: slowPathAllowed)
            }
            return Result(outcome: outcome)
        }
        if let cookie = Self.cookie(named: "AuthSession", in: request) {
            return checkCookie(cookie, slowPathAllowed: slowPathAllowed)
        }
        return Result(outcome: .anonymous)
    }

    /// The credentials of an `Authorization: Basic TOKEN` header (the scheme in any case), or nil.
    static func basicToken(_ header: String) -> Substring? {
        let utf8 = header.utf8
        guard utf8.count > 6, let space = utf8.firstIndex(of: UInt8(ascii: " ")),
              utf8[..<space].elementsEqual("basic".utf8, by: { $0 | 0x20 == $1 }) else { return nil }
        return Substring(trimmed(header.utf8[utf8.index(after: space)...]))
    }

    /// Basic credentials as CouchDB reads them: the name before the first `:`; `_:_` means no
    /// credentials (a client's way to log out); nil for those or a token that does not decode.
    static func basicCredentials(_ token: Substring) -> (String, String)? {
        guard let bytes = Base64Bytes.decode(token.utf8, urlSafe: false),
              let colon = bytes.firstIndex(of: UInt8(ascii: ":")),
              let name = String(validating: bytes[..<colon], as: UTF8.self),
              let password = String(validating: bytes[(colon + 1)...], as: UTF8.self) else { return nil }
        if name == "_" && password == "_" { return nil }
        return (name, password)
    }

    /// A cookie's value in the request's `Cookie` header(s).
    static func cookie(named name: String, in request: RESTRequest) -> Substring? {
        guard var cookies = request.header("cookie") else { return nil }
        // `name=value` pairs between `;`, spaces around them ignored, scanned as bytes.
        let found = cookies.withUTF8 { bytes -> Range<Int>? in
            func isSpace(_ i: Int) -> Bool { bytes[i] == 0x20 || bytes[i] == 0x09 }
            var start = 0
            while start < bytes.count {
                var end = start
                while end < bytes.count, bytes[end] != UInt8(ascii: ";") { end += 1 }
                var keyStart = start
                while keyStart < end, isSpace(keyStart) { keyStart += 1 }
                var equals = keyStart
                while equals < end, bytes[equals] != UInt8(ascii: "=") { equals += 1 }
                var keyEnd = equals
                while keyEnd > keyStart, isSpace(keyEnd - 1) { keyEnd -= 1 }
                if equals < end, UnsafeBufferPointer(rebasing: bytes[keyStart..<keyEnd]).elementsEqual(name.utf8) {
                    var valueStart = equals + 1, valueEnd = end
                    while valueStart < valueEnd, isSpace(valueStart) { valueStart += 1 }
                    while valueEnd > valueStart, isSpace(valueEnd - 1) { valueEnd -= 1 }
                    return valueStart..<valueEnd
                }
                start = end + 1
            }
            return nil
        }
        guard let found else { return nil }
        let utf8 = cookies.utf8
        let lower = utf8.index(utf8.startIndex, offsetBy: found.lowerBound)
        return cookies[lower..<utf8.index(lower, offsetBy: found.count)]
    }

    private static func trimmed(_ text: Substring.UTF8View) -> Substring.UTF8View {
        var text = text
        while let first = text.first, first == 0x20 || first == 0x09 { text.removeFirst() }
        while let last = text.last, last == 0x20 || last == 0x09 { text.removeLast() }
        return text
    }

    /// A cached user for `key` (nil when there is none), or the lockout refusal when the name
    /// has been locked out since (one lock, no allocation when nobody is locked out).
    private func cachedUser(_ key: CacheKey, peer: String?) -> Outcome? {
        let settings = configuration.settings
        let now = Date()
        return lock.withLock { () -> Outcome? in
            guard let entry = liveEntryLocked(key, now: now) else { return nil }
            if !failures.isEmpty, settings.lockoutMode == .enforce, let name = entry.user.name,
               let failed = failures[Self.lockKey(peer, name)], failed.count >= settings.lockoutThreshold,
               now.timeIntervalSince(failed.first) <= settings.lockoutLifetime {
                return .refused(Self.lockedOut)
            }
            return .user(entry.user)
        }
    }

    /// The cache entry of `key` when it is still good (this generation, not expired); the caller holds `lock`.
    private func liveEntryLocked(_ key: CacheKey, now: Date) -> Verified? {
        guard let entry = verified[key], entry.generation == generation, entry.expires > now else { return nil }
        return entry
    }

    private static func lockKey(_ peer: String?, _ name: String) -> String { (peer ?? "") + "\u{0}" + name }

    static let lockedOut = RESTError(403, "forbidden", "Account is temporarily locked due to multiple authentication failures")

    // MARK: Passwords

    /// Checks a name and password (Basic credentials or `POST /_session`); nil when the answer is
    /// not cached and `slowPathAllowed` is false. `key`: what the check is cached under (the Basic
    /// token's digest; by default the name and password's).
    func checkPassword(name: String, password: String, peer: String?, slowPathAllowed: Bool, key: CacheKey? = nil) -> Outcome? {
        let lockKey = Self.lockKey(peer, name)
        if isLockedOut(lockKey) { return .refused(Self.lockedOut) }
        let key = key ?? CacheKey(2, Substring(name), Substring(password))
        let now = Date()
        if let hit = lock.withLock({ () -> UserContext? in
            guard let entry = liveEntryLocked(key, now: now) else { return nil }
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
            return checkPassword(name: name, password: password, peer: peer, slowPathAllowed: true, key: key)
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
        remember(key, Verified(user: user, salt: credentials.salt, generation: startGeneration,
                               expires: now + configuration.settings.cacheLifetime))
        lock.withLock { _ = failures.removeValue(forKey: lockKey) }
        return .user(user)
    }

    static let incorrect = RESTError(401, "unauthorized", "Name or password is incorrect.")

    // MARK: Cookies

    /// Checks an `AuthSession` cookie: a malformed one is `400`; a valid signature within the
    /// timeout is the user (with a refreshed cookie once a tenth of the timeout has passed); any
    /// other is no user at all, as in CouchDB (the request goes on anonymously). A cookie checked
    /// before is found by its digest, without parsing it or computing its MAC again.
    private func checkCookie(_ value: Substring, slowPathAllowed: Bool) -> Result? {
        guard !value.isEmpty else { return Result(outcome: .anonymous) }
        let settings = configuration.settings
        let timeout = settings.sessionTimeout
        let now = Date()
        let seconds = Int(now.timeIntervalSince1970)
        let key = CacheKey(3, value)
        var entry = lock.withLock { liveEntryLocked(key, now: now) }
        if entry == nil {
            guard let (cookie, mac) = AuthSessionCookie.parse(value) else {
                return Result(outcome: .refused(RESTError(400, "bad_request", "Malformed AuthSession cookie. Please clear your cookies.")))
            }
            guard cookie.timestamp + timeout > seconds else { return Result(outcome: .anonymous) }
            guard slowPathAllowed else { return nil }
            let startGeneration = lock.withLock { generation }
            guard case .success(let credentials?) = lookUp(cookie.name),
                  cookie.verify(mac: mac, secret: configuration.cookieSecret(), salt: credentials.salt) else {
                return Result(outcome: .anonymous)
            }
            let made = Verified(user: UserContext(name: cookie.name, roles: credentials.roles, authenticatedBy: nil),
                                salt: credentials.salt, generation: startGeneration, expires: now + settings.cacheLifetime,
                                cookieTimestamp: cookie.timestamp)
            remember(key, made)
            entry = made
        }
        guard var entry, let timestamp = entry.cookieTimestamp, let name = entry.user.name else {
            return Result(outcome: .anonymous)
        }
        guard timestamp + timeout > seconds else { return Result(outcome: .anonymous) }
        entry.user.authenticatedBy = "cookie"
        var refreshed: String?
        // CouchDB sends a new cookie once less than 90% of the timeout is left (with every
        // answer until the client uses it: made once a second here).
        if timestamp + timeout - seconds < timeout * 9 / 10 {
            if let last = entry.refreshed, last.second == seconds {
                refreshed = last.header
            } else {
                let header = sessionCookieHeader(name: name, salt: entry.salt, now: seconds)
                refreshed = header
                lock.withLock { verified[key]?.refreshed = (seconds, header) }
            }
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
        let settings = configuration.settings
        let value = AuthSessionCookie(name: name, timestamp: now).value(secret: configuration.cookieSecret(), salt: salt)
        var header = "AuthSession=\(value); Version=1"
        if settings.allowPersistentCookies {
            let timeout = settings.sessionTimeout
            header += "; Expires=\(Self.cookieDate(now + timeout)); Max-Age=\(timeout)"
        }
        header += "; Path=/; HttpOnly"
        if let sameSite = settings.sameSite { header += "; SameSite=\(sameSite)" }
        return header
    }

    /// The `Set-Cookie` value that ends a session.
    static let endedSessionCookie = "AuthSession=; Version=1; Expires=Thu, 01-Jan-1970 00:00:00 GMT; Max-Age=0; Path=/; HttpOnly"

    /// `Thu, 01-Jan-1970 00:00:00 GMT`: a cookie's `Expires`, as CouchDB writes it.
    static func cookieDate(_ seconds: Int) -> String {
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday))-\(months[Int(parts.tm_mon)])-\(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
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

    private func remember(_ key: CacheKey, _ entry: Verified) {
        let limit = configuration.settings.cacheMaxObjects
        lock.withLock {
            guard entry.generation == generation else { return }
            if verified.count >= limit { verified.removeAll(keepingCapacity: true) }
            verified[key] = entry
        }
    }

    private func isLockedOut(_ key: String) -> Bool {
        let settings = configuration.settings
        guard settings.lockoutMode == .enforce else { return false }
        let threshold = settings.lockoutThreshold
        let lifetime = settings.lockoutLifetime
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
        let settings = configuration.settings
        guard settings.lockoutMode != .off else { return }
        let lifetime = settings.lockoutLifetime
        let limit = settings.lockoutMaxObjects
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
}
