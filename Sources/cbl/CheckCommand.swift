import ArgumentParser
import CouchbaseLite
import Foundation

/// `cbl check PATH`: integrity, schema version, missing and orphaned blobs.
struct Check: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check a database (1.x or 2.x/3.x): integrity, schema version, missing and orphaned blobs.",
        discussion: """
            Read-only. Reports:
              - SQLite's PRAGMA integrity_check of db.sqlite3;
              - the schema version (PRAGMA user_version) and the release that writes it;
              - missing blobs: attachments a revision refers to whose file is not in \
            attachments/ (1.x) or Attachments/ (2.x), with the documents referring to them;
              - orphaned blobs: blob files no revision refers to, left by saves that failed after \
            storing their attachment; not a problem (compaction deletes them);
              - 1.x only: blob files whose size differs from the attachment's stored length.

            EXAMPLES:
              cbl check app.cblite2
              cbl check app.cblite2 --json | jq '.missingBlobs'
              cbl check app.cblite2 || cbl compact app.cblite2

            EXIT STATUS: 0 nothing wrong; 1 problems found (listed); 2 bad path or not a \
            Couchbase Lite database.
            """)

    @Argument(help: "The database: NAME.cblite2 (1.x or 2.x/3.x).")
    var path: String

    @OptionGroup(title: "Encryption")
    var encryption: EncryptionKeyOptions

    @Flag(help: "Print the report as one JSON object.")
    var json = false

    func run() throws {
        let bundle = try DatabaseBundle.locate(path, key: try encryption.key())
        let report = bundle.format == .v1 ? try StorageAudit.auditV1(bundle) : try StorageAudit.auditV2(bundle)
        let output = Output()
        if json {
            output.line(jsonText(Self.jsonObject(report)))
        } else {
            Self.printText(report, output)
        }
        output.flush()
        if report.problemCount > 0 { throw ExitCode(ExitStatus.problemFound) }
    }

    private static func printText(_ r: AuditReport, _ output: Output) {
        let f = r.findings
        output.line("database:        \(r.path)")
        output.line("format:          Couchbase Lite \(r.format), schema \(r.schemaVersion): \(r.schema)"
                    + (r.schemaProblem ? "  <- PROBLEM" : ""))
        output.line("integrity:       " + (r.integrityOK ? "ok" : "FAILED"))
        if !r.integrityOK { for line in f.integrity { output.line("  \(line)") } }
        output.line("documents:       \(f.liveDocuments) live")
        output.line("blobs:           \(f.blobFiles) file\(f.blobFiles == 1 ? "" : "s"), \(f.referencedBlobs) referenced")
        output.line("missing blobs:   \(f.missing.isEmpty ? "none" : String(f.missing.count))")
        for blob in f.missing {
            let refs = blob.references.map(describe).joined(separator: ", ")
            output.line("  \(blob.digest) (\(blob.file)) referenced by \(refs)")
        }
        output.line("orphaned blobs:  \(f.orphans.isEmpty ? "none" : "\(f.orphans.count) (not a problem: compact deletes them)")")
        for blob in f.orphans { output.line("  \(blob.file) (\(blob.size) bytes)") }
        if r.format == "1.x" {
            output.line("size mismatches: \(f.mismatched.isEmpty ? "none" : String(f.mismatched.count))")
            for blob in f.mismatched {
                output.line("  \(blob.file): \(blob.size) bytes, \(blob.expectedSize) expected by \(describe(blob.reference))")
            }
        }
        let n = r.problemCount
        output.line("result:          " + (n == 0 ? "ok" : "\(n) problem\(n == 1 ? "" : "s") found"))
    }

    private static func describe(_ ref: StorageAuditFindings.Reference) -> String {
        var text = ref.collection.map { "\($0)/" } ?? ""
        text += ref.documentID
        if let rev = ref.revisionID { text += " rev \(rev)" }
        if let name = ref.attachment { text += " attachment '\(name)'" }
        return text
    }

    static func jsonObject(_ r: AuditReport) -> [String: Any] {
        let f = r.findings
        func reference(_ ref: StorageAuditFindings.Reference) -> [String: Any] {
            var out: [String: Any] = ["id": ref.documentID]
            if let rev = ref.revisionID { out["rev"] = rev }
            if let name = ref.attachment { out["attachment"] = name }
            if let collection = ref.collection { out["collection"] = collection }
            return out
        }
        var out: [String: Any] = [
            "path": r.path,
            "format": r.format,
            "schemaVersion": r.schemaVersion,
            "schema": r.schema,
            "schemaOK": !r.schemaProblem,
            "integrity": r.integrityOK ? "ok" as Any : f.integrity as Any,
            "documents": f.liveDocuments,
            "blobs": ["files": f.blobFiles, "referenced": f.referencedBlobs],
            "missingBlobs": f.missing.map { ["digest": $0.digest, "file": $0.file, "references": $0.references.map(reference)] },
            "orphanedBlobs": f.orphans.map { ["file": $0.file, "size": $0.size] },
            "problems": r.problemCount,
            "ok": r.problemCount == 0,
        ]
        if r.format == "1.x" {
            out["sizeMismatches"] = f.mismatched.map {
                ["file": $0.file, "size": $0.size, "expectedSize": $0.expectedSize, "reference": reference($0.reference)] as [String: Any]
            }
        }
        return out
    }
}
