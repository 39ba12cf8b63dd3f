import Foundation

/// The one read-only open of a database file that tools, the upgrader and read-only databases share.
extension SQLiteConnection {
    /// Opens the file at `path` for reading only, writing nothing beside it when it can: as
    /// `immutable` (no `-shm`, no lock files) unless a non-empty `-wal` or a hot `-journal` holds
    /// committed data an immutable open would miss; then read-only, which lets SQLite read the WAL.
    /// With `rawKey` the file is opened with SQLCipher and the key is checked by a first read
    /// (`SQLITE_NOTADB` when it is wrong or the file is not encrypted).
    package static func openReadOnly(path: String, rawKey: [UInt8]? = nil) throws -> SQLiteConnection {
        let uri = hasPendingJournal(path: path) ? path : immutableURI(forPath: path)
        let mode = OpenMode(readOnly: true, create: false)
        guard let rawKey else { return try SQLiteConnection(path: uri, mode: mode) }
        let connection = try SQLiteConnection(path: uri, mode: mode, rawKey: rawKey)
        do {
            try connection.verifyReadable()
        } catch {
            connection.close()
            throw error
        }
        return connection
    }
}
