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

/// The reads behind `cbl check`: the 1.x store's own audit (``StoreAudit``, in CouchbaseLite) and
/// the 2.x/3.x file's (``DataFileAudit``, in CouchbaseLiteSwift); cbl only prints them.
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
        let audit = try DataFileAudit(bundle: bundle.url)
        func reference(_ r: DataFileAudit.Reference) -> AuditReport.Reference {
            AuditReport.Reference(documentID: r.documentID, revisionID: nil, attachment: nil, collection: r.collection)
        }
        report.integrity = audit.integrity
        report.documents = audit.liveDocuments
        report.blobFiles = audit.blobFiles
        report.referencedBlobs = audit.referencedBlobs
        report.missing = audit.missing.map { .init(digest: $0.digest, file: $0.file, references: $0.references.map(reference)) }
        report.orphans = audit.orphans.map { .init(file: $0.file, size: $0.size) }
        return report
    }
}
