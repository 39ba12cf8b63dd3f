import CouchbaseLite
import CouchbaseLiteSwift
import Foundation
import SQLiteKit

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

    var path = ""
    var format = ""
    var schemaVersion = 0
    var schema = ""
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
}

/// The low-level reads behind `cbl check`: they go under the document APIs on purpose, since a
/// checker must look at every revision body and every blob file, and keep working when the
/// database is damaged. Nothing is written (immutable or read-only connections).
enum StorageAudit {
    // MARK: 1.x (spec 2, 4.1, 4.2, 4.5)

    static func auditV1(_ bundle: DatabaseBundle) throws -> AuditReport {
        var report = AuditReport()
        report.path = bundle.url.path
        report.format = "1.x"
        report.schemaVersion = bundle.schemaVersion
        switch bundle.schemaVersion {
        case 102: report.schema = "Couchbase Lite 1.3/1.4 (current)"
        case 101: report.schema = "Couchbase Lite 1.2 (1.x brings it to 102 when it opens the database for writing)"
        case 17..<101: report.schema = "Couchbase Lite 1.0/1.1 .cblite2 (1.x upgrades it when it opens the database for writing)"
        default:
            report.schema = "unknown to Couchbase Lite 1.x (17…102 expected)"
            report.schemaProblem = true
        }
        let connection = try openReadOnly(bundle)
        defer { connection.close() }
        try SQLiteStore.registerCollations(on: connection)
        report.integrity = try integrityCheck(connection)
        report.documents = Int(try connection.scalarInt(
            "SELECT count(DISTINCT doc_id) FROM revs WHERE current=1 AND deleted=0") ?? 0)

        // The revisions whose bodies keep blobs alive: the 1.x collector's rule (spec 4.5).
        var references: [BlobKey: [AuditReport.Reference]] = [:]
        var expectedSizes: [BlobKey: (Int64, AuditReport.Reference)] = [:]
        var unusableDigests: [(String, AuditReport.Reference)] = []
        try SQLiteStore.forEachBlobReference(on: connection) { blob in
            let reference = AuditReport.Reference(documentID: blob.documentID, revisionID: blob.revisionID,
                                                  attachment: blob.attachmentName)
            guard let key = blob.key else {
                unusableDigests.append((blob.digest, reference))
                return
            }
            references[key, default: []].append(reference)
            if let expected = blob.storedLength {
                expectedSizes[key] = expectedSizes[key] ?? (Int64(expected), reference)
            }
        }

        // Blob files: 40 hex digits + .blob, upper-case (lower-case from old Android/.NET builds, spec 4.2).
        var files: [BlobKey: String] = [:]      // key → file name
        for name in (try? FileManager.default.contentsOfDirectory(atPath: bundle.blobDirectory.path)) ?? [] {
            if let key = BlobKey(fileName: name) { files[key] = name }
        }
        report.blobFiles = files.count
        report.referencedBlobs = references.count
        for (key, refs) in references.sorted(by: { $0.key.hexUppercase < $1.key.hexUppercase }) {
            guard let file = files[key] else {
                report.missing.append(.init(digest: key.digest, file: key.fileName, references: refs))
                continue
            }
            if let (length, reference) = expectedSizes[key] {
                // An encrypted blob file is a 16-byte IV, then the content AES-CBC/PKCS#7-padded to whole 16-byte blocks.
                let expected = bundle.encryptionKey == nil ? length : 16 + (length / 16 + 1) * 16
                let size = BundleSize.size(of: bundle.blobDirectory.appendingPathComponent(file).path)
                if size != expected {
                    report.mismatched.append(.init(file: file, size: size, expectedSize: expected, reference: reference))
                }
            }
        }
        for (digest, reference) in unusableDigests {
            report.missing.append(.init(digest: digest, file: "-", references: [reference]))
        }
        for (key, file) in files.sorted(by: { $0.key.hexUppercase < $1.key.hexUppercase }) where references[key] == nil {
            report.orphans.append(.init(file: file, size: BundleSize.size(of: bundle.blobDirectory.appendingPathComponent(file).path)))
        }
        return report
    }

    // MARK: 2.x/3.x (cbl2-format 1.1, 2.3)

    static func auditV2(_ bundle: DatabaseBundle) throws -> AuditReport {
        var report = AuditReport()
        report.path = bundle.url.path
        report.format = "2.x/3.x"
        report.schemaVersion = bundle.schemaVersion
        switch bundle.schemaVersion {
        case 201: report.schema = "Couchbase Lite 2.0–2.6"
        case 300..<400: report.schema = "Couchbase Lite 2.7/2.8"
        case 400..<500: report.schema = "Couchbase Lite 3.0"
        default: report.schema = "Couchbase Lite 3.1 or later"
        }
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

    /// A read-only connection that writes nothing beside the file when its WAL is empty.
    private static func openReadOnly(_ bundle: DatabaseBundle) throws -> SQLiteConnection {
        try SQLiteConnection.openReadOnly(path: bundle.databaseFile.path, rawKey: bundle.encryptionKey.map { [UInt8]($0.keyData) })
    }

    /// `PRAGMA integrity_check`'s lines; a check SQLite cannot even run is itself the finding.
    private static func integrityCheck(_ connection: SQLiteConnection) throws -> [String] {
        do {
            return try connection.integrityCheck().split(separator: "\n").map(String.init)
        } catch let e as SQLiteError {
            return [e.message]
        }
    }
}
