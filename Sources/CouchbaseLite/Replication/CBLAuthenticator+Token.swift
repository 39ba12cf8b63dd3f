import Foundation
import JSONCore

/// Sync Gateway's token logins, as 1.x sends them (couchbase-lite-ios 1.4 `CBLAuthenticator.m`,
/// `CBLTokenAuthorizer.m`): one `POST {db}/<path>` with a JSON body before replicating; the
/// session cookie the gateway sets in reply is sent from then on.
extension CBLAuthenticator {
    /// Logs in to Sync Gateway with a Facebook access token: `POST {db}/_facebook`
    /// `{"access_token": token}`.
    public static func facebookAuthenticator(withToken token: String) -> CBLAuthenticatorProtocol {
        CBLTokenAuthenticator(loginPath: "_facebook", parameters: ["access_token": token])
    }

    /// Logs in to Sync Gateway with a Mozilla Persona assertion: `POST {db}/_persona`
    /// `{"assertion": assertion}`.
    public static func personaAuthenticator(withAssertion assertion: String) -> CBLAuthenticatorProtocol {
        CBLTokenAuthenticator(loginPath: "_persona", parameters: ["assertion": assertion])
    }

    /// 1.x's Objective-C-era spelling of ``facebookAuthenticator(withToken:)``.
    public static func facebookAuthenticatorWithToken(_ token: String) -> CBLAuthenticatorProtocol {
        facebookAuthenticator(withToken: token)
    }

    /// 1.x's Objective-C-era spelling of ``personaAuthenticator(withAssertion:)``.
    public static func personaAuthenticatorWithAssertion(_ assertion: String) -> CBLAuthenticatorProtocol {
        personaAuthenticator(withAssertion: assertion)
    }
}

/// A login by `POST {db}/<loginPath>` with JSON parameters (1.x `CBLTokenAuthorizer`).
final class CBLTokenAuthenticator: NSObject, CBLAuthenticatorProtocol, Sendable {
    /// The endpoint, relative to the database URL (`_facebook`, `_persona`).
    let loginPath: String
    /// The JSON body's members.
    let parameters: [String: String]

    init(loginPath: String, parameters: [String: String]) {
        self.loginPath = loginPath
        self.parameters = parameters
    }

    /// Posts the login; the response's `Set-Cookie` lands in the replication's cookie jar.
    func logIn(_ remote: RemoteDatabase) async throws {
        let body = try JSON.canonicalData(parameters)
        let response = try await remote.send(.POST, loginPath, body: .bytes(body), contentType: "application/json")
        guard response.status < 300 else { throw RemoteDatabase.error(response, "Login failed") }
    }

    public override var description: String { "CBLTokenAuthenticator[\(loginPath)]" }
}
