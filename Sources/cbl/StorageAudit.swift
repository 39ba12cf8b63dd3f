import CouchbaseLite
import CouchbaseLiteSwift
import Foundation

/// What `cbl check` found in a database.
struct AuditReport {
    /// A document revision referring to a blob.
    struct Reference {
        var documentID: String
        var revisionID: String?
        var attachment: String?
        /// The 2.x collection (key-store table) when not the default one.
        var collection: String?
    }

    struct MissingBlob {
        var digest: String
        var file: String
        var references: [Reference]
    }

    struct BlobFile {
        var file: String
        var size: Int64
    }

    struct MismatchedBlob {
        var file: String
        var size: Int64
        var expectedSize: Int64
        var reference: Reference
    }

    var path: String
    var format: String
    var schemaVersion: Int
    var schema: String
    var schemaProblem = false
    /// `["ok"]` when SQLite found nothing wrong.
    var integrity: [String] = []
    var documents = 0
    var blobFiles = 0
    var referencedBlobs = 0
    var missing: [MissingBlob] = []
    var orphans: [BlobFile] = []
    var mismatched: [MismatchedBlob] = []

    var integrityOK: Bool { integrity == ["ok"] }

    /// What is wrong. Orphaned blobs are not: a save that failed after storing its attachment
    /// (a full disk, a crash) leaves one by design, and compaction deletes it (spec 4.2).
    var problemCount: Int {
        (integrityOK ? 0 : 1) + (schemaProblem ? 1 : 0) + missing.count + mismatched.count
    }

    /// A report on `bundle` with its format and the release its schema version names; the
    /// findings are filled in by ``StorageAudit``.
    init(_ bundle: DatabaseBundle) {
        path = bundle.url.path
        schemaVersion = bundle.schemaVersion
        switch (bundle.format, bundle.schemaVersion) {
        case (.v1, 102): schema = "Couchbase Lite 1.3/1.4 (current)"
        case (.v1, 101): schema = "Couchbase Lite 1.2 (1.x brings it to 102 when it opens the database for writing)"
        case (.v1, 17..<101): schema = "Couchbase Lite 1.0/1.1 .cblite2 (1.x upgrades it when it opens the database for writing)"
        case (.v1, _):
            schema = "unknown to Couchbase Lite 1.x (17…102 expected)"
            schemaProblem = true
        case (.v2, 201): schema = "Couchbase Lite 2.0–2.6"
        case (.v2, 300..<400): schema = "Couchbase Lite 2.7/2.8"
        case (.v2, 400..<500): schema = "Couchbase Lite 3.0"
        case (.v2, _): schema = "Couchbase Lite 3.1 or later"
        }
        format = bundle.format == .v1 ? "1.x" : "2.x/3.x"
    }
}

/// The reads behind `cbl check`: the 1.x store's own audit (``StoreAudit``, in CouchbaseLite),
/// and for 2.x/3.x the integrity check through the API plus the raw digest scan `compact` uses.
/// Nothing is written.
enum StorageAudit {
    // MARK: 1.x (spec 2, 4.1, 4.2, 4.5)

    static func auditV1(_ bundle: DatabaseBundle) throws -> AuditReport {
        var report = AuditReport(bundle)
        let audit = try StoreAudit(bundle: bundle.url, encryptionKey: bundle.encryptionKey)
        func reference(_ r: StoreAudit.Reference) -> AuditReport.Reference {
            AuditReport.Reference(documentID: r.documentID, revisionID: r.revisionID, attachment: r.attachment)
        }
        report.integrity = audit.integrity
        report.documents = audit.liveDocuments
        report.blobFiles = audit.blobFiles
        report.referencedBlobs = audit.referencedBlobs
        report.missing = audit.missing.map { .init(digest: $0.digest, file: $0.file, references: $0.references.map(reference)) }
        report.orphans = audit.orphans.map { .init(file: $0.file, size: $0.size) }
        report.mismatched = audit.mismatched.map {
            .init(file: $0.file, size: $0.size, expectedSize: $0.expectedSize, reference: reference($0.reference))
        }
        return report
    }

    // MARK: 2.x/3.x (cbl2-format 1.1, 2.3)

    static func auditV2(_ bundle: DatabaseBundle) throws -> AuditReport {
        var report = AuditReport(bundle)
        // Through the API: index expressions need the query functions registered to be checked.
        let db = try bundle.openV2Database(readOnly: true)
        do {
            try db.performMaintenance(type: .integrityCheck)
            report.integrity = ["ok"]
        } catch let e as CouchbaseLiteError {
            let detail = e.message.range(of: "integrity check: ").map { String(e.message[$0.upperBound...]) } ?? e.message
            report.integrity = detail.components(separatedBy: "; ")
        }
        try db.close()

        let file = try bundle.openV2File()
        defer { file.close() }
        report.documents = Int(try file.liveDocumentCount())
        // The raw digest scan `compact` itself uses.
        var references: [String: [AuditReport.Reference]] = [:]
        try file.forEachBlobReference { table, documentID, digests in
            let collection = collectionName(table)
            for digest in digests {
                references[digest, default: []].append(.init(documentID: documentID, revisionID: nil,
                                                             attachment: nil, collection: collection))
            }
        }
        var files: [String: String] = [:]      // digest → file name
        for name in (try? FileManager.default.contentsOfDirectory(atPath: bundle.blobDirectory.path)) ?? []
        where !name.hasPrefix(".") {
            if let digest = BlobStore.digest(forFileName: name) { files[digest] = name }
        }
        report.blobFiles = files.count
        report.referencedBlobs = references.count
        for (digest, refs) in references.sorted(by: { $0.key < $1.key }) where files[digest] == nil {
            let file = BlobStore.key(fromDigest: digest).map(BlobStore.fileName(forKey:)) ?? "-"
            report.missing.append(.init(digest: digest, file: file, references: refs))
        }
        for (digest, file) in files.sorted(by: { $0.value < $1.value }) where references[digest] == nil {
            report.orphans.append(.init(file: file, size: BundleSize.size(of: bundle.blobDirectory.appendingPathComponent(file).path)))
        }
        return report
    }

    // MARK: Helpers

    /// `kv_default`/`kv_del_default` → nil; `kv_.store.tasks` → `store.tasks`; `kv_local` → `local`.
    private static func collectionName(_ table: String) -> String? {
        var name = Substring(table.dropFirst(3))
        if name.hasPrefix("del_") { name = name.dropFirst(4) }
        if name.hasPrefix(".") { name = name.dropFirst() }
        return name == "default" ? nil : String(name)
    }
}
