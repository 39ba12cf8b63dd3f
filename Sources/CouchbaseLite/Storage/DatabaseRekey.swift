import Foundation
import SQLiteKit
#if canImport(Glibc)
import Glibc
#endif

/// Changing the encryption key of a database directory so that a crash (kill -9, power loss) at
/// any point leaves a database that opens with the old key or with the new one, and loses nothing.
///
/// 1.x exported the database into a new file with `sqlcipher_export` and moved it over the old
/// one (`CBL_SQLiteStorage actionToChangeEncryptionKey:`); this keeps that and adds a commit
/// marker, so that the database file and the attachments switch keys together:
///
/// 1. The caller checkpoints the WAL into `db.sqlite3` and closes every connection; a `-wal`
///    left with content stops the re-key here (its frames belong to the old file).
/// 2. `db.sqlite3` is opened with SQLCipher (which reads a plain file with no key) and exported
///    into `db.sqlite3.rekeyed`, attached with the new key (or plain), then checked and synced.
/// 3. The attachments are staged with the new key (``AttachmentRekey/stage``).
/// 4. Commit point: the marker `rekey-commit` is written (temporary file, fsync, rename, fsync of
///    the directory). Before it exists, recovery throws the staged files away: the old key holds.
///    Once it exists, recovery rolls forward: the new key holds.
/// 5. Roll forward: the old file's empty `-wal`/`-shm` are removed, `db.sqlite3.rekeyed` is
///    renamed over `db.sqlite3` (atomic), the attachments are committed, the marker is removed;
///    each step is idempotent, with the directory synced after each rename or removal.
///
/// ``recover(directory:)`` runs before every read-write open, so a re-key cut short is finished
/// or undone before SQLite touches the file. A read-only open skips it and sees the old file.
enum DatabaseRekey {
    static let stagedFileName = "db.sqlite3.rekeyed"
    static let commitMarkerName = "rekey-commit"

    /// Finishes (marker present) or undoes (marker absent) a re-key a crash cut short.
    static func recover(directory: URL) throws {
        let fm = FileManager.default
        let marker = directory.appendingPathComponent(commitMarkerName)
        let staged = directory.appendingPathComponent(stagedFileName)
        if fm.fileExists(atPath: marker.path) {
            try rollForward(directory: directory)
        } else if fm.fileExists(atPath: staged.path) || fm.fileExists(atPath: staged.path + "-journal") {
            discardStaged(directory: directory)
        }
    }

    /// Re-keys the closed database in `directory` from `oldKey` to `newKey` (nil: plain), steps 2–5.
    static func run(directory: URL, from oldKey: CBLSymmetricKey?, to newKey: CBLSymmetricKey?) throws {
        let fm = FileManager.default
        let db = directory.appendingPathComponent(SQLiteStore.databaseFileName).path
        let staged = directory.appendingPathComponent(stagedFileName).path
        let attachments = directory.appendingPathComponent(SQLiteStore.attachmentsDirectoryName)
        try recover(directory: directory)
        if walHasFrames(db) {
            throw CBLError.dbError("Cannot change the encryption key: \(db)-wal still holds changes")
        }
        do {
            try export(from: db, oldKey: oldKey, to: staged, newKey: newKey)
            try syncFile(staged)
            syncDirectory(directory)
            crashPoint("staged")
            try AttachmentRekey.stage(attachments: attachments, from: oldKey, to: newKey)
            crashPoint("attachments-staged")
        } catch {
            discardStaged(directory: directory)
            throw error
        }
        try writeCommitMarker(directory: directory)
        crashPoint("committed")
        try rollForward(directory: directory)
        _ = fm
    }

    /// Step 2: `sqlcipher_export` of `source` into a fresh `target` with the new key, then a check
    /// that the copy opens with that key and holds the same rows.
    private static func export(from source: String, oldKey: CBLSymmetricKey?, to target: String, newKey: CBLSymmetricKey?) throws {
        let cipher: SQLiteLibrary
        do {
            cipher = try SQLiteLibrary.sqlCipher()
        } catch let e as SQLCipherUnavailable {
            throw CBLError.notImplemented("Cannot change the encryption key: \(e.message)")
        }
        let counts: [Int64]
        do {
            // `create` because an attached file is opened with the main file's flags (the target is new).
            let connection: SQLiteConnection
            if let oldKey {
                connection = try SQLiteConnection(path: source, mode: .init(readOnly: false, create: true),
                                                  rawKey: [UInt8](oldKey.keyData))
            } else {
                connection = try SQLiteConnection(path: source, mode: .init(readOnly: false, create: true), library: cipher)
            }
            defer { connection.close() }
            try SQLiteStore.registerCollations(on: connection)
            counts = try rowCounts(connection, schema: "main")
            try connection.attach(path: target, as: "rekeyed", rawKey: newKey.map { [UInt8]($0.keyData) })
            if newKey == nil {
                // A plain copy gets the page size SQLite uses today (SQLCipher 3's default is 1024).
                try? connection.execute("PRAGMA rekeyed.page_size = 4096")
            }
            try connection.exportMainDatabase(to: "rekeyed")
            try connection.execute("DETACH DATABASE rekeyed")
        } catch let e as SQLiteError {
            throw CBLError.dbError("Cannot change the encryption key: \(e.message)")
        }
        do {
            let check: SQLiteConnection
            if let newKey {
                check = try SQLiteConnection(path: target, mode: .init(readOnly: true, create: false),
                                             rawKey: [UInt8](newKey.keyData))
            } else {
                check = try SQLiteConnection(path: target, mode: .init(readOnly: true, create: false))
            }
            defer { check.close() }
            try SQLiteStore.registerCollations(on: check)
            guard try rowCounts(check, schema: "main") == counts else {
                throw CBLError.dbError("Cannot change the encryption key: the re-encrypted copy lost rows")
            }
        } catch let e as SQLiteError {
            throw CBLError.dbError("Cannot change the encryption key: the re-encrypted copy does not open (\(e.message))")
        }
    }

