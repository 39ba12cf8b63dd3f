import CouchbaseLite
import Foundation
import JSONCore

/// A request as the REST handlers see it: method, percent-decoded path segments, query
/// parameters, headers (lowercased names) and the whole body. Plain values only, so it can be
/// handed to the worker threads that do the (blocking) database work.
struct RESTRequest: Sendable {
    let method: String
    /// The path segments after the leading `/`, each percent-decoded on its own (so `%2F`
    /// stays inside its segment: `a%2Fb` is the one segment `a/b`).
    let segments: [String]
    /// Query parameters, percent-decoded (`+` = space); the last occurrence wins.
    let query: [String: String]
    /// Header fields with lowercased names; repeated fields joined with `, `.
    let headers: [String: String]
    let body: [UInt8]
    /// An attachment body already streamed into the blob store (`PUT /{db}/{doc}/{att}`),
    /// in place of `body`; the handler installs it.
    var upload: SyncBlobDownload?
    /// A `multipart/related` document body already split, its attachments in the blob store
    /// (`PUT /{db}/{doc}`), in place of `body`.
    var relatedParts: [MultipartUploadStream.Part]?
    /// Who the request acts as and what it may do (set by ListenerAccessMiddleware).
    var access = RequestAccess()
    /// The client's IP address, when known (for the authentication lockout).
    var peerAddress: String?
    /// Indexes of segments whose percent-decoded bytes are not UTF-8 (kept with replacement
    /// characters so routing still works; a document ID there is CouchDB's `illegal_docid`).
    var nonUTF8Segments: Set<Int> = []

    init(method: String, segments: [String], query: [String: String], headers: [String: String],
         body: [UInt8], nonUTF8Segments: Set<Int> = []) {
        self.method = method
        self.segments = segments
        self.query = query
        self.headers = headers
        self.body = body
        self.nonUTF8Segments = nonUTF8Segments
    }

    func header(_ name: String) -> String? {
        // Callers name headers in lower case, as they are kept: no lowercasing copy then.
        name.utf8.contains(where: { $0 >= 0x41 && $0 <= 0x5A }) ? headers[name.lowercased()] : headers[name]
    }

    /// The same request with `body` as its body (read after the head was parsed).
    func with(body: [UInt8]) -> RESTRequest {
        var copy = RESTRequest(method: method, segments: segments, query: query, headers: headers, body: body,
                               nonUTF8Segments: nonUTF8Segments)
        copy.access = access
        copy.peerAddress = peerAddress
        copy.upload = upload
        copy.relatedParts = relatedParts
        return copy
    }

    /// The media type of the body, lowercased, without parameters (`application/json`).
    var contentType: String? {
        guard let value = header("content-type") else { return nil }
        return value.split(separator: ";", maxSplits: 1).first
            .map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
    }

    /// A parameter of the Content-Type header (`boundary`).
    func contentTypeParameter(_ name: String) -> String? {
        guard let value = header("content-type") else { return nil }
        return MIMEHeader.parameter(name, in: value)
    }

    /// True when `Accept-Encoding` accepts `coding` (`gzip`): named, or `*`, with a q-value
    /// above 0 (mochiweb's `accepted_encodings`, which CouchDB asks before sending a
    /// gzip-stored attachment as stored).
    func acceptsContentCoding(_ coding: String) -> Bool {
        guard let value = header("accept-encoding") else { return false }
        var star: Bool?
        for (name, q) in Self.weightedItems(value) {
            if name == coding { return q > 0 }
            if name == "*" { star = q > 0 }
        }
        return star ?? false
    }

    /// True when `Accept` names `mediaType`, its `type/*` or `*/*` with a q-value above 0
    /// (mochiweb's `accepts_content_type`; `open_revs` answers `multipart/mixed` to
    /// `Accept: multipart/related,*/*` as CouchDB does). No `Accept` header is false here,
    /// unlike mochiweb, so a plain request keeps its JSON answer.
    func acceptsMediaRange(_ mediaType: String) -> Bool {
        guard let value = header("accept") else { return false }
        let major = mediaType.split(separator: "/").first.map { $0 + "/*" } ?? mediaType
        return Self.weightedItems(value).contains { item in
            (item.name == mediaType || item.name == major || item.name == "*/*") && item.q > 0
        }
    }

