import CZlib
import Foundation

/// CouchDB's rule for storing attachments gzip-encoded: an attachment received unencoded whose
/// content type matches `[attachments] compressible_types` is stored gzipped at
/// `[attachments] compression_level` (CouchDB's `couch_db:with_stream`), with
/// `"encoding":"gzip"` and `encoded_length` in its metadata (spec 4.1) — the form 1.x already
/// reads, so a 1.x app opening the file and ``CBLAttachment/content`` still see the decoded bytes.
///
/// 1.x itself never compresses: the rule applies only to saves made inside
/// ``applying(_:_:)`` (the listener wraps each request in it), on the calling thread.
package struct AttachmentCompression: Sendable, Equatable {
    /// CouchDB 3.4's default `compressible_types`.
    package static let defaultCompressibleTypes = "text/*, application/javascript, application/json, application/xml"
    /// CouchDB 3.4's default `compression_level`.
    package static let defaultLevel = 8

    /// zlib level 1...9; 0 turns compression off.
    package let level: Int
    /// The type patterns, lower-cased; `*` matches any run of characters.
    package let patterns: [String]

    /// A rule from the configuration's text values (nil: CouchDB's defaults). A level that is
    /// not a number 0...9 is CouchDB's 8.
    package init(level: String? = nil, compressibleTypes: String? = nil) {
        let parsed = level.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) } ?? Self.defaultLevel
        self.level = (0...9).contains(parsed) ? parsed : Self.defaultLevel
        patterns = (compressibleTypes ?? Self.defaultCompressibleTypes)
            .split(separator: ",")
            .map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            .filter { !$0.isEmpty }
    }

    /// True when an attachment of `contentType` is stored compressed: the level is not 0 and the
    /// type (its parameters ignored, case-insensitively, as CouchDB's regular expression
    /// `^\s*PATTERN(?:\s*;.*?)?\s*$` reads it) matches a pattern. No type is CouchDB's
    /// `application/octet-stream`.
    package func compresses(contentType: String?) -> Bool {
        guard level > 0, !patterns.isEmpty else { return false }
        var type = (contentType ?? "application/octet-stream").lowercased()
        if let semicolon = type.firstIndex(of: ";") { type = String(type[..<semicolon]) }
        type = type.trimmingCharacters(in: .whitespaces)
        return patterns.contains { Self.glob($0.utf8[...], matches: type.utf8[...]) }
    }

    /// gzip of `data` at this rule's level (the gzip wrapper and window CouchDB's stream uses:
    /// `deflateInit(Z, Level, deflated, 16 + 15, 8, default)`).
    func compress(_ data: Data) throws -> Data {
        try Gzip.compress(data, level: Int32(level))
    }

    /// Stores `content` gzipped in `blobs` and describes it in `meta` as 1.x describes a
    /// gzip-stored attachment (spec 4.1): the stored bytes' `digest` and `encoded_length`,
    /// `"encoding":"gzip"`, and the decoded `length`.
    func store(_ content: Data, in blobs: BlobStore, meta: inout [String: Any]) throws {
        let result = try blobs.store(try compress(content))
        meta["digest"] = result.key.digest
        meta["encoding"] = "gzip"
        meta["encoded_length"] = Int(result.length)
        meta["length"] = content.count
    }

    private static func glob(_ pattern: Substring.UTF8View, matches text: Substring.UTF8View) -> Bool {
        guard let first = pattern.first else { return text.isEmpty }
        if first == UInt8(ascii: "*") {
            let rest = pattern.dropFirst()
            var tail = text
            while true {
                if glob(rest, matches: tail) { return true }
                if tail.isEmpty { return false }
                tail = tail.dropFirst()
            }
        }
        guard let head = text.first, head == first else { return false }
        return glob(pattern.dropFirst(), matches: text.dropFirst())
    }

    // MARK: The current rule

    /// Runs `body` with `rule` as the calling thread's compression rule (nil: none, as 1.x),
    /// restoring the previous one afterwards. A thread-local, as ``CBLRequestUser/acting(as:_:)``
    /// is: the listener writes synchronously on the thread that handles the request.
    package static func applying<R>(_ rule: AttachmentCompression?, _ body: () throws -> R) rethrows -> R {
        try scope.with(rule, body)
    }

    /// The calling thread's rule (set by ``applying(_:_:)``), nil when there is none.
    package static var current: AttachmentCompression? { scope.current }

    /// The thread-local slot holding the current rule.
    private static let scope = ThreadLocalScope<AttachmentCompression>(purpose: "attachment compression")
}
