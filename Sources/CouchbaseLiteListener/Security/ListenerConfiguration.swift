import CouchbaseLite
import Foundation
import JSONCore

/// The listener's CouchDB-style configuration: sections of string keys and string values, as
/// `GET/PUT/DELETE /_node/_local/_config/SECTION/KEY` reads and writes them.
///
/// Values set with persistence (the default) are written to `.listener-config.json` in the
/// manager's directory, beside the databases, and read again when a listener starts there;
/// `X-Couch-Persist: false` changes only the running listener. The `admins` section holds
/// server administrators, whose passwords are hashed as CouchDB hashes them
/// (`-pbkdf2:sha256-KEY,SALT,ITERATIONS`) before they are kept.
// @unchecked because `sections`, `persisted` and `generation` are only touched under `lock`.
final class ListenerConfiguration: @unchecked Sendable {
    private let lock = NSLock()
    private var sections: [String: [String: String]] = [:]
    private var persisted: [String: [String: String]] = [:]
    private var generation = 0
    private var cachedSettings: (generation: Int, settings: Settings)?
    private let file: URL?

    /// The file the persisted sections live in, or nil for a listener without one.
    static func file(in directory: String) -> URL {
        URL(fileURLWithPath: directory).appendingPathComponent(".listener-config.json")
    }

    /// A configuration read from `file` (empty when there is none or it does not parse).
    init(file: URL?) {
        self.file = file
        guard let file, let data = try? Data(contentsOf: file),
              case .object(let top)? = try? JSON.value(Array(data)) else { return }
        for (section, value) in top {
            guard case .object(let keys) = value else { continue }
            var entries: [String: String] = [:]
            for (key, v) in keys { if let s = v.stringValue { entries[key] = s } }
            persisted[section] = entries
        }
        sections = persisted
    }

    /// Counts every change, so caches built from the configuration know when to drop.
    var changeCount: Int { lock.withLock { generation } }

    /// The settings requests read, parsed once per change of the configuration: a request reads
    /// them with one lock instead of a lookup (and a parse) per setting.
    var settings: Settings {
        lock.withLock {
            if let cachedSettings, cachedSettings.generation == generation { return cachedSettings.settings }
            let made = Settings(sections)
            cachedSettings = (generation, made)
            return made
        }
    }

    /// The value of `key` in `section`, if set.
    func value(_ section: String, _ key: String) -> String? {
        lock.withLock { sections[section]?[key] }
    }

    /// The keys and values of `section` (empty when it has none).
    func section(_ name: String) -> [String: String] {
        lock.withLock { sections[name] ?? [:] }
    }

    /// Every section.
    func all() -> [String: [String: String]] {
        lock.withLock { sections }
    }

    /// Sets (or with nil, deletes) a value; returns the previous one. `persist` writes the
    /// persisted sections to the file (an error there leaves the running value set).
    @discardableResult
    func set(_ section: String, _ key: String, to value: String?, persist: Bool = true) throws -> String? {
        let (previous, snapshot) = lock.withLock { () -> (String?, [String: [String: String]]?) in
            let previous = sections[section]?[key]
            sections[section, default: [:]][key] = value
            if sections[section]?.isEmpty == true { sections[section] = nil }
            generation += 1
            guard persist, file != nil else { return (previous, nil) }
            persisted[section, default: [:]][key] = value
            if persisted[section]?.isEmpty == true { persisted[section] = nil }
            return (previous, persisted)
        }
        if let snapshot, let file { try Self.write(snapshot, to: file) }
        return previous
    }

