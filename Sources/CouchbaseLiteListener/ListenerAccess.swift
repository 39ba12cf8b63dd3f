import CouchbaseLite
import Foundation
import JSONCore

/// Who a request acts as, and what it may do in the database it names; decided by
/// ``ListenerAccessPolicy`` before the request's body is read, carried by the request.
struct RequestAccess: Sendable {
    var user: UserContext = .adminParty
    /// The `_security` of the database the request names (nil for server-level requests, a
    /// database that does not exist, or when nothing is enforced).
    var security: SecurityObject?
    /// A server admin, or an admin of the database named: may write design documents and `_security`.
    var isDatabaseAdmin = true
    /// False when the listener has no admins (CouchDB's "admin party"): nothing to enforce.
    var enforced = false

    /// The writer the database layer's validation sees (nil: unchecked, as before users existed).
    var requestUser: CBLRequestUser? {
        guard enforced else { return nil }
        return CBLRequestUser(name: user.name, roles: user.roles, securityObject: security?.json ?? .object(JSONObject()),
                              isDatabaseAdmin: isDatabaseAdmin)
    }
}

/// What the listener answers a request before its body is read: go on, or refuse.
enum AccessDecision: Sendable {
    /// Go on with this access; `setCookie`: a refreshed session cookie for the answer.
    case allow(RequestAccess, setCookie: String?)
    /// Answer this error (401, 403, 400 for a malformed cookie).
    case refuse(RESTError)

    /// The answer to send for a refusal.
    var refusal: RESTResponse? {
        guard case .refuse(var error) = self else { return nil }
        if error.status == 401, error.headers.isEmpty {
            error.headers = [("WWW-Authenticate", "Basic realm=\"CouchbaseLite\"")]
        }
        return .error(error)
    }
}

/// Authentication, authorization and read-only mode: the one place that decides whether a
/// request goes on. ``ListenerAccessMiddleware`` asks it for every HTTP request and every
/// WebSocket upgrade (``ChangesWebSocket``), with the request parsed once (path segments,
/// decoded IDs, query, headers), so a decision can depend on the database or document named.
///
/// The rules are CouchDB 3.4's: server-level endpoints other than `/`, `_up`, `_uuids`,
/// `_session` and `_replicate` are for server admins (`401 "You are not a server admin."`);
/// creating and deleting databases too; a database's members (its `_security`; CouchDB 3's
/// `admin_only` default when it has none) read and write its documents, non-members get `401`
/// (anonymous) or `403`; `_security`, `_compact`, `_view_cleanup`, `_purge` and `_revs_limit`
/// writes need a database admin; design documents are checked where they are saved (every
/// write path, see ``CBLRequestUser``). The authentication database (`_users`) follows
/// `couch_users_db`: system-database listings are for server admins, its design documents for
/// admins, and a user reads and writes only their own document.
struct ListenerAccessPolicy: Sendable {
    let state: ListenerState

    /// Credentials first (`401`), then what these credentials may do (`403`).
    func decide(_ request: RESTRequest) async -> AccessDecision {
        let authenticator = state.authenticator
        var checked = authenticator.authenticate(request, slowPathAllowed: false)
        if checked == nil {
            checked = await state.onWorker { authenticator.authenticate(request, slowPathAllowed: true) } ?? nil
        }
        guard let checked else { return .refuse(RESTError(503, "service_unavailable", "The listener is stopping")) }
        let hasAdmins = authenticator.hasAdmins
        var access = RequestAccess()
        switch checked.outcome {
        case .refused(let error):
            // Without admins the listener is open to all: wrong credentials or a stranger's
            // cookie change nothing (1.x's open listener).
            guard !hasAdmins else { return .refuse(error) }
            access.user = .adminParty
        case .anonymous:
            access.user = hasAdmins ? .anonymous : .adminParty
        case .user(var user):
            if !hasAdmins, !user.isServerAdmin { user.roles.append("_admin") }
            access.user = user
        }
        if state.readOnly, !Self.isReadOnlySafe(request) {
            return .refuse(RESTError(403, "forbidden", "The listener is read-only"))
        }
        guard hasAdmins else { return .allow(access, setCookie: checked.setCookie) }
        access.enforced = true
        if let refusal = await authorize(request, &access) { return .refuse(refusal) }
        return .allow(access, setCookie: checked.setCookie)
    }

    /// CouchDB's refusal for a server-admin endpoint (always `401`, named or not).
    static let notServerAdmin = RESTError(401, "unauthorized", "You are not a server admin.")

