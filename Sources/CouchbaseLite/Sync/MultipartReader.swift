import Foundation

/// Why a multipart body could not be read; the listener answers 400 with the message, the
/// replicator counts a failure of the revisions concerned.
package struct MultipartError: Error, CustomStringConvertible, Sendable {
    package enum Kind: Sendable {
        /// Not a multipart body, or no boundary, or broken syntax.
        case malformed
        /// The closing delimiter never came: the body was cut short.
        case truncated
        /// A part the JSON announces (`"follows": true`) is absent.
        case missingAttachment
        /// An attachment body does not match its metadata's `digest`.
        case digestMismatch
        /// A gzip part that does not inflate, or a JSON part that does not parse.
        case badContent
    }

    package let kind: Kind
    package let message: String

    package init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    package var description: String { message }
}

/// Splits multipart bodies (RFC 2046) into parts: the one reader of the listener's uploads
/// and of the pull's multipart answers. Parts are slices of the body, nested `multipart/…`
/// parts are read in place, so no attachment is copied while the body is split.
///
/// Hand-written rather than MultipartKit 4.7.1's parser: that one traps (index out of range)
/// on a byte ≥ 0x80 in a part's header name, so any client or peer could crash the process,
/// and it ends quietly wherever the input ends, so a cut body would pass for a whole one.
package enum MultipartReader {
    /// The parts of `body`, whose `Content-Type` is `contentType` (`multipart/…; boundary=…`).
    /// Nested multipart parts are read to `depth` levels (1: a `_bulk_get` answer's documents).
    package static func parts(of body: [UInt8], contentType: String, depth: Int = 1) throws -> [MIMEPart] {
        guard MIMEHeader.mediaType(contentType).hasPrefix("multipart/") else {
            throw MultipartError(.malformed, "Not a multipart body (Content-Type: \(contentType))")
        }
        guard let boundary = MIMEHeader.parameter("boundary", in: contentType), !boundary.isEmpty else {
            throw MultipartError(.malformed, "Content-Type \(contentType) has no boundary")
        }
        return try parts(of: body[...], boundary: boundary, depth: depth)
    }

    package static func parts(of body: [UInt8], boundary: String, depth: Int = 1) throws -> [MIMEPart] {
        try parts(of: body[...], boundary: boundary, depth: depth)
    }

    static func parts(of body: ArraySlice<UInt8>, boundary: String, depth: Int) throws -> [MIMEPart] {
        guard !boundary.isEmpty else { throw MultipartError(.malformed, "Empty multipart boundary") }
        let dashBoundary = Array("--\(boundary)".utf8)
        let delimiter: [UInt8] = [13, 10] + dashBoundary
        // The first delimiter opens the body or follows a preamble line.
        var position: Int
        if body.starts(with: dashBoundary) {
            position = body.startIndex
        } else if let found = find(delimiter, in: body, from: body.startIndex) {
            position = found + 2
        } else {
            throw MultipartError(.malformed, "No part delimited by boundary \(boundary)")
        }
        var parts: [MIMEPart] = []
        func truncated() -> MultipartError {
            MultipartError(.truncated, "Truncated multipart body: \(parts.count) complete part(s), "
                           + "then no closing delimiter --\(boundary)--")
        }
        while true {
            position += dashBoundary.count
            guard position + 2 <= body.endIndex else { throw truncated() }
            if body[position] == 0x2D, body[position + 1] == 0x2D { return parts }  // `--`: the end
            // Transport padding, then the CRLF that ends the delimiter line.
            while position < body.endIndex, body[position] == 0x20 || body[position] == 0x09 { position += 1 }
            guard position + 2 <= body.endIndex else { throw truncated() }
            guard body[position] == 13, body[position + 1] == 10 else {
                throw MultipartError(.malformed, "Malformed multipart delimiter line (boundary \(boundary))")
            }
            let partStart = position + 2
            guard let partEnd = find(delimiter, in: body, from: partStart) else { throw truncated() }
            parts.append(try part(body[partStart..<partEnd], depth: depth))
            position = partEnd + 2
        }
    }

    /// One part: its header block, then its body (read as parts in turn when it is multipart).
    /// A part's header block (without its closing blank line) as name/value pairs; folded lines
    /// are joined (RFC 5322 2.2.3). Shared with the listener's streaming upload reader.
    package static func headerLines(_ bytes: ArraySlice<UInt8>) throws(MultipartError) -> [(name: String, value: String)] {
        var headers: [(name: String, value: String)] = []
        for line in String(decoding: bytes, as: UTF8.self).components(separatedBy: "\r\n") {
            if let first = line.first, first == " " || first == "\t", !headers.isEmpty {
                headers[headers.count - 1].value += " " + line.trimmingCharacters(in: .whitespaces)  // folded
                continue
            }
            guard let colon = line.firstIndex(of: ":") else {
                throw MultipartError(.malformed, "Malformed multipart part header line")
            }
            headers.append((String(line[..<colon]).trimmingCharacters(in: .whitespaces),
                            String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces)))
        }
        return headers
    }

    private static func part(_ bytes: ArraySlice<UInt8>, depth: Int) throws -> MIMEPart {
        var headers: [(name: String, value: String)] = []
        let bodyStart: Int
        if bytes.starts(with: [13, 10]) {
            bodyStart = bytes.startIndex + 2
        } else if let end = find([13, 10, 13, 10], in: bytes, from: bytes.startIndex) {
            headers = try headerLines(bytes[bytes.startIndex..<end])
            bodyStart = end + 4
        } else {
            throw MultipartError(.malformed, "Multipart part without a header block")
        }
        var part = MIMEPart(headers: headers, body: bytes[bodyStart...])
        if depth > 0, let type = part.header("content-type"), MIMEHeader.mediaType(type).hasPrefix("multipart/") {
            guard let inner = MIMEHeader.parameter("boundary", in: type), !inner.isEmpty else {
                throw MultipartError(.malformed, "Nested \(type) part has no boundary")
            }
            part.parts = try parts(of: part.body, boundary: inner, depth: depth - 1)
            part.body = []
        }
        return part
    }

    /// The index of the first occurrence of `needle` in `haystack` at or after `start`.
    static func find(_ needle: [UInt8], in haystack: ArraySlice<UInt8>, from start: Int) -> Int? {
        guard let first = needle.first, start <= haystack.endIndex, haystack.endIndex - start >= needle.count else { return nil }
        return haystack.withUnsafeBufferPointer { hay -> Int? in
            needle.withUnsafeBufferPointer { pattern -> Int? in
                guard let base = hay.baseAddress, let p = pattern.baseAddress else { return nil }
                var offset = start - haystack.startIndex
                let last = hay.count - pattern.count
                while offset <= last {
                    guard let hit = memchr(base + offset, Int32(first), last - offset + 1) else { return nil }
                    let at = UnsafeRawPointer(hit).assumingMemoryBound(to: UInt8.self) - base
                    if memcmp(base + at, p, pattern.count) == 0 { return haystack.startIndex + at }
                    offset = at + 1
                }
                return nil
            }
        }
    }
}
