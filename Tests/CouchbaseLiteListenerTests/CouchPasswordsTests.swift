import Crypto
import Foundation
import JSONCore
import XCTest
@testable import CouchbaseLiteListener

/// CouchDB's password hashes and `AuthSession` cookies, checked against what CouchDB 3.4.3 itself
/// wrote: `PUT /_users/org.couchdb.user:alice {"password":"s3cret!",…}` stored the salt and derived
/// key below; `POST /_session` as alice answered the cookie below under the server secret shown by
/// `GET /_node/_local/_config/chttpd_auth`.
final class CouchPasswordsTests: XCTestCase {
    private let salt = "1c1b066dee0a11bdc204679021c00a90"
    private let derivedKey = "d866a6605ef47ac533b2882fab6d6cae4c15638cc2bc049e90c2c9187b315add"
    private let secret = "5d5b8e6908f68d13c6cadf3b9416dfbb"
    private let cookie = "YWxpY2U6NkIxNDhCRjQ6iWd_xBhMiT-D8II-QnavQg4tlYGcB2wfRZYzJulgvWA"

    func testPBKDF2MatchesCouchDB34() throws {
        XCTAssertEqual(CouchPasswords.pbkdf2(password: "s3cret!", salt: salt, iterations: 600_000, prf: "sha256"), derivedKey)
        let stored: JSONObject = ["password_scheme": "pbkdf2", "pbkdf2_prf": "sha256", "salt": .string(salt),
                                  "iterations": 600_000, "derived_key": .string(derivedKey)]
        XCTAssertTrue(CouchPasswords.verify(password: "s3cret!", against: stored))
        XCTAssertFalse(CouchPasswords.verify(password: "s3cret?", against: stored))
        XCTAssertFalse(CouchPasswords.verify(password: "s3cret!", against: ["salt": .string(salt)]))
        XCTAssertNil(CouchPasswords.pbkdf2(password: "x", salt: "y", iterations: 1, prf: "md4"))
    }

    func testOlderSchemesStillVerify() {
        // CouchDB 1.x `simple`: password_sha = hex(SHA-1(password + salt)).
        let sha = CouchPasswords.hex(Array(Insecure.SHA1.hash(data: Array(("pw" + "abc").utf8))))
        XCTAssertTrue(CouchPasswords.verify(password: "pw", against: ["salt": "abc", "password_sha": .string(sha)]))
        // CouchDB 2.x/3.0 pbkdf2 without pbkdf2_prf: SHA-1, 20-byte keys.
        let key = CouchPasswords.pbkdf2(password: "pw", salt: "abc", iterations: 10, prf: "sha")!
        XCTAssertEqual(key.count, 40)
        XCTAssertTrue(CouchPasswords.verify(password: "pw", against: ["password_scheme": "pbkdf2", "salt": "abc",
                                                                       "iterations": 10, "derived_key": .string(key)]))
    }

