import CouchbaseLite
import CouchbaseLiteSwift
import Foundation
import SQLiteKit

/// A 1.x SQLite database opened for reading only (spec 8.1). The source is never written: a file
/// without a WAL is opened `immutable` and read-only; a file whose recent writes sit in a `-wal`
/// is copied (with its side files) to a private work directory first, because reading a WAL
/// writes the `-shm` index next to it. With `readingLiveInPlace` (catch-up, whose source is an
/// app's open database) a `-wal` beside its `-shm` is read in place instead, read-only, inside
/// one read transaction (``beginSnapshot()``): a consistent snapshot while the app goes on
/// writing, without copying the database each run. That is SQLite's own multi-process reading:
/// the reader shares the `-shm` index with the app and never checkpoints. A `-wal` without its
/// index, or a hot rollback journal, needs a recovery that writes: that file is still copied.
final class LegacySource {
    let bundle: URL
    let connection: SQLiteConnection
    let schemaVersion: Int
    let attachmentsDirectory: URL
    let hasExpiryColumn: Bool
    /// The key of an encrypted 1.x blob store (1.x encrypts attachments with the database's key); nil when plain.
    let blobKey: CBLSymmetricKey?
    private let workDirectory: URL
    private var workCopy: URL?
    /// Read in place while an app may write it: every read runs in one snapshot (``beginSnapshot()``).
    private var readsLiveFile = false
    private var inSnapshot = false

    init(bundle: URL, workDirectory: URL, encryptionKey: CBLSymmetricKey? = nil, readingLiveInPlace: Bool = false) throws {
        self.bundle = bundle
        let fm = FileManager.default
        let db = bundle.appendingPathComponent(CouchbaseStorageFormat.databaseFileName)
        attachmentsDirectory = bundle.appendingPathComponent("attachments")
        self.workDirectory = workDirectory
        try Self.checkFormat(bundle: bundle, encrypted: encryptionKey != nil)
        blobKey = CouchbaseStorageFormat.hasEncryptedBlobStore(bundle) ? encryptionKey : nil

        // SQLCipher with the raw key, as 1.x opened it (see SQLiteConnection+Encryption).
        let rawKey = encryptionKey.map { [UInt8]($0.keyData) }
        let contents: CouchbaseStorageFormat.Contents
        do {
            // A non-empty WAL or a hot rollback journal holds committed data an immutable open
            // would miss, and reading it writes beside the source: read a copy, unless the
            // caller reads a live database in place and its WAL index is there to share.
            let pending = SQLiteConnection.hasPendingJournal(path: db.path)
            if pending && readingLiveInPlace && Self.isReadableInPlace(db.path) {
                connection = try SQLiteConnection.openReadOnly(path: db.path, rawKey: rawKey)
                readsLiveFile = true
            } else if pending {
                let copy = workDirectory.appendingPathComponent("source-copy", isDirectory: true)
                try fm.createDirectory(at: copy, withIntermediateDirectories: true)
                for suffix in ["", "-wal", "-shm", "-journal"] where fm.fileExists(atPath: db.path + suffix) {
                    try fm.copyItem(atPath: db.path + suffix, toPath: copy.appendingPathComponent("db.sqlite3" + suffix).path)
                }
                workCopy = copy
                let path = copy.appendingPathComponent("db.sqlite3").path
                let mode = SQLiteConnection.OpenMode(readOnly: false, create: false)   // lets SQLite replay the WAL into the copy
                if let rawKey {
                    connection = try SQLiteConnection(path: path, mode: mode, rawKey: rawKey)
                } else {
                    connection = try SQLiteConnection(path: path, mode: mode)
                }
            } else {
                connection = try SQLiteConnection.openReadOnly(path: db.path, rawKey: rawKey)
            }
            // Pages read through a mapping, not a `pread` each (SQLCipher ignores it).
            try connection.execute("PRAGMA mmap_size=268435456")
            // `revs.revid` sorts with REVID (the winner order); view tables name the JSON collations.
            try SQLiteStore.registerCollations(on: connection)
            // The one detection's first read: what the file is, before anything else reads it.
            contents = try CouchbaseStorageFormat.contents(of: connection, file: db.path)
        } catch {
            guard let failure = CouchbaseStorageFormat.failure(for: error, file: db.path) else { throw error }
            throw Self.refusal(failure, bundle: bundle, keyGiven: encryptionKey != nil)
        }
        schemaVersion = contents.schemaVersion
        // The upgrader's own decision: which schema versions it converts. Spec 8.2 step 3:
        // LiteCore accepts 100…149; the two tested versions are 101 (1.2) and 102 (1.3/1.4).
        if contents.format == .liteCore {
            throw CouchbaseLiteError(.cantUpgradeDatabase, "\(bundle.lastPathComponent) is already a 2.x/3.x database (schema \(schemaVersion))")
        }
        guard Schema2.legacyRange.contains(schemaVersion) else {
            if schemaVersion < Schema2.legacyRange.lowerBound {
                throw CouchbaseLiteError(.databaseTooOld,
                    "Database schema \(schemaVersion) of \(bundle.lastPathComponent) is too old to upgrade (Couchbase Lite 1.2 or later is required)")
            }
            throw CouchbaseLiteError(.cantUpgradeDatabase,
                "Database schema \(schemaVersion) of \(bundle.lastPathComponent) isn't recognized")
        }
        guard contents.format == .sqlite1x else {
            throw CouchbaseLiteError(.wrongFormat, "\(bundle.lastPathComponent) has no docs/revs tables")
        }
        hasExpiryColumn = try connection.columns(of: "docs").contains("expiry_timestamp")
    }

