import Crypto
import Foundation
import XCTest
import _CryptoExtras
@testable import CouchbaseLite

/// Encrypted attachments as 1.x stores them (couchbase-lite-ios 1.4 `CBLSymmetricKey.m`,
/// `CBL_BlobStore.m`, `CBL_BlobStoreWriter.m`): `_encryption` marker holding `AES`, blob files
/// = 16-byte IV + AES-256-CBC/PKCS#7 of the content, file names = SHA-1 of the plaintext.
final class EncryptedAttachmentTests: DatabaseTestCase {
    private let key1 = CBLSymmetricKey(password: "letmein")
    private let key2 = CBLSymmetricKey(keyData: Data((0..<32).map { UInt8($0 * 7 & 0xFF) }))!

    private var blobDirectory: URL { db.directoryURL.appendingPathComponent("attachments") }
    private var blobs: BlobStore { db.storeIfOpenForBlobs! }

    private func blobFiles() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: blobDirectory.path).filter { $0.hasSuffix(".blob") }.sorted()
    }

    /// Deterministic bytes that never repeat a 16-byte window (so a plaintext search is meaningful).
    private func content(_ count: Int, seed: UInt64) -> Data {
        var state = seed &* 0x9E37_79B9_7F4A_7C15 | 1
        var out = Data(capacity: count)
        while out.count < count {
            state ^= state << 13; state ^= state >> 7; state ^= state << 17
            withUnsafeBytes(of: state) { out.append(contentsOf: $0.prefix(min(8, count - out.count))) }
        }
        return out
    }

    /// True when `haystack` contains one of 40 12-byte runs of `needle` spread over it.
    private func containsPlaintext(_ haystack: Data, _ needle: Data) -> Bool {
        // Shorter contents show up in random ciphertext by chance; the decryption checks cover them.
        guard needle.count >= 12 else { return false }
        let step = max(1, (needle.count - 12) / 40)
        var offset = 0
        while offset + 12 <= needle.count {
            if haystack.range(of: needle.subdata(in: offset..<offset + 12)) != nil { return true }
            offset += step
        }
        return false
    }

    private func save(_ docID: String, _ name: String, _ body: Data) throws -> CBLSavedRevision {
        let rev = db.document(withID: docID)!.newRevision()
        rev["kind"] = "with attachment"
        rev.setAttachmentNamed(name, withContentType: "application/octet-stream", content: body)
        return try rev.save()
    }

    // MARK: The cipher

    func testEncryptDecryptRoundTripInOnePointXFormat() throws {
        let aes = SymmetricKey(data: key1.keyData)
        for size in [0, 1, 15, 16, 17, 31, 32, 1000, 65_537] {
            let plain = content(size, seed: UInt64(size) + 1)
            let encrypted = try XCTUnwrap(key1.encryptData(plain))
            // IV (16) + the plaintext padded to the next whole block (PKCS#7 always pads).
            XCTAssertEqual(encrypted.count, 16 + (size / 16 + 1) * 16, "size \(size)")
            XCTAssertEqual(key1.decryptData(encrypted), plain, "size \(size)")
            // Independently: swift-crypto's AES-CBC with the first 16 bytes as the IV.
            let independent = try AES._CBC.decrypt(encrypted.dropFirst(16), using: aes,
                                                   iv: AES._CBC.IV(ivBytes: encrypted.prefix(16)))
            XCTAssertEqual(independent, plain, "size \(size)")
            // Without padding removal the last block ends in PKCS#7 padding bytes.
            let raw = try AES._CBC.decrypt(encrypted.dropFirst(16), using: aes,
                                           iv: AES._CBC.IV(ivBytes: encrypted.prefix(16)), noPadding: true)
            let pad = 16 - size % 16
            XCTAssertEqual(Array(raw.suffix(pad)), [UInt8](repeating: UInt8(pad), count: pad))
            // A random IV each time.
            XCTAssertNotEqual(key1.encryptData(plain)?.prefix(16), encrypted.prefix(16))
            if size > 0 { XCTAssertNotEqual(key2.decryptData(encrypted), plain) }
        }
        // And the other way: what swift-crypto encrypts (IV in front) this key decrypts.
        let iv = AES._CBC.IV()
        let other = Data(iv) + (try AES._CBC.encrypt(Data("hello 1.x".utf8), using: aes, iv: iv))
        XCTAssertEqual(key1.decryptData(other), Data("hello 1.x".utf8))
        XCTAssertNil(key1.decryptData(Data(count: 20)), "not whole blocks")
        XCTAssertNil(key1.decryptData(Data()), "too short")
    }

    func testStreamingEncryptorAndDecryptStream() throws {
        let plain = content(300_001, seed: 42)
        let encryptor = key1.createEncryptor()
        var encrypted = Data()
        var offset = 0
        var step = 1
        while offset < plain.count {
            let end = min(plain.count, offset + step)
            encrypted.append(try XCTUnwrap(encryptor(plain.subdata(in: offset..<end))))
            offset = end
            step = step * 3 + 1
        }
        encrypted.append(try XCTUnwrap(encryptor(nil)))
        XCTAssertEqual(encrypted.count, 16 + (plain.count / 16 + 1) * 16)
        XCTAssertEqual(key1.decryptData(encrypted), plain)

        let stream = key1.decryptStream(InputStream(data: encrypted))
        stream.open()
        var out = Data()
        var buffer = [UInt8](repeating: 0, count: 1000)
        while true {
            let n = stream.read(&buffer, maxLength: buffer.count)
            XCTAssertGreaterThanOrEqual(n, 0)
            if n <= 0 { break }
            out.append(contentsOf: buffer[0..<n])
        }
        stream.close()
        XCTAssertEqual(out, plain)

        let truncated = key1.decryptStream(InputStream(data: encrypted.dropLast(5)))
        truncated.open()
        var result = 1
        while result > 0 { result = truncated.read(&buffer, maxLength: buffer.count) }
        XCTAssertEqual(result, -1, "a truncated stream is an error, not short content")
        XCTAssertEqual((truncated.streamError as? CBLError)?.code, 401)
    }

    // MARK: The blob store

    func testEncryptedStoreFilesHoldNoPlaintextAndKeepDigestAndDedup() throws {
        try blobs.changeEncryptionKey(from: nil, to: key1)
        XCTAssertEqual(try String(contentsOf: blobDirectory.appendingPathComponent("_encryption"), encoding: .utf8), "AES")

        let body = Data(String(repeating: "This is a test attachment! ", count: 200).utf8)
        let saved = try save("att", "att.txt", body)
        let meta = try XCTUnwrap((saved.properties?["_attachments"] as? [String: Any])?["att.txt"] as? [String: Any])
        let digest = "sha1-" + Data(Insecure.SHA1.hash(data: body)).base64EncodedString()
        XCTAssertEqual(meta["digest"] as? String, digest, "digest is the SHA-1 of the plaintext")
        XCTAssertEqual(meta["length"] as? Int, body.count)

        XCTAssertEqual(try blobFiles(), [sha1Hex(body).uppercased() + ".blob"])
        let raw = try Data(contentsOf: blobDirectory.appendingPathComponent(try blobFiles()[0]))
        XCTAssertEqual(raw.count, 16 + (body.count / 16 + 1) * 16)
        XCTAssertFalse(containsPlaintext(raw, body), "the blob file holds ciphertext only")
        XCTAssertEqual(key1.decryptData(raw), body)

        // Same content elsewhere: one file.
        _ = try save("att2", "copy.txt", body)
        XCTAssertEqual(try blobFiles().count, 1)
        XCTAssertEqual(db.document(withID: "att2")?.currentRevision?.attachmentNamed("copy.txt")?.content, body)
        XCTAssertEqual(saved.attachmentNamed("att.txt")?.content, body)
        XCTAssertNil(saved.attachmentNamed("att.txt")?.contentURL, "encrypted files are not readable as is (1.x)")

        // A plain store reads it back the same way once re-keyed.
        try blobs.changeEncryptionKey(from: key1, to: nil)
        XCTAssertFalse(FileManager.default.fileExists(atPath: blobDirectory.appendingPathComponent("_encryption").path))
        XCTAssertEqual(try Data(contentsOf: blobDirectory.appendingPathComponent(try blobFiles()[0])), body)
        XCTAssertNotNil(saved.attachmentNamed("att.txt")?.contentURL)
    }

    func testRekeyNilToKeyToOtherKeyToNilKeepsEveryAttachment() throws {
        var bodies: [String: Data] = [:]
        for i in 0..<6 {
            let body = content(i == 5 ? 3_000_000 : 100 * i + 1, seed: UInt64(i + 10))
            bodies["d\(i)"] = body
            _ = try save("d\(i)", "a.bin", body)
        }
        func check(_ key: CBLSymmetricKey?, _ label: String) throws {
            for (docID, body) in bodies {
                XCTAssertEqual(db.document(withID: docID)?.currentRevision?.attachmentNamed("a.bin")?.content, body, "\(label) \(docID)")
            }
            let files = try blobFiles()
            XCTAssertEqual(files.count, 6, label)
            for file in files {
                let raw = try Data(contentsOf: blobDirectory.appendingPathComponent(file))
                let body = bodies.values.first { sha1Hex($0).uppercased() + ".blob" == file }!
                if let key {
                    XCTAssertEqual(key.decryptData(raw), body, label)
                    XCTAssertFalse(containsPlaintext(raw, body), label)
                } else {
                    XCTAssertEqual(raw, body, label)
                }
            }
            XCTAssertEqual(FileManager.default.fileExists(atPath: blobDirectory.appendingPathComponent("_encryption").path), key != nil)
            // Opening the directory afresh needs exactly this key.
            XCTAssertNoThrow(try BlobStore(directory: blobDirectory, encryptionKey: key, readOnly: true), label)
            let siblings = try FileManager.default.contentsOfDirectory(atPath: db.directoryURL.path)
            XCTAssertFalse(siblings.contains { $0.contains("rekey") }, "\(label): \(siblings)")
        }
        try check(nil, "plain")
        try blobs.changeEncryptionKey(from: nil, to: key1)
        try check(key1, "key1")
        try blobs.changeEncryptionKey(from: key1, to: key2)
        try check(key2, "key2")
        XCTAssertThrowsStatus(401, try BlobStore(directory: blobDirectory, encryptionKey: key1))
        try blobs.changeEncryptionKey(from: key2, to: nil)
        try check(nil, "plain again")
    }

    func testWrongOrMissingKeyIs401AndChangesNothing() throws {
        try blobs.changeEncryptionKey(from: nil, to: key1)
        let body = content(5000, seed: 7)
        _ = try save("a", "a.bin", body)
        let before = try directoryChecksums(blobDirectory)

        XCTAssertThrowsError(try BlobStore(directory: blobDirectory)) { error in
            XCTAssertEqual((error as? CBLError)?.code, 401)
            XCTAssertTrue((error as? CBLError)?.message.contains("encryption key is required") == true, "\(error)")
        }
        XCTAssertThrowsError(try BlobStore(directory: blobDirectory, encryptionKey: key2)) { error in
            XCTAssertEqual((error as? CBLError)?.code, 401)
            XCTAssertTrue((error as? CBLError)?.message.contains("Wrong encryption key") == true, "\(error)")
        }
        // Re-keying from the wrong key fails on the first blob and leaves everything as it was.
        XCTAssertThrowsStatus(401, try blobs.changeEncryptionKey(from: key2, to: nil))
        XCTAssertEqual(try directoryChecksums(blobDirectory), before)
        XCTAssertFalse(FileManager.default.fileExists(atPath: blobDirectory.path + ".rekey-new"))

        // A store handed the wrong key reads nothing (401), never wrong bytes.
        let wrong = try BlobStore(directory: blobDirectory, encryptionKey: key1)
        wrong.setEncryptionKey(key2)
        XCTAssertThrowsStatus(401, try wrong.read(BlobKey(content: body)))
        XCTAssertNil(wrong.contents(of: BlobKey(content: body)))

        // An unknown algorithm in the marker is refused too.
        try Data("ROT13".utf8).write(to: blobDirectory.appendingPathComponent("_encryption"))
        XCTAssertThrowsStatus(401, try BlobStore(directory: blobDirectory, encryptionKey: key1))
    }

    func testOpeningAPlainStoreWithAKeyEncryptsItAsOnePointXDid() throws {
        let body = content(4000, seed: 3)
        _ = try save("a", "a.bin", body)
        XCTAssertThrowsStatus(401, try BlobStore(directory: blobDirectory, encryptionKey: key1, readOnly: true))
        XCTAssertEqual(try Data(contentsOf: blobDirectory.appendingPathComponent(try blobFiles()[0])), body)
        let store = try BlobStore(directory: blobDirectory, encryptionKey: key1)
        XCTAssertEqual(store.contents(of: BlobKey(content: body)), body)
        XCTAssertEqual(store.size(of: BlobKey(content: body)), UInt64(body.count))
        let raw = try Data(contentsOf: blobDirectory.appendingPathComponent(try blobFiles()[0]))
        XCTAssertEqual(key1.decryptData(raw), body)

        // A new store with a key is created marked, as 1.x's is.
        let fresh = dir.url.appendingPathComponent("fresh-attachments")
        let created = try BlobStore(directory: fresh, encryptionKey: key2)
        XCTAssertEqual(try String(contentsOf: fresh.appendingPathComponent("_encryption"), encoding: .utf8), "AES")
        let (stored, _) = try created.store(body)
        XCTAssertEqual(stored, BlobKey(content: body))
        XCTAssertEqual(key2.decryptData(try Data(contentsOf: created.url(for: stored)!)), body)
        XCTAssertThrowsStatus(401, try BlobStore(directory: fresh))
    }

    // MARK: Crash safety of the re-key (every state a kill -9 can leave)

    func testInterruptedRekeyRollsBackBeforeTheSwitchAndForwardAfterIt() throws {
        let bodies = (0..<4).map { content(1000 * ($0 + 1), seed: UInt64($0 + 100)) }
        for (i, body) in bodies.enumerated() { _ = try save("r\(i)", "a.bin", body) }
        try blobs.changeEncryptionKey(from: nil, to: key1)
        let newDir = URL(fileURLWithPath: blobDirectory.path + ".rekey-new")
        let oldDir = URL(fileURLWithPath: blobDirectory.path + ".rekey-old")
        let fm = FileManager.default

        func readable(with key: CBLSymmetricKey?) throws {
            let store = try BlobStore(directory: blobDirectory, encryptionKey: key, readOnly: true)
            for body in bodies { XCTAssertEqual(try store.read(BlobKey(content: body)), body) }
            XCTAssertFalse(fm.fileExists(atPath: newDir.path))
            XCTAssertFalse(fm.fileExists(atPath: oldDir.path))
            XCTAssertFalse(fm.fileExists(atPath: blobDirectory.appendingPathComponent("_rekey_ready").path))
        }

        // 1. Killed while copying (no ready flag yet): roll back, whatever key opens the database.
        _ = try blobs.prepareKeyChange(from: key1, to: key2)
        try fm.removeItem(at: newDir.appendingPathComponent("_rekey_ready"))
        try fm.removeItem(at: newDir.appendingPathComponent(try fm.contentsOfDirectory(atPath: newDir.path).first { $0.hasSuffix(".blob") }!))
        try BlobStore.recoverInterruptedKeyChange(directory: blobDirectory, currentKey: key2)
        try readable(with: key1)

        // 2. Copy complete, database not re-keyed (it opens with the old key): roll back.
        _ = try blobs.prepareKeyChange(from: key1, to: key2)
        try BlobStore.recoverInterruptedKeyChange(directory: blobDirectory, currentKey: key1)
        try readable(with: key1)

        // 3. Copy complete, database re-keyed (opens with the new key), no switch yet: finish.
        _ = try blobs.prepareKeyChange(from: key1, to: key2)
        try BlobStore.recoverInterruptedKeyChange(directory: blobDirectory, currentKey: key2)
        try readable(with: key2)

        // 4. Killed between the two renames: finish.
        _ = try blobs.prepareKeyChange(from: key2, to: nil)
        XCTAssertEqual(rename(blobDirectory.path, oldDir.path), 0)
        try BlobStore.recoverInterruptedKeyChange(directory: blobDirectory, currentKey: nil)
        try readable(with: nil)

        // 5. Killed during the cleanup (old copy and ready flag left): tidy up.
        _ = try blobs.prepareKeyChange(from: nil, to: key1)
        XCTAssertEqual(rename(blobDirectory.path, oldDir.path), 0)
        XCTAssertEqual(rename(newDir.path, blobDirectory.path), 0)
        try BlobStore.recoverInterruptedKeyChange(directory: blobDirectory, currentKey: key1)
        try readable(with: key1)

        // 6. The database step failing leaves the old key in place.
        struct Refused: Error {}
        XCTAssertThrowsError(try blobs.changeEncryptionKey(from: key1, to: key2) { throw Refused() })
        blobs.setEncryptionKey(key1)
        try readable(with: key1)
    }

    // MARK: Streaming

    /// `SyncBlobStream` (the listener's attachment GETs and `Range` answers) skips to any
    /// offset: a seek in a plain store, decrypting and dropping in an encrypted one (keeping
    /// what a decrypted piece holds past the offset).
    func testAttachmentStreamSkipsToAnyOffset() throws {
        let body = content(300_017, seed: 7)
        let key = try blobs.store(body).key
        for encrypted in [false, true] {
            if encrypted { try blobs.changeEncryptionKey(from: nil, to: key2) }
            for offset in [0, 1, 15, 16, 17, 65_536, 299_999, body.count - 1, body.count] {
                let stream = try XCTUnwrap(db.syncOpenAttachmentStream(meta: ["digest": key.digest], docID: "d", name: "a"))
                XCTAssertEqual(stream.length, body.count)
                try stream.skip(offset)
                var read = Data()
                while let piece = try stream.read(upToCount: 10_000) { read.append(piece) }
                stream.close()
                XCTAssertEqual(read, body.subdata(in: offset..<body.count), "offset \(offset), encrypted \(encrypted)")
            }
        }
        // Stored gzip-encoded: no stream (the listener decodes such attachments whole).
        XCTAssertNil(try db.syncOpenAttachmentStream(meta: ["digest": key.digest, "encoding": "gzip"], docID: "d", name: "a"))
    }

    func testLargeAttachmentsStreamInAndOutOfAnEncryptedStore() throws {
        try blobs.changeEncryptionKey(from: nil, to: key2)
        let body = content(6 * 1024 * 1024 + 5, seed: 99)
        let source = dir.url.appendingPathComponent("big.bin")
        try body.write(to: source)
        let rev = db.document(withID: "big")!.newRevision()
        rev.setAttachmentNamed("big.bin", withContentType: "application/octet-stream", contentURL: source)
        let saved = try rev.save()
        let attachment = try XCTUnwrap(saved.attachmentNamed("big.bin"))
        XCTAssertEqual(attachment.length, UInt64(body.count))

        let stream = try XCTUnwrap(attachment.openContentStream())
        stream.open()
        var hasher = Insecure.SHA1()
        var total = 0
        var buffer = [UInt8](repeating: 0, count: 100_000)
        while true {
            let n = stream.read(&buffer, maxLength: buffer.count)
            XCTAssertGreaterThanOrEqual(n, 0)
            if n <= 0 { break }
            hasher.update(data: Data(buffer[0..<n]))
            total += n
        }
        stream.close()
        XCTAssertEqual(total, body.count)
        XCTAssertEqual(Data(hasher.finalize()), Data(Insecure.SHA1.hash(data: body)))

        let key = BlobKey(content: body)
        let reader = try XCTUnwrap(blobs.openReader(for: key))
        var streamed = Data()
        while let chunk = try reader.read(upToCount: 64 * 1024) { streamed.append(chunk) }
        XCTAssertEqual(streamed, body)
        XCTAssertEqual(blobs.size(of: key), UInt64(body.count))
        let raw = try Data(contentsOf: blobs.url(for: key)!)
        XCTAssertFalse(containsPlaintext(raw, body))

        // The replicator's download path (BlobWriter behind SyncBlobDownload), fed in pieces.
        let other = content(2 * 1024 * 1024, seed: 5)
        let download = try db.syncBeginBlobDownload()
        var offset = 0
        while offset < other.count {
            let end = min(other.count, offset + 70_001)
            try other.subdata(in: offset..<end).withUnsafeBytes { try download.append($0) }
            offset = end
        }
        let (digest, _, length) = try download.finish()
        XCTAssertEqual(length, other.count)
        XCTAssertEqual(digest, "sha1-" + Data(Insecure.SHA1.hash(data: other)).base64EncodedString())
        XCTAssertEqual(blobs.contents(of: BlobKey(content: other)), other)
        XCTAssertFalse(containsPlaintext(try Data(contentsOf: blobs.url(for: BlobKey(content: other))!), other))
    }
}
