import Foundation

/// The three sizes CouchDB reports in a database's info (`sizes.file`, `sizes.active`,
/// `sizes.external`), measured on a 1.x database.
package struct SyncDataSizes: Sendable {
    /// Bytes on disk: the SQLite file, its WAL and the attachment store.
    package var file: Int64
    /// Bytes of live data in them: every stored revision body and revision ID, and the
    /// attachment files (what compaction cannot reclaim is counted; SQLite's page and index
    /// overhead is not), so it stays below `file`.
    package var active: Int64
    /// Bytes of the documents themselves: the bodies of the current, non-deleted revisions,
    /// plus the attachment files.
    package var external: Int64
}

extension CBLDatabase {
    /// The sizes of ``SyncDataSizes`` (zero members when the database is closed).
    package var syncDataSizes: SyncDataSizes {
        let blobs = storeIfOpenForBlobs
        var attachmentBytes: Int64 = 0
        if let directory = blobs?.directory,
           let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path) {
            for name in names {
                let path = directory.appendingPathComponent(name).path
                if let size = (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber {
                    attachmentBytes += size.int64Value
                }
            }
        }
        let (stored, current) = (try? read { try $0.revisionBytes() }) ?? (0, 0)
        return SyncDataSizes(file: syncDiskSize + attachmentBytes, active: stored + attachmentBytes,
                             external: current + attachmentBytes)
    }
}