    /// A WAL-mode file with its `-shm` index beside it (and no rollback journal): what an open 1.x
    /// database looks like, readable in place by a read-only connection.
    static func isReadableInPlace(_ path: String) -> Bool {
        let fm = FileManager.default
        return fm.fileExists(atPath: path + "-wal") && fm.fileExists(atPath: path + "-shm")
            && !fm.fileExists(atPath: path + "-journal")
    }

    /// Starts the read transaction every later read runs in, so a source that an app writes
    /// meanwhile is read as of one moment (its sequence and its rows agree). Ended by ``close()``.
    func beginSnapshot() throws {
        guard readsLiveFile, !inSnapshot else { return }
        try connection.execute("BEGIN")
        inSnapshot = true
        _ = try connection.scalarInt("SELECT count(*) FROM sqlite_master")   // takes the snapshot now
    }

    func close() {
        if inSnapshot { try? connection.execute("ROLLBACK") }
        connection.close()
        if let workCopy { try? FileManager.default.removeItem(at: workCopy) }
    }

    /// Refuses what is not a `.cblite2` directory, then runs the one bundle check
    /// (`CouchbaseStorageFormat.checkBundle`): ForestDB bundles, a missing `db.sqlite3` and
    /// encrypted blob stores without a key are refused before SQLite touches anything.
    static func checkFormat(bundle: URL, encrypted: Bool = false) throws {
        var isDir: ObjCBool = false
        guard FileManager.default.fileExists(atPath: bundle.path, isDirectory: &isDir) else {
            throw CouchbaseLiteError(.notFound, "No database at \(bundle.path)")
        }
        guard isDir.boolValue else {
            throw CouchbaseLiteError(.wrongFormat, "\(bundle.path) is a file, not a .cblite2 directory (use the legacy .cblite option for single-file 1.0/1.1 databases)")
        }
        // Encrypted blob files are decrypted while they are copied (`withPlaintext(of:_:)`).
        do {
            try CouchbaseStorageFormat.checkBundle(bundle, keyGiven: encrypted)
        } catch let failure as CouchbaseStorageFormat.Failure {
            throw refusal(failure, bundle: bundle, keyGiven: encrypted)
        }
    }

