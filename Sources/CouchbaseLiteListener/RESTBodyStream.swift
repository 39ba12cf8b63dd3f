import Foundation
import Hummingbird
import JSONCore
import NIOCore

/// A response body produced piece by piece as the client takes it (an attachment read from its
/// blob file, `_all_docs` and view rows, `_changes` and `_bulk_get` results), so no answer is
/// held whole in memory. Pieces are pulled one at a time on the listener's worker threads (a
/// piece may block on I/O) only when the connection has taken the previous one, so a slow
/// client holds at most a piece or two; a client that hangs up stops the production.
struct RESTBodyStream: Sendable {
    /// The whole length when known in advance (sent as `Content-Length`), else nil (chunked).
    let length: Int?
    /// The next piece; nil at the end. Called once at a time, from worker threads.
    let next: @Sendable () throws -> [UInt8]?
    /// Releases what the producer holds; called once, at the end or when the client is gone.
    let close: @Sendable () -> Void

    init(length: Int?, next: @escaping @Sendable () throws -> [UInt8]?, close: @escaping @Sendable () -> Void = {}) {
        self.length = length
        self.next = next
        self.close = close
    }

    /// All the pieces, concatenated (tests and small bodies).
    func collect() throws -> [UInt8] {
        defer { close() }
        var out: [UInt8] = []
        while let piece = try next() { out += piece }
        return out
    }

    /// The Hummingbird body: each piece produced on a worker thread, then written (the writer
    /// waits while the connection is not writable).
    func responseBody(state: ListenerState) -> ResponseBody {
        let stream = self
        return ResponseBody(contentLength: length) { writer in
            // A failed write (the client hung up) leaves the loop too: `close` stops the producer.
            defer { stream.close() }
            while true {
                let piece = await state.onWorker { () -> Result<[UInt8]?, Error> in Result { try stream.next() } }
                // The listener stopping, or the content failing mid-answer: the status is sent
                // already, so the connection is closed short of the length announced (CouchDB's
                // answer is truncated too; the client sees invalid JSON or a short body).
                guard case .success(let bytes)? = piece, let bytes else {
                    if case .success(nil)? = piece { break }
                    throw RESTError(500, "internal_server_error", "The answer could not be completed")
                }
                try await writer.write(ByteBuffer(bytes: bytes))
            }
            try await writer.finish(nil)
        }
    }
}

extension RESTBodyStream {
    /// How many bytes of JSON a piece gathers before it is handed over (rows are much smaller).
    static let pieceSize = 64 * 1024

    /// A chunked JSON body: `head`, then the items `writeItem` appends (it is given the item's
    /// index, writes any separator itself, and returns false when there is none left), then
    /// the `tail` for the number of items written. The item source is only ever called under
    /// the stream's lock, one piece at a time, so it need not be `Sendable`.
    static func json(head: [UInt8], writeItem: @escaping (_ index: Int, _ writer: inout JSONWriter) throws -> Bool,
                     tail: @escaping (_ itemCount: Int) -> [UInt8]) -> RESTBodyStream {
        let cursor = JSONPieces(head: head, writeItem: writeItem, tail: tail)
        return RESTBodyStream(length: nil, next: { try cursor.piece() }, close: { cursor.close() })
    }

    /// A chunked JSON body over items known in advance: `head`, the items joined by
    /// `separator`, then `tail`.
    static func json<Items: Collection>(head: [UInt8], items: Items, separator: [UInt8], tail: [UInt8],
                                        write: @escaping (Items.Element, inout JSONWriter) -> Void) -> RESTBodyStream {
        var index = items.startIndex
        return json(head: head, writeItem: { n, writer in
            guard index != items.endIndex else { return false }
            if n > 0 { writer.writeRaw(separator) }
            write(items[index], &writer)
            items.formIndex(after: &index)
            return true
        }, tail: { _ in tail })
    }
}

/// The state of a JSON body being written a piece at a time.
// @unchecked because every member (including the non-Sendable item source) is only touched under `lock`.
private final class JSONPieces: @unchecked Sendable {
    private let lock = NSLock()
    private var writer: JSONWriter
    private var writeItem: ((Int, inout JSONWriter) throws -> Bool)?
    private let tail: (Int) -> [UInt8]
    private var itemCount = 0

    init(head: [UInt8], writeItem: @escaping (Int, inout JSONWriter) throws -> Bool, tail: @escaping (Int) -> [UInt8]) {
        writer = JSONWriter(capacity: RESTBodyStream.pieceSize + 4096)
        writer.writeRaw(head)
        self.writeItem = writeItem
        self.tail = tail
    }

    func piece() throws -> [UInt8]? {
        lock.lock(); defer { lock.unlock() }
        guard let write = writeItem else { return nil }
        while writer.byteCount < RESTBodyStream.pieceSize {
            guard try write(itemCount, &writer) else {
                writeItem = nil
                writer.writeRaw(tail(itemCount))
                break
            }
            itemCount += 1
        }
        defer { writer.removeAll() }
        return writer.bytes
    }

    func close() {
        lock.lock(); defer { lock.unlock() }
        writeItem = nil
        writer.removeAll()
    }
}
