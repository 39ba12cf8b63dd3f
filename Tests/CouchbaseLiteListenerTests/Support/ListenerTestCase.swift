import CouchbaseLite
import CouchbaseLiteListener
import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// A response read off the wire.
struct HTTPResult {
    let status: Int
    /// Lowercased header names.
    let headers: [String: String]
    let body: [UInt8]

    var text: String { String(decoding: body, as: UTF8.self) }

    /// The body parsed as JSON (nil if it is not JSON).
    var json: Any? { try? JSONSerialization.jsonObject(with: Data(body), options: [.fragmentsAllowed]) }
    var dict: [String: Any] { json as? [String: Any] ?? [:] }
    var array: [Any] { json as? [Any] ?? [] }

    func header(_ name: String) -> String? { headers[name.lowercased()] }
}

struct HTTPClientError: Error, CustomStringConvertible {
    let description: String
}

/// A minimal blocking HTTP/1.1 client over a loopback socket: it sends exactly the bytes it is
/// given (paths are not normalised, so `..` and `%2F` reach the server as written) and every
/// call is bounded by a timeout.
struct RawHTTPClient {
    let port: UInt16
    var timeout: TimeInterval = 15

    func send(_ method: String, _ path: String, headers: [String: String] = [:], body: [UInt8]? = nil,
              timeout: TimeInterval? = nil) throws -> HTTPResult {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        var hasLength = false
        for (name, value) in headers {
            head += "\(name): \(value)\r\n"
            if ["content-length", "transfer-encoding"].contains(name.lowercased()) { hasLength = true }
        }
        if let body, !hasLength { head += "Content-Length: \(body.count)\r\n" }
        if body == nil, !hasLength, ["POST", "PUT"].contains(method) { head += "Content-Length: 0\r\n" }
        head += "\r\n"
        let raw = try exchange(Array(head.utf8) + (body ?? []), timeout: timeout ?? self.timeout)
        return try Self.parse(raw, method: method)
    }

    /// Sends raw bytes and reads until the server closes the connection.
    /// A blocking socket connected to 127.0.0.1:`port`, reads and writes bounded by `timeout`;
    /// the caller closes it.
    static func connectedSocket(port: UInt16, timeout: TimeInterval) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw HTTPClientError(description: "socket() failed") }
        var tv = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - floor(timeout)) * 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = port.bigEndian
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            let code = errno
            close(fd)
            throw HTTPClientError(description: "connect() failed: errno \(code)")
        }
        return fd
    }

    /// Sends all of `bytes` (stopping early if the server closes: it may answer, e.g. 413, and
    /// close before reading everything).
    static func sendAll(_ fd: Int32, _ bytes: [UInt8]) {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return }
            sent += n
        }
    }

    func exchange(_ bytes: [UInt8], timeout: TimeInterval, halfClose: Bool = true) throws -> [UInt8] {
        let fd = try Self.connectedSocket(port: port, timeout: timeout)
        defer { close(fd) }
        Self.sendAll(fd, bytes)
        if halfClose { shutdown(fd, Int32(SHUT_WR)) }
        let deadline = Date().addingTimeInterval(timeout)
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            // A server that keeps sending (heartbeats) must not keep us past the deadline.
            if Date() > deadline { throw HTTPClientError(description: "timed out after \(out.count) bytes") }
            let n = recv(fd, &buffer, buffer.count, 0)
            if n > 0 { out += buffer[0..<n]; continue }
            if n == 0 { break }
            if errno == EINTR { continue }
            if errno == ECONNRESET, !out.isEmpty { break }
            throw HTTPClientError(description: "recv failed (errno \(errno)) after \(out.count) bytes")
        }
        if Date() > deadline.addingTimeInterval(1) { throw HTTPClientError(description: "timed out") }
        return out
    }

    static func parse(_ raw: [UInt8], method: String) throws -> HTTPResult {
        guard let split = find([13, 10, 13, 10], in: raw) else {
            throw HTTPClientError(description: "incomplete response: \(String(decoding: raw, as: UTF8.self))")
        }
        let headText = String(decoding: raw[0..<split], as: UTF8.self)
        var lines = headText.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else {
            throw HTTPClientError(description: "bad status line \(headText)")
        }
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            headers[name] = headers[name].map { $0 + ", " + value } ?? value
        }
        var body = Array(raw[(split + 4)...])
        if headers["transfer-encoding"]?.lowercased().contains("chunked") == true {
            body = try dechunk(body)
        }
        return HTTPResult(status: status, headers: headers, body: method == "HEAD" ? [] : body)
    }

    static func dechunk(_ data: [UInt8]) throws -> [UInt8] {
        var out: [UInt8] = []
        var i = 0
        while i < data.count {
            guard let lineEnd = find([13, 10], in: data, from: i) else { break }
            let sizeText = String(decoding: data[i..<lineEnd], as: UTF8.self).split(separator: ";").first ?? ""
            guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16) else {
                throw HTTPClientError(description: "bad chunk size")
            }
            if size == 0 { break }
            let start = lineEnd + 2
            guard start + size <= data.count else { throw HTTPClientError(description: "truncated chunk") }
            out += data[start..<(start + size)]
            i = start + size + 2
        }
        return out
    }

    static func find(_ needle: [UInt8], in hay: [UInt8], from: Int = 0) -> Int? {
        guard hay.count >= needle.count else { return nil }
        var i = from
        while i + needle.count <= hay.count {
            if hay[i] == needle[0], Array(hay[i..<(i + needle.count)]) == needle { return i }
            i += 1
        }
        return nil
    }
}