    /// The upgrader's words and status for what the detection found instead of a 1.x database.
    static func refusal(_ failure: CouchbaseStorageFormat.Failure, bundle: URL, keyGiven: Bool) -> CouchbaseLiteError {
        let name = bundle.lastPathComponent
        let db = bundle.appendingPathComponent(CouchbaseStorageFormat.databaseFileName).path
        switch failure {
        case .forestDB:
            return CouchbaseLiteError(.wrongFormat,
                "\(name) is a ForestDB database; Couchbase Lite 2.x cannot upgrade ForestDB storage (convert it to SQLite with 1.x first)")
        case .noDatabaseFile:
            return CouchbaseLiteError(.wrongFormat, "\(name) contains no db.sqlite3")
        case .encryptedWithoutKey:
            return CouchbaseLiteError(.notADatabaseFile, "\(name) is encrypted; give its encryption key")
        case .sqlCipherUnavailable(let reason):
            return CouchbaseLiteError(.cantOpenFile, "Cannot read encrypted \(db): \(reason)")
        case .notADatabase:
            return CouchbaseLiteError(.notADatabaseFile, keyGiven
                ? "\(name): wrong encryption key (or it is not an encrypted database)"
                : "\(name) is encrypted (SQLCipher) or is not a database; give its encryption key")
        case .corrupt(let reason):
            return CouchbaseLiteError(.corruptData, "Cannot read \(db): \(reason)")
        case .unreadable(let reason):
            return CouchbaseLiteError(.cantOpenFile, "Cannot read \(db): \(reason)")
        case .unknownFormat(let version, _):
            // Not thrown by the detection's first read (the caller decides); worded for completeness.
            return CouchbaseLiteError(.cantUpgradeDatabase, "Database schema \(version) of \(name) isn't recognized")
        }
    }

    // MARK: Reading

    func documentCount() throws -> Int {
        Int(try connection.scalarInt("SELECT count(*) FROM docs") ?? 0)
    }

    /// All revisions of every document, grouped by document in `docs` order (spec 8.2 step 4) and,
    /// within a document, winner first: current rows, non-deleted first, then highest revision ID
    /// by the REVID collation (the order of the 1.x `revs_current` index). Bodies only for leaves.
    func revisionRows() throws -> SQLiteStatement {
        let expiry = hasExpiryColumn ? "d.expiry_timestamp" : "NULL"
        return try connection.prepare("""
            SELECT d.doc_id, d.docid, r.sequence, r.revid, r.parent, r.current, r.deleted,
                   CASE WHEN r.current THEN r.json END, r.no_attachments, \(expiry)
            FROM docs d JOIN revs r ON r.doc_id = d.doc_id
            ORDER BY d.doc_id, r.current DESC, r.deleted, r.revid DESC
            """)
    }

    /// The source's last sequence (1.x spec: `revs` is AUTOINCREMENT, so sequences are never
    /// reused, even after compaction or purge): where a catch-up continues from.
    func lastSequence() throws -> Int64 {
        guard try connection.tableExists("sqlite_sequence") else { return 0 }
        return try connection.scalarInt("SELECT seq FROM sqlite_sequence WHERE name='revs'") ?? 0
    }

    /// The source's `info.publicUUID`: the identity a catch-up checks before continuing.
    func publicUUID() throws -> String {
        guard try connection.tableExists("info") else { return "" }
        let stmt = try connection.prepare("SELECT value FROM info WHERE key='publicUUID'")
        return try stmt.step() ? stmt.string(0) ?? "" : ""
    }

    /// Documents with a revision newer than `sequence`, by their newest sequence: a prefix of
    /// this list covers every change up to its last document's sequence (catch-up batches).
    /// Compaction keeps the current leaves' rows, so changed documents are found after it too.
    func changedDocuments(since sequence: Int64, upTo last: Int64) throws -> [(docRow: Int64, sequence: Int64)] {
        let stmt = try connection.prepare("""
            SELECT doc_id, max(sequence) AS m FROM revs WHERE sequence > ? AND sequence <= ?
            GROUP BY doc_id ORDER BY m
            """)
        try stmt.bind(sequence, at: 1)
        try stmt.bind(last, at: 2)
        var out: [(Int64, Int64)] = []
        while try stmt.step() { out.append((stmt.int64(0), stmt.int64(1))) }
        return out
    }

