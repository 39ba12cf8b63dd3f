import Foundation

/// What a read-only check of a 2.x/3.x bundle finds (cbl2-format 1.1, 2.3): SQLite's integrity
/// check, the live documents, and the blob files against the digests the documents name. The
/// 2.x mirror of the 1.x `StoreAudit`; `cbl check` prints it. Nothing is written: the database
/// and its file are opened read-only.
package struct DataFileAudit: Sendable {
    /// A document referring to a blob (a 2.x body names digests, not revisions or attachment names).
    package struct Reference: Sendable {
        package var documentID: String
        /// The collection (`store.tasks`, `local`), nil for the default one.
        package var collection: String?
    }

    /// A blob documents refer to that no file holds (`file` is "-" when the digest names no file).
    package struct MissingBlob: Sendable {
        package var digest: String
        package var file: String
        package var references: [Reference]
    }

    /// A blob file no document refers to: left by a save that failed after storing its blob, by
    /// design; compaction deletes it, so it is no problem.
    package struct OrphanedBlob: Sendable {
        package var file: String
        package var size: Int64
    }

    /// SQLite's integrity check: `["ok"]` when it found nothing wrong, else its first lines.
    package var integrity: [String] = []
    /// Documents of the default collection whose current revision is not deleted.
    package var liveDocuments = 0
    /// Files in `Attachments/` named like blobs.
    package var blobFiles = 0
    /// Distinct digests the documents refer to.
    package var referencedBlobs = 0
    /// By digest.
    package var missing: [MissingBlob] = []
    /// By file name.
    package var orphans: [OrphanedBlob] = []

    /// Audits the 2.x/3.x bundle `directory`. Throws when the database cannot be opened at all.
    package init(bundle directory: URL) throws {
        integrity = try Self.integrityCheck(directory)

        let file = try DataFile(directory: directory, create: false, readOnly: true)
        defer { file.close() }
        liveDocuments = Int(try file.liveDocumentCount())
        // The raw digest scan compaction itself uses, so the audit and `compact` agree on what is kept.
        var references: [String: [Reference]] = [:]
        try file.forEachBlobReference { table, documentID, digests in
            let collection = Self.collectionName(table)
            for digest in digests {
                references[digest, default: []].append(Reference(documentID: documentID, collection: collection))
            }
        }
        let blobDirectory = directory.appendingPathComponent(Schema2.attachmentsDirectoryName)
        var files: [String: String] = [:]      // digest → file name
        for name in (try? FileManager.default.contentsOfDirectory(atPath: blobDirectory.path)) ?? []
        where !name.hasPrefix(".") {
            if let digest = BlobStore.digest(forFileName: name) { files[digest] = name }
        }
        blobFiles = files.count
        referencedBlobs = references.count
        for (digest, refs) in references.sorted(by: { $0.key < $1.key }) where files[digest] == nil {
            let file = BlobStore.key(fromDigest: digest).map(BlobStore.fileName(forKey:)) ?? "-"
            missing.append(MissingBlob(digest: digest, file: file, references: refs))
        }
        for (digest, file) in files.sorted(by: { $0.value < $1.value }) where references[digest] == nil {
            orphans.append(OrphanedBlob(file: file, size: Self.fileSize(blobDirectory.appendingPathComponent(file))))
        }
    }

    /// True when SQLite's integrity check found nothing wrong.
    package var integrityOK: Bool { integrity == ["ok"] }

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

    /// A file's size in bytes; 0 when it cannot be read.
    private static func fileSize(_ url: URL) -> Int64 {
        ((try? FileManager.default.attributesOfItem(atPath: url.path))?[.size] as? NSNumber)?.int64Value ?? 0
    }
}
