import Foundation

/// One MIME part of a multipart body.
package struct MIMEPart: Sendable {
    package var headers: [(name: String, value: String)]
    /// The body: a slice of the whole body, not a copy (empty for a `multipart/…` part whose
    /// parts were read).
    package var body: ArraySlice<UInt8>
    /// The parts of a nested `multipart/…` part (`_bulk_get`'s and `open_revs`' documents with
    /// attachments); nil for any other part.
    package var parts: [MIMEPart]?

    package init(headers: [(name: String, value: String)], body: ArraySlice<UInt8>, parts: [MIMEPart]? = nil) {
        self.headers = headers
        self.body = body
        self.parts = parts
    }

    /// The body's bytes (a copy).
    package var bodyBytes: [UInt8] { Array(body) }

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
