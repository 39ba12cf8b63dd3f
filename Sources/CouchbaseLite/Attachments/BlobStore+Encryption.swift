import Crypto
import Foundation

/// Encrypted blob stores as 1.x keeps them (couchbase-lite-ios 1.4 `CBL_BlobStore.m`):
/// - the file `_encryption` in the store holds the algorithm name, `AES` (UTF-8, no newline);
///   present means every blob file is encrypted, absent means none is;
/// - a blob file holds ``CBLSymmetricKey``'s format of the content (IV + AES-256-CBC/PKCS#7);
/// - the file name is still the SHA-1 of the plaintext, so `digest` and deduplication are those
///   of a plain store; reading checks the decrypted content against it.
extension BlobStore {
    /// The marker file's name (`kEncryptionMarkerFilename`).
    static let encryptionMarkerName = "_encryption"
    /// What the marker holds (`kEncryptionAlgorithm`).
    static let encryptionAlgorithm = "AES"

    var markerURL: URL { directory.appendingPathComponent(Self.encryptionMarkerName) }

    /// True when the directory is marked encrypted.
    static func isMarkedEncrypted(_ directory: URL) -> Bool {
        FileManager.default.fileExists(atPath: directory.appendingPathComponent(encryptionMarkerName).path)
    }

    /// What 1.x's `verifyExistingStore:` checks, plus a check of the key itself: 1.x only
    /// learnt of a wrong key from SQLCipher, a store opened alone learns it here.
    func open(with requested: CBLSymmetricKey?, readOnly: Bool) throws {
        let fm = FileManager.default
        var isDirectory: ObjCBool = false
        guard fm.fileExists(atPath: directory.path, isDirectory: &isDirectory), isDirectory.boolValue else {
            // A new store (1.x creates the directory and marks it); read-only: nothing to read.
            if !readOnly {
                try fm.createDirectory(at: directory, withIntermediateDirectories: true)
                if requested != nil { try Self.mark(directory, encrypted: true) }
            }
            setEncryptionKey(requested)
            return
        }
        if let data = fm.contents(atPath: markerURL.path) {
            let algorithm = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            guard let requested else {
                throw CBLError.unauthorized("The attachments of this database are encrypted: an encryption key is required")
            }
            guard algorithm == Self.encryptionAlgorithm else {
                throw CBLError.unauthorized("The attachments use an unknown encryption '\(algorithm)'")
            }
            try Self.verify(requested, directory: directory)
            setEncryptionKey(requested)
        } else if fm.fileExists(atPath: markerURL.path) {
            throw CBLError.dbError("Cannot read \(markerURL.path)")
        } else if let requested {
            // Plain store, key given: 1.x encrypts it now ("BlobStore should be encrypted;
            // fixing it now"), e.g. a store made before 1.x encrypted attachments.
            setEncryptionKey(nil)
            if readOnly {
                throw CBLError.unauthorized("The attachments of this database are not encrypted (opened read-only with a key)")
            }
            try changeEncryptionKey(from: nil, to: requested)
        } else {
            setEncryptionKey(nil)
        }
    }

    /// Checks `key` on up to three blob files: a file up to 1 MB must decrypt to content whose
    /// SHA-1 is its name (certain); of a bigger one only the last block is decrypted, which must
    /// end in valid PKCS#7 padding (a wrong key passes with probability about 1/200). An empty
    /// store accepts any key, as 1.x's does.
    static func verify(_ key: CBLSymmetricKey, directory: URL) throws {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        var checked = 0
        for name in names {
            guard let blob = BlobKey(fileName: name) else { continue }
            let url = directory.appendingPathComponent(name)
            do {
                let size = (try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? NSNumber)?.intValue ?? 0
                if size <= 1 << 20 {
                    let plain = try key.decrypt(try Data(contentsOf: url))
                    guard BlobKey(content: plain) == blob else { throw CBLSymmetricKey.cannotDecrypt }
                } else {
                    _ = try paddingLength(of: url, key: key)
                }
            } catch {
                throw CBLError.unauthorized("Wrong encryption key: the attachments do not decrypt with it")
            }
            checked += 1
            if checked == 3 { break }
        }
    }

    /// The PKCS#7 padding length of an encrypted file, from its last two blocks only.
    static func paddingLength(of url: URL, key: CBLSymmetricKey) throws -> Int {
        let handle = try FileHandle(forReadingFrom: url)
        defer { try? handle.close() }
        let size = try handle.seekToEnd()
        let block = UInt64(CBLSymmetricKey.blockSize)
        guard size >= 2 * block, size % block == 0 else { throw CBLSymmetricKey.cannotDecrypt }
        try handle.seek(toOffset: size - 2 * block)
        let tail = try handle.read(upToCount: Int(2 * block)) ?? Data()
        guard tail.count == Int(2 * block) else { throw CBLSymmetricKey.cannotDecrypt }
        let decryptor = CBCDecryptor(key: key)
        _ = try decryptor.update(tail)   // the first block acts as the IV of the last one
        let last = try decryptor.finish()
        return CBLSymmetricKey.blockSize - last.count
    }

