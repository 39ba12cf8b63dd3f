import SQLiteKit

extension CBLError {
    /// What SQLite said when it failed on a database file, for an SQLite failure that reached a
    /// tool reading files under the database APIs (``StoreAudit``, the 2.x file layer, which
    /// surface them as they are); nil for any other error. Tools word the failure themselves.
    package static func storageFailureMessage(_ error: Error) -> String? {
        (error as? SQLiteError)?.message
    }
}
