import Foundation
import SQLiteKit

extension CBLDatabase {
    /// The key the database file is encrypted with; nil when it is not encrypted.
    public var encryptionKey: CBLSymmetricKey? { openStore?.encryptionKey }

    /// Changes the encryption key (1.x `changeEncryptionKey:error:`): a password `String`, 32 bytes
    /// of `Data` or a ``CBLSymmetricKey`` encrypts (or re-keys) the database; nil decrypts it.
    ///
    /// Waits for reads and writes in progress, then rewrites the database file with the new key and
    /// reopens it; a crash at any point leaves a database that opens with the old key or the new
    /// one (see `DatabaseRekey`). The manager remembers the new key for this database name.
    public func changeEncryptionKey(_ keyOrPassword: Any?) throws {
        try checkWritable()
        var newKey: CBLSymmetricKey?
        if let keyOrPassword {
            guard let key = CBLSymmetricKey.from(keyOrPassword) else {
                throw CBLError.badRequest("Invalid encryption key: give a password String, 32 bytes of Data or a CBLSymmetricKey")
            }
            newKey = key
        }
        try pool.write { _ in
            guard let store = storeOnWriter else { throw closedError }
            if store.connection.transactionDepth > 0 {
                throw CBLError.conflict("Cannot change the encryption key of '\(name)' inside a transaction")
            }
            let oldKey = store.encryptionKey
            var failure: Error?
            do {
                try pool.reconnect {
                    // Everything committed goes into db.sqlite3 itself, and the WAL is emptied.
                    try? store.truncateWAL()
                    store.close()
                    do {
                        try DatabaseRekey.run(directory: directoryURL, from: oldKey, to: newKey)
                    } catch {
                        failure = error
                    }
                    // Reopen with the key the file has now: the new one, or the old one if the re-key failed.
                    let reopened: SQLiteStore
                    do {
                        reopened = try SQLiteStore(directory: directoryURL, create: false, readOnly: false,
                                                   encryptionKey: failure == nil ? newKey : oldKey)
                    } catch {
                        throw CBLError(503, "Cannot reopen the database to change the encryption key: \(error)")
                    }
                    replaceStore(reopened)
                    return (reopened.connection, reopened.openReader)
                }
            } catch let error as CBLError where error.code == 503 {
                replaceStore(nil)
                throw error
            }
            if let failure { throw failure }
        }
        manager.setRegisteredEncryptionKey(newKey, forDatabaseNamed: name)
    }
}
