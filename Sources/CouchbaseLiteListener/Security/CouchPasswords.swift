import Crypto
import _CryptoExtras
import Foundation
import JSONCore

/// CouchDB's password hashes (`couch_passwords`), as CouchDB 3.4 stores them in `_users` documents
/// and its `[admins]` section: PBKDF2 over the password with the salt's text as salt, the derived
/// key in lowercase hex; and 1.x-era `simple` (`password_sha`: SHA-1 of password + salt).
enum CouchPasswords {
    /// CouchDB 3.4's defaults (`[chttpd_auth] iterations = 600000`, `pbkdf2_prf = sha256`).
    static let defaultIterations = 600_000
    static let defaultPRF = "sha256"

    /// The PRFs CouchDB accepts for `pbkdf2_prf`, and the derived key's length for each (the
    /// hash's output size; CouchDB's `sha` keys are 20 bytes).
    private static func prf(_ name: String) -> (KDF.Insecure.PBKDF2.HashFunction, Int)? {
        switch name {
        case "sha": return (.insecureSHA1, 20)
        case "sha224": return (.insecureSHA224, 28)
        case "sha256": return (.sha256, 32)
        case "sha384": return (.sha384, 48)
        case "sha512": return (.sha512, 64)
        default: return nil
        }
    }

    /// PBKDF2 of `password` with `salt` (its UTF-8 text, as CouchDB uses it), lowercase hex; nil
    /// for an unknown PRF or a non-positive iteration count.
    static func pbkdf2(password: String, salt: String, iterations: Int, prf name: String) -> String? {
        guard iterations > 0, let (function, length) = prf(name),
              let key = try? KDF.Insecure.PBKDF2.deriveKey(from: Array(password.utf8), salt: Array(salt.utf8), using: function,
                                                           outputByteCount: length, unsafeUncheckedRounds: iterations)
        else { return nil }
        return key.withUnsafeBytes { hex($0) }
    }

