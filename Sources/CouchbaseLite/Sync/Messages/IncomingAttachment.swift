import Foundation
import JSONCore

/// One `_attachments` entry of a revision from a peer (spec 4.3): a stub naming a body the
/// receiver should already have, a body that `follows` (a multipart part, or one already
/// streamed into the blob store), or an inline base64 body.
package struct IncomingAttachment: Sendable, Equatable {
    package var contentType: String?
    package var digest: String?
    package var length: Int?
    package var revpos: Int?
    /// `gzip` when the peer stores (and here describes) the body compressed.
    package var encoding: String?
    package var encodedLength: Int?
    package var stub = false
    package var follows = false
    /// An inline body: base64 text from JSON, or the bytes of a multipart part.
    package var data: Body?

    /// An inline attachment body.
    package enum Body: Sendable, Equatable {
        case base64(String)
        case bytes(Data)
    }

    package init() {}

    /// Reads an entry; 400 when it is not an object.
    package init(json value: JSONValue, name: String) throws {
        guard case .object(let meta) = value else {
            throw CBLError.badAttachment("metadata of '\(name)' must be an object")
        }
        contentType = meta["content_type"]?.stringValue
        digest = meta["digest"]?.stringValue
        length = meta["length"]?.intValue
        revpos = meta["revpos"]?.intValue
        encoding = meta["encoding"]?.stringValue
        encodedLength = meta["encoded_length"]?.intValue
        stub = meta["stub"]?.boolValue ?? false
        follows = meta["follows"]?.boolValue ?? false
        if let text = meta["data"]?.stringValue { data = .base64(text) }
    }

    /// Reads an entry of a dictionary-based body (the listener's uploads, whose multipart bodies
    /// arrive as `Data`); 400 when it is not an object.
    package init(foundation value: Any, name: String) throws {
        guard let meta = value as? [String: Any] else {
            throw CBLError.badAttachment("metadata of '\(name)' must be an object")
        }
        var typed = meta
        let bytes = meta["data"] as? Data
        if bytes != nil { typed["data"] = nil }
        do {
            try self.init(json: JSONValue(foundation: typed), name: name)
        } catch let error as CBLError {
            throw error
        } catch {
            throw CBLError.badAttachment("metadata of '\(name)': \(error)")
        }
        if let bytes { data = .bytes(bytes) }
    }

    /// The entry as the insertion code reads attachment metadata.
    package var metadata: [String: Any] {
        var meta: [String: Any] = [:]
        if let contentType { meta["content_type"] = contentType }
        if let digest { meta["digest"] = digest }
        if let length { meta["length"] = length }
        if let revpos { meta["revpos"] = revpos }
        if let encoding { meta["encoding"] = encoding }
        if let encodedLength { meta["encoded_length"] = encodedLength }
        if stub { meta["stub"] = true }
        if follows { meta["follows"] = true }
        switch data {
        case .base64(let text): meta["data"] = text
        case .bytes(let bytes): meta["data"] = bytes
        case nil: break
        }
        return meta
    }

    /// Writes the entry with its members sorted (the canonical order 1.x stores).
    package func encode(into writer: inout JSONWriter) {
        var first = true
        func key(_ name: String) {
            writer.writeRawByte(UInt8(ascii: first ? "{" : ","))
            first = false
            writer.writeString(name)
            writer.writeRawByte(UInt8(ascii: ":"))
        }
        if let contentType { key("content_type"); writer.writeString(contentType) }
        switch data {
        case .base64(let text): key("data"); writer.writeString(text)
        case .bytes(let bytes): key("data"); writer.writeString(bytes.base64EncodedString())
        case nil: break
        }
        if let digest { key("digest"); writer.writeString(digest) }
        if let encodedLength { key("encoded_length"); writer.writeRaw(String(encodedLength).utf8) }
        if let encoding { key("encoding"); writer.writeString(encoding) }
        if follows { key("follows"); writer.writeRaw("true".utf8) }
        if let length { key("length"); writer.writeRaw(String(length).utf8) }
        if let revpos { key("revpos"); writer.writeRaw(String(revpos).utf8) }
        if stub { key("stub"); writer.writeRaw("true".utf8) }
        if first { writer.writeRawByte(UInt8(ascii: "{")) }
        writer.writeRawByte(UInt8(ascii: "}"))
    }
}
