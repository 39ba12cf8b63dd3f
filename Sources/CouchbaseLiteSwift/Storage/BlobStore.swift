import BlobDigest
import Crypto
import Foundation

/// The 2.x blob store: `Attachments/` in the bundle, one file per blob named by the Base64 of its
/// SHA-1 with `/` replaced by `_` (spec 1.1). Files are immutable once installed.
package struct BlobStore: Sendable {
    package let directory: URL

    package init(directory: URL) {
        self.directory = directory
    }

    /// The 20-byte key of a `sha1-<base64>` digest, or nil for other digest kinds (e.g. `md5-`).
    package static func key(fromDigest digest: String) -> [UInt8]? {
        SHA1BlobDigest.key(fromDigest: digest)
    }

    package static func digest(forKey key: [UInt8]) -> String {
        SHA1BlobDigest.digest(forKey: key)
    }

    /// The digest a blob file in `Attachments/` is named after (`<base64 with _ for />.blob`),
    /// or nil for other files.
    package static func digest(forFileName name: String) -> String? {
        guard name.hasSuffix(".blob") else { return nil }
        return SHA1BlobDigest.prefix + String(name.dropLast(5)).replacingOccurrences(of: "_", with: "/")
    }

    package static func fileName(forKey key: [UInt8]) -> String {
        Data(key).base64EncodedString().replacingOccurrences(of: "/", with: "_") + ".blob"
    }

    package func url(forKey key: [UInt8]) -> URL {
        directory.appendingPathComponent(Self.fileName(forKey: key))
    }

    package func url(forDigest digest: String) -> URL? {
        Self.key(fromDigest: digest).map(url(forKey:))
    }

    package func contains(key: [UInt8]) -> Bool {
        FileManager.default.fileExists(atPath: url(forKey: key).path)
    }

    package func contents(ofDigest digest: String) -> Data? {
        guard let url = url(forDigest: digest) else { return nil }
        return try? Data(contentsOf: url, options: .mappedIfSafe)
    }

    /// Copies `source` into the store under `expectedKey`, verifying the SHA-1 of the bytes while
    /// copying (LiteCore installs blobs under their expected key and refuses a mismatch).
    /// Returns false when the blob was already present (deduplicated). Throws `.corruptData` on a mismatch.
    @discardableResult
    package func install(copying source: URL, expectedKey: [UInt8]) throws -> Bool {
        let fm = FileManager.default
        let destination = url(forKey: expectedKey)
        if fm.fileExists(atPath: destination.path) { return false }
        try fm.createDirectory(at: directory, withIntermediateDirectories: true)
        let temp = directory.appendingPathComponent(".tmp-\(UUID().uuidString)")
        guard fm.createFile(atPath: temp.path, contents: nil) else {
            throw CouchbaseLiteError(.ioError, "Cannot create \(temp.path)")
        }
        var installed = false
        defer { if !installed { try? fm.removeItem(at: temp) } }
        let input: FileHandle
        do {
            input = try FileHandle(forReadingFrom: source)
        } catch {
            throw CouchbaseLiteError(.notFound, "Cannot read blob file \(source.path)")
        }
        defer { try? input.close() }
        let output = try FileHandle(forWritingTo: temp)
        var sha1 = Insecure.SHA1()
        do {
            while let chunk = try input.read(upToCount: 1 << 20), !chunk.isEmpty {
                sha1.update(data: chunk)
                try output.write(contentsOf: chunk)
            }
            try output.synchronize()
            try output.close()
        } catch {
            try? output.close()
            throw CouchbaseLiteError(.ioError, "Copying blob \(source.lastPathComponent) failed: \(error)")
        }
        let actual = Array(sha1.finalize())
        guard actual == expectedKey else {
            throw CouchbaseLiteError(.corruptData,
                "Blob file \(source.lastPathComponent) does not match its digest \(Self.digest(forKey: expectedKey)) (content is \(Self.digest(forKey: actual)))")
        }
        try fm.moveItem(at: temp, to: destination)
        installed = true
        return true
    }
}

/// SHA-1 of blob content: the blob key (spec 1.1).
package enum SHA1Digest {
    package static func hash(_ data: Data) -> [UInt8] { Array(Insecure.SHA1.hash(data: data)) }
}