    /// A new random salt as CouchDB makes one: 16 random bytes, lowercase hex.
    static func newSalt() -> String {
        var generator = SystemRandomNumberGenerator()
        return hex((0..<16).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    /// The members a password becomes in a user document (CouchDB writes them first, in this
    /// order): `password_scheme`, `pbkdf2_prf`, `salt`, `iterations`, `derived_key`.
    static func hashedMembers(password: String, iterations: Int = defaultIterations, prf: String = defaultPRF,
                              salt: String = newSalt()) -> JSONObject? {
        guard let key = pbkdf2(password: password, salt: salt, iterations: iterations, prf: prf) else { return nil }
        return ["password_scheme": "pbkdf2", "pbkdf2_prf": .string(prf), "salt": .string(salt),
                "iterations": .int(Int64(iterations)), "derived_key": .string(key)]
    }

    /// A user document with its `password` replaced by the hashed members (the rest after them,
    /// in their order), as CouchDB's `_users` saves it; the document unchanged when it has none.
    static func hashingPassword(of document: JSONObject, iterations: Int = defaultIterations, prf: String = defaultPRF) -> JSONObject {
        guard let password = document["password"]?.stringValue,
              let hashed = hashedMembers(password: password, iterations: iterations, prf: prf) else { return document }
        var out = hashed
        for (key, value) in document where key != "password" && hashed[key] == nil { out[key] = value }
        return out
    }

    /// True when `password` is the one a user document's (or admin entry's) hash was made from.
    /// The comparison takes the same time wherever the hashes differ.
    static func verify(password: String, against credentials: JSONObject) -> Bool {
        guard let salt = credentials["salt"]?.stringValue else { return false }
        switch credentials["password_scheme"]?.stringValue ?? "simple" {
        case "pbkdf2":
            guard let expected = credentials["derived_key"]?.stringValue,
                  let iterations = credentials["iterations"]?.intValue,
                  let actual = pbkdf2(password: password, salt: salt, iterations: iterations,
                                      prf: credentials["pbkdf2_prf"]?.stringValue ?? "sha") else { return false }
            return constantTimeEqual(actual, expected.lowercased())
        case "simple":
            guard let expected = credentials["password_sha"]?.stringValue else { return false }
            let actual = hex(Array(Insecure.SHA1.hash(data: Array((password + salt).utf8))))
            return constantTimeEqual(actual, expected.lowercased())
        default:
            return false
        }
    }

    /// Equal strings, compared without an early exit (length differences aside, which a hash's
    /// length does not leak).
    static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        guard x.count == y.count else { return false }
        var difference: UInt8 = 0
        for i in 0..<x.count { difference |= x[i] ^ y[i] }
        return difference == 0
    }

    static func hex(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// CouchDB's `AuthSession` cookie (`couch_httpd_auth`): base64url (no padding) of
/// `name:TIMESTAMP_HEX:` followed by the HMAC of `name:TIMESTAMP_HEX`, keyed with the server secret
/// followed by the user's salt — so changing a password (a new salt) ends its sessions.
struct AuthSessionCookie: Equatable {
    let name: String
    /// Seconds since 1970 when the session was made or last refreshed.
    let timestamp: Int

    /// The cookie's value (`hash_algorithms` `sha256`, CouchDB 3.4's first).
    func value(secret: String, salt: String) -> String {
        let data = "\(name):\(String(timestamp, radix: 16, uppercase: true))"
        let mac = HMAC<SHA256>.authenticationCode(for: Array(data.utf8), using: SymmetricKey(data: Array((secret + salt).utf8)))
        return Self.base64URL(Array(data.utf8) + [UInt8(ascii: ":")] + Array(mac))
    }

    /// Reads a cookie value: the name and timestamp it claims, and its MAC (nil when malformed).
    static func parse(_ value: String) -> (cookie: AuthSessionCookie, mac: [UInt8])? { parse(Substring(value)) }

    /// Reads a cookie value: the name and timestamp it claims, and its MAC (nil when malformed).
    static func parse(_ value: Substring) -> (cookie: AuthSessionCookie, mac: [UInt8])? {
        guard value.utf8.count <= 4096, let bytes = Base64Bytes.decode(value.utf8, urlSafe: true) else { return nil }
        // name:hex:mac — the name may not contain ':' (CouchDB splits on the first two).
        guard let first = bytes.firstIndex(of: UInt8(ascii: ":")),
              let second = bytes[(first + 1)...].firstIndex(of: UInt8(ascii: ":")),
              let name = String(bytes: bytes[..<first], encoding: .utf8),
              let timeText = String(bytes: bytes[(first + 1)..<second], encoding: .utf8),
              let timestamp = Int(timeText, radix: 16), timestamp >= 0 else { return nil }
        return (AuthSessionCookie(name: name, timestamp: timestamp), Array(bytes[(second + 1)...]))
    }

    /// True when `mac` is this cookie's under `secret` and `salt` (compared in constant time).
    func verify(mac: [UInt8], secret: String, salt: String) -> Bool {
        let data = "\(name):\(String(timestamp, radix: 16, uppercase: true))"
        let key = SymmetricKey(data: Array((secret + salt).utf8))
        return HMAC<SHA256>.isValidAuthenticationCode(mac, authenticating: Array(data.utf8), using: key)
    }

    static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}

/// Base64 decoding over bytes, without Foundation's string round trips: the standard alphabet,
/// or with `urlSafe` the URL one (`-`, `_`); padding optional, nothing else allowed.
enum Base64Bytes {
    private static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (i, c) in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8.enumerated() {
            table[Int(c)] = UInt8(i)
        }
        return table
    }()

    static func decode(_ text: some Collection<UInt8>, urlSafe: Bool) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(text.count * 3 / 4)
        var buffer: UInt32 = 0
        var bits = 0
        var padding = 0
        for c in text {
            if c == UInt8(ascii: "=") {
                padding += 1
                continue
            }
            guard padding == 0 else { return nil }   // data after padding
            var value = values[Int(c)]
            if value == 0xFF {
                switch c {
                case UInt8(ascii: "+") where !urlSafe, UInt8(ascii: "-") where urlSafe: value = 62
                case UInt8(ascii: "/") where !urlSafe, UInt8(ascii: "_") where urlSafe: value = 63
                default: return nil
                }
            }
            buffer = buffer << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: buffer >> UInt32(bits)))
            }
        }
        // A lone character of a last group, or padding that does not fill the last group: not base64.
        guard bits < 6, padding <= 2, padding == 0 || text.count % 4 == 0 else { return nil }
        return out
    }
}
