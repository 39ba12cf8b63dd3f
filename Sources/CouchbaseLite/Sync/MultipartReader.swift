import Foundation
import MultipartKit
import NIOCore

/// One MIME part of a multipart body.
package struct MIMEPart: Sendable {
    package var headers: [(name: String, value: String)]
    /// The body as received (empty for a `multipart/…` part whose parts were read).
    package var body: ByteBuffer
    /// The parts of a nested `multipart/…` part (`_bulk_get`'s and `open_revs`' documents with
    /// attachments), read as the body streamed by; nil for any other part.
    package var parts: [MIMEPart]?

    package init(headers: [(name: String, value: String)], body: ByteBuffer, parts: [MIMEPart]? = nil) {
        self.headers = headers
        self.body = body
        self.parts = parts
    }

    /// The first header of that name (case-insensitive), trimmed.
    package func header(_ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?
            .value.trimmingCharacters(in: .whitespaces)
    }

    /// The media type of `Content-Type`, lowercased, without parameters.
    package var mediaType: String? { header("content-type").map(MIMEHeader.mediaType) }

    /// True when the part says its body is gzip-compressed (`Content-Encoding: gzip`).
    package var isGzipped: Bool { header("content-encoding")?.lowercased() == "gzip" }
}

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

/// Splits multipart bodies (RFC 2046) into parts with MultipartKit's streaming parser.
/// Parts that are themselves multipart are read while the outer body streams by, so an
/// attachment is copied once out of the answer, not once per nesting level.
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
        return try parts(of: body, boundary: boundary, depth: depth)
    }

    package static func parts(of body: [UInt8], boundary: String, depth: Int = 1) throws -> [MIMEPart] {
        let collector = try PartCollector(boundary: boundary, depth: depth)
        // Fed in slices: the parser copies what it reads, so a whole-body copy is never made.
        let slice = 64 * 1024
        var offset = 0
        while offset < body.count {
            let end = min(offset + slice, body.count)
            try collector.feed(ByteBuffer(bytes: body[offset..<end]))
            offset = end
        }
        return try collector.finish()
    }
}

/// Collects the parts of one multipart body fed chunk by chunk.
private final class PartCollector {
    private let parser: MultipartParser
    private let boundary: String
    /// `--boundary--`: a body that does not end with it was cut short (MultipartKit stops
    /// quietly wherever the input ends).
    private let closingDelimiter: [UInt8]
    private var tail: [UInt8] = []
    private let depth: Int

    private var parts: [MIMEPart] = []
    private var headers: [(name: String, value: String)] = []
    private var body = ByteBuffer()
    private var headersDone = false
    private var partOpen = false
    private var nested: PartCollector?
    private var failure: Error?

    init(boundary: String, depth: Int) throws {
        // RFC 2046: 1 to 70 characters (MultipartKit traps on an empty one).
        guard !boundary.isEmpty, boundary.utf8.count <= 200 else {
            throw MultipartError(.malformed, "Invalid multipart boundary")
        }
        self.boundary = boundary
        self.depth = depth
        closingDelimiter = Array("--\(boundary)--".utf8)
        parser = MultipartParser(boundary: boundary)
        parser.onHeader = { [unowned self] name, value in
            self.headers.append((name, value))
            self.partOpen = true
        }
        parser.onBody = { [unowned self] chunk in self.receive(&chunk) }
        parser.onPartComplete = { [unowned self] in self.completePart() }
    }

    func feed(_ chunk: ByteBuffer) throws {
        let keep = closingDelimiter.count + 64
        if chunk.readableBytes >= keep {
            tail = Array(chunk.readableBytesView.suffix(keep))
        } else {
            tail.append(contentsOf: chunk.readableBytesView)
            if tail.count > keep { tail.removeFirst(tail.count - keep) }
        }
        do {
            try parser.execute(chunk)
        } catch {
            throw MultipartError(.malformed, "Malformed multipart body (boundary \(boundary))")
        }
        if let failure { throw failure }
    }

