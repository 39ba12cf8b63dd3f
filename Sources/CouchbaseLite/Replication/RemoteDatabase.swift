import AsyncHTTPClient
import Foundation
import JSONCore
import NIOCore
import NIOHTTP1
import NIOSSL

/// One HTTP response from the remote database, body collected.
struct RemoteResponse: Sendable {
    let status: Int
    let headers: HTTPHeaders
    let body: [UInt8]

    /// The body read as a typed JSON object (a 502-style error when the peer sent something else).
    func typedObject() throws -> JSONObject {
        let value: JSONValue
        do {
            value = try JSON.value(body)
        } catch {
            throw CBLError(502, "The remote sent invalid JSON (status \(status)): \(error)")
        }
        guard case .object(let object) = value else {
            throw CBLError(502, "The remote sent a JSON value where an object was expected (status \(status))")
        }
        return object
    }

}

/// A request body: bytes in memory, or a stream of chunks with a known length (multipart
/// uploads whose attachment parts are read from the blob store as they are sent).
enum RemoteBody: Sendable {
    case bytes([UInt8])
    case stream(length: Int, MultipartBodySequence)

    var length: Int {
        switch self {
        case .bytes(let bytes): return bytes.count
        case .stream(let length, _): return length
        }
    }
}

/// The remote end of a replication: a CouchDB-protocol database URL reached over
/// async-http-client, with the 1.x request headers, authentication (HTTP Basic from the URL or
/// an authenticator, session cookies), and the 1.x retry rules for transient failures (spec 8).
final class RemoteDatabase: Sendable {
    /// The database URL without credentials, ending in `/`.
    let baseURL: String
    private let client: HTTPClient
    private let extraHeaders: [(String, String)]
    private let basicAuthorization: String?
    private let cookies: Locked<[String: String]>
    /// How long a request without a body may take (a longpoll adds its own heartbeat budget;
    /// a body adds its length at `minimumUploadRate`).
    let requestTimeout: TimeAmount
    /// Retry delays for one request's transient failures (1.x: 4 s, 8 s), jittered.
    let retryDelays: [Duration]
    /// Bytes per second a request body is assumed to travel at least.
    let minimumUploadRate: Int
    /// Told when a request failed transiently and waits to be retried (the error), and when a
    /// retried request got through (nil): the replication shows `.offline` in between.
    let retryObserver: @Sendable (Error?) -> Void
    /// How many requests have failed transiently for good (retries spent, or not retried): a
    /// run that ends after one of these lost the peer, rather than failing on a document.
    let failedRequests = Locked(0)
    /// The `Server` header of the last response (Sync Gateway detection, spec 8.1).
    let serverHeader = Locked<String?>(nil)

    /// True when the peer said it is Sync Gateway (`Server: Couchbase Sync Gateway/…`).
    var isSyncGateway: Bool {
        serverHeader.withLock { $0?.hasPrefix("Couchbase Sync Gateway/") ?? false }
    }

    init(url: URL, headers: [String: String], authenticator: CBLAuthenticatorProtocol?,
         cookies: Locked<[String: String]>, trustedRootCertificates: [NIOSSLCertificate], onlyTrustedRoots: Bool,
         requestTimeout: TimeAmount, retryDelays: [Duration], minimumUploadRate: Int = 100_000,
         retryObserver: @escaping @Sendable (Error?) -> Void = { _ in }) throws {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false),
              let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https",
              components.host?.isEmpty == false else {
            throw CBLError(400, "Invalid remote URL '\(url.absoluteString)': expected http(s)://host[:port]/db")
        }
        var user = components.user.flatMap { $0.removingPercentEncoding ?? $0 }
        var password = components.password.flatMap { $0.removingPercentEncoding ?? $0 }
        if let basic = authenticator as? CBLPasswordAuthenticator, basic.kind == .basic {
            user = basic.username
            password = basic.password
        }
        basicAuthorization = user.map { u in
            "Basic " + Data("\(u):\(password ?? "")".utf8).base64EncodedString()
        }
        components.user = nil
        components.password = nil
        var path = components.percentEncodedPath
        if !path.hasSuffix("/") { path += "/" }
        components.percentEncodedPath = path
        components.query = nil
        components.fragment = nil
        guard let base = components.string else { throw CBLError(400, "Invalid remote URL '\(url.absoluteString)'") }
        baseURL = base
        extraHeaders = headers.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        self.cookies = cookies
        self.requestTimeout = requestTimeout
        self.retryDelays = retryDelays
        self.minimumUploadRate = max(1, minimumUploadRate)
        self.retryObserver = retryObserver

