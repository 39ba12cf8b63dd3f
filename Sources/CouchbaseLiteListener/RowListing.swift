import Foundation
import JSONCore

/// `_all_docs` and view answers written row by row as the client reads them (chunked), in
/// CouchDB's layout: the meta members, then `"rows":[` with one row a line, then `]}`. Only
/// one piece of rows (``RESTBodyStream/pieceSize``) is ever held as JSON text.
enum RowListing {
    /// A 200 answer with the `meta` members (in order) and the rows `next` returns until nil.
    static func response(meta: [(String, Any)], next: @escaping () throws -> [String: Any]?) -> RESTResponse {
        var head = Array("{".utf8)
        for (name, value) in meta {
            head += JSONText.bytes(name) + Array(":".utf8) + JSONText.bytes(value) + Array(",".utf8)
        }
        head += Array("\"rows\":[".utf8)
        return RESTResponse(status: 200, headers: [("Content-Type", "application/json"), ("Cache-Control", "must-revalidate")],
                            stream: .json(head: head, writeItem: { index, writer in
                                guard let row = try next() else { return false }
                                writer.writeRaw((index > 0 ? ",\r\n" : "\r\n").utf8)
                                writer.writeRaw(JSONText.bytes(row))
                                return true
                            }, tail: { rowCount in Array((rowCount > 0 ? "\r\n]}\n" : "]}\n").utf8) }))
    }
}
