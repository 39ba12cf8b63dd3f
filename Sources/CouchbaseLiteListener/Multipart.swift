import CouchbaseLite
import Foundation

/// One MIME part.
struct MultipartPart: Sendable {
    var headers: [(String, String)]
    var body: [UInt8]

    func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }
}

/// Writes multipart bodies (`multipart/related` documents, `multipart/mixed` for `_bulk_get`
/// and `open_revs`).
enum MultipartWriter {
    static func newBoundary() -> String {
        (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    }

    static func quoted(_ s: String) -> String {
        s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
    }

    static func encode(_ parts: [MultipartPart], boundary: String) -> [UInt8] {
        var out: [UInt8] = []
        for part in parts {
            out += Array("--\(boundary)\r\n".utf8)
            for (name, value) in part.headers { out += Array("\(name): \(value)\r\n".utf8) }
            out += [13, 10]
            out += part.body
            out += [13, 10]
        }
        out += Array("--\(boundary)--".utf8)
        return out
    }

    static func response(subtype: String, parts: [MultipartPart], status: Int = 200) -> RESTResponse {
        let boundary = newBoundary()
        return RESTResponse(status: status,
                            headers: [("Content-Type", "multipart/\(subtype); boundary=\"\(boundary)\"")],
                            body: encode(parts, boundary: boundary))
    }
}

/// Parses multipart bodies (`PUT /{db}/{doc}` with `Content-Type: multipart/related`).
enum MultipartReader {
    /// Splits a body into parts. Throws 400 on a malformed body.
    static func parts(_ body: [UInt8], boundary: String) throws -> [MultipartPart] {
        let bad = RESTError(400, "bad_request", "Malformed multipart body")
        let delimiter = Array("--\(boundary)".utf8)
        guard !boundary.isEmpty, var position = find(delimiter, in: body, from: 0) else { throw bad }
        var parts: [MultipartPart] = []
        while true {
            position += delimiter.count
            // `--` after the delimiter closes the body.
            if position + 1 < body.count, body[position] == 0x2D, body[position + 1] == 0x2D { break }
            // Skip transport padding up to the CRLF ending the delimiter line.
            guard let lineEnd = find([13, 10], in: body, from: position) else { throw bad }
            let partStart = lineEnd + 2
            guard let next = find([13, 10] + delimiter, in: body, from: partStart) else { throw bad }
            parts.append(try parsePart(Array(body[partStart..<next])))
            position = next + 2
        }
        return parts
    }

    private static func parsePart(_ bytes: [UInt8]) throws -> MultipartPart {
        var headers: [(String, String)] = []
        var bodyStart = 0
        if bytes.starts(with: [13, 10]) {
            bodyStart = 2
        } else if let end = find([13, 10, 13, 10], in: bytes, from: 0) {
            let text = String(decoding: bytes[0..<end], as: UTF8.self)
            for line in text.components(separatedBy: "\r\n") {
                guard let colon = line.firstIndex(of: ":") else { continue }
                headers.append((String(line[..<colon]).trimmingCharacters(in: .whitespaces),
                                String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces)))
            }
            bodyStart = end + 4
        } else {
            throw RESTError(400, "bad_request", "Malformed multipart part headers")
        }
        return MultipartPart(headers: headers, body: Array(bytes[bodyStart...]))
    }

    static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard let first = needle.first, needle.count <= haystack.count else { return nil }
        var i = start
        let last = haystack.count - needle.count
        while i <= last {
            guard let candidate = haystack[i...last].firstIndex(of: first) else { return nil }
            var match = true
            for j in 1..<needle.count where haystack[candidate + j] != needle[j] {
                match = false
                break
            }
            if match { return candidate }
            i = candidate + 1
        }
        return nil
    }

    /// A document whose `follows` attachments arrive as the following MIME parts (matched by
    /// `Content-Disposition` filename, else in attachment-name order): the bodies become inline
    /// `data` so the database stores them like any inline attachment.
    static func documentWithAttachments(_ request: RESTRequest) throws -> [String: Any] {
        guard let boundary = request.contentTypeParameter("boundary") else {
            throw RESTError(400, "bad_request", "multipart/related without a boundary")
        }
        let parts = try parts(request.body, boundary: boundary)
        guard let first = parts.first else { throw RESTError(400, "bad_request", "Empty multipart body") }
        var json = first.body
        if first.header("content-encoding")?.lowercased() == "gzip" {
            json = Array((try? CBLDatabase.syncGunzip(Data(json))) ?? Data())
        }
        var doc = try JSONText.parseObject(json, what: "Document")
        guard var atts = doc["_attachments"] as? [String: Any] else { return doc }
        let following = atts.keys.sorted().filter { ((atts[$0] as? [String: Any])?["follows"] as? Bool) == true }
        var unnamed = following.makeIterator()
        var byName: [String: MultipartPart] = [:]
        for part in parts.dropFirst() {
            if let disposition = part.header("content-disposition"),
               let filename = MIMEHeader.parameter("filename", in: disposition), following.contains(filename) {
                byName[filename] = part
            } else if let name = unnamed.next() {
                byName[name] = part
            }
        }
        for name in following {
            guard var meta = atts[name] as? [String: Any], let part = byName[name] else {
                throw RESTError(400, "bad_request", "Missing body of attachment '\(name)'")
            }
            var content = Data(part.body)
            if part.header("content-encoding")?.lowercased() == "gzip", meta["encoding"] as? String != "gzip" {
                content = try CBLDatabase.syncGunzip(content)
            }
            meta["follows"] = nil
            meta["digest"] = nil
            meta["data"] = content.base64EncodedString()
            atts[name] = meta
        }
        doc["_attachments"] = atts
        return doc
    }
}
