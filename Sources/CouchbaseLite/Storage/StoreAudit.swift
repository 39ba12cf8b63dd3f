import Foundation
import SQLiteKit

/// The read-only check of a 1.x bundle (spec 2, 4.1, 4.2, 4.5): SQLite's integrity check, the live
/// documents, and the blob files against the revisions that refer to them. It reads under
/// the document APIs on purpose, since a checker must look at every revision body and every blob
/// file and keep working when the database is damaged; nothing is written (``StorageProbe``'s
/// read-only open). `cbl check` prints it.
package enum StoreAudit {
    /// Audits the 1.x bundle `directory` (encrypted with `encryptionKey` when given: blob files are
    /// then IV + AES-CBC ciphertext, sized accordingly). Throws when the file cannot be read at all.
    package static func run(bundle directory: URL, encryptionKey: CBLSymmetricKey?) throws -> StorageAuditFindings {
        typealias Reference = StorageAuditFindings.Reference
        var findings = StorageAuditFindings()
        let connection = try SQLiteStore.openReadOnly(directory: directory, encryptionKey: encryptionKey)
        defer { connection.close() }
        try SQLiteStore.registerCollations(on: connection)
        findings.integrity = try integrityCheck(connection)
        findings.liveDocuments = Int(try connection.scalarInt(
            "SELECT count(DISTINCT doc_id) FROM revs WHERE current=1 AND deleted=0") ?? 0)

        // The revisions whose bodies keep blobs alive: the 1.x collector's rule (spec 4.5).
        var references: [BlobKey: [Reference]] = [:]
        var expectedSizes: [BlobKey: (Int64, Reference)] = [:]
        var unusableDigests: [(String, Reference)] = []
        try SQLiteStore.forEachBlobReference(on: connection) { blob in
            let reference = Reference(documentID: blob.documentID, revisionID: blob.revisionID, attachment: blob.attachmentName)
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
        let blobDirectory = directory.appendingPathComponent(SQLiteStore.attachmentsDirectoryName)
        func size(_ file: String) -> Int64 { StorageAuditFindings.fileSize(blobDirectory.appendingPathComponent(file)) }
        var files: [BlobKey: String] = [:]      // key → file name
        for name in (try? FileManager.default.contentsOfDirectory(atPath: blobDirectory.path)) ?? [] {
            if let key = BlobKey(fileName: name) { files[key] = name }
        }
        findings.blobFiles = files.count
        findings.referencedBlobs = references.count
        for (key, refs) in references.sorted(by: { $0.key.hexUppercase < $1.key.hexUppercase }) {
            guard let file = files[key] else {
                findings.missing.append(.init(digest: key.digest, file: key.fileName, references: refs))
                continue
            }
            if let (length, reference) = expectedSizes[key] {
                let expected = encryptionKey == nil ? length : encryptedFileSize(ofContentLength: length)
                let actual = size(file)
                if actual != expected {
                    findings.mismatched.append(.init(file: file, size: actual, expectedSize: expected, reference: reference))
                }
            }
        }
        for (digest, reference) in unusableDigests {
            findings.missing.append(.init(digest: digest, file: "-", references: [reference]))
        }
        for (key, file) in files.sorted(by: { $0.key.hexUppercase < $1.key.hexUppercase }) where references[key] == nil {
            findings.orphans.append(.init(file: file, size: size(file)))
        }
        return findings
    }

    /// An encrypted blob file's size: a 16-byte IV, then the content AES-CBC/PKCS#7-padded to
    /// whole 16-byte blocks (a full block of padding when the content fills its last block).
    static func encryptedFileSize(ofContentLength length: Int64) -> Int64 {
        let block = Int64(CBLSymmetricKey.blockSize)
        return block + (length / block + 1) * block
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

/// The findings type, named for tools that import only the product modules (`cbl check`).
package typealias StorageAuditFindings = SQLiteKit.StorageAuditFindings
