import Foundation

/// The `sha1-<base64>` digest that names an attachment's or a blob's content in both file formats
/// (1.x `_attachments.<name>.digest`, 2.x/3.x blob `digest`): the one parser and writer of that
/// text, for `CouchbaseLite`'s `BlobKey` and `CouchbaseLiteSwift`'s `BlobStore` alike. How each
/// format names the blob's file (1.x: hex; 2.x: Base64 with `_` for `/`) stays with its store.
package enum SHA1BlobDigest {
    /// What every SHA-1 digest starts with.
    package static let prefix = "sha1-"
    /// The length of a SHA-1 key.
    package static let keyLength = 20

    /// The 20-byte SHA-1 key a digest names; nil for another kind of digest (`md5-`), text that is
    /// not Base64 (as `Data(base64Encoded:)` reads it) or a key of another length.
    package static func key(fromDigest digest: String) -> [UInt8]? {
        guard digest.hasPrefix(prefix), let data = Data(base64Encoded: String(digest.dropFirst(prefix.count))),
              data.count == keyLength else {
            return nil
        }
        return Array(data)
    }

    /// `sha1-<base64>` for a key.
    package static func digest(forKey key: [UInt8]) -> String {
        prefix + Data(key).base64EncodedString()
    }
}
