import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// A response whose body is written while it is produced (the rows of `_changes`, the results
/// of `_bulk_get`), instead of being built whole first. The producer runs on a worker thread
/// (it reads the database) and hands over pieces of the body as they fill; the HTTP layer
/// sends them as they come. The status and headers are fixed before the first byte: a
/// handler checks the request before answering with one.
struct RESTStream: Sendable {
    /// Hands a piece of the body over; throws once the client is gone.
    typealias Emit = (_ bytes: [UInt8]) throws -> Void

    let status: Int
    let headers: [(String, String)]
    let produce: @Sendable (_ emit: Emit) throws -> Void

    /// How many bytes a piece gathers before it is handed over (rows are much smaller).
    static let pieceSize = 32 * 1024

    /// A JSON response streamed in pieces.
    static func json(_ produce: @escaping @Sendable (_ emit: Emit) throws -> Void) -> RESTStream {
        RESTStream(status: 200, headers: [("Content-Type", "application/json"), ("Cache-Control", "must-revalidate")],
                   produce: produce)
    }

    /// The whole body at once (`HEAD`, tests).
    func collect() throws -> [UInt8] {
        var out: [UInt8] = []
        try produce { out += $0 }
        return out
    }

    /// The Hummingbird response: the producer runs on a worker and feeds the body's pieces.
    func response(state: ListenerState) -> Response {
        var fields = HTTPFields()
        for (name, value) in headers {
            if let fieldName = HTTPField.Name(name) { fields.append(HTTPField(name: fieldName, value: value)) }
        }
        let stream = self
        return Response(status: HTTPResponse.Status(code: status), headers: fields, body: ResponseBody { writer in
            let (pieces, continuation) = AsyncStream<[UInt8]>.makeStream()
            let gone = ClientGone()
            continuation.onTermination = { _ in gone.set() }
            let producer = Task {
                _ = await state.onWorker {
                    // An error after the first byte can only end the body early (CouchDB's
                    // answer is then truncated too); the client sees invalid JSON.
                    try? stream.produce { bytes in
                        if gone.isSet { throw CancellationError() }
                        continuation.yield(bytes)
                    }
                    continuation.finish()
                }
                continuation.finish()
            }
            do {
                for await piece in pieces {
                    var buffer = ByteBufferAllocator().buffer(capacity: piece.count)
                    buffer.writeBytes(piece)
                    try await writer.write(buffer)
                }
            } catch {
                gone.set()
            }
            _ = await producer.value
            try? await writer.finish(nil)
        })
    }
}

/// Set once the client of a streamed response went away, so the producer stops.
// @unchecked because `value` is only touched under `lock`.
private final class ClientGone: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false

    var isSet: Bool { lock.withLock { value } }
    func set() { lock.withLock { value = true } }
}
