import Foundation

/// Re-keying the blob store so that a crash (kill -9, power loss) at any point leaves a store
/// readable with the old key or the new one, never a mix.
///
/// 1.x (`actionToChangeEncryptionKey:`) copies every blob, re-encrypted, into a temporary
/// directory and then moves it over the store. The same here, with the directories named so a
/// later open can tell what happened (`A` = `attachments`, the live store):
///
/// 1. Prepare: remove any stale `A.rekey-new`; create it; stream every blob of `A` through the
///    old key's decryption (checking each against its SHA-1, so a wrong old key fails here and
///    changes nothing) and the new key's encryption into it, each file synced; write its
///    `_encryption` marker (new key) or none (nil); last, write `A.rekey-new/_rekey_ready`
///    (the fixed text `BlobStore.rekeyCheckText` encrypted with the new key, empty for nil)
///    and sync the directory. Until `_rekey_ready` exists the new directory is garbage.
/// 2. The caller's step (the database re-keys its SQLite file here, atomically).
/// 3. Commit: rename `A` → `A.rekey-old`, rename `A.rekey-new` → `A`, then delete
///    `A/_rekey_ready` and `A.rekey-old`. The second rename is the switch.
///
/// Recovery (``recoverInterruptedKeyChange(directory:currentKey:)``, called by the database
/// open path with the key that just opened the SQLite file, before the store is opened):
/// - `A` missing, `A.rekey-new` present: the crash fell between the two renames, after step 2:
///   finish (rename new → `A`, delete old).
/// - `A` and `A.rekey-new` present: if `_rekey_ready` exists and decrypts to the check text with
///   the current key (or is empty and the key is nil), step 2 happened: finish the commit; else
///   roll back (delete `A.rekey-new`).
/// - `A` and `A.rekey-old` present: the crash fell in the cleanup: delete `A.rekey-old`.
/// - a leftover `A/_rekey_ready` is deleted.
///
/// Writers must be stopped during a re-key (the database holds its write lock): a blob added to
/// `A` after its copy started would be lost at the switch.
extension BlobStore {
    static let rekeyNewSuffix = ".rekey-new"
    static let rekeyOldSuffix = ".rekey-old"
    static let rekeyReadyName = "_rekey_ready"
    static let rekeyCheckText = Data("Couchbase Lite attachments re-key check".utf8)

    /// Re-encrypts every blob from `oldKey` to `newKey` (nil = plain), crash-safely (see above),
    /// then uses `newKey`. `between` runs after the new copy is complete and before the switch:
    /// the database re-keys its SQLite file there, so both change together. If `between` throws,
    /// nothing changes.
    func changeEncryptionKey(from oldKey: CBLSymmetricKey?, to newKey: CBLSymmetricKey?,
                             between: () throws -> Void = {}) throws {
        let newDirectory = try prepareKeyChange(from: oldKey, to: newKey)
        do {
            try between()
        } catch {
            try? FileManager.default.removeItem(at: newDirectory)
            throw error
        }
        try Self.commitKeyChange(directory: directory)
        setEncryptionKey(newKey)
    }

    /// Step 1: the complete re-encrypted copy in `A.rekey-new`, ready flag last. Returns its URL.
    func prepareKeyChange(from oldKey: CBLSymmetricKey?, to newKey: CBLSymmetricKey?) throws -> URL {
        let fm = FileManager.default
        let newDirectory = Self.sibling(of: directory, suffix: Self.rekeyNewSuffix)
        if fm.fileExists(atPath: newDirectory.path) { try fm.removeItem(at: newDirectory) }
        if !fm.fileExists(atPath: directory.path) {
            try fm.createDirectory(at: directory, withIntermediateDirectories: true)
        }
        try fm.createDirectory(at: newDirectory, withIntermediateDirectories: false)
        do {
            let names = try fm.contentsOfDirectory(atPath: directory.path)
            for name in names {
                guard let blob = BlobKey(fileName: name) else { continue }
                let source = directory.appendingPathComponent(name)
                let reader = try BlobReader(url: source, key: oldKey, expected: blob)
                let writer = try BlobWriter(directory: newDirectory, key: newKey)
                do {
                    while let chunk = try reader.read(upToCount: 256 * 1024) { try writer.append(chunk) }
                    reader.close()
                    let (written, _) = try writer.install()
                    guard written == blob else {
                        // A plain store's file whose content does not match its name: keep it as is.
                        throw CBLError.dbError("Attachment file \(name) does not match its digest")
                    }
                } catch {
                    writer.cancel()
                    throw error
                }
            }
            if newKey != nil { try Self.mark(newDirectory, encrypted: true) }
            let check = try newKey.map { try $0.encrypt(Self.rekeyCheckText) } ?? Data()
            try writeDurably(check, to: newDirectory.appendingPathComponent(Self.rekeyReadyName))
            fsyncDirectory(directory.deletingLastPathComponent())
        } catch {
            try? fm.removeItem(at: newDirectory)
            throw error
        }
        return newDirectory
    }