    private static func rowCounts(_ connection: SQLiteConnection, schema: String) throws -> [Int64] {
        try ["docs", "revs", "localdocs", "views", "info"].map {
            try connection.tableExists($0) ? (connection.scalarInt("SELECT count(*) FROM \(schema).\($0)") ?? 0) : -1
        }
    }

    private static func writeCommitMarker(directory: URL) throws {
        let marker = directory.appendingPathComponent(commitMarkerName).path
        let temp = marker + ".tmp"
        let fd = open(temp, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard fd >= 0 else { throw CBLError.dbError("Cannot write \(temp): errno \(errno)") }
        let text = Array("re-key committed: \(stagedFileName) replaces \(SQLiteStore.databaseFileName)\n".utf8)
        let ok = text.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } == text.count && fsync(fd) == 0
        close(fd)
        guard ok, rename(temp, marker) == 0 else { throw CBLError.dbError("Cannot write \(marker): errno \(errno)") }
        syncDirectory(directory)
    }

    /// Step 5, idempotent.
    private static func rollForward(directory: URL) throws {
        let db = directory.appendingPathComponent(SQLiteStore.databaseFileName).path
        let staged = directory.appendingPathComponent(stagedFileName).path
        let fm = FileManager.default
        if fm.fileExists(atPath: staged) {
            // The old file's WAL was checkpointed and emptied before the commit; its index must not
            // outlive it (a WAL is not tied to its database file by anything SQLite checks).
            unlink(db + "-wal")
            unlink(db + "-shm")
            crashPoint("before-rename")
            guard rename(staged, db) == 0 else {
                throw CBLError.dbError("Cannot install the re-keyed database: rename failed, errno \(errno)")
            }
            unlink(staged + "-journal")
            syncDirectory(directory)
            crashPoint("renamed")
        }
        try AttachmentRekey.commit(attachments: directory.appendingPathComponent(SQLiteStore.attachmentsDirectoryName))
        unlink(directory.appendingPathComponent(commitMarkerName).path)
        unlink(directory.appendingPathComponent(commitMarkerName).path + ".tmp")
        syncDirectory(directory)
    }

    private static func discardStaged(directory: URL) {
        let staged = directory.appendingPathComponent(stagedFileName).path
        for suffix in ["", "-journal", "-wal", "-shm"] { unlink(staged + suffix) }
        unlink(directory.appendingPathComponent(commitMarkerName).path + ".tmp")
        AttachmentRekey.discard(attachments: directory.appendingPathComponent(SQLiteStore.attachmentsDirectoryName))
        syncDirectory(directory)
    }

    /// True when `path-wal` exists with frames (more than its 32-byte header).
    private static func walHasFrames(_ path: String) -> Bool {
        let size = ((try? FileManager.default.attributesOfItem(atPath: path + "-wal"))?[.size] as? NSNumber)?.intValue ?? 0
        return size > 32
    }

    private static func syncFile(_ path: String) throws {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw CBLError.dbError("Cannot open \(path): errno \(errno)") }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw CBLError.dbError("Cannot sync \(path): errno \(errno)") }
    }

    private static func syncDirectory(_ directory: URL) {
        let fd = open(directory.path, O_RDONLY | O_DIRECTORY)
        guard fd >= 0 else { return }
        _ = fsync(fd)
        close(fd)
    }

    /// For the crash tests: `CBL_REKEY_CRASH_AT=<name>` kills the process at that point with SIGKILL.
    private static func crashPoint(_ name: String) {
        if let at = ProcessInfo.processInfo.environment["CBL_REKEY_CRASH_AT"], at == name {
            kill(getpid(), SIGKILL)
        }
    }
}
