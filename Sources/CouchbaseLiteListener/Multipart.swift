import CouchbaseLite
import Foundation

/// One MIME part.
struct MultipartPart: Sendable {
    var headers: [(String, String)]
    var body: [UInt8]

    func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }
}

/// Writes multipart bodies (`multipart/related` documents, `multipart/mixed` for `_bulk_get`
/// and `open_revs`).
enum MultipartWriter {
    static func newBoundary() -> String {
        (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    }

    static func quoted(_ s: String) -> String {
        s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
    }

    static func encode(_ parts: [MultipartPart], boundary: String) -> [UInt8] {
        var out: [UInt8] = []
        for part in parts {
            out += Array("--\(boundary)\r\n".utf8)
            for (name, value) in part.headers { out += Array("\(name): \(value)\r\n".utf8) }
            out += [13, 10]
            out += part.body
            out += [13, 10]
        }
        out += Array("--\(boundary)--".utf8)
        return out
    }

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
            return try MultipartDocument.document(related: parts)
        } catch let error as MultipartError {
            throw RESTError(400, "bad_request", error.message)
        }
    }
}
