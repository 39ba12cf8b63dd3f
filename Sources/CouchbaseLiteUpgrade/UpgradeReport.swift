import Foundation

/// What an upgrade did: written as JSON (`--report`) and as a human-readable summary.
public struct UpgradeReport: Codable, Sendable, Equatable {
    public struct DroppedConflict: Codable, Sendable, Equatable {
        public var docID: String
        /// The winning revision that was kept.
        public var winningRevisionID: String
        /// The other leaf revisions (and their branches), which 2.x does not carry over.
        public var losingRevisionIDs: [String]
    }

    public struct SkippedDocument: Codable, Sendable, Equatable {
        public var docID: String
        public var reason: String
    }

    public struct DesignDocument: Codable, Sendable, Equatable {
        public var docID: String
        /// Names of the views it defines (map/reduce views are dropped by the upgrade).
        public var views: [String]
    }

    public struct Attachment: Codable, Sendable, Equatable {
        public var docID: String
        public var name: String
        public var digest: String
    }

    public var source = ""
    public var destination = ""
    public var sourceSchemaVersion = 0
    /// The source was encrypted (SQLCipher); the 2.x output is not (2.x Community has no encryption).
    public var sourceEncrypted = false
    public var destinationSchemaVersion = 302
    /// Documents written (live documents and tombstones).
    public var documentsConverted = 0
    /// Of those, deleted documents (tombstones).
    public var tombstones = 0
    public var conflictsDropped: [DroppedConflict] = []
    public var skippedDocuments: [SkippedDocument] = []
    public var designDocuments: [DesignDocument] = []
    /// Blob files copied into `Attachments/` (each verified against its SHA-1).
    public var attachmentsCopied = 0
    /// References to a blob already copied for another document or attachment.
    public var attachmentsDeduplicated = 0
    /// Attachments whose 1.x blob file was missing (the document keeps its stub).
    public var attachmentsMissing: [Attachment] = []
    /// Attachments with a non-SHA-1 digest (e.g. `md5-`), which 2.x cannot store (skipped like LiteCore does).
    public var attachmentsSkipped: [Attachment] = []
    public var localDocumentsFound = 0
    public var localDocumentsCopied = 0
    public var expirationsCopied = 0
    /// Histories longer than the depth limit, cut to it.
    public var historiesPruned = 0
    public var sharedKeys = 0
    public var sourceBytes: Int64 = 0
    public var destinationBytes: Int64 = 0
    public var attachmentBytes: Int64 = 0
    public var seconds: Double = 0

    public init() {}

    /// The report as pretty-printed JSON with sorted keys.
    public func jsonData() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return try encoder.encode(self)
    }

    /// The first line of the summary of an encrypted source's upgrade.
    public static let unencryptedOutputNote = "NOTE: the source was encrypted; the converted database is NOT encrypted"

    /// A few lines for a terminal.
    public var summary: String {
        var lines: [String] = []
        if sourceEncrypted { lines.append(Self.unencryptedOutputNote) }
        lines.append("Upgraded \(source) (schema \(sourceSchemaVersion)) → \(destination) (schema \(destinationSchemaVersion))")
        let rate = seconds > 0 ? String(format: ", %.0f docs/s", Double(documentsConverted) / seconds) : ""
        lines.append("  documents: \(documentsConverted) converted (\(tombstones) tombstones) in \(String(format: "%.2f", seconds)) s\(rate)")
        if !conflictsDropped.isEmpty {
            let revs = conflictsDropped.reduce(0) { $0 + $1.losingRevisionIDs.count }
            lines.append("  conflicts dropped: \(conflictsDropped.count) documents, \(revs) losing revisions")
            for c in conflictsDropped.prefix(10) {
                lines.append("    \(c.docID): kept \(c.winningRevisionID), dropped \(c.losingRevisionIDs.joined(separator: ", "))")
            }
            if conflictsDropped.count > 10 { lines.append("    … \(conflictsDropped.count - 10) more (see the JSON report)") }
        }
        lines.append("  attachments: \(attachmentsCopied) copied, \(attachmentsDeduplicated) deduplicated, \(attachmentsMissing.count) missing, \(attachmentsSkipped.count) skipped (\(attachmentBytes) bytes)")
        for a in attachmentsMissing.prefix(10) { lines.append("    missing: \(a.docID)/\(a.name) \(a.digest)") }
        if !skippedDocuments.isEmpty {
            lines.append("  skipped documents: \(skippedDocuments.count)")
            for s in skippedDocuments.prefix(10) { lines.append("    \(s.docID): \(s.reason)") }
        }
        for d in designDocuments {
            lines.append("  design document \(d.docID) dropped with its views: \(d.views.isEmpty ? "(none)" : d.views.joined(separator: ", "))")
        }
        lines.append("  local documents: \(localDocumentsFound) found, \(localDocumentsCopied) copied")
        if expirationsCopied > 0 { lines.append("  expirations copied: \(expirationsCopied)") }
        if historiesPruned > 0 { lines.append("  histories pruned to the depth limit: \(historiesPruned)") }
        lines.append("  size: \(sourceBytes) bytes → \(destinationBytes) bytes, \(sharedKeys) shared keys")
        return lines.joined(separator: "\n")
    }
}
