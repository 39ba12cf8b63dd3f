import BlobDigest
import Crypto
import Foundation

/// The SHA-1 key of a blob: 20 bytes, named in the file system as 40 hex digits (spec 4.2). The
/// one owner of the 1.x digest ↔ key ↔ file-name rule, for the store, `cbl check` and the upgrader.
package struct BlobKey: Hashable, Sendable {
    package let bytes: [UInt8]

    /// A key from its 20 bytes; nil for any other length.
    package init?(bytes: [UInt8]) {
        guard bytes.count == 20 else { return nil }
        self.bytes = bytes
    }

    /// The key of this content (its SHA-1).
    init(content: Data) {
        bytes = Array(Insecure.SHA1.hash(data: content))
    }

    /// Parses an attachment `digest` of the form `sha1-<base64>` (``SHA1BlobDigest``).
    package init?(digest: String) {
        guard let key = SHA1BlobDigest.key(fromDigest: digest) else { return nil }
        self.init(bytes: key)
    }

    /// Parses a blob file name (`<40 hex>.blob`, either case).
    package init?(fileName: String) {
        guard fileName.hasSuffix(".blob") else { return nil }
        let hexPart = fileName.dropLast(5)
        guard hexPart.utf8.count == 40 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(20)
        var iterator = hexPart.utf8.makeIterator()
        while let hi = iterator.next(), let lo = iterator.next() {
            guard let h = hexValue(hi), let l = hexValue(lo) else { return nil }
            out.append(h << 4 | l)
        }
        self.init(bytes: out)
    }

    /// `sha1-<base64>`, the form stored in `_attachments`.
    package var digest: String { SHA1BlobDigest.digest(forKey: bytes) }
    /// The 40 upper-case hex digits 1.2+ names the blob file with.
    package var hexUppercase: String { hex(bytes).uppercased() }
    /// The file name 1.2+ writes: `<UPPER-HEX>.blob`.
    package var fileName: String { hexUppercase + ".blob" }

    /// The blob's file in a 1.x `attachments/` directory, trying the upper-case name 1.2+ writes
    /// and the lower-case one Android 1.0 / .NET 1.0–1.1 wrote (Linux file systems are
    /// case-sensitive); nil when neither exists.
    package func file(in directory: URL) -> URL? {
        let fm = FileManager.default
        let upper = directory.appendingPathComponent(fileName)
        if fm.fileExists(atPath: upper.path) { return upper }
        let lower = directory.appendingPathComponent(hex(bytes) + ".blob")
        if fm.fileExists(atPath: lower.path) { return lower }
        return nil
    }
}

private func hexValue(_ c: UInt8) -> UInt8? {
    switch c {
    case 0x30...0x39: return c - 0x30
    case 0x41...0x46: return c - 0x41 + 10
    case 0x61...0x66: return c - 0x61 + 10
    default: return nil
    }
}

/// The 1.x blob store: `attachments/<UPPER-HEX-SHA1>.blob`, one file per distinct content,
/// written through a temporary file and renamed into place (spec 4.2).
///
/// An encrypted store (1.x `CBL_BlobStore` with an `encryptionKey`) has a file `_encryption`
/// holding the algorithm name `AES`, and every blob file is the content in ``CBLSymmetricKey``'s
/// format (IV + AES-256-CBC). The file name stays the SHA-1 of the plaintext, so deduplication
/// and `digest` do not change. See `BlobStore+Encryption.swift`.
final class BlobStore: Sendable {
    let directory: URL
    /// The key blob files are encrypted with; nil for a plain store. Changes only through
    /// ``changeEncryptionKey(from:to:)``.
    var encryptionKey: CBLSymmetricKey? { key.withLock { $0 } }
    private let key: Locked<CBLSymmetricKey?>

