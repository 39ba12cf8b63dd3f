import Foundation
import SQLiteKit

/// What `performMaintenance(type:)` does (2.8/3.x `MaintenanceType`).
public enum MaintenanceType: UInt8, Sendable {
    /// Deletes blobs no document references any more and vacuums the file.
    case compact
    /// Rebuilds every index.
    case reindex
    /// Checks the file's integrity; throws `.corruptData` when SQLite finds damage.
    case integrityCheck
    /// Lets SQLite refresh the statistics its query planner uses, where it thinks they are stale.
    case optimize
    /// Recomputes all of the planner's statistics.
    case fullOptimize
}

extension Database {
    /// Copies the database bundle at `path` (a `NAME.cblite2` directory) to a new database
    /// `name` in `config`'s directory, giving the copy fresh UUIDs as 2.x does (so replication
    /// checkpoints of the original are not mistaken for the copy's). Fails with `.conflict`
    /// when a database `name` already exists there.
    public static func copy(fromPath path: String, toDatabase name: String, withConfig config: DatabaseConfiguration?) throws {
        guard isValidName(name) else { throw CouchbaseLiteError(.invalidParameter, "Invalid database name '\(name)'") }
        let source = URL(fileURLWithPath: path, isDirectory: true)
        try DataFile.checkBundle(source)
        let directory = (config ?? DatabaseConfiguration()).directory
        let target = bundleURL(name: name, directory: directory)
        let fm = FileManager.default
        if fm.fileExists(atPath: target.path) {
            throw CouchbaseLiteError(.conflict, "A database named '\(name)' already exists in \(directory)")
        }
        try fm.createDirectory(atPath: directory, withIntermediateDirectories: true)
        // Copy into a temporary sibling first so a failure never leaves a half database behind.
        let staging = URL(fileURLWithPath: directory, isDirectory: true)
            .appendingPathComponent(".\(name).copy-\(UUID().uuidString)", isDirectory: true)
        do {
            try fm.copyItem(at: source, to: staging)
            let file = try DataFile(directory: staging, create: false)
            try file.connection.transaction {
                try file.setInfo(Schema2.InfoKey.publicUUID, randomUUID())
                try file.setInfo(Schema2.InfoKey.privateUUID, randomUUID())
            }
            try file.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            file.close()
            try fm.moveItem(at: staging, to: target)
        } catch {
            try? fm.removeItem(at: staging)
            if let e = error as? CouchbaseLiteError { throw e }
            throw CouchbaseLiteError(.ioError, "Cannot copy \(path) to '\(name)': \(error.localizedDescription)")
        }
    }

    private static func randomUUID() -> [UInt8] {
        withUnsafeBytes(of: UUID().uuid) { Array($0) }
    }

    /// Compacts the database: deletes unreferenced blobs and vacuums. (2.x; 3.x spells it
    /// `performMaintenance(type: .compact)`.)
    public func compact() throws {
        try performMaintenance(type: .compact)
    }

    /// Runs one maintenance task (see `MaintenanceType`).
    public func performMaintenance(type: MaintenanceType) throws {
        try withWriteFile { file in
            let connection = file.connection
            switch type {
            case .compact:
                try Self.deleteUnreferencedBlobs(file)
                try connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                try connection.execute("VACUUM")
            case .reindex:
                try connection.execute("REINDEX")
            case .integrityCheck:
                var problems: [String] = []
                try connection.prepare("PRAGMA integrity_check").forEachRow { problems.append($0.string(0) ?? "") }
                if problems != ["ok"] {
                    throw CouchbaseLiteError(.corruptData, "Database '\(name)' failed its integrity check: "
                                             + problems.prefix(5).joined(separator: "; "))
                }
            case .optimize:
                try connection.execute("PRAGMA optimize")
            case .fullOptimize:
                try connection.execute("ANALYZE")
            }
        }
    }

    /// Deletes the files in `Attachments/` that no revision of any document in any collection
    /// mentions (see `DataFile.forEachBlobReference`: the scan can only keep too much, never
    /// delete a blob a document still names).
    static func deleteUnreferencedBlobs(_ file: DataFile) throws {
        let fm = FileManager.default
        let dir = file.blobStore.directory
        guard let names = try? fm.contentsOfDirectory(atPath: dir.path), names.contains(where: { $0.hasSuffix(".blob") }) else {
            return
        }
        var referenced = Set<String>()
        try file.forEachBlobReference { _, _, digests in referenced.formUnion(digests) }
        for name in names {
            if let digest = BlobStore.digest(forFileName: name), !referenced.contains(digest) {
                try? fm.removeItem(at: dir.appendingPathComponent(name))
            }
        }
    }
}