    /// The items of an `Accept`-style header, lower-cased, each with its q-value (1 when absent
    /// or not a number); other parameters ignored.
    private static func weightedItems(_ value: String) -> [(name: String, q: Double)] {
        value.lowercased().split(separator: ",").compactMap { item in
            let fields = item.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
            guard let name = fields.first else { return nil }
            var q = 1.0
            for field in fields.dropFirst() where field.hasPrefix("q=") { q = Double(field.dropFirst(2)) ?? 1.0 }
            return (name, q)
        }
    }

    /// True when the client accepts this media type (prefix match, e.g. `multipart/`).
    func accepts(_ mediaType: String) -> Bool {
        guard let accept = header("accept") else { return false }
        return accept.lowercased().split(separator: ",").contains {
            $0.trimmingCharacters(in: .whitespaces).hasPrefix(mediaType)
        }
    }

    /// True when an `If-None-Match` entity tag of the request matches `etag`; weak tags
    /// (`W/"…"`) and lists match as CouchDB's `etag_match` has them.
    func ifNoneMatch(_ etag: String) -> Bool {
        guard let value = header("if-none-match") else { return false }
        return value.split(separator: ",").contains { token in
            var tag = token.trimmingCharacters(in: .whitespaces)
            if tag.hasPrefix("W/") { tag.removeFirst(2) }
            return tag == etag
        }
    }

    /// The revision named by `If-Match` (quotes removed), if any.
    var ifMatchRevision: String? {
        header("if-match").map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "\" ")) }
    }

    /// The revision a request names, CouchDB's way (chttpd_db's `couch_doc_from_req` and
    /// `extract_header_rev`): a body's `_rev` first, then `?rev=`, then `If-Match`. Each given one
    /// must be a valid revision ID ("Invalid rev format"), `?rev=` must equal the body's
    /// ("Document rev from request body and query string have different values"), and `If-Match`
    /// must equal whichever of the two is given ("Document rev and etag have different values").
    func namedRevision(body bodyRev: String? = nil) throws -> String? {
        let query = self.query["rev"]
        if let query, CBLDatabase.syncGeneration(query) == 0 { throw RESTError.badRev }
        if let bodyRev, let query, bodyRev != query {
            throw RESTError(400, "bad_request", "Document rev from request body and query string have different values")
        }
        let explicit = bodyRev ?? query
        guard let etag = ifMatchRevision else { return explicit }
        if CBLDatabase.syncGeneration(etag) == 0 { throw RESTError.badRev }
        if let explicit, explicit != etag {
            throw RESTError(400, "bad_request", "Document rev and etag have different values")
        }
        return etag
    }

    /// Splits a raw request target (`/db/doc%2Fx?rev=1-a`) into decoded segments and query.
    static func parseTarget(_ target: String) throws -> (segments: [String], query: [String: String]) {
        let parsed = try parseTargetMarkingNonUTF8(target)
        return (parsed.segments, parsed.query)
    }

    /// ``parseTarget(_:)``, also naming the segments whose decoded bytes are not UTF-8.
    /// `plusAsSpace`: a `+` in the path is a space (`[chttpd] decode_plus_to_space`, as
    /// mochiweb's `unquote`); in the query it always is.
    static func parseTargetMarkingNonUTF8(_ target: String, plusAsSpace: Bool = false) throws
        -> (segments: [String], query: [String: String], nonUTF8: Set<Int>) {
        var nonUTF8 = Set<Int>()
        var pathPart = Substring(target)
        var queryPart: Substring = ""
        if let q = target.firstIndex(of: "?") {
            pathPart = target[..<q]
            queryPart = target[target.index(after: q)...]
        }
        // An absolute-form target (`http://host/path`) is reduced to its path.
        if pathPart.hasPrefix("http://") || pathPart.hasPrefix("https://") {
            let afterScheme = pathPart[pathPart.index(pathPart.firstIndex(of: ":")!, offsetBy: 3)...]
            pathPart = afterScheme.firstIndex(of: "/").map { afterScheme[$0...] } ?? "/"
        }
        var segments: [String] = []
        for raw in pathPart.split(separator: "/", omittingEmptySubsequences: false).dropFirst() {
            // Clients resolve dot segments before sending (RFC 3986 5.2.4); literal ones are
            // refused rather than guessed at. Encoded (`%2E%2E`) they are ordinary ID text.
            if raw == "." || raw == ".." {
                throw RESTError(400, "bad_request", "Path segments '.' and '..' are not allowed")
            }
            let raw = plusAsSpace && raw.contains("+") ? Substring(raw.replacingOccurrences(of: "+", with: " ")) : raw
            guard let decoded = String(raw).removingPercentEncoding else {
                // Well-formed escapes of bytes that are not UTF-8: routed with replacement
                // characters, refused where they would name a document.
                guard let bytes = percentDecodedBytes(raw) else {
                    throw RESTError(400, "bad_request", "Invalid percent-encoding in the URL path")
                }
                nonUTF8.insert(segments.count)
                segments.append(String(decoding: bytes, as: UTF8.self))
                continue
            }
            segments.append(decoded)
        }
        // `/db/` is `/db`.
        while segments.last == "" { segments.removeLast() }
        var query: [String: String] = [:]
        for pair in queryPart.split(separator: "&") where !pair.isEmpty {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decode(_ s: Substring) throws -> String {
                guard let d = s.replacingOccurrences(of: "+", with: " ").removingPercentEncoding else {
                    throw RESTError(400, "bad_request", "Invalid percent-encoding in the query string")
                }
                return d
            }
            let name = try decode(parts[0])
            query[name] = parts.count > 1 ? try decode(parts[1]) : ""
        }
        return (segments, query, nonUTF8)
    }

    /// The bytes of a percent-encoded path segment, or nil when an escape is malformed.
    static func percentDecodedBytes(_ raw: Substring) -> [UInt8]? {
        var out: [UInt8] = []
        var bytes = Array(raw.utf8)[...]
        while let b = bytes.popFirst() {
            guard b == UInt8(ascii: "%") else { out.append(b); continue }
            guard bytes.count >= 2, let hex = UInt8(String(decoding: bytes.prefix(2), as: UTF8.self), radix: 16) else {
                return nil
            }
            out.append(hex)
            bytes = bytes.dropFirst(2)
        }
        return out
    }
}