    func testSavingAUserDocumentHashesItsPasswordAsCouchDBLaysItOut() throws {
        let doc = try JSON.object(Array(#"{"_id":"org.couchdb.user:bob","name":"bob","type":"user","roles":[],"password":"pw"}"#.utf8))
        let saved = CouchPasswords.hashingPassword(of: doc, iterations: 10)
        XCTAssertEqual(Array(saved.keys), ["password_scheme", "pbkdf2_prf", "salt", "iterations", "derived_key",
                                           "_id", "name", "type", "roles"])
        XCTAssertNil(saved["password"])
        XCTAssertEqual(saved["salt"]?.stringValue?.count, 32)
        XCTAssertTrue(CouchPasswords.verify(password: "pw", against: saved))
        XCTAssertNotEqual(CouchPasswords.hashingPassword(of: doc, iterations: 10)["salt"], saved["salt"], "a new salt each time")
    }

    func testAuthSessionCookieMatchesCouchDB34() throws {
        let (parsed, mac) = try XCTUnwrap(AuthSessionCookie.parse(cookie))
        XCTAssertEqual(parsed, AuthSessionCookie(name: "alice", timestamp: 0x6B148BF4))
        XCTAssertTrue(parsed.verify(mac: mac, secret: secret, salt: salt))
        XCTAssertEqual(parsed.value(secret: secret, salt: salt), cookie)
        // Another salt (a changed password) or secret: refused.
        XCTAssertFalse(parsed.verify(mac: mac, secret: secret, salt: "00" + salt.dropFirst(2)))
        XCTAssertFalse(parsed.verify(mac: mac, secret: "other", salt: salt))
        // Tampered or hostile values are refused, never a crash.
        for bad in ["", "%%%", "YWxpY2U", AuthSessionCookie.base64URL(Array("alice:zz:x".utf8)),
                    String(repeating: "A", count: 10_000)] {
            XCTAssertNil(AuthSessionCookie.parse(bad), bad)
        }
        var forged = Base64Bytes.decode(cookie.utf8, urlSafe: true)!
        forged[2] ^= 1   // "alice" → another name, same MAC
        let (other, otherMAC) = try XCTUnwrap(AuthSessionCookie.parse(AuthSessionCookie.base64URL(forged)))
        XCTAssertFalse(other.verify(mac: otherMAC, secret: secret, salt: salt))
    }

    func testConstantTimeComparison() {
        XCTAssertTrue(CouchPasswords.constantTimeEqual("abc", "abc"))
        XCTAssertFalse(CouchPasswords.constantTimeEqual("abc", "abd"))
        XCTAssertFalse(CouchPasswords.constantTimeEqual("abc", "abcd"))
    }

    /// The byte-level Base64 reader the authenticator uses agrees with Foundation on every
    /// length, with and without padding, in both alphabets, and refuses what is not Base64.
    func testBase64BytesAgreesWithFoundation() {
        var generator = SystemRandomNumberGenerator()
        for length in 0..<70 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let standard = Data(bytes).base64EncodedString()
            XCTAssertEqual(Base64Bytes.decode(standard.utf8, urlSafe: false), bytes, standard)
            let unpadded = standard.replacingOccurrences(of: "=", with: "")
            XCTAssertEqual(Base64Bytes.decode(unpadded.utf8, urlSafe: false), bytes, unpadded)
            let url = unpadded.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            XCTAssertEqual(Base64Bytes.decode(url.utf8, urlSafe: true), bytes, url)
            XCTAssertEqual(AuthSessionCookie.base64URL(bytes), url)
        }
        XCTAssertEqual(Base64Bytes.decode("Ym9iOnMzY3JldA==".utf8, urlSafe: false), Array("bob:s3cret".utf8))
        for bad in ["A", "AAAAA", "YW=x", "YQ===", "Y Q==", "YQ=", "%%%%", "ab-_"] {
            XCTAssertNil(Base64Bytes.decode(bad.utf8, urlSafe: false), bad)
        }
        XCTAssertNil(Base64Bytes.decode("ab+/".utf8, urlSafe: true))
    }

    /// Cookie expiry dates as CouchDB writes them (`Expires=Thu, 01-Jan-1970 00:00:00 GMT`).
    func testCookieDates() {
        XCTAssertEqual(ListenerAuthenticator.cookieDate(0), "Thu, 01-Jan-1970 00:00:00 GMT")
        XCTAssertEqual(ListenerAuthenticator.cookieDate(1_700_000_000), "Tue, 14-Nov-2023 22:13:20 GMT")
        XCTAssertEqual(ListenerAuthenticator.cookieDate(1_798_761_599), "Thu, 31-Dec-2026 23:59:59 GMT")
    }

    /// `Authorization` and `Cookie` headers as CouchDB reads them: the scheme in any case, spaces
    /// around cookie names and values ignored, the `_:_` pair meaning no credentials.
    func testCredentialHeaders() throws {
        XCTAssertEqual(ListenerAuthenticator.basicToken("Basic Ym9iOnMzY3JldA=="), "Ym9iOnMzY3JldA==")
        XCTAssertEqual(ListenerAuthenticator.basicToken("BASIC  Ym9i  "), "Ym9i")
        XCTAssertNil(ListenerAuthenticator.basicToken("Bearer Ym9i"))
        XCTAssertNil(ListenerAuthenticator.basicToken("Basic"))
        let pair = try XCTUnwrap(ListenerAuthenticator.basicCredentials("Ym9iOnMzOmNyZXQ="))
        XCTAssertEqual(pair.0, "bob")
        XCTAssertEqual(pair.1, "s3:cret", "the name ends at the first colon")
        XCTAssertNil(ListenerAuthenticator.basicCredentials("Xzpf"), "_:_ is no credentials")
        XCTAssertNil(ListenerAuthenticator.basicCredentials("Ym9i"), "no colon")
        XCTAssertNil(ListenerAuthenticator.basicCredentials("%%%%"))

        func request(_ cookie: String) -> RESTRequest {
            RESTRequest(method: "GET", segments: [], query: [:], headers: ["cookie": cookie], body: [])
        }
        XCTAssertEqual(ListenerAuthenticator.cookie(named: "AuthSession", in: request("a=1; AuthSession = xyz ;b=2")), "xyz")
        XCTAssertEqual(ListenerAuthenticator.cookie(named: "AuthSession", in: request("AuthSession=")), "")
        XCTAssertEqual(ListenerAuthenticator.cookie(named: "AuthSession", in: request("XAuthSession=1;AuthSession=é=2")), "é=2")
        XCTAssertNil(ListenerAuthenticator.cookie(named: "AuthSession", in: request("AuthSessionX=1; other")))
        XCTAssertNil(ListenerAuthenticator.cookie(named: "AuthSession", in: request("")))
    }
}
