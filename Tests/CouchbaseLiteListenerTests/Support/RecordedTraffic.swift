import Foundation
import XCTest

/// One request/response pair of `shared/fixtures/couchdb-replication/*.jsonl` (traffic between
/// CouchDB 3.4's replicator and a CouchDB database, recorded by a proxy).
struct RecordedExchange {
    let index: Int
    let method: String
    let path: String
    let requestHeaders: [String: String]
    let requestBody: [UInt8]?
    let status: Int
    let responseHeaders: [String: String]
    let responseBody: [UInt8]

    var requestJSON: Any? { requestBody.flatMap { try? JSONSerialization.jsonObject(with: Data($0), options: [.fragmentsAllowed]) } }
    var responseJSON: Any? { try? JSONSerialization.jsonObject(with: Data(responseBody), options: [.fragmentsAllowed]) }
    /// The path without its query.
    var route: String { String(path.split(separator: "?", maxSplits: 1).first ?? "") }
    var label: String { "#\(index) \(method) \(path.prefix(120))" }

    /// The recorded exchanges of one fixture file, in order; skips the test when the shared
    /// fixtures are not there.
    static func load(_ name: String) throws -> [RecordedExchange] {
        guard let fixtures = sharedFixturesDirectory() else { throw XCTSkip("shared/fixtures not found") }
        let url = fixtures.appendingPathComponent("couchdb-replication/\(name)")
        guard let data = FileManager.default.contents(atPath: url.path) else { throw XCTSkip("\(name) not found") }
        var exchanges: [RecordedExchange] = []
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") where !line.isEmpty {
            let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let request = try XCTUnwrap(object["request"] as? [String: Any])
            let response = try XCTUnwrap(object["response"] as? [String: Any])
            exchanges.append(RecordedExchange(
                index: exchanges.count,
                method: try XCTUnwrap(request["method"] as? String),
                path: try XCTUnwrap(request["path"] as? String),
                requestHeaders: request["headers"] as? [String: String] ?? [:],
                requestBody: try body(request["body"]),
                status: try XCTUnwrap(response["status"] as? Int),
                responseHeaders: response["headers"] as? [String: String] ?? [:],
                responseBody: try body(response["body"]) ?? []))
        }
        return exchanges
    }

    private static func body(_ value: Any?) throws -> [UInt8]? {
        guard let dict = value as? [String: Any] else { return nil }
        if let text = dict["text"] as? String { return Array(text.utf8) }
        if let base64 = dict["base64"] as? String { return Array(try XCTUnwrap(Data(base64Encoded: base64))) }
        return nil
    }
}

/// A MIME part as a client parses it.
struct ParsedPart {
    /// Lowercased header names.
    let headers: [String: String]
    let body: [UInt8]

    var contentType: String? { headers["content-type"] }
    var json: Any? { try? JSONSerialization.jsonObject(with: Data(body), options: [.fragmentsAllowed]) }
    var dict: [String: Any] { json as? [String: Any] ?? [:] }

    /// The parts of this part's own multipart body (`multipart/related` inside `multipart/mixed`).
    func subparts() throws -> [ParsedPart] {
        try MultipartBody.parts(body, contentType: try XCTUnwrap(contentType))
    }
}

/// An independent multipart parser for the tests (RFC 2046: `--boundary` lines, CRLF before
/// each delimiter, `--boundary--` closing).
enum MultipartBody {
    /// The boundary parameter of a `multipart/*` content type, unquoted.
    static func boundary(_ contentType: String) -> String? {
        guard let range = contentType.range(of: "boundary=") else { return nil }
        var value = String(contentType[range.upperBound...])
        if let semicolon = value.firstIndex(of: ";") { value = String(value[..<semicolon]) }
        value = value.trimmingCharacters(in: .whitespaces)
        if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 { value = String(value.dropFirst().dropLast()) }
        return value
    }

    static func parts(_ body: [UInt8], contentType: String) throws -> [ParsedPart] {
        let boundary = try XCTUnwrap(boundary(contentType), "no boundary in \(contentType)")
        let delimiter = Array("--\(boundary)".utf8)
        var position = try XCTUnwrap(RawHTTPClient.find(delimiter, in: body), "no opening delimiter")
        XCTAssertEqual(position, 0, "the body starts with the delimiter")
        var parts: [ParsedPart] = []
        while true {
            position += delimiter.count
            if position + 1 < body.count, body[position] == 0x2D, body[position + 1] == 0x2D { break }
            XCTAssertEqual(Array(body[position..<min(position + 2, body.count)]), [13, 10], "CRLF after the delimiter")
            let start = position + 2
            let next = try XCTUnwrap(RawHTTPClient.find([13, 10] + delimiter, in: body, from: start), "unterminated part")
            let raw = Array(body[start..<next])
            let split = try XCTUnwrap(RawHTTPClient.find([13, 10, 13, 10], in: raw), "part without a header block")
            var headers: [String: String] = [:]
            for line in String(decoding: raw[0..<split], as: UTF8.self).components(separatedBy: "\r\n") {
                guard let colon = line.firstIndex(of: ":") else { continue }
                headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
            parts.append(ParsedPart(headers: headers, body: Array(raw[(split + 4)...])))
            position = next + 2
        }
        return parts
    }
}

/// Compares JSON values member by member: same keys on both sides, same values, except the
/// values of `opaque` keys, which only have to be present. Returns the differences.
func jsonDifferences(_ expected: Any, _ actual: Any, opaque: Set<String> = [], path: String = "$") -> [String] {
    switch (expected, actual) {
    case let (e as [String: Any], a as [String: Any]):
        var problems: [String] = []
        for key in Set(e.keys).union(a.keys).sorted() {
            switch (e[key], a[key]) {
            case (nil, _): problems.append("\(path).\(key) is extra: \(a[key]!)")
            case (_, nil): problems.append("\(path).\(key) is missing")
            case let (ev?, av?):
                if !opaque.contains(key) { problems += jsonDifferences(ev, av, opaque: opaque, path: "\(path).\(key)") }
            }
        }
        return problems
    case let (e as [Any], a as [Any]):
        guard e.count == a.count else { return ["\(path) has \(a.count) elements, expected \(e.count)"] }
        return zip(e, a).enumerated().flatMap { jsonDifferences($1.0, $1.1, opaque: opaque, path: "\(path)[\($0)]") }
    default:
        return jsonEqual(expected, actual) ? [] : ["\(path) = \(actual), expected \(expected)"]
    }
}
