import CouchbaseLite
import Foundation

/// A `multipart/related` document body (`PUT /{db}/{doc}`) split as it arrives: the JSON part
/// is kept (up to the JSON body limit), each attachment part goes straight into the blob
/// store, so an upload of any size is never held in memory. A gzip-encoded part is kept too
/// (it is inflated whole, as ``MultipartDocument`` does). The syntax is RFC 2046's, read as
/// `MultipartReader` reads a whole body (which works on complete bodies only).
// @unchecked because it is fed by one request's body loop at a time (its parser state is never shared).
final class MultipartUploadStream: @unchecked Sendable {
    /// One part: its headers and where its body went.
    struct Part: Sendable {
        var headers: [(name: String, value: String)]
        var bytes: [UInt8] = []
        var blob: SyncBlobDownload?
        /// The installed blob (sha1 digest, md5 digest, length), once ``finish()`` ran.
        var installed: (digest: String, md5Digest: String, length: Int)?

        var mime: MIMEPart { MIMEPart(headers: headers, body: bytes[...]) }
    }

    private enum State { case preamble, delimiterLine, headers, body, done }

    private let dashBoundary: [UInt8]
    private let delimiter: [UInt8]
    private let maxInMemory: Int
    private let beginBlob: () throws -> SyncBlobDownload
    private var state = State.preamble
    private var buffer: [UInt8] = []
    private(set) var parts: [Part] = []
    private var current: Part?

    init(boundary: String, maxInMemory: Int, beginBlob: @escaping () throws -> SyncBlobDownload) {
        dashBoundary = Array("--\(boundary)".utf8)
        delimiter = [13, 10] + dashBoundary
        self.maxInMemory = maxInMemory
        self.beginBlob = beginBlob
    }

    /// Reads more of the body.
    func feed(_ bytes: UnsafeRawBufferPointer) throws {
        buffer.append(contentsOf: bytes)
        try process()
    }

    /// Ends the body: every part is complete (else a `truncated` error) and every blob installed.
    func finish() throws -> [Part] {
        guard state == .done else {
            throw MultipartError(.truncated, "Truncated multipart body: \(parts.count) complete part(s), "
                                 + "then no closing delimiter \(String(decoding: dashBoundary, as: UTF8.self))--")
        }
        for i in parts.indices {
            if let blob = parts[i].blob {
                parts[i].installed = try blob.finish()
            }
        }
        return parts
    }

    /// Drops every blob not installed.
    func cancel() {
        current?.blob?.cancel()
        for part in parts where part.installed == nil { part.blob?.cancel() }
    }

    private func process() throws {
        var position = 0
        defer { buffer.removeFirst(position) }
        while true {
            switch state {
            case .done:
                position = buffer.count   // the epilogue is ignored
                return
            case .preamble:
                if position == 0, buffer.starts(with: dashBoundary) {
                    position = dashBoundary.count
                } else if let found = find(delimiter, from: position) {
                    position = found + delimiter.count
                } else {
                    position = max(position, buffer.count - delimiter.count)
                    return
                }
                state = .delimiterLine
            case .delimiterLine:
                guard buffer.count - position >= 2 else { return }
                if buffer[position] == 0x2D, buffer[position + 1] == 0x2D {
                    state = .done
                    continue
                }
                var i = position
                while i < buffer.count, buffer[i] == 0x20 || buffer[i] == 0x09 { i += 1 }
                guard buffer.count - i >= 2 else { return }
                guard buffer[i] == 13, buffer[i + 1] == 10 else {
                    throw MultipartError(.malformed, "Malformed multipart delimiter line")
                }
                position = i + 2
                state = .headers
            case .headers:
                let headers: [(name: String, value: String)]
                if buffer.count - position >= 2, buffer[position] == 13, buffer[position + 1] == 10 {
                    headers = []
                    position += 2
                } else if let end = find([13, 10, 13, 10], from: position) {
                    headers = try Self.parseHeaders(buffer[position..<end])
                    position = end + 4
                } else {
                    if buffer.count - position > 64 * 1024 {
                        throw MultipartError(.malformed, "Multipart part header block too long")
                    }
                    return
                }
                var part = Part(headers: headers)
                let gzipped = part.mime.isGzipped
                if !parts.isEmpty, !gzipped { part.blob = try beginBlob() }
                current = part
                state = .body
            case .body:
                if let found = find(delimiter, from: position) {
                    try write(buffer[position..<found])
                    position = found + delimiter.count
                    if let part = current { parts.append(part) }
                    current = nil
                    state = .delimiterLine
                } else {
                    // Everything but what could be the start of a delimiter cut by the chunk's end.
                    let safe = max(position, buffer.count - (delimiter.count - 1))
                    try write(buffer[position..<safe])
                    position = safe
                    return
                }
            }
        }
    }

    private func write(_ bytes: ArraySlice<UInt8>) throws {
        guard !bytes.isEmpty, current != nil else { return }
        if let blob = current!.blob {
            try bytes.withUnsafeBytes { try blob.append($0) }
        } else {
            guard current!.bytes.count + bytes.count <= maxInMemory else {
                throw RESTError(413, "too_large", "The request entity is too large (limit \(maxInMemory) bytes)")
            }
            current!.bytes += bytes
        }
    }

    private func find(_ needle: [UInt8], from start: Int) -> Int? {
        guard let first = needle.first, buffer.count - start >= needle.count else { return nil }
        var i = start
        let last = buffer.count - needle.count
        while i <= last {
            guard let hit = buffer[i...last].firstIndex(of: first) else { return nil }
            if buffer[hit..<(hit + needle.count)].elementsEqual(needle) { return hit }
            i = hit + 1
        }
        return nil
    }

    private static func parseHeaders(_ bytes: ArraySlice<UInt8>) throws -> [(name: String, value: String)] {
        try MultipartReader.headerLines(bytes)
    }
}
