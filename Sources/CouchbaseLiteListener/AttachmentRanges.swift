import CouchbaseLite
import Foundation

/// `Range` requests on attachments, answered as CouchDB's chttpd_db does (mochiweb's range
/// parser, then `parse_ranges`): one range is a `206` with `Content-Range`, two to nine are a
/// `206 multipart/byteranges`, a backward or wholly outside range is `416`, and a malformed
/// header, `bytes=0-`, or ten ranges or more are ignored (`200`, the whole content).
enum AttachmentRanges {
    /// One requested range: first and last byte offsets, either end open.
    private typealias Spec = (from: Int?, to: Int?)

    /// A ranged answer: its status, headers and pieces (framing bytes and content ranges).
    struct Plan {
        var status: Int
        var headers: [(String, String)]
        var pieces: [AttachmentPiece]
    }

    /// The ranged answer for `header` over content of `length` bytes, or nil to answer the whole content.
    static func plan(_ header: String?, length: Int, contentType: String,
                     headers: [(String, String)]) throws -> Plan? {
        guard let header, let specs = parse(header) else { return nil }
        guard let ranges = try resolve(specs, length: length), !ranges.isEmpty, ranges.count < 10 else { return nil }
        if ranges.count == 1, let range = ranges.first {
            return Plan(status: 206, headers: [("Content-Type", contentType),
                                               ("Content-Range", contentRange(range, length))] + headers,
                        pieces: [.content(range)])
        }
        let boundary = MultipartWriter.newBoundary()
        var pieces: [AttachmentPiece] = []
        for (i, range) in ranges.enumerated() {
            let head = MultipartWriter.partHead(boundary: boundary, headers: [
                ("Content-Type", contentType), ("Content-Range", contentRange(range, length)),
            ], first: i == 0)
            pieces += [.bytes(head), .content(range)]
        }
        pieces.append(.bytes(MultipartWriter.closing(boundary: boundary)))
        return Plan(status: 206, headers: [("Content-Type", "multipart/byteranges; boundary=\"\(boundary)\"")] + headers,
                    pieces: pieces)
    }

    /// The ranged response for `header` over content held in memory, or nil to answer the whole content.
    static func response(_ header: String?, content: [UInt8], contentType: String,
                         headers: [(String, String)]) throws -> RESTResponse? {
        guard let plan = try plan(header, length: content.count, contentType: contentType, headers: headers) else {
            return nil
        }
        var body: [UInt8] = []
        for piece in plan.pieces {
            switch piece {
            case .bytes(let b): body += b
            case .content(let range): body += content[range]
            }
        }
        return RESTResponse(status: plan.status, headers: plan.headers, body: body)
    }

    /// The ETag CouchDB gives an attachment: the base64 of the MD5 of its stored bytes, quoted
    /// (`"aEI7pOYC…=="`, chttpd_db's `db_attachment_req`); the revision's when there is none.
    static func etag(md5: [UInt8]?, revID: String) -> String {
        guard let md5, !md5.isEmpty else { return "\"\(revID)\"" }
        return "\"\(Data(md5).base64EncodedString())\""
    }

    private static func contentRange(_ range: ClosedRange<Int>, _ length: Int) -> String {
        "bytes \(range.lowerBound)-\(range.upperBound)/\(length)"
    }

    /// mochiweb's `parse_range_request`: `bytes=` then comma-separated `N-M`, `N-`, `-N`; nil when malformed.
    private static func parse(_ header: String) -> [Spec]? {
        let trimmed = header.trimmingCharacters(in: .whitespaces)
        guard trimmed.hasPrefix("bytes=") else { return nil }
        var specs: [Spec] = []
        for token in trimmed.dropFirst(6).split(separator: ",") {
            let piece = token.trimmingCharacters(in: .whitespaces)
            if piece.isEmpty { continue }
            guard let dash = piece.firstIndex(of: "-") else { return nil }
            let first = piece[..<dash], last = piece[piece.index(after: dash)...]
            let from = first.isEmpty ? nil : Int(first)
            let to = last.isEmpty ? nil : Int(last)
            if (!first.isEmpty && from == nil) || (!last.isEmpty && to == nil) || (from == nil && to == nil) { return nil }
            if let from, from < 0 { return nil }
            specs.append((from, to))
        }
        return specs
    }

    /// chttpd_db:parse_ranges: nil for "the whole content", 416 for an unsatisfiable range.
    private static func resolve(_ specs: [Spec], length: Int) throws -> [ClosedRange<Int>]? {
        var out: [ClosedRange<Int>] = []
        for spec in specs {
            if spec.from == 0 && spec.to == nil { return nil }
            var from: Int
            var to: Int
            switch (spec.from, spec.to) {
            case let (f?, t?): (from, to) = (f, t)
            case let (f?, nil): (from, to) = (f, length - 1)
            case let (nil, t?): (from, to) = (max(0, length - t), length - 1)
            default: return nil
            }
            if to < from { throw unsatisfiable(length) }
            to = min(to, length - 1)
            if to < from { throw unsatisfiable(length) }
            from = max(from, 0)
            out.append(from...to)
        }
        return out
    }

    private static func unsatisfiable(_ length: Int) -> RESTError {
        var error = RESTError(416, "requested_range_not_satisfiable", "Requested range not satisfiable")
        error.headers = [("Content-Range", "bytes */\(length)")]
        return error
    }
}