    func finish() throws -> [MIMEPart] {
        if let failure { throw failure }
        var end = tail.count
        while end > 0, [0x0D, 0x0A, 0x20, 0x09].contains(tail[end - 1]) { end -= 1 }
        let closed = end >= closingDelimiter.count && Array(tail[(end - closingDelimiter.count)..<end]) == closingDelimiter
        guard closed, !partOpen else {
            if parts.isEmpty && !partOpen {
                throw MultipartError(.malformed, "No part delimited by boundary \(boundary)")
            }
            throw MultipartError(.truncated, "Truncated multipart body: \(parts.count) complete part(s), "
                                 + "then no closing delimiter --\(boundary)--")
        }
        return parts
    }

    private func beginBody() {
        guard !headersDone else { return }
        headersDone = true
        partOpen = true
        guard depth > 0, let type = headers.first(where: { $0.name.caseInsensitiveCompare("content-type") == .orderedSame })?.value,
              MIMEHeader.mediaType(type).hasPrefix("multipart/") else { return }
        guard let inner = MIMEHeader.parameter("boundary", in: type) else {
            failure = failure ?? MultipartError(.malformed, "Nested \(type) part has no boundary")
            return
        }
        do {
            nested = try PartCollector(boundary: inner, depth: depth - 1)
        } catch {
            failure = failure ?? error
        }
    }

    private func receive(_ chunk: inout ByteBuffer) {
        beginBody()
        if let nested {
            do { try nested.feed(chunk) } catch { failure = failure ?? error }
        } else {
            body.writeBuffer(&chunk)
        }
    }

    private func completePart() {
        beginBody()
        var part = MIMEPart(headers: headers, body: body)
        if let nested {
            do { part.parts = try nested.finish() } catch { failure = failure ?? error }
        }
        parts.append(part)
        headers = []
        body = ByteBuffer()
        headersDone = false
        partOpen = false
        nested = nil
    }
}

/// Header values with parameters (`multipart/related; boundary="abc"`,
/// `attachment; filename="x"`).
package enum MIMEHeader {
    /// The value of a parameter (unquoted, backslash escapes resolved), nil when absent.
    package static func parameter(_ name: String, in value: String) -> String? {
        for (key, parameterValue) in parameters(value).dropFirst() where key.caseInsensitiveCompare(name) == .orderedSame {
            return parameterValue
        }
        return nil
    }

    /// The media type (or disposition) before the first `;`, lowercased.
    package static func mediaType(_ value: String) -> String {
        (parameters(value).first?.0 ?? "").lowercased()
    }

    /// Splits a header value at the `;`s outside quoted strings: first the bare value (with an
    /// empty second member), then each `name=value`.
    private static func parameters(_ value: String) -> [(String, String)] {
        var result: [(String, String)] = []
        var current = ""
        var inQuotes = false
        var escaped = false
        var pieces: [String] = []
        for c in value {
            if escaped {
                current.append(c)
                escaped = false
            } else if inQuotes && c == "\\" {
                current.append(c)
                escaped = true
            } else if c == "\"" {
                current.append(c)
                inQuotes.toggle()
            } else if c == ";" && !inQuotes {
                pieces.append(current)
                current = ""
            } else {
                current.append(c)
            }
        }
        pieces.append(current)
        for (i, piece) in pieces.enumerated() {
            let trimmed = piece.trimmingCharacters(in: .whitespaces)
            if i == 0 {
                result.append((trimmed, ""))
                continue
            }
            guard let eq = trimmed.firstIndex(of: "=") else { continue }
            let key = trimmed[..<eq].trimmingCharacters(in: .whitespaces)
            var raw = trimmed[trimmed.index(after: eq)...].trimmingCharacters(in: .whitespaces)
            if raw.count >= 2, raw.hasPrefix("\""), raw.hasSuffix("\"") {
                raw = String(raw.dropFirst().dropLast())
                var unescaped = ""
                var pendingEscape = false
                for c in raw {
                    if pendingEscape {
                        unescaped.append(c)
                        pendingEscape = false
                    } else if c == "\\" {
                        pendingEscape = true
                    } else {
                        unescaped.append(c)
                    }
                }
                raw = unescaped
            }
            result.append((key, raw))
        }
        return result
    }
}