    /// Opens the store in `directory`. With `encryptionKey` the store must be encrypted with that
    /// key (a plain store is encrypted now, as 1.x did; not when `readOnly`); without one it must
    /// not be encrypted. A missing or wrong key is a 401 error.
    init(directory: URL, encryptionKey: CBLSymmetricKey? = nil, readOnly: Bool = false) throws {
        self.directory = directory
        self.key = Locked(nil)
        try open(with: encryptionKey, readOnly: readOnly)
    }

    func setEncryptionKey(_ newKey: CBLSymmetricKey?) { key.withLock { $0 = newKey } }

    /// The file holding a blob (encrypted when the store is); see ``BlobKey/file(in:)``.
    func url(for key: BlobKey) -> URL? { key.file(in: directory) }

    /// The file holding a blob's plain content; nil when missing or when the store is encrypted
    /// (1.x `blobPathForKey:` answers nil then: the file is not readable as is).
    func plaintextURL(for key: BlobKey) -> URL? {
        encryptionKey == nil ? url(for: key) : nil
    }

    func contains(_ key: BlobKey) -> Bool { url(for: key) != nil }

    /// The content of a blob (decrypted); nil when missing or unreadable.
    func contents(of key: BlobKey) -> Data? {
        (try? read(key)) ?? nil
    }

    /// The content of a blob (decrypted, checked against its SHA-1 when encrypted); nil when
    /// missing; a 401 error when it does not decrypt with the store's key.
    func read(_ blob: BlobKey) throws -> Data? {
        guard let url = url(for: blob), let raw = try? Data(contentsOf: url) else { return nil }
        guard let encryptionKey else { return raw }
        let plain = try encryptionKey.decrypt(raw)
        guard BlobKey(content: plain) == blob else { throw CBLSymmetricKey.cannotDecrypt }
        return plain
    }

    /// The content length of a blob (for an encrypted blob, from the file size and the last
    /// block's padding).
    func size(of key: BlobKey) -> UInt64? {
        guard let url = url(for: key),
              let attrs = try? FileManager.default.attributesOfItem(atPath: url.path),
              let fileSize = (attrs[.size] as? NSNumber)?.uint64Value else { return nil }
        guard let encryptionKey else { return fileSize }
        guard let padding = try? Self.paddingLength(of: url, key: encryptionKey) else { return nil }
        return fileSize - UInt64(CBLSymmetricKey.blockSize) - UInt64(padding)
    }

    /// Stores bytes; returns their key and length.
    @discardableResult
    func store(_ data: Data) throws -> (key: BlobKey, length: UInt64) {
        let writer = try BlobWriter(store: self)
        try writer.append(data)
        return try writer.install()
    }

    /// Copies a file into the store, streaming it (never held whole in memory).
    func store(contentsOf source: URL) throws -> (key: BlobKey, length: UInt64) {
        guard let input = InputStream(url: source) else {
            throw CBLError.notFound("Cannot read attachment file \(source.path)")
        }
        input.open()
        defer { input.close() }
        let writer = try BlobWriter(store: self)
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let n = input.read(&buffer, maxLength: buffer.count)
            if n < 0 { writer.cancel(); throw CBLError.dbError("Error reading \(source.path)") }
            if n == 0 { break }
            try writer.append(Data(buffer[0..<n]))
        }
        return try writer.install()
    }

    /// Every blob key present (files not named like blobs are ignored, spec 4.2).
    func allKeys() -> [BlobKey] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.compactMap(BlobKey.init(fileName:))
    }

    /// Deletes every blob whose key is not in `keep`. Returns how many were deleted.
    @discardableResult
    func deleteBlobs(keeping keep: Set<BlobKey>) -> Int {
        let fm = FileManager.default
        let names = (try? fm.contentsOfDirectory(atPath: directory.path)) ?? []
        var deleted = 0
        for name in names {
            guard let key = BlobKey(fileName: name), !keep.contains(key) else { continue }
            if (try? fm.removeItem(at: directory.appendingPathComponent(name))) != nil { deleted += 1 }
        }
        return deleted
    }
}

