import CouchbaseLite
import Foundation

/// What the listener answers a request before its body is read: go on, or refuse.
enum AccessDecision: Sendable, Equatable {
    /// Go on, as this user (nil: no passwords are set, or logging in through `POST /_session`).
    case allow(user: String?)
    /// `401`: the listener has passwords and the request names no valid credentials.
    case unauthenticated
    /// `403`: the credentials are fine but may not do this (the listener is read-only).
    case forbidden(reason: String)

    /// The answer to send for a refusal.
    var refusal: RESTResponse? {
        switch self {
        case .allow:
            return nil
        case .unauthenticated:
            var error = RESTError(401, "unauthorized", "You are not authorized to access this db.")
            error.headers = [("WWW-Authenticate", "Basic realm=\"CouchbaseLite\"")]
            return .error(error)
        case .forbidden(let reason):
            return .error(RESTError(403, "forbidden", reason))
        }
    }
}

/// Authentication, authorization and read-only mode: the one place that decides whether a
/// request goes on. ``ListenerAccessMiddleware`` asks it for every HTTP request and every
/// WebSocket upgrade (``ChangesWebSocket``), with the request parsed once (path segments,
/// decoded IDs, query, headers), so a decision can depend on the database or document named.
struct ListenerAccessPolicy: Sendable {
    let state: ListenerState

    /// Credentials first (`401`), then what these credentials may do (`403`); one look at the
    /// listener's settings.
    func decide(_ request: RESTRequest) -> AccessDecision {
        state.withLock { settings -> AccessDecision in
            let user = ListenerState.authenticatedUser(request, settings)
            // Logging in is the one thing allowed without credentials.
            if user == nil, settings.passwords != nil, !(request.segments == ["_session"] && request.method == "POST") {
                return .unauthenticated
            }
            if settings.readOnly, !Self.isReadOnlySafe(request) {
                return .forbidden(reason: "The listener is read-only")
            }
            return .allow(user: user)
        }
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