/// Each test gets its own manager directory and a listener on a free loopback port.
class ListenerTestCase: XCTestCase {
    var directory: URL!
    var manager: CBLManager!
    var listener: CBLListener!
    var client: RawHTTPClient!

    override func setUpWithError() throws {
        try super.setUpWithError()
        directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("cbl-listener-\(UUID().uuidString)")
        manager = try CBLManager(directory: directory.path)
        listener = CBLListener(manager: manager, port: 0)
        listener.bindAddress = "127.0.0.1"
        try listener.start()
        client = RawHTTPClient(port: listener.port)
    }

    /// Stops the plain listener and starts one on 127.0.0.1 over HTTPS with the anonymous
    /// identity `label`; the caller stops it.
    func startSecureListener(label: String) throws -> CBLListener {
        listener.stop()
        let secure = CBLListener(manager: manager, port: 0)
        secure.bindAddress = "127.0.0.1"
        try secure.setAnonymousSSLIdentity(withLabel: label)
        try secure.start()
        return secure
    }

    override func tearDownWithError() throws {
        listener?.stop()
        manager?.close()
        if let directory { try? FileManager.default.removeItem(at: directory) }
        try super.tearDownWithError()
    }

    // MARK: Requests

    @discardableResult
    func request(_ method: String, _ path: String, json: Any? = nil, body: [UInt8]? = nil,
                 headers: [String: String] = [:], timeout: TimeInterval? = nil,
                 file: StaticString = #filePath, line: UInt = #line) throws -> HTTPResult {
        var headers = headers
        var payload = body
        if let json {
            payload = Array(try JSONSerialization.data(withJSONObject: json, options: [.fragmentsAllowed]))
            if headers["Content-Type"] == nil { headers["Content-Type"] = "application/json" }
        }
        return try client.send(method, path, headers: headers, body: payload, timeout: timeout)
    }

    func get(_ path: String, headers: [String: String] = [:]) throws -> HTTPResult {
        try request("GET", path, headers: headers)
    }

    /// Asserts a status, printing the body when it differs.
    func expect(_ result: HTTPResult, _ status: Int, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(result.status, status, "body: \(result.text)", file: file, line: line)
    }

    /// Asserts a CouchDB error response.
    func expectError(_ result: HTTPResult, _ status: Int, _ error: String, _ reason: String? = nil,
                     file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(result.status, status, "body: \(result.text)", file: file, line: line)
        XCTAssertEqual(result.dict["error"] as? String, error, "body: \(result.text)", file: file, line: line)
        if let reason {
            XCTAssertEqual(result.dict["reason"] as? String, reason, file: file, line: line)
        }
        XCTAssertEqual(Set(result.dict.keys), ["error", "reason"], file: file, line: line)
    }

    /// Creates a database through the API.
    @discardableResult
    func createDB(_ name: String = "db") throws -> CBLDatabase {
        try manager.databaseNamed(name)
    }

    /// PUTs a document and returns its new revision ID.
    @discardableResult
    func putDoc(_ path: String, _ body: [String: Any], file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let r = try request("PUT", path, json: body)
        XCTAssertEqual(r.status, 201, r.text, file: file, line: line)
        return r.dict["rev"] as? String ?? ""
    }
}

/// The directory holding shared fixtures (`<repo>/../shared/fixtures`), if present.
/// The 1.x sequence a listener's sequence stands for: a number (`--integer-sequences`), or the
/// number before the `-` of CouchDB 2+'s string form (`"12-cbl"`); nil for anything else.
func seqNumber(_ value: Any?) -> Int? {
    if let n = value as? Int { return n }
    guard let text = value as? String, let dash = text.firstIndex(of: "-") else { return nil }
    return Int(text[..<dash])
}

func sharedFixturesDirectory() -> URL? {
    let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
    let candidates = [
        repo.deletingLastPathComponent().appendingPathComponent("shared/fixtures"),
        repo.appendingPathComponent("shared/fixtures"),
    ]
    return candidates.first { FileManager.default.fileExists(atPath: $0.path) }
}

func jsonEqual(_ a: Any?, _ b: Any?) -> Bool {
    guard let a, let b else { return a == nil && b == nil }
    let da = try? JSONSerialization.data(withJSONObject: [a], options: [.sortedKeys])
    let db = try? JSONSerialization.data(withJSONObject: [b], options: [.sortedKeys])
    return da != nil && da == db
}

/// A value shared between test threads.
final class LockedBox<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: T
    init(_ value: T) { stored = value }
    var value: T { lock.lock(); defer { lock.unlock() }; return stored }
    func update(_ body: (inout T) -> Void) { lock.lock(); body(&stored); lock.unlock() }
}