/// A response: status, headers and a complete body.
struct RESTResponse: Sendable {
    var status: Int
    var headers: [(String, String)]
    var body: [UInt8]
    /// A body produced piece by piece instead of `body` (large attachments, row listings).
    var stream: RESTBodyStream?

    init(status: Int, headers: [(String, String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    init(status: Int, headers: [(String, String)], stream: RESTBodyStream) {
        self.init(status: status, headers: headers)
        self.stream = stream
    }

    /// A JSON response (`Content-Type: application/json`, newline-terminated like CouchDB's).
    /// A `Cache-Control` among `headers` replaces the default `must-revalidate` (CouchDB sends one).
    /// A JSON answer; `order` keeps the member order of its objects where given (a stored document).
    static func json(_ status: Int, _ value: Any, headers: [(String, String)] = [],
                     order: JSONMemberOrder? = nil) -> RESTResponse {
        json(status, encoded: JSONText.bytes(value, order: order), headers: headers)
    }

    /// A JSON answer whose body is already written (see ``json(_:_:headers:order:)``).
    static func json(_ status: Int, encoded body: [UInt8], headers: [(String, String)] = []) -> RESTResponse {
        let cacheControl = headers.contains { $0.0.lowercased() == "cache-control" } ? [] : [("Cache-Control", "must-revalidate")]
        return RESTResponse(status: status,
                            headers: [("Content-Type", "application/json")] + cacheControl + headers,
                            body: body + [0x0A])
    }

    /// `304 Not Modified` for a matching `If-None-Match`: no body, `Content-Length: 0`.
    static func notModified(etag: String) -> RESTResponse {
        RESTResponse(status: 304, headers: [("ETag", etag), ("Content-Length", "0")])
    }

    static func error(_ error: RESTError) -> RESTResponse {
        var response = json(error.status, ["error": error.error, "reason": error.reason])
        response.headers += error.headers
        return response
    }

    mutating func setHeader(_ name: String, _ value: String) {
        headers.removeAll { $0.0.lowercased() == name.lowercased() }
        headers.append((name, value))
    }
}

/// An error answered as CouchDB does: a status and `{"error":…,"reason":…}`.
struct RESTError: Error, Sendable {
    let status: Int
    let error: String
    let reason: String
    var headers: [(String, String)] = []

    init(_ status: Int, _ error: String, _ reason: String) {
        self.status = status
        self.error = error
        self.reason = reason
    }

    static let badJSON = RESTError(400, "bad_request", "invalid UTF-8 JSON")
    static let badRev = RESTError(400, "bad_request", "Invalid rev format")
    static let missing = RESTError(404, "not_found", "missing")
    static let deleted = RESTError(404, "not_found", "deleted")
    static let conflict = RESTError(409, "conflict", "Document update conflict.")
    static let noDatabase = RESTError(404, "not_found", "Database does not exist.")
    static let illegalDocID = RESTError(400, "illegal_docid", "Only reserved document ids may start with underscore.")
    static let notJSONContentType = RESTError(415, "bad_content_type", "Content-Type must be application/json")

    static func methodNotAllowed(_ allowed: String) -> RESTError {
        var e = RESTError(405, "method_not_allowed", "Only \(allowed) allowed")
        e.headers = [("Allow", allowed)]
        return e
    }

    static func queryParse(_ reason: String) -> RESTError { RESTError(400, "query_parse_error", reason) }

    /// Translates an error thrown by CouchbaseLite into CouchDB's vocabulary.
    static func from(_ error: Error) -> RESTError {
        if let e = error as? RESTError { return e }
        if let e = error as? CBLDesignFunctionError {
            // CouchDB: a function that does not compile is `compilation_error` (400, as its
            // design document save answers); one no query server runs is `unknown_query_language`.
            switch e.kind {
            case .compilation: return RESTError(400, "compilation_error", e.message)
            case .noCompiler: return RESTError(500, "unknown_query_language", e.message)
            case .stopped: return RESTError(500, "os_process_error", e.message)
            case .reduceOverflow: return RESTError(500, "reduce_overflow_error", e.message)
            }
        }
        if let e = error as? CBLError {
            switch e.code {
            case 400: return RESTError(400, "bad_request", e.message)
            case 401: return RESTError(401, "unauthorized", e.message)
            case 403: return RESTError(403, "forbidden", e.message)
            case 404:
                let kept: Set<String> = ["deleted", "Document is missing attachment"]
                return RESTError(404, "not_found", kept.contains(e.message) ? e.message : "missing")
            case 406: return RESTError(406, "not_acceptable", e.message)
            case 409: return .conflict
            case 412: return RESTError(412, "file_exists", e.message)
            case 501: return RESTError(501, "not_implemented", e.message)
            // A full disk (1.x kCBLStatusInsufficientStorage): `507 Insufficient Storage` (RFC 4918).
            case 507: return RESTError(507, "insufficient_storage", e.message)
            default: return RESTError(e.code >= 400 && e.code < 600 ? e.code : 500, "internal_server_error", e.message)
            }
        }
        return RESTError(500, "internal_server_error", "\(error)")
    }
}

/// JSON in and out of the HTTP layer (through JSONCore, as the database does).
enum JSONText {
    /// Nesting deeper than this is refused before parsing (a parser's recursion is not a
    /// resource a client may spend).
    static let maxDepth = 256

    static func bytes(_ value: Any, order: JSONMemberOrder? = nil) -> [UInt8] {
        if let order {
            var writer = JSONWriter(capacity: 256)
            if (try? writer.write(value, order: order)) != nil { return writer.bytes }
        } else if let bytes = try? JSON.data(value, sortedKeys: true) {
            return bytes
        }
        return Array(#"{"error":"internal_server_error","reason":"unserializable response"}"#.utf8)
    }

    static func string(_ value: Any) -> String { String(decoding: bytes(value), as: UTF8.self) }

    /// Parses a request body or parameter; malformed input → 400 `invalid UTF-8 JSON`.
    static func parse(_ bytes: [UInt8]) throws -> Any {
        guard !bytes.isEmpty, depthIsAcceptable(bytes) else { throw RESTError.badJSON }
        do {
            return try JSON.parse(bytes)
        } catch {
            throw RESTError.badJSON
        }
    }

    static func parse(_ string: String) throws -> Any { try parse(Array(string.utf8)) }

    /// A JSON object body, or 400.
    static func parseObject(_ bytes: [UInt8], what: String = "Request body") throws -> [String: Any] {
        guard let dict = try parse(bytes) as? [String: Any] else {
            throw RESTError(400, "bad_request", "\(what) must be a JSON object")
        }
        return dict
    }

    /// Counts bracket nesting outside strings.
    static func depthIsAcceptable(_ bytes: [UInt8]) -> Bool {
        var depth = 0
        var inString = false
        var escaped = false
        for b in bytes {
            if inString {
                if escaped { escaped = false } else if b == 0x5C { escaped = true } else if b == 0x22 { inString = false }
                continue
            }
            switch b {
            case 0x22: inString = true
            case 0x5B, 0x7B:
                depth += 1
                if depth > maxDepth { return false }
            case 0x5D, 0x7D: depth -= 1
            default: break
            }
        }
        return true
    }
}

/// Typed access to query parameters with CouchDB's errors.
struct QueryParams {
    let values: [String: String]

    subscript(_ name: String) -> String? { values[name] }

    func bool(_ name: String, default value: Bool = false) throws -> Bool {
        guard let raw = values[name] else { return value }
        switch raw.lowercased() {
        case "true", "": return true
        case "false": return false
        default: throw RESTError.queryParse("Invalid boolean parameter: \"\(raw)\"")
        }
    }

    /// A non-negative integer, with couch_mrview_http's two messages.
    func int(_ name: String) throws -> Int? {
        guard let raw = values[name] else { return nil }
        guard let n = Int(raw) else { throw RESTError.queryParse("Invalid value for integer: \"\(raw)\"") }
        guard n >= 0 else { throw RESTError.queryParse("Invalid value for positive integer: \"\(raw)\"") }
        return n
    }

    /// A JSON parameter used as a view key: as ``json(_:)``, read once, typed where an object in it
    /// lists its members out of sorted order (see ``viewKey(_:)-(JSONValue)``).
    func viewKey(_ name: String) throws -> Any? {
        guard let raw = values[name] else { return nil }
        guard let value = try? JSONText.value(Array(raw.utf8)) else { throw RESTError(400, "bad_request", "invalid UTF-8 JSON") }
        return Self.viewKey(value)
    }

    /// A view key as the query takes it: the typed value itself when its objects' member order is
    /// not the sorted one (the index compares it in that order), else its Foundation form.
    static func viewKey(_ value: JSONValue) -> Any {
        JSONMemberOrder(unsortedIn: value) != nil ? value : value.foundation
    }

    /// A JSON parameter; text that is not JSON is CouchDB's 400 `bad_request` "invalid UTF-8 JSON"
    /// (1.x's listener took `startkey=foo` as a string; CouchDB refuses it).
    func json(_ name: String) throws -> Any? {
        guard let raw = values[name] else { return nil }
        guard let value = try? JSONText.parse(raw) else { throw RESTError(400, "bad_request", "invalid UTF-8 JSON") }
        return value
    }
}

/// Parameters whose query-string form is JSON text.
private let jsonParameters: Set<String> = [
    "key", "keys", "startkey", "endkey", "start_key", "end_key", "atts_since", "doc_ids", "open_revs",
]

/// Adds the members of a JSON request body to the query parameters as their query-string
/// form (objects in the body's member order); parameters given in the URL win.
func mergeBodyParameters(_ body: JSONObject, into params: inout [String: String], except skipped: String) {
    for (key, value) in body where key != skipped && params[key] == nil {
        if case .string(let s) = value, !jsonParameters.contains(key) {
            params[key] = s
        } else {
            params[key] = (try? JSON.string(value, sortedKeys: false)) ?? "null"
        }
    }
}