/// Streams a blob into the store: bytes go to a temporary file while SHA-1 (and MD5, which
/// CouchDB peers name attachments by) are computed over the plaintext, then the file is renamed
/// to its key. In an encrypted store the file gets the ciphertext, produced as the bytes arrive
/// (1.x `CBL_BlobStoreWriter` with its `_encryptor`).
// @unchecked because one writer is fed by one thread at a time (a save, or a replicator's download), then finished by it.
final class BlobWriter: @unchecked Sendable {
    private let directory: URL
    private let tempURL: URL
    private let handle: FileHandle
    private let encryptor: CBCEncryptor?
    private var sha1 = Insecure.SHA1()
    private var md5 = Insecure.MD5()
    private(set) var length: UInt64 = 0
    private var finished = false

    convenience init(store: BlobStore) throws {
        try self.init(directory: store.directory, key: store.encryptionKey)
    }

    /// A writer into `directory` (a store's, or a re-key's new one), encrypting with `key`.
    init(directory: URL, key: CBLSymmetricKey?) throws {
        self.directory = directory
        // Java-style temp names (`tmp*.blobtmp`) are ignored by blob enumeration (spec 4.2).
        tempURL = directory.appendingPathComponent("tmp\(UUID().uuidString).blobtmp")
        guard FileManager.default.createFile(atPath: tempURL.path, contents: nil) else {
            // A full disk may refuse even the empty file (no inode or directory block left).
            if errno == ENOSPC || errno == EDQUOT { throw CBLError.insufficientStorage("the disk is full (creating an attachment file)") }
            throw CBLError.dbError("Cannot create a temporary file in \(directory.path)")
        }
        handle = try FileHandle(forWritingTo: tempURL)
        encryptor = key.map(CBCEncryptor.init(key:))
    }

    deinit { if !finished { cancel() } }

    /// Appends bytes. A failed write (a full disk: 507) removes the temporary file: the writer
    /// is finished and nothing of it stays on disk.
    func append(_ data: Data) throws {
        sha1.update(data: data)
        md5.update(data: data)
        length += UInt64(data.count)
        do {
            if let encryptor {
                try handle.write(contentsOf: try encryptor.update(data))
            } else {
                try handle.write(contentsOf: data)
            }
        } catch {
            cancel()
            throw CBLError.fileWrite(error, "writing an attachment")
        }
    }

    /// The MD5 digest in CouchDB's form (`md5-<base64>`), valid after `install()`.
    private(set) var md5Digest: String = ""

    /// Syncs and renames the file into place; identical content already present is kept (dedup).
    func install() throws -> (key: BlobKey, length: UInt64) {
        finished = true
        do {
            if let encryptor { try handle.write(contentsOf: try encryptor.finish()) }
            // On a full disk the sync is where delayed allocation fails: never install a partial blob.
            try handle.synchronize()
            try handle.close()
        } catch {
            cancel()
            throw CBLError.fileWrite(error, "writing an attachment")
        }
        let key = BlobKey(bytes: Array(sha1.finalize()))!   // kept: a SHA-1 digest is always 20 bytes
        let md5Bytes = Array(md5.finalize())
        md5Digest = "md5-" + Data(md5Bytes).base64EncodedString()
        BlobMD5.remember(md5Bytes, for: key)
        let fm = FileManager.default
        let dest = directory.appendingPathComponent(key.fileName)
        let lower = directory.appendingPathComponent(hex(key.bytes) + ".blob")
        if fm.fileExists(atPath: dest.path) || fm.fileExists(atPath: lower.path) {
            try? fm.removeItem(at: tempURL)
        } else if rename(tempURL.path, dest.path) != 0 {
            let code = errno
            try? fm.removeItem(at: tempURL)
            if code == ENOSPC { throw CBLError.insufficientStorage("the disk is full (installing blob \(key.fileName))") }
            throw CBLError.dbError("Cannot install blob \(key.fileName): errno \(code)")
        }
        return (key, length)
    }

    func cancel() {
        finished = true
        try? handle.close()
        try? FileManager.default.removeItem(at: tempURL)
    }
}