    /// The refusal for `request` by `access.user`, or nil; fills in the database's security.
    private func authorize(_ request: RESTRequest, _ access: inout RequestAccess) async -> RESTError? {
        let s = request.segments
        let method = request.method
        let user = access.user
        guard let first = s.first else { return nil }
        if first.hasPrefix("_") && !ListenerState.isSystemDatabase(first) {
            switch first {
            case "_session", "_up", "_uuids", "_utils", "_favicon.ico":
                return nil
            case "_replicate":
                // Any signed-in user; the replication then acts as them on local databases.
                return user.name == nil && !user.isServerAdmin
                    ? RESTError(401, "unauthorized", "You are not an authenticated user") : nil
            case "_all_dbs", "_dbs_info":
                if !state.configuration.settings.adminOnlyAllDbs { return nil }
                return user.isServerAdmin ? nil : Self.notServerAdmin
            default:
                return user.isServerAdmin ? nil : Self.notServerAdmin
            }
        }
        // A database.
        if s.count == 1, method == "PUT" || method == "DELETE" {
            return user.isServerAdmin ? nil : Self.notServerAdmin
        }
        guard let security = await state.security(ofDatabase: first) else {
            return nil   // no such database: the handler answers 404
        }
        access.security = security
        access.isDatabaseAdmin = user.isServerAdmin || security.isAdmin(user)
        if first == state.configuration.authenticationDatabase {
            if let refusal = usersDatabaseRefusal(request, access) { return refusal }
        }
        guard access.isDatabaseAdmin || security.isMember(user) else { return securityRefusal(user) }
        if !access.isDatabaseAdmin, Self.needsDatabaseAdmin(request) {
            return securityRefusal(user, "You are not a db or server admin.")
        }
        return nil
    }

    /// Database endpoints only its admins may use (beyond design documents, checked on save).
    static func needsDatabaseAdmin(_ request: RESTRequest) -> Bool {
        let s = request.segments
        guard s.count >= 2 else { return false }
        switch s[1] {
        case "_security", "_revs_limit", "_purged_infos_limit":
            return request.method != "GET" && request.method != "HEAD"
        case "_compact", "_view_cleanup", "_purge":
            return true
        default:
            return false
        }
    }

    /// `couch_users_db`'s rules for the authentication database, for a user who is not a
    /// server admin: no listings (`_all_docs`, `_changes`, views: server admins only), no design
    /// documents, and only their own user document.
    private func usersDatabaseRefusal(_ request: RESTRequest, _ access: RequestAccess) -> RESTError? {
        let user = access.user
        let s = request.segments
        guard s.count >= 2 else { return nil }
        if s[1] == "_security", request.method != "GET", request.method != "HEAD",
           !state.configuration.settings.usersDatabaseSecurityEditable {
            return RESTError(403, "forbidden", "You can't edit the security object of the user database.")
        }
        guard !user.isServerAdmin else { return nil }
        let member = access.isDatabaseAdmin || access.security?.isMember(user) == true
        if ["_all_docs", "_changes", "_design_docs", "_local_docs", "_bulk_get", "_revs_diff", "_find", "_explain", "_index"].contains(s[1]) {
            return Self.notServerAdmin
        }
        guard member else { return nil }   // the member check refuses it
        if s[1].hasPrefix("_design/") || (s[1] == "_design" && s.count > 2) {
            if request.method == "GET" || request.method == "HEAD" {
                return access.isDatabaseAdmin ? nil
                    : RESTError(403, "forbidden", "Only administrators can view design docs in the users database.")
            }
            return access.isDatabaseAdmin ? nil : RESTError.missing
        }
        guard !access.isDatabaseAdmin, !s[1].hasPrefix("_") else { return nil }
        // Someone else's user document: not found (an anonymous user may create one).
        let own = user.name.map { s[1] == "org.couchdb.user:" + $0 } ?? false
        if own { return nil }
        if user.name == nil, request.method == "PUT" || request.method == "POST" { return nil }
        return RESTError.missing
    }

    /// Methods and endpoints that never write (what `--readonly` lets through).
    static func isReadOnlySafe(_ request: RESTRequest) -> Bool {
        if request.method == "GET" || request.method == "HEAD" { return true }
        guard request.method == "POST" else { return false }
        let s = request.segments
        if s == ["_session"] { return true }
        guard s.count >= 2 else { return false }
        if ["_all_docs", "_design_docs", "_local_docs", "_changes", "_revs_diff", "_bulk_get"].contains(s[1]) && s.count == 2 { return true }
        return s.count == 5 && s[1] == "_design" && s[3] == "_view"
    }
}
