import Foundation

/// A `Blob` property of a model is stored as a blob (its metadata dictionary in the document,
/// its content in the blob store) by the document coders, which handle it themselves. Other
/// coders (`JSONEncoder`) see the metadata: `@type`, `content_type`, `digest`, `length`; a blob
/// decoded from them has no content until it is read back from a database.
extension Blob: Codable {
    private enum MetadataKey: String, CodingKey {
        case type = "@type", contentType = "content_type", digest, length
    }

    /// A blob from its metadata (`digest` required); its content is not available.
    public convenience init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: MetadataKey.self)
        var properties: [String: Any] = ["@type": "blob"]
        properties["content_type"] = try container.decodeIfPresent(String.self, forKey: .contentType)
        properties["digest"] = try container.decode(String.self, forKey: .digest)
        properties["length"] = try container.decodeIfPresent(Int.self, forKey: .length)
        self.init(properties: properties, blobStore: nil)
    }

    /// Writes the blob's metadata.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: MetadataKey.self)
        try container.encode("blob", forKey: .type)
        try container.encodeIfPresent(contentType, forKey: .contentType)
        try container.encodeIfPresent(digest, forKey: .digest)
        try container.encode(length, forKey: .length)
    }
}