    private static func write(_ sections: [String: [String: String]], to file: URL) throws {
        var top = JSONObject()
        for (section, keys) in sections.sorted(by: { $0.key < $1.key }) {
            var object = JSONObject()
            for (key, value) in keys.sorted(by: { $0.key < $1.key }) { object[key] = .string(value) }
            top[section] = .object(object)
        }
        let temporary = file.appendingPathExtension("tmp")
        do {
            try Data(JSON.data(.object(top), sortedKeys: true)).write(to: temporary)
            // Readable by the owner only: it holds the cookie secret and admins' hashes.
            try? FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: temporary.path)
            guard rename(temporary.path, file.path) == 0 else {
                throw CBLError(500, String(cString: strerror(errno)))
            }
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            throw CBLError(500, "Cannot write the listener configuration \(file.path): \(error.localizedDescription)")
        }
    }

    // MARK: Settings the listener honours

    /// `[chttpd_auth] KEY`, falling back to `[couch_httpd_auth] KEY` (CouchDB 3 reads both).
    func authSetting(_ key: String) -> String? {
        lock.withLock { Self.authSetting(key, in: sections) }
    }

    static func authSetting(_ key: String, in sections: [String: [String: String]]) -> String? {
        sections["chttpd_auth"]?[key] ?? sections["couch_httpd_auth"]?[key]
    }

    /// A whole-number setting's text read, or `defaultValue` when unset or not a number.
    static func integer(_ text: String?, default defaultValue: Int) -> Int {
        integer(text) ?? defaultValue
    }

    /// A whole-number setting's text read, nil when unset or not a number.
    static func integer(_ text: String?) -> Int? {
        text.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }
    }

    /// A `true`/`false` setting's text read, or `defaultValue` when unset or neither.
    static func bool(_ text: String?, default defaultValue: Bool) -> Bool {
        switch text?.trimmingCharacters(in: .whitespaces).lowercased() {
        case "true": return true
        case "false": return false
        default: return defaultValue
        }
    }

    /// The database user documents live in (`[chttpd_auth] authentication_db`, `_users`).
    var authenticationDatabase: String { settings.authenticationDatabase }

    /// Seconds an `AuthSession` cookie stays valid after it was made or refreshed (`timeout`, 600).
    var sessionTimeout: Int { settings.sessionTimeout }

    /// PBKDF2 iterations for new password hashes (`iterations`, CouchDB 3.4's 600000).
    var passwordIterations: Int {
        let n = authSetting("iterations").flatMap { Int($0) } ?? CouchPasswords.defaultIterations
        return min(max(n, 1), 1_000_000_000)
    }

    /// The PRF for new password hashes (`pbkdf2_prf`, `sha256`).
    var passwordPRF: String { authSetting("pbkdf2_prf") ?? CouchPasswords.defaultPRF }

    /// The secret `AuthSession` cookies are signed with: `[chttpd_auth] secret`, made (and
    /// persisted) the first time one is needed, as CouchDB does.
    func cookieSecret() -> String {
        if let secret = authSetting("secret"), !secret.isEmpty { return secret }
        let made = CouchPasswords.newSalt()
        lock.withLock {
            if sections["chttpd_auth"]?["secret"] == nil { sections["chttpd_auth", default: [:]]["secret"] = made }
        }
        let secret = value("chttpd_auth", "secret") ?? made
        if secret == made { try? set("chttpd_auth", "secret", to: made) }
        return secret
    }

    // MARK: Server admins

    /// Hashes an admin password as CouchDB keeps it in `[admins]`; a value that is already a
    /// hash (`-pbkdf2…` or `-hashed-…`) is kept as it is.
    func hashedAdminPassword(_ value: String) -> String {
        if value.hasPrefix("-pbkdf2") || value.hasPrefix("-hashed-") { return value }
        let salt = CouchPasswords.newSalt()
        let prf = passwordPRF
        let iterations = passwordIterations
        guard let key = CouchPasswords.pbkdf2(password: value, salt: salt, iterations: iterations, prf: prf) else {
            return value
        }
        return "-pbkdf2:\(prf)-\(key),\(salt),\(iterations)"
    }

    /// The credentials members of an `[admins]` entry (`password_scheme`, `derived_key`, `salt`,
    /// `iterations`, `pbkdf2_prf`), as a user document holds them; nil when it is not a hash.
    static func adminCredentials(_ value: String) -> JSONObject? {
        var rest: Substring
        var prf = "sha"
        if value.hasPrefix("-pbkdf2-") {
            rest = value.dropFirst("-pbkdf2-".count)
        } else if value.hasPrefix("-pbkdf2:"), let dash = value.dropFirst(8).firstIndex(of: "-") {
            prf = String(value[value.index(value.startIndex, offsetBy: 8)..<dash])
            rest = value[value.index(after: dash)...]
        } else if value.hasPrefix("-hashed-") {
            let parts = value.dropFirst("-hashed-".count).split(separator: ",", omittingEmptySubsequences: false)
            guard parts.count == 2 else { return nil }
            return ["password_scheme": "simple", "password_sha": .string(String(parts[0])), "salt": .string(String(parts[1]))]
        } else {
            return nil
        }
        let parts = rest.split(separator: ",", omittingEmptySubsequences: false)
        guard parts.count == 3, let iterations = Int(parts[2]) else { return nil }
        return ["password_scheme": "pbkdf2", "pbkdf2_prf": .string(prf), "derived_key": .string(String(parts[0])),
                "salt": .string(String(parts[1])), "iterations": .int(Int64(iterations))]
    }
}

