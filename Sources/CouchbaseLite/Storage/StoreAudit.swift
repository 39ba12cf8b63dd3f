import Foundation
import SQLiteKit

/// What a read-only check of a 1.x bundle finds (spec 2, 4.1, 4.2, 4.5): SQLite's integrity check,
/// the live documents, and the blob files against the revisions that refer to them. It reads under
/// the document APIs on purpose, since a checker must look at every revision body and every blob
/// file and keep working when the database is damaged; nothing is written (``StorageProbe``'s
/// read-only open). `cbl check` prints it.
package struct StoreAudit: Sendable {
    /// A revision's attachment referring to a blob.
    package struct Reference: Sendable {
        package var documentID: String
        package var revisionID: String
        package var attachment: String
    }

    /// A blob revisions refer to that no file holds (`file` is "-" when the digest names no 1.x file).
    package struct MissingBlob: Sendable {
        package var digest: String
        package var file: String
        package var references: [Reference]
    }

    /// A blob file no revision refers to: left by a save that failed after storing its attachment
    /// (a full disk, a crash), by design; compaction deletes it (spec 4.2), so it is no problem.
    package struct OrphanedBlob: Sendable {
        package var file: String
        package var size: Int64
    }

    /// A blob file whose size is not the one the first revision referring to it promises.
    package struct MismatchedBlob: Sendable {
        package var file: String
        package var size: Int64
        package var expectedSize: Int64
        package var reference: Reference
    }

    /// `PRAGMA integrity_check`'s lines: `["ok"]` when SQLite found nothing wrong.
    package var integrity: [String] = []
    /// Documents whose current revision is not deleted.
    package var liveDocuments = 0
    /// Files in `attachments/` named like blobs.
    package var blobFiles = 0
    /// Distinct blobs the revisions refer to.
    package var referencedBlobs = 0
    package var missing: [MissingBlob] = []
    package var orphans: [OrphanedBlob] = []
    package var mismatched: [MismatchedBlob] = []

    /// Audits the 1.x bundle `directory` (encrypted with `encryptionKey` when given: blob files are
    /// then IV + AES-CBC ciphertext, sized accordingly). Throws when the file cannot be read at all.
    package init(bundle directory: URL, encryptionKey: CBLSymmetricKey?) throws {
        let connection = try SQLiteStore.openReadOnly(directory: directory, encryptionKey: encryptionKey)
        defer { connection.close() }
        try SQLiteStore.registerCollations(on: connection)
        integrity = try Self.integrityCheck(connection)
        liveDocuments = Int(try connection.scalarInt(
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
        func size(_ file: String) -> Int64 { Self.fileSize(blobDirectory.appendingPathComponent(file)) }
        var files: [BlobKey: String] = [:]      // key → file name
        for name in (try? FileManager.default.contentsOfDirectory(atPath: blobDirectory.path)) ?? [] {
            if let key = BlobKey(fileName: name) { files[key] = name }
        }
        blobFiles = files.count
        referencedBlobs = references.count
        for (key, refs) in references.sorted(by: { $0.key.hexUppercase < $1.key.hexUppercase }) {
            guard let file = files[key] else {
                missing.append(MissingBlob(digest: key.digest, file: key.fileName, references: refs))
                continue
            }
            if let (length, reference) = expectedSizes[key] {
                let expected = encryptionKey == nil ? length : Self.encryptedFileSize(ofContentLength: length)
                let actual = size(file)
                if actual != expected {
                    mismatched.append(MismatchedBlob(file: file, size: actual, expectedSize: expected, reference: reference))
                }
            }
        }
        for (digest, reference) in unusableDigests {
            missing.append(MissingBlob(digest: digest, file: "-", references: [reference]))
        }
        for (key, file) in files.sorted(by: { $0.key.hexUppercase < $1.key.hexUppercase }) where references[key] == nil {
            orphans.append(OrphanedBlob(file: file, size: size(file)))
        }
    }

    /// True when SQLite's integrity check found nothing wrong.
    package var integrityOK: Bool { integrity == ["ok"] }

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

    /// A file's size in bytes; 0 when it cannot be read.
    private static func fileSize(_ url: URL) -> Int64 {
        ((try? FileManager.default.attributesOfItem(atPath: url.path))?[.size] as? NSNumber)?.int64Value ?? 0
    }
}
