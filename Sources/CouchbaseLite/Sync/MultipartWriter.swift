import Foundation

/// One MIME part held in memory: its header lines and body.
package struct MultipartPart: Sendable {
    package var headers: [(String, String)]
    package var body: [UInt8]

    package init(headers: [(String, String)], body: [UInt8]) {
        self.headers = headers
        self.body = body
    }

    package func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }
}

/// The one writer of MIME multipart framing (RFC 2046) as CouchDB writes it: the listener's
/// `multipart/related` documents, `multipart/mixed` `_bulk_get` / `open_revs` answers and
/// `multipart/byteranges`, and the pusher's `multipart/related` uploads (whose attachment
/// bodies stream from the blob store between the heads this writes).
package enum MultipartWriter {
    /// 32 random hex digits.
    package static func newBoundary() -> String {
        (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    }

    /// `s` escaped for a quoted header parameter (`filename="…"`).
    package static func quoted(_ s: String) -> String {
        s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
    }

    /// What goes before a part's body: the delimiter (after the CRLF that ends the previous
    /// part's body, unless `first`), the header lines and the blank line.
    package static func partHead(boundary: String, headers: [(String, String)], first: Bool) -> [UInt8] {
        var head = first ? "" : "\r\n"
        head += "--\(boundary)\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        head += "\r\n"
        return Array(head.utf8)
    }

    /// The close delimiter, after the last part's body.
    package static func closing(boundary: String) -> [UInt8] {
        Array("\r\n--\(boundary)--".utf8)
    }

    /// A whole body of in-memory parts.
    package static func encode(_ parts: [MultipartPart], boundary: String) -> [UInt8] {
        var out: [UInt8] = []
        for (i, part) in parts.enumerated() {
            out += partHead(boundary: boundary, headers: part.headers, first: i == 0)
            out += part.body
        }
        out += parts.isEmpty ? Array("--\(boundary)--".utf8) : closing(boundary: boundary)
        return out
    }
}
