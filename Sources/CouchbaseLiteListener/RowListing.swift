import Foundation
import JSONCore

/// `_all_docs` and view answers written row by row as the client reads them (chunked), in
/// CouchDB's layout: the meta members, then `"rows":[` with one row a line, then `]}`. Only
/// one batch of rows is ever held as JSON text.
enum RowListing {
    /// Bytes of rows gathered before a piece is handed to the connection.
    static let batchSize = 64 * 1024

    /// A 200 answer with the `meta` members (in order) and the rows `next` returns until nil.
    static func response(meta: [(String, Any)], next: @escaping () throws -> [String: Any]?) -> RESTResponse {
        var head = Array("{".utf8)
        for (name, value) in meta {
            head += JSONText.bytes(name) + Array(":".utf8) + JSONText.bytes(value) + Array(",".utf8)
        }
        head += Array("\"rows\":[".utf8)
        let cursor = Cursor(head: head, next: next)
        return RESTResponse(status: 200, headers: [("Content-Type", "application/json"), ("Cache-Control", "must-revalidate")],
                            stream: RESTBodyStream(length: nil, next: { try cursor.piece() }, close: { cursor.close() }))
    }

    /// Serializes the rows a batch at a time; called serially (one piece at a time) from the
    /// worker threads, so the non-Sendable row source is only ever used by one thread at once.
    // @unchecked because its row source (non-Sendable JSON rows) is only called under its lock, one batch at a time.
    private final class Cursor: @unchecked Sendable {
        private let lock = NSLock()
        private var head: [UInt8]?
        private var next: (() throws -> [String: Any]?)?
        private var rowsWritten = 0

        init(head: [UInt8], next: @escaping () throws -> [String: Any]?) {
            self.head = head
            self.next = next
        }

        func piece() throws -> [UInt8]? {
            lock.lock(); defer { lock.unlock() }
            guard let source = next else { return nil }
            var out = head ?? []
            head = nil
            while out.count < RowListing.batchSize {
                guard let row = try source() else {
                    next = nil
                    out += Array((rowsWritten > 0 ? "\r\n]}\n" : "]}\n").utf8)
                    return out
                }
                out += Array((rowsWritten > 0 ? ",\r\n" : "\r\n").utf8)
                out += JSONText.bytes(row)
                rowsWritten += 1
            }
            return out
        }

        func close() {
            lock.lock(); defer { lock.unlock() }
            next = nil
            head = nil
        }
    }
}