    /// Writes or removes the marker (1.x `markEncrypted:`), durably.
    static func mark(_ directory: URL, encrypted: Bool) throws {
        let marker = directory.appendingPathComponent(encryptionMarkerName)
        if encrypted {
            try writeDurably(Data(encryptionAlgorithm.utf8), to: marker)
        } else if FileManager.default.fileExists(atPath: marker.path) {
            try FileManager.default.removeItem(at: marker)
            fsyncDirectory(directory)
        }
    }

    /// Opens a blob for streaming reads (decrypting when the store is encrypted); nil when missing.
    func openReader(for blob: BlobKey) throws -> BlobReader? {
        guard let url = url(for: blob) else { return nil }
        return try BlobReader(url: url, key: encryptionKey, expected: blob)
    }
}

// MARK: Files

/// Writes a small file through a temporary name, syncing the file and its directory, so it is
/// either absent or complete after a crash.
func writeDurably(_ data: Data, to url: URL) throws {
    let temp = url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).\(UUID().uuidString).tmp")
    guard FileManager.default.createFile(atPath: temp.path, contents: data) else {
        throw CBLError.dbError("Cannot write \(temp.path)")
    }
    if let handle = try? FileHandle(forWritingTo: temp) {
        try? handle.synchronize()
        try? handle.close()
    }
    guard rename(temp.path, url.path) == 0 else {
        let code = errno
        try? FileManager.default.removeItem(at: temp)
        throw CBLError.dbError("Cannot write \(url.path): errno \(code)")
    }
    fsyncDirectory(url.deletingLastPathComponent())
}

/// Makes a directory's entries (renames, new files) durable.
func fsyncDirectory(_ url: URL) {
    let fd = Foundation.open(url.path, O_RDONLY)
    guard fd >= 0 else { return }
    fsync(fd)
    close(fd)
}

/// Streams a blob's content out of the store, decrypting it when the store is encrypted. An
/// encrypted blob is checked against its SHA-1 at the end, so a wrong key or a damaged file is
/// an error (401), never silently wrong bytes.
// @unchecked because one reader is read by one thread at a time; Sendable only to be handed to the thread that streams it.
final class BlobReader: @unchecked Sendable {
    private let handle: FileHandle
    private let decryptor: CBCDecryptor?
    private let expected: BlobKey
    private var sha1 = Insecure.SHA1()
    private var done = false

    init(url: URL, key: CBLSymmetricKey?, expected: BlobKey) throws {
        handle = try FileHandle(forReadingFrom: url)
        decryptor = key.map(CBCDecryptor.init(key:))
        self.expected = expected
    }

    deinit { try? handle.close() }

    /// Decrypted bytes a skip read past, returned first by the next read.
    private var pending: Data?

    /// The next piece of content (at most about `count` bytes); nil at the end.
    func read(upToCount count: Int) throws -> Data? {
        if let held = pending {
            pending = nil
            return held
        }
        while !done {
            let chunk = try handle.read(upToCount: count) ?? Data()
            guard let decryptor else {
                if chunk.isEmpty { done = true; return nil }
                return chunk
            }
            let plain: Data
            if chunk.isEmpty {
                plain = try decryptor.finish()
                done = true
            } else {
                plain = try decryptor.update(chunk)
            }
            sha1.update(data: plain)
            if done, BlobKey(bytes: Array(sha1.finalize())) != expected { throw CBLSymmetricKey.cannotDecrypt }
            if !plain.isEmpty { return plain }
        }
        return nil
    }

    /// Skips `count` bytes of content: a seek when the file is plaintext, else decrypting
    /// and dropping them (CBC decrypts in order).
    func skip(_ count: Int) throws {
        guard count > 0 else { return }
        if decryptor == nil {
            try handle.seek(toOffset: try handle.offset() + UInt64(count))
            return
        }
        var left = count
        while left > 0, let piece = try read(upToCount: min(left, 256 * 1024)) {
            // A decrypted piece may run past the skipped bytes: keep the rest for the next read.
            if piece.count > left {
                pending = Data(piece[(piece.startIndex + left)...])
                return
            }
            left -= piece.count
        }
    }

    func close() { try? handle.close() }
}
