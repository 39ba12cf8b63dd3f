import CouchbaseLite
import Foundation

/// One piece of a streamed attachment answer: literal bytes (multipart/byteranges framing),
/// or a range of the attachment's content read from its blob file.
enum AttachmentPiece: Sendable {
    case bytes([UInt8])
    case content(ClosedRange<Int>)

    var count: Int {
        switch self {
        case .bytes(let b): return b.count
        case .content(let r): return r.count
        }
    }
}

/// Produces an attachment answer's pieces from its blob, reading at most `chunkSize` bytes at
/// a time. A range before the current read position reopens the blob (byteranges may come in
/// any order and overlap).
// @unchecked because its read position and open stream are only touched under `lock`.
final class AttachmentStreamer: @unchecked Sendable {
    static let chunkSize = 256 * 1024

    private let lock = NSLock()
    private let open: @Sendable () throws -> SyncBlobStream
    private var pieces: ArraySlice<AttachmentPiece>
    private var stream: SyncBlobStream?
    private var position = 0
    /// What is left of the content range being read: (next offset, bytes left).
    private var reading: (offset: Int, left: Int)?

    init(pieces: [AttachmentPiece], first: SyncBlobStream?, open: @escaping @Sendable () throws -> SyncBlobStream) {
        self.pieces = pieces[...]
        self.stream = first
        self.open = open
    }

    /// The answer as a body stream of known length.
    func body() -> RESTBodyStream {
        let length = pieces.reduce(0) { $0 + $1.count }
        return RESTBodyStream(length: length, next: { [self] in try next() }, close: { [self] in close() })
    }

    private func next() throws -> [UInt8]? {
        lock.lock(); defer { lock.unlock() }
        while true {
            if let (offset, left) = reading, left > 0 {
                let stream = try seek(to: offset)
                guard let data = try stream.read(upToCount: min(left, Self.chunkSize)), !data.isEmpty else {
                    throw RESTError(500, "internal_server_error", "The attachment's content ended early")
                }
                let bytes = Array(data.prefix(left))
                position += bytes.count
                reading = (offset + bytes.count, left - bytes.count)
                return bytes
            }
            reading = nil
            guard let piece = pieces.popFirst() else { return nil }
            switch piece {
            case .bytes(let b):
                return b
            case .content(let range):
                reading = (range.lowerBound, range.count)
            }
        }
    }

    /// The blob, positioned at `offset`.
    private func seek(to offset: Int) throws -> SyncBlobStream {
        if let stream, position == offset { return stream }
        if stream == nil || offset < position {
            stream?.close()
            stream = try open()
            position = 0
        }
        try stream!.skip(offset - position)
        position = offset
        return stream!
    }

    private func close() {
        lock.lock(); defer { lock.unlock() }
        stream?.close()
        stream = nil
        pieces = []
    }
}

