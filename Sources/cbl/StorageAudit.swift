import CouchbaseLite
import CouchbaseLiteSwift
import Foundation

/// What `cbl check` found in a database.
struct AuditReport {
    var path: String
    var format: String
    var schemaVersion: Int
    var schema: String
    var schemaProblem = false
    /// What the audit of the file found (``StorageAudit`` fills it in).
    var findings = StorageAuditFindings()

    var integrityOK: Bool { findings.integrityOK }

    /// What is wrong. Orphaned blobs are not: a save that failed after storing its attachment
    /// (a full disk, a crash) leaves one by design, and compaction deletes it (spec 4.2).
    var problemCount: Int {
        (integrityOK ? 0 : 1) + (schemaProblem ? 1 : 0) + findings.missing.count + findings.mismatched.count
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
        report.findings = try StoreAudit.run(bundle: bundle.url, encryptionKey: bundle.encryptionKey)
        return report
    }

    // MARK: 2.x/3.x (cbl2-format 1.1, 2.3)

    static func auditV2(_ bundle: DatabaseBundle) throws -> AuditReport {
        var report = AuditReport(bundle)
        report.findings = try DataFileAudit.run(bundle: bundle.url)
        return report
    }
}
