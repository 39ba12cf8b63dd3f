import CouchbaseLite
import Foundation

/// The listener's multipart answers (`multipart/related` documents, `multipart/mixed` for
/// `_bulk_get` and `open_revs`), framed by the package's one ``MultipartWriter``.
extension MultipartWriter {
    static func response(subtype: String, parts: [MultipartPart], status: Int = 200) -> RESTResponse {
        let boundary = newBoundary()
        return RESTResponse(status: status,
                            headers: [("Content-Type", "multipart/\(subtype); boundary=\"\(boundary)\"")],
                            body: encode(parts, boundary: boundary))
    }
}

/// `PUT /{db}/{doc}` with `Content-Type: multipart/related`, read by the multipart reader the
/// replicator's pull shares (`MultipartDocument`).
enum MultipartUpload {
    /// A document whose `follows` attachments arrive as the following MIME parts: the bodies
    /// become inline `data` so the database stores them like any inline attachment. A malformed
    /// body, a missing part or a digest mismatch is a 400.
    static func documentWithAttachments(_ request: RESTRequest) throws -> [String: Any] {
        guard let type = request.header("content-type"), request.contentTypeParameter("boundary") != nil else {
            throw RESTError(400, "bad_request", "multipart/related without a boundary")
        }
        do {
            let parts = try MultipartReader.parts(of: request.body, contentType: type, depth: 0)
            return try MultipartDocument.document(related: namingPartsInJSONOrder(parts))
        } catch let error as MultipartError {
            throw RESTError(400, "bad_request", error.message)
        }
    }

    /// A document whose attachment parts were streamed into the blob store as they arrived
    /// (``MultipartUploadStream``); the same matching of parts to attachments as above.
    static func documentWithStreamedAttachments(_ parts: [MultipartUploadStream.Part]) throws -> [String: Any] {
        var installed: [Int: (digest: String, md5Digest: String, length: Int)] = [:]
        for (index, part) in parts.enumerated() {
            if let blob = part.installed { installed[index] = blob }
        }
        do {
            return try MultipartDocument.document(related: namingPartsInJSONOrder(parts.map { $0.mime }), installed: installed)
        } catch let error as MultipartError {
            throw RESTError(400, "bad_request", error.message)
        }
    }

    /// CouchDB hands the attachment parts to the `follows` attachments in the order the JSON
    /// lists them in `_attachments` (couch_doc:doc_from_multi_part_stream), whatever the parts
    /// say: a part without a `Content-Disposition` filename gets the name of the next such
    /// attachment in that order, so the reader matches it by name.
    static func namingPartsInJSONOrder(_ parts: [MIMEPart]) -> [MIMEPart] {
        guard let first = parts.first, parts.count > 1,
              let doc = try? JSONText.parseObject(first.bodyBytes),
              let atts = doc["_attachments"] as? [String: Any] else { return parts }
        let order = JSONMemberOrder.keys(of: "_attachments", in: first.bodyBytes)
        let follows = order.filter { ((atts[$0] as? [String: Any])?["follows"] as? Bool) == true }
        func filename(_ part: MIMEPart) -> String? {
            part.header("content-disposition").flatMap { MIMEHeader.parameter("filename", in: $0) }
        }
        var open = follows.filter { name in !parts.dropFirst().contains { filename($0) == name } }[...]
        var named = [first]
        for var part in parts.dropFirst() {
            if filename(part) == nil, let name = open.popFirst() {
                part.headers.append((name: "Content-Disposition",
                                     value: "attachment; filename=\"\(MultipartWriter.quoted(name))\""))
            }
            named.append(part)
        }
        return named
    }
}

/// The member names of one top-level object member of a JSON text, in the order written
/// (JSON parsing into dictionaries loses it, and CouchDB's multipart matching depends on it).
enum JSONMemberOrder {
    /// The keys of the object `member` of the top-level object, in text order; empty when
    /// absent or not an object.
    static func keys(of member: String, in bytes: [UInt8]) -> [String] {
        var scanner = Scanner(bytes: bytes)
        guard scanner.skipWhitespace(), scanner.peek == UInt8(ascii: "{") else { return [] }
        scanner.index += 1
        while let key = scanner.nextKey() {
            if key == member {
                guard scanner.skipWhitespace(), scanner.peek == UInt8(ascii: "{") else { return [] }
                scanner.index += 1
                var keys: [String] = []
                while let inner = scanner.nextKey() {
                    keys.append(inner)
                    guard scanner.skipValue() else { return keys }
                }
                return keys
            }
            guard scanner.skipValue() else { return [] }
        }
        return []
    }

    private struct Scanner {
        let bytes: [UInt8]
        var index = 0

        var peek: UInt8? { index < bytes.count ? bytes[index] : nil }

        @discardableResult
        mutating func skipWhitespace() -> Bool {
            while let b = peek, b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09 { index += 1 }
            return peek != nil
        }

        /// After `{` or a value: skips `,`, reads `"key"` and `:`; nil at `}` or on bad input.
        mutating func nextKey() -> String? {
            skipWhitespace()
            if peek == UInt8(ascii: ",") { index += 1; skipWhitespace() }
            guard peek == UInt8(ascii: "\""), let end = stringEnd(from: index) else { return nil }
            let text = bytes[index...end]
            index = end + 1
            skipWhitespace()
            guard peek == UInt8(ascii: ":") else { return nil }
            index += 1
            return (try? JSONText.parse(Array(text))) as? String
        }

        /// Index of the closing quote of the string starting at `start`.
        func stringEnd(from start: Int) -> Int? {
            var i = start + 1
            while i < bytes.count {
                if bytes[i] == UInt8(ascii: "\\") { i += 2; continue }
                if bytes[i] == UInt8(ascii: "\"") { return i }
                i += 1
            }
            return nil
        }

        /// Skips one value (nested containers and strings included).
        mutating func skipValue() -> Bool {
            skipWhitespace()
            var depth = 0
            while let b = peek {
                switch b {
                case UInt8(ascii: "\""):
                    guard let end = stringEnd(from: index) else { return false }
                    index = end
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    if depth == 0 { return true }
                    depth -= 1
                case UInt8(ascii: ","):
                    if depth == 0 { return true }
                default:
                    break
                }
                index += 1
                if depth == 0, b == UInt8(ascii: "}") || b == UInt8(ascii: "]") || b == UInt8(ascii: "\"") {
                    return true
                }
            }
            return false
        }
    }
}