    /// The documents a conversion carries: `docs` rows whose ID does not start with `_` (design
    /// documents and other `_` IDs are never migrated). Counted on the `docid` index.
    func convertibleDocumentCount() throws -> Int {
        let all = try connection.scalarInt("SELECT count(*) FROM docs") ?? 0
        let underscored = try connection.scalarInt("SELECT count(*) FROM docs WHERE docid >= '_' AND docid < '`'") ?? 0
        return Int(all - underscored)
    }

    /// The IDs of ``convertibleDocumentCount()``'s documents.
    func convertibleDocumentIDs() throws -> Set<String> {
        var ids = Set<String>()
        let stmt = try connection.prepare("SELECT docid FROM docs WHERE NOT (docid >= '_' AND docid < '`')")
        while try stmt.step() { if let id = stmt.string(0) { ids.insert(id) } }
        return ids
    }

    /// ``revisionRows()`` of the given `docs` rows only.
    func revisionRows<C: Swift.Collection>(ofDocuments rows: C) throws -> SQLiteStatement where C.Element == Int64 {
        let expiry = hasExpiryColumn ? "d.expiry_timestamp" : "NULL"
        let list = rows.map { String($0) }.joined(separator: ",")
        return try connection.prepare("""
            SELECT d.doc_id, d.docid, r.sequence, r.revid, r.parent, r.current, r.deleted,
                   CASE WHEN r.current THEN r.json END, r.no_attachments, \(expiry)
            FROM docs d JOIN revs r ON r.doc_id = d.doc_id
            WHERE d.doc_id IN (\(list))
            ORDER BY d.doc_id, r.current DESC, r.deleted, r.revid DESC
            """)
    }

    /// Local documents (`_local/…`), never migrated by LiteCore (an option here).
    func localDocuments() throws -> [(docID: String, revID: String, json: [UInt8]?)] {
        guard try connection.tableExists("localdocs") else { return [] }
        var out: [(String, String, [UInt8]?)] = []
        let stmt = try connection.prepare("SELECT docid, revid, json FROM localdocs ORDER BY docid")
        while try stmt.step() {
            out.append((stmt.string(0) ?? "", stmt.string(1) ?? "", stmt.bytes(2)))
        }
        return out
    }

    /// The 1.x blob file of a SHA-1 key (the 1.x naming rule: ``BlobKey/file(in:)``).
    func attachmentFile(forKey key: [UInt8]) -> URL? {
        BlobKey(bytes: key)?.file(in: attachmentsDirectory)
    }

    /// Calls `body` with a plaintext file of the blob `file`: the file itself for a plain store;
    /// for an encrypted one (1.x `CBLSymmetricKey` format) its content decrypted into the work
    /// directory, removed afterwards. A blob that does not decrypt is the wrong key (401).
    func withPlaintext<T>(of file: URL, _ body: (URL) throws -> T) throws -> T {
        guard let blobKey else { return try body(file) }
        guard let encrypted = InputStream(url: file) else {
            throw CouchbaseLiteError(.notFound, "Cannot read blob file \(file.path)")
        }
        let plain = workDirectory.appendingPathComponent("plain-\(UUID().uuidString).blob")
        let fm = FileManager.default
        try fm.createDirectory(at: workDirectory, withIntermediateDirectories: true)
        guard fm.createFile(atPath: plain.path, contents: nil) else {
            throw CouchbaseLiteError(.ioError, "Cannot create \(plain.path)")
        }
        defer { try? fm.removeItem(at: plain) }
        let output = try FileHandle(forWritingTo: plain)
        let stream = blobKey.decryptStream(encrypted)
        stream.open()
        defer { stream.close() }
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        do {
            while true {
                let n = stream.read(&buffer, maxLength: buffer.count)
                if n < 0 {
                    throw CouchbaseLiteError(.notADatabaseFile,
                        "\(bundle.lastPathComponent): wrong encryption key (attachment \(file.lastPathComponent) does not decrypt)")
                }
                if n == 0 { break }
                try output.write(contentsOf: buffer[0..<n])
            }
            try output.close()
        } catch {
            try? output.close()
            throw error
        }
        return try body(plain)
    }
}