extension ListenerConfiguration {
    /// The settings read on every request, parsed from the sections once per change (see
    /// ``ListenerConfiguration/settings``). Defaults are CouchDB 3.4's.
    struct Settings: Sendable {
        /// CouchDB's `[chttpd_auth_lockout] mode`: refuse locked names, only log them, or neither.
        enum LockoutMode: Sendable { case enforce, warn, off }

        /// `[chttpd_auth] authentication_db` (`_users`).
        var authenticationDatabase = "_users"
        /// `[chttpd_auth] timeout`: seconds a session cookie lives (600).
        var sessionTimeout = 600
        /// `[chttpd_auth] allow_persistent_cookies` (true): cookies with `Expires`/`Max-Age`.
        var allowPersistentCookies = true
        /// `[chttpd_auth] same_site` as the cookie attribute spells it (`Strict`, `Lax`, `None`), if set.
        var sameSite: String?
        /// True when the `[admins]` section names a server admin.
        var hasAdminsSection = false
        /// `[chttpd_auth_cache] max_lifetime` (600000 ms) and `max_objects` (10000).
        var cacheLifetime: TimeInterval = 600
        var cacheMaxObjects = 10_000
        /// `[chttpd_auth_lockout] mode` (`enforce`), `threshold` (5), `max_lifetime` (300000 ms),
        /// `max_objects` (10000).
        var lockoutMode = LockoutMode.enforce
        var lockoutThreshold = 5
        var lockoutLifetime: TimeInterval = 300
        var lockoutMaxObjects = 10_000
        /// `[chttpd] admin_only_all_dbs` (true).
        var adminOnlyAllDbs = true
        /// `[couchdb] users_db_security_editable` (false).
        var usersDatabaseSecurityEditable = false
        /// `[chttpd] allow_jsonp` (false).
        var allowJSONP = false
        /// `[chttpd] decode_plus_to_space`: `+` in a URL path is a space. CouchDB 3.4 says true;
        /// unset, the listener keeps 1.x's `+` (a 1.x client's unescaped `+` stays one).
        var decodePlusToSpace = false
        /// `[chttpd] max_http_request_size`: the largest request body, in bytes (unset: the
        /// listener's ``CBLListener/maxBodySize``).
        var maxHTTPRequestSize: Int?
        /// `[couchdb] max_document_size`: the largest document body (JSON, attachments aside), in
        /// bytes (unset: no limit, as 1.x).
        var maxDocumentSize: Int?
        /// `[uuids] algorithm` (`random`, `sequential`, `utc_random`, `utc_id`) and `utc_id_suffix`;
        /// nil when unset: `_uuids` answers random ones and new documents get 1.x's IDs.
        var uuidAlgorithm: UUIDAlgorithm?
        var utcIDSuffix = ""
        /// `[chttpd] x_forwarded_host`: the header naming the host clients used (`X-Forwarded-Host`),
        /// for `Location` headers.
        var forwardedHostHeader = "x-forwarded-host"
        /// `[attachments] compression_level` (8; 0 turns it off) and `compressible_types` ("text/*,
        /// application/javascript, application/json, application/xml"): attachments of those types
        /// that arrive unencoded are stored gzip-encoded.
        var attachmentCompression = AttachmentCompression()

