import Foundation

extension CBLManager {
    /// Registers the key (a password `String`, 32 bytes of `Data`, or a ``CBLSymmetricKey``) that
    /// ``databaseNamed(_:)``, ``existingDatabaseNamed(_:)`` and `replaceDatabaseNamed` open the
    /// database `name` with; nil forgets it. False when the key is of none of those kinds (1.x).
    @discardableResult
    public func registerEncryptionKey(_ keyOrPassword: Any?, forDatabaseNamed name: String) -> Bool {
        guard let keyOrPassword else {
            setRegisteredEncryptionKey(nil, forDatabaseNamed: name)
            return true
        }
        guard let key = CBLSymmetricKey.from(keyOrPassword) else { return false }
        setRegisteredEncryptionKey(key, forDatabaseNamed: name)
        return true
    }
}
