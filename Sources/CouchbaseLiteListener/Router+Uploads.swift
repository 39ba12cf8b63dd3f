import CouchbaseLite
import Foundation

/// How a streamed upload starts: the database whose blob store takes the body, or the
/// answer to send without reading the body (no such database).
enum UploadStart: Sendable {
    case accepted(CBLDatabase)
    case refused(RESTResponse)
}

extension RESTRouter {
    /// True for `PUT /{db}/{doc}/{attachment}` (design documents' too): a body streamed into
    /// the blob store as it arrives, never collected, and not limited by `maxBodySize`.
    static func isAttachmentUpload(method: String, segments s: [String]) -> Bool {
        guard method == "PUT", s.count >= 3, !s[0].hasPrefix("_") else { return false }
        if s[1] == "_design" { return s.count >= 4 && !s[3].hasPrefix("_") }
        if s[1].hasPrefix("_design/") { return !s[2].hasPrefix("_") }
        return !s[1].hasPrefix("_")
    }

    /// True for `PUT /{db}/{doc}` with a `multipart/related` body (a document and its
    /// attachments): the attachment parts are streamed into the blob store as they arrive.
    static func isMultipartDocumentUpload(_ request: RESTRequest) -> Bool {
        let s = request.segments
        guard request.method == "PUT", request.contentType == "multipart/related",
              request.contentTypeParameter("boundary")?.isEmpty == false, !(s.first?.hasPrefix("_") ?? true) else { return false }
        if s.count == 2 { return !s[1].hasPrefix("_") || s[1].hasPrefix("_design/") }
        return s.count == 3 && s[1] == "_design"
    }

    /// Opens the database an upload goes to before its body is streamed, so a refused client
    /// cannot fill the disk (credentials and read-only mode were decided before, by
    /// ListenerAccessMiddleware). The request body is empty here.
    func beginUpload(_ request: RESTRequest) -> UploadStart {
        do {
            return .accepted(try openDatabase(request.segments[0]))
        } catch {
            return .refused(.error(RESTError.from(error)))
        }
    }
}
