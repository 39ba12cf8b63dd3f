import Foundation
import SQLiteKit

/// The read-only check of a 2.x/3.x bundle (cbl2-format 1.1, 2.3): SQLite's integrity check, the
/// live documents, and the blob files against the digests the documents name. The 2.x mirror of
/// the 1.x `StoreAudit`; `cbl check` prints its findings. Nothing is written: the database and
/// its file are opened read-only.
package enum DataFileAudit {
    /// Audits the 2.x/3.x bundle `directory`. Throws when the database cannot be opened at all.
    package static func run(bundle directory: URL) throws -> StorageAuditFindings {
        var findings = StorageAuditFindings()
        findings.integrity = try integrityCheck(directory)

        let file = try DataFile(directory: directory, create: false, readOnly: true)
        defer { file.close() }
        findings.liveDocuments = Int(try file.liveDocumentCount())
        // The raw digest scan compaction itself uses, so the audit and `compact` agree on what is kept.
        var references: [String: [StorageAuditFindings.Reference]] = [:]
        try file.forEachBlobReference { table, documentID, digests in
            let collection = collectionName(table)
            for digest in digests {
                references[digest, default: []].append(.init(documentID: documentID, collection: collection))
            }
        }
        let blobDirectory = directory.appendingPathComponent(Schema2.attachmentsDirectoryName)
        var files: [String: String] = [:]      // digest → file name
        for name in (try? FileManager.default.contentsOfDirectory(atPath: blobDirectory.path)) ?? []
        where !name.hasPrefix(".") {
            if let digest = BlobStore.digest(forFileName: name) { files[digest] = name }
        }
        findings.blobFiles = files.count
        findings.referencedBlobs = references.count
        for (digest, refs) in references.sorted(by: { $0.key < $1.key }) where files[digest] == nil {
            let file = BlobStore.key(fromDigest: digest).map(BlobStore.fileName(forKey:)) ?? "-"
            findings.missing.append(.init(digest: digest, file: file, references: refs))
        }
        for (digest, file) in files.sorted(by: { $0.value < $1.value }) where references[digest] == nil {
            findings.orphans.append(.init(file: file, size: StorageAuditFindings.fileSize(blobDirectory.appendingPathComponent(file))))
        }
        return findings
    }

    /// `PRAGMA integrity_check` through the API: index expressions need the query functions a
    /// `Database` registers to be checked. Its failure message carries the first problems,
    /// "; "-separated.
    private static func integrityCheck(_ directory: URL) throws -> [String] {
        var config = DatabaseConfiguration(directory: directory.deletingLastPathComponent().path)
        config.readOnly = true
        let db = try Database(name: directory.deletingPathExtension().lastPathComponent, config: config)
        var lines = ["ok"]
        do {
            try db.performMaintenance(type: .integrityCheck)
        } catch let e as CouchbaseLiteError {
            let detail = e.message.range(of: "integrity check: ").map { String(e.message[$0.upperBound...]) } ?? e.message
            lines = detail.components(separatedBy: "; ")
        }
        try db.close()
        return lines
    }

    /// `kv_default`/`kv_del_default` → nil; `kv_.store.tasks` → `store.tasks`; `kv_local` → `local`.
    static func collectionName(_ table: String) -> String? {
        var name = Substring(table.dropFirst(3))
        if name.hasPrefix("del_") { name = name.dropFirst(4) }
        if name.hasPrefix(".") { name = name.dropFirst() }
        return name == "default" ? nil : String(name)
    }
}
