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
        try withOpenFile { file in
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
    /// mentions. A blob is referenced by its `sha1-…` digest string, which Fleece stores as
    /// plain UTF-8 in the body (and in the rev tree's older bodies), so the scan reads raw
    /// bytes: it can only keep too much, never delete a blob a document still names.
    static func deleteUnreferencedBlobs(_ file: DataFile) throws {
        let fm = FileManager.default
        let dir = file.blobStore.directory
        guard let names = try? fm.contentsOfDirectory(atPath: dir.path), names.contains(where: { $0.hasSuffix(".blob") }) else {
            return
        }
        var referenced = Set<String>()
        let connection = file.connection
        var tables: [(String, Bool)] = []
        try connection.prepare("""
            SELECT name, (SELECT count(*) FROM pragma_table_info(m.name) WHERE name='extra') FROM sqlite_master m
            WHERE type='table' AND name LIKE 'kv\\_%' ESCAPE '\\' AND name <> 'kv_info' AND name NOT LIKE '%::%'
            """).forEachRow { row in
            if let t = row.string(0) { tables.append((t, row.int64(1) > 0)) }
        }
        for (table, hasExtra) in tables {
            let quoted = "\"" + table.replacingOccurrences(of: "\"", with: "\"\"") + "\""
            try connection.prepare("SELECT body\(hasExtra ? ", extra" : "") FROM \(quoted)").forEachRow { row in
                for column in 0..<(hasExtra ? 2 : 1) {
                    row.withBytes(Int32(column)) { if let b = $0 { Self.collectDigests(in: b, into: &referenced) } }
                }
            }
        }
        for name in names where name.hasSuffix(".blob") {
            let digest = "sha1-" + String(name.dropLast(5)).replacingOccurrences(of: "_", with: "/")
            if !referenced.contains(digest) {
                try? fm.removeItem(at: dir.appendingPathComponent(name))
            }
        }
    }

    /// Every `sha1-` followed by 28 Base64 characters in `bytes`.
    package static func collectDigests(in bytes: UnsafeRawBufferPointer, into out: inout Set<String>) {
        let n = bytes.count
        guard n >= 33 else { return }
        let prefix: [UInt8] = Array("sha1-".utf8)
        var i = 0
        while i + 33 <= n {
            if bytes[i] == prefix[0], bytes[i + 1] == prefix[1], bytes[i + 2] == prefix[2],
               bytes[i + 3] == prefix[3], bytes[i + 4] == prefix[4] {
                let start = i + 5
                var ok = true
                for k in start..<(start + 28) {
                    let c = bytes[k]
                    let isB64 = (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || (c >= 48 && c <= 57)
                        || c == 43 || c == 47 || (c == 61 && k >= start + 27)
                    if !isB64 { ok = false; break }
                }
                if ok {
                    out.insert("sha1-" + String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<(start + 28)]), as: UTF8.self))
                    i = start + 28
                    continue
                }
            }
            i += 1
        }
    }
}
