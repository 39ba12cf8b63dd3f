import CouchbaseLite
import Foundation
import JSONCore

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
        let order = JSONMemberOrder.complete(in: first.bodyBytes)?.member("_attachments")?.memberNames ?? []
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
