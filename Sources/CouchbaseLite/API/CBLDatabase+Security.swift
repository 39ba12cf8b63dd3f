import Foundation
import JSONCore

/// The database's CouchDB `_security` object (admins and members), kept in the 1.x file.
extension CBLDatabase {
    /// The stored `_security` object, nil when none was ever set. Throws 500 when the stored text
    /// is not JSON (the file was edited by something else).
    package func storedSecurityObject() throws -> JSONValue? {
        guard let text = try read({ try $0.info(SQLiteStore.securityInfoKey) }) else { return nil }
        do {
            return try JSON.value(text)
        } catch {
            throw CBLError.dbError("The _security object stored in database '\(name)' is not JSON: \(error)")
        }
    }

    /// Stores `value` as the `_security` object (its members in their order), or with nil removes
    /// it. It is a row of the `info` table, which 1.x keeps as it is through compaction and which
    /// a 1.x Couchbase Lite does not read: nothing else in the file changes.
    package func setStoredSecurityObject(_ value: JSONValue?) throws {
        let text: String?
        do {
            text = try value.map { try JSON.string($0, sortedKeys: false) }
        } catch {
            throw CBLError.badJSON("the _security object of database '\(name)': \(error)")
        }
        try write(atomic: true) { store in
            try store.setInfo(SQLiteStore.securityInfoKey, text)
        }
    }
}
