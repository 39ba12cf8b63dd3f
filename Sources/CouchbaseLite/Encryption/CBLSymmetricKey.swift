import Foundation
import Crypto
import _CryptoExtras

/// A 256-bit AES key, as 1.x's `CBLSymmetricKey`: made from a password (PBKDF2) or given raw.
///
/// The database file (SQLCipher) and the attachments (the blob store) of an encrypted 1.x
/// database are both encrypted with the same raw key.
public final class CBLSymmetricKey: NSObject, Sendable {
    /// Number of bytes in a key (`kSymmetricKeyDataSize`).
    public static let keySize = 32
    /// The salt 1.x derives password keys with (`CBLSymmetricKey`'s default).
    static let defaultSalt = Data("Salty McNaCl".utf8)
    /// The PBKDF2 rounds 1.x derives password keys with (the same as SQLCipher's default).
    static let defaultRounds = 64_000

    /// The raw key bytes.
    public let keyData: Data

    /// A key from 32 raw bytes; nil when `keyData` is not 32 bytes long.
    public init?(keyData: Data) {
        guard keyData.count == Self.keySize else { return nil }
        self.keyData = keyData
    }

    /// A key derived from a password: PBKDF2-HMAC-SHA256, 64,000 rounds, salt "Salty McNaCl" (1.x).
    public convenience init(password: String) {
        self.init(password: password, salt: Self.defaultSalt, rounds: Self.defaultRounds)
    }

    /// A key derived from a password with an explicit salt and round count (1.x `initWithPassword:salt:rounds:`).
    public init(password: String, salt: Data, rounds: Int) {
        // PBKDF2 only fails for parameters that are fixed here (hash, output size).
        let key = try? KDF.Insecure.PBKDF2.deriveKey(from: Data(password.utf8), salt: salt, using: .sha256,
                                                     outputByteCount: Self.keySize, unsafeUncheckedRounds: rounds)
        self.keyData = key.map { $0.withUnsafeBytes { Data($0) } } ?? Data(count: Self.keySize)
    }

    /// A new random key.
    public override convenience init() {
        // Kept: a 256-bit key is exactly `keySize` bytes, the only length `init(keyData:)` refuses others.
        self.init(keyData: SymmetricKey(size: .bits256).withUnsafeBytes { Data($0) })!
    }

    /// The key as 64 lowercase hex digits (SQLCipher's raw-key form `x'…'` wraps this).
    public var hexData: String {
        keyData.map { String(format: "%02x", $0) }.joined()
    }

    /// The key an `encryptionKey` option names: a password `String`, 32 raw bytes, or a key; nil for anything else.
    static func from(_ option: Any) -> CBLSymmetricKey? {
        switch option {
        case let key as CBLSymmetricKey: return key
        case let password as String: return CBLSymmetricKey(password: password)
        case let data as Data: return CBLSymmetricKey(keyData: data)
        default: return nil
        }
    }

    public override var description: String { "CBLSymmetricKey[\(keyData.count * 8) bits]" }
}