    /// Step 3: the switch and the cleanup.
    static func commitKeyChange(directory: URL) throws {
        let fm = FileManager.default
        let parent = directory.deletingLastPathComponent()
        let newDirectory = sibling(of: directory, suffix: rekeyNewSuffix)
        let oldDirectory = sibling(of: directory, suffix: rekeyOldSuffix)
        if fm.fileExists(atPath: oldDirectory.path) { try fm.removeItem(at: oldDirectory) }
        if fm.fileExists(atPath: directory.path) {
            guard rename(directory.path, oldDirectory.path) == 0 else {
                throw CBLError.dbError("Cannot move \(directory.path) aside: errno \(errno)")
            }
        }
        guard rename(newDirectory.path, directory.path) == 0 else {
            throw CBLError.dbError("Cannot move the re-keyed attachments into place: errno \(errno)")
        }
        fsyncDirectory(parent)
        try? fm.removeItem(at: directory.appendingPathComponent(rekeyReadyName))
        try? fm.removeItem(at: oldDirectory)
        fsyncDirectory(parent)
    }

    /// Finishes or rolls back a re-key a crash interrupted (see the protocol above), given the
    /// key that opened the database (nil for none). Call before opening the store.
    static func recoverInterruptedKeyChange(directory: URL, currentKey: CBLSymmetricKey?) throws {
        let fm = FileManager.default
        let newDirectory = sibling(of: directory, suffix: rekeyNewSuffix)
        let oldDirectory = sibling(of: directory, suffix: rekeyOldSuffix)
        let hasLive = fm.fileExists(atPath: directory.path)
        let hasNew = fm.fileExists(atPath: newDirectory.path)
        if !hasLive && hasNew {
            // Past the first rename, so past the database's own re-key: finish.
            try commitKeyChange(directory: directory)
        } else if hasNew {
            if isReady(newDirectory, for: currentKey) {
                try commitKeyChange(directory: directory)
            } else {
                try fm.removeItem(at: newDirectory)
            }
        } else if !hasLive && fm.fileExists(atPath: oldDirectory.path) {
            // Not reachable through the protocol; keep the only copy there is.
            guard rename(oldDirectory.path, directory.path) == 0 else {
                throw CBLError.dbError("Cannot restore \(directory.path): errno \(errno)")
            }
        }
        if fm.fileExists(atPath: oldDirectory.path) { try fm.removeItem(at: oldDirectory) }
        let ready = directory.appendingPathComponent(rekeyReadyName)
        if fm.fileExists(atPath: ready.path) { try fm.removeItem(at: ready) }
    }

    /// True when a prepared copy is complete and made with `key`.
    static func isReady(_ newDirectory: URL, for key: CBLSymmetricKey?) -> Bool {
        guard let check = FileManager.default.contents(atPath: newDirectory.appendingPathComponent(rekeyReadyName).path) else {
            return false
        }
        guard let key else { return check.isEmpty }
        return (try? key.decrypt(check)) == rekeyCheckText
    }

    static func sibling(of directory: URL, suffix: String) -> URL {
        let standardized = directory.standardizedFileURL
        return standardized.deletingLastPathComponent().appendingPathComponent(standardized.lastPathComponent + suffix)
    }
}