        /// CouchDB's `[uuids] algorithm` values.
        enum UUIDAlgorithm: String, Sendable { case random, sequential, utcRandom = "utc_random", utcID = "utc_id" }

        init() {}

        init(_ sections: [String: [String: String]]) {
            func auth(_ key: String) -> String? { ListenerConfiguration.authSetting(key, in: sections) }
            authenticationDatabase = auth("authentication_db") ?? "_users"
            sessionTimeout = auth("timeout").flatMap { Int($0) } ?? 600
            allowPersistentCookies = ListenerConfiguration.bool(sections["chttpd_auth"]?["allow_persistent_cookies"], default: true)
            if let value = auth("same_site")?.lowercased(), ["strict", "lax", "none"].contains(value) {
                sameSite = value.prefix(1).uppercased() + value.dropFirst()
            }
            hasAdminsSection = !(sections["admins"]?.isEmpty ?? true)
            let cache = sections["chttpd_auth_cache"] ?? [:]
            cacheLifetime = TimeInterval(ListenerConfiguration.integer(cache["max_lifetime"], default: 600_000)) / 1000
            cacheMaxObjects = max(ListenerConfiguration.integer(cache["max_objects"], default: 10_000), 1)
            let lockout = sections["chttpd_auth_lockout"] ?? [:]
            switch lockout["mode"] ?? "enforce" {
            case "enforce": lockoutMode = .enforce
            case "off": lockoutMode = .off
            default: lockoutMode = .warn
            }
            lockoutThreshold = ListenerConfiguration.integer(lockout["threshold"], default: 5)
            lockoutLifetime = TimeInterval(ListenerConfiguration.integer(lockout["max_lifetime"], default: 300_000)) / 1000
            lockoutMaxObjects = max(ListenerConfiguration.integer(lockout["max_objects"], default: 10_000), 1)
            adminOnlyAllDbs = ListenerConfiguration.bool(sections["chttpd"]?["admin_only_all_dbs"], default: true)
            usersDatabaseSecurityEditable = ListenerConfiguration.bool(sections["couchdb"]?["users_db_security_editable"], default: false)
            allowJSONP = ListenerConfiguration.bool(sections["chttpd"]?["allow_jsonp"], default: false)
            decodePlusToSpace = ListenerConfiguration.bool(sections["chttpd"]?["decode_plus_to_space"], default: false)
            maxHTTPRequestSize = ListenerConfiguration.integer(sections["chttpd"]?["max_http_request_size"]).map { max($0, 0) }
            maxDocumentSize = ListenerConfiguration.integer(sections["couchdb"]?["max_document_size"]).map { max($0, 0) }
            uuidAlgorithm = (sections["uuids"]?["algorithm"]?.trimmingCharacters(in: .whitespaces))
                .flatMap(UUIDAlgorithm.init(rawValue:))
            utcIDSuffix = sections["uuids"]?["utc_id_suffix"] ?? ""
            attachmentCompression = AttachmentCompression(level: sections["attachments"]?["compression_level"],
                                                          compressibleTypes: sections["attachments"]?["compressible_types"])
            if let header = sections["chttpd"]?["x_forwarded_host"]?.trimmingCharacters(in: .whitespaces), !header.isEmpty {
                forwardedHostHeader = header.lowercased()
            }
        }
    }
}