        var configuration = HTTPClient.Configuration()
        configuration.timeout = .init(connect: .seconds(15), read: nil)
        configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: 8)
        // Failed connections surface at once; the replicator's own retry rules (spec 8.2)
        // decide what happens next (a TLS failure is permanent, a refused connection is not).
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.decompression = .enabled(limit: .none)
        configuration.redirectConfiguration = .follow(max: 5, allowCycles: false)
        if scheme == "https" {
            var tls = TLSConfiguration.makeClientConfiguration()
            if !trustedRootCertificates.isEmpty {
                if onlyTrustedRoots {
                    tls.trustRoots = .certificates(trustedRootCertificates)
                } else {
                    tls.additionalTrustRoots = [.certificates(trustedRootCertificates)]
                }
            }
            configuration.tlsConfiguration = tls
        }
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    /// Closes the connections (waits for none of the in-flight requests: they were cancelled).
    func shutdown() async {
        try? await client.shutdown()
    }

    // MARK: Cookies

    func setCookie(_ name: String, _ value: String?) {
        cookies.withLock { $0[name] = value }
    }

    private func rememberCookies(_ headers: HTTPHeaders) {
        for line in headers["set-cookie"] {
            guard let pair = line.split(separator: ";", maxSplits: 1).first,
                  let eq = pair.firstIndex(of: "=") else { continue }
            let name = pair[..<eq].trimmingCharacters(in: .whitespaces)
            let value = pair[pair.index(after: eq)...].trimmingCharacters(in: .whitespaces)
            let expired = line.lowercased().contains("max-age=0")
            cookies.withLock { $0[name] = (value.isEmpty || expired) ? nil : value }
        }
    }

    // MARK: Requests

    /// The absolute URL of a path relative to the database (`""` is the database itself); a
    /// path starting with `/` is relative to the server root.
    func url(_ path: String, query: [(String, String)] = []) -> String {
        var url: String
        if path.hasPrefix("/") {
            let root = URLComponents(string: baseURL).map { c -> String in
                var c = c
                c.percentEncodedPath = ""
                return c.string ?? baseURL
            } ?? baseURL
            url = root + path
        } else {
            url = baseURL + path
        }
        if !query.isEmpty {
            url += "?" + query.map { "\($0.0)=\(RemoteDatabase.encodeQueryValue($0.1))" }.joined(separator: "&")
        }
        return url
    }

    /// Percent-encodes a document ID for a URL path, `/` included (except after `_design/`
    /// and `_local/`, which CouchDB expects literally).
    static func encodeDocID(_ docID: String) -> String {
        for prefix in ["_design/", "_local/"] where docID.hasPrefix(prefix) {
            return prefix + encodePathSegment(String(docID.dropFirst(prefix.count)))
        }
        return encodePathSegment(docID)
    }

    static func encodePathSegment(_ s: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return s.addingPercentEncoding(withAllowedCharacters: allowed) ?? s
    }

    static func encodeQueryValue(_ s: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return s.addingPercentEncoding(withAllowedCharacters: allowed) ?? s
    }

    /// Sends one request; transient failures (connection errors, timeouts, 408, 429, 5xx) are
    /// retried after `retryDelays`, each jittered (1.x's CBLRemoteRequest retried the same
    /// way, without the jitter). Returns any response with a status below 500 (or a 5xx once
    /// the retries are spent, as an error); with `retryStatuses` false, only broken
    /// connections are retried (timeouts and 5xx are thrown at once). Without `timeout`, the request may take
    /// `requestTimeout` plus its body's length at `minimumUploadRate`.
    func send(_ method: HTTPMethod, _ path: String, query: [(String, String)] = [],
              body: RemoteBody? = nil, contentType: String? = nil, accept: String = "application/json",
              headers: [(String, String)] = [], timeout: TimeAmount? = nil, retry: Bool = true,
              retryStatuses: Bool = true) async throws -> RemoteResponse {
        var attempt = 0
        let timeout = timeout ?? timeoutFor(bodyLength: body?.length ?? 0)
        while true {
            do {
                let response = try await sendOnce(method, url(path, query: query), body: body, contentType: contentType,
                                                  accept: accept, headers: headers, timeout: timeout)
                if RemoteDatabase.isTransient(status: response.status) {
                    throw CBLError(response.status, RemoteDatabase.reason(response) ?? "HTTP \(response.status) from \(method) \(path)")
                }
                if attempt > 0 { retryObserver(nil) }
                return response
            } catch {
                if Task.isCancelled { throw CancellationError() }
                guard retry, attempt < retryDelays.count, RemoteDatabase.isTransient(error),
                      retryStatuses || error is RemoteTransportError else {
                    if RemoteDatabase.isTransient(error) { failedRequests.withLock { $0 += 1 } }
                    throw error
                }
                let delay = RemoteDatabase.jittered(retryDelays[attempt])
                attempt += 1
                CBLLog.debug("Sync", "\(method) \(path) failed (\(error)); retry \(attempt) in \(delay)")
                retryObserver(error)
                try await Task.sleep(for: delay)
            }
        }
    }

    /// The time a request with a body of `length` bytes may take: the base timeout plus the
    /// body at the slowest rate still called working (a 20 MB attachment on a slow link is
    /// not a hung request; an empty one that took a minute is).
    func timeoutFor(bodyLength length: Int) -> TimeAmount {
        requestTimeout + .nanoseconds(Int64(length) * 1_000_000_000 / Int64(minimumUploadRate))
    }

    /// A delay spread over [delay/2, delay] ("equal jitter"): clients that failed at the same
    /// moment (a cluster node going down) do not all retry at the same moment.
    static func jittered(_ delay: Duration) -> Duration {
        delay * Double.random(in: 0.5...1.0)
    }

    private func sendOnce(_ method: HTTPMethod, _ url: String, body: RemoteBody?, contentType: String?,
                          accept: String, headers: [(String, String)], timeout: TimeAmount) async throws -> RemoteResponse {
        var request = makeRequest(method, url, accept: accept, headers: headers)
        if let contentType { request.headers.replaceOrAdd(name: "Content-Type", value: contentType) }
        switch body {
        case .bytes(let bytes)?:
            request.body = .bytes(ByteBuffer(bytes: bytes))
        case .stream(let length, let sequence)?:
            request.body = .stream(sequence, length: .known(Int64(length)))
        case nil:
            if method == .PUT || method == .POST { request.body = .bytes(ByteBuffer()) }
        }
        let response = try await execute(request, timeout: timeout)
        let collected: ByteBuffer
        do {
            collected = try await response.body.collect(upTo: 1 << 30)
        } catch {
            if Task.isCancelled { throw CancellationError() }
            throw RemoteTransportError(message: "The connection broke while reading the answer to \(method) \(url): \(error)")
        }
        return RemoteResponse(status: Int(response.status.code), headers: response.headers,
                              body: Array(collected.readableBytesView))
    }

    /// Streams the body of a `GET` into `sink` chunk by chunk (attachments: never collected in
    /// memory). Returns the status; the body of an answer ≥ 300 is not passed to the sink.
    func download(_ path: String, query: [(String, String)] = [],
                  into sink: (UnsafeRawBufferPointer) throws -> Void) async throws -> Int {
        let request = makeRequest(.GET, url(path, query: query), accept: "*/*", headers: [])
        do {
            let response = try await execute(request, timeout: requestTimeout)
            let status = Int(response.status.code)
            do {
                for try await chunk in response.body where status < 300 {
                    try chunk.withUnsafeReadableBytes { try sink($0) }
                }
            } catch let error as CBLError {
                throw error
            } catch {
                if Task.isCancelled { throw CancellationError() }
                throw RemoteTransportError(message: "The connection broke while downloading \(request.url): \(error)")
            }
            if RemoteDatabase.isTransient(status: status) { failedRequests.withLock { $0 += 1 } }
            return status
        } catch {
            if RemoteDatabase.isTransient(error) { failedRequests.withLock { $0 += 1 } }
            throw error
        }
    }

    /// A request with the headers every request carries (spec 8.1): `Accept`, the 1.x
    /// `User-Agent`, credentials, session cookies, the app's headers, then `headers`.
    private func makeRequest(_ method: HTTPMethod, _ url: String, accept: String,
                             headers: [(String, String)]) -> HTTPClientRequest {
        var request = HTTPClientRequest(url: url)
        request.method = method
        request.headers.add(name: "Accept", value: accept)
        request.headers.add(name: "User-Agent", value: "CouchbaseLite/1.3 (Linux Swift \(CBLVersion()))")
        if let basicAuthorization { request.headers.add(name: "Authorization", value: basicAuthorization) }
        let cookieHeader = cookies.withLock { jar in jar.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "; ") }
        if !cookieHeader.isEmpty { request.headers.add(name: "Cookie", value: cookieHeader) }
        for (name, value) in extraHeaders { request.headers.replaceOrAdd(name: name, value: value) }
        for (name, value) in headers { request.headers.replaceOrAdd(name: name, value: value) }
        return request
    }

    /// Executes a request, translating transport failures (spec 8.2: TLS failures are
    /// permanent, connection failures transient) and noting cookies and the `Server` header.
    private func execute(_ request: HTTPClientRequest, timeout: TimeAmount) async throws -> HTTPClientResponse {
        let response: HTTPClientResponse
        do {
            response = try await client.execute(request, timeout: timeout)
        } catch let error as HTTPClientError {
            throw RemoteDatabase.translate(error, url: request.url)
        } catch let error as NIOSSLError {
            throw CBLError(495, "TLS failure talking to \(request.url): \(error)")
        } catch let error as CancellationError {
            throw error
        } catch {
            throw RemoteTransportError(message: "\(error) (\(request.method) \(request.url))")
        }
        rememberCookies(response.headers)
        if let server = response.headers.first(name: "server") { serverHeader.withLock { $0 = server } }
        return response
    }

    /// CouchDB's `reason` (or `error`) member of an error body.
    static func reason(_ response: RemoteResponse) -> String? {
        guard let object = try? JSON.object(response.body) else { return nil }
        return object["reason"]?.stringValue ?? object["error"]?.stringValue
    }

    /// A CBLError carrying the response's status and reason.
    static func error(_ response: RemoteResponse, _ what: String) -> CBLError {
        CBLError(response.status, "\(what): \(reason(response) ?? "HTTP \(response.status)")")
    }

    // MARK: Error classification (spec 8.2)

    /// 408, 429 and 5xx, except 501 (not implemented) and 507 (insufficient storage: a full
    /// disk, ours or the peer's, is not cured by waiting, so the replication stops with it).
    static func isTransient(status: Int) -> Bool {
        status == 408 || status == 429 || (500...599).contains(status) && status != 501 && status != 507
    }

    static func isTransient(_ error: Error) -> Bool {
        if error is RemoteTransportError { return true }
        if let e = error as? CBLError { return isTransient(status: e.code) }
        return false
    }

    private static func translate(_ error: HTTPClientError, url: String) -> Error {
        if [.invalidURL, .emptyHost, .emptyScheme].contains(error) {
            return CBLError(400, "Invalid remote URL \(url): \(error)")
        }
        if [.deadlineExceeded, .readTimeout, .connectTimeout, .writeTimeout].contains(error) {
            return CBLError(504, "Timed out talking to \(url)")
        }
        if error == .cancelled { return CancellationError() }
        return RemoteTransportError(message: "\(error) (\(url))")
    }
}

/// A connection-level failure (refused, reset, closed mid-answer): always transient.
struct RemoteTransportError: Error, CustomStringConvertible, Sendable {
    let message: String
    var description: String { message }
}
