import Foundation

/// What a replication's `authenticator` property holds (1.x's `id<CBLAuthenticator>`, whose
/// Swift name is `CBLAuthenticatorProtocol` because the class and the protocol share a name).
public protocol CBLAuthenticatorProtocol: AnyObject, Sendable {}

/// Factory of the authenticators 1.x offers for HTTP peers.
public final class CBLAuthenticator: NSObject, Sendable {
    /// HTTP Basic authentication with a name and password (sent with every request).
    public static func basicAuthenticator(withName name: String, password: String) -> CBLAuthenticatorProtocol {
        CBLPasswordAuthenticator(kind: .basic, username: name, password: password)
    }

    /// 1.x's Objective-C-era spelling of ``basicAuthenticator(withName:password:)``.
    public static func basicAuthenticatorWithName(_ name: String, password: String) -> CBLAuthenticatorProtocol {
        basicAuthenticator(withName: name, password: password)
    }

    /// Logs in once with `POST {db}/_session` (Sync Gateway; CouchDB's `POST /_session` is tried
    /// when the database-level endpoint is missing) and then sends the session cookie the server
    /// set, as 1.x's session-cookie authenticators did.
    public static func sessionCookieAuthenticator(withName name: String, password: String) -> CBLAuthenticatorProtocol {
        CBLPasswordAuthenticator(kind: .session, username: name, password: password)
    }
}

/// Name + password, used as HTTP Basic credentials or to log in for a session cookie.
final class CBLPasswordAuthenticator: NSObject, CBLAuthenticatorProtocol, Sendable {
    enum Kind: Sendable { case basic, session }
    let kind: Kind
    let username: String
    let password: String

    init(kind: Kind, username: String, password: String) {
        self.kind = kind
        self.username = username
        self.password = password
    }
}
