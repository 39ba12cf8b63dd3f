import Foundation
import XCTest
@testable import CouchbaseLite

/// `CBLAuthenticator.facebookAuthenticator(withToken:)` / `personaAuthenticator(withAssertion:)`
/// against a stand-in for Sync Gateway 1.x's `_facebook` / `_persona` endpoints on 127.0.0.1,
/// and `CBLReplication.clearAuthenticationStores()`.
final class TokenAuthenticatorTests: DatabaseTestCase {
    private func run(_ replication: CBLReplication, file: StaticString = #filePath, line: UInt = #line) {
        var tuning = replication.tuning
        tuning.requestRetryDelays = [.milliseconds(20)]
        tuning.offlineRetryDelay = .milliseconds(50)
        tuning.checkpointInterval = .zero
        replication.tuning = tuning
        replication.start()
        let deadline = Date().addingTimeInterval(20)
        while replication.running && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        XCTAssertFalse(replication.running, "replication did not finish", file: file, line: line)
    }

    private func loginRequests(_ gateway: StandInSyncGateway) -> [StandInSyncGateway.Request] {
        gateway.requests.filter { $0.method == "POST" && $0.path.hasPrefix("/db/_facebook") || $0.path.hasPrefix("/db/_persona") }
    }

    func testFacebookTokenLogsInAtDbFacebookAndUsesTheSessionCookie() throws {
        let gateway = try StandInSyncGateway(loginPath: "_facebook", expectedLogin: ["access_token": "EAAB-token-123"])
        defer { gateway.stop() }

        let pull = db.createPullReplication(gateway.url)
        pull.authenticator = CBLAuthenticator.facebookAuthenticator(withToken: "EAAB-token-123")
        run(pull)
        XCTAssertNil(pull.lastError)

        let requests = gateway.requests
        let login = try XCTUnwrap(requests.first)
        XCTAssertEqual(login.method, "POST")
        XCTAssertEqual(login.path, "/db/_facebook", "the login comes first, at the database's _facebook")
        XCTAssertEqual(login.headers["content-type"], "application/json")
        XCTAssertEqual(try JSONSerialization.jsonObject(with: login.body) as? [String: String], ["access_token": "EAAB-token-123"])
        XCTAssertGreaterThan(requests.count, 1)
        for later in requests.dropFirst() {
            XCTAssertTrue(later.headers["cookie"]?.contains("SyncGatewaySession=\(StandInSyncGateway.cookieValue)") == true,
                          "\(later.method) \(later.path) carries the session cookie")
        }

        // A wrong token: the gateway refuses the login, the replication stops with 401.
        let wrong = db.createPullReplication(gateway.url)
        wrong.authenticator = CBLAuthenticator.facebookAuthenticatorWithToken("stolen")
        run(wrong)
        XCTAssertEqual((wrong.lastError as NSError?)?.code, 401)
    }

    func testPersonaAssertionLogsInAtDbPersona() throws {
        let assertion = "eyJhbGciOiJSUzI1NiJ9.eyJwcmluY2lwYWwiOnsiZW1haWwiOiJhQGIuYyJ9fQ.sig~eyJhbGciOiJSUzI1NiJ9.eyJhdWQiOiJodHRwOi8vMTI3LjAuMC4xIn0.sig"
        let gateway = try StandInSyncGateway(loginPath: "_persona", expectedLogin: ["assertion": assertion])
        defer { gateway.stop() }
        let pull = db.createPullReplication(gateway.url)
        pull.authenticator = CBLAuthenticator.personaAuthenticator(withAssertion: assertion)
        run(pull)
        XCTAssertNil(pull.lastError)
        let login = try XCTUnwrap(gateway.requests.first)
        XCTAssertEqual("\(login.method) \(login.path)", "POST /db/_persona")
        XCTAssertEqual(try JSONSerialization.jsonObject(with: login.body) as? [String: String], ["assertion": assertion])
        _ = CBLAuthenticator.personaAuthenticatorWithAssertion(assertion)
    }

    func testClearAuthenticationStoresForgetsTheSessionCookie() throws {
        let gateway = try StandInSyncGateway(loginPath: "_facebook", expectedLogin: ["access_token": "tok"])
        defer { gateway.stop() }
        let pull = db.createPullReplication(gateway.url)
        pull.authenticator = CBLAuthenticator.facebookAuthenticator(withToken: "tok")
        run(pull)
        XCTAssertNil(pull.lastError)

        // The session cookie is kept: the next run needs no login.
        pull.authenticator = nil
        run(pull)
        XCTAssertNil(pull.lastError)
        XCTAssertEqual(loginRequests(gateway).count, 1)

        // Cleared: anonymous again, so the gateway says 401.
        try pull.clearAuthenticationStores()
        run(pull)
        XCTAssertEqual((pull.lastError as NSError?)?.code, 401)

        // A cookie the app set is cleared too.
        pull.setCookieNamed(StandInSyncGateway.cookieName, withValue: StandInSyncGateway.cookieValue)
        run(pull)
        XCTAssertNil(pull.lastError)
        try pull.clearAuthenticationStores()
        run(pull)
        XCTAssertEqual((pull.lastError as NSError?)?.code, 401)
    }
}
