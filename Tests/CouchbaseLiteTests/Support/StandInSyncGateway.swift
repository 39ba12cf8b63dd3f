import CBLTestSupport
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A stand-in for Sync Gateway 1.x's login endpoints on 127.0.0.1: `POST /db/_facebook` and
/// `POST /db/_persona` accept one expected JSON body and answer with a `SyncGatewaySession`
/// cookie, as the gateway does; every other request needs that cookie (401 without it) and
/// sees an empty database (enough for a pull replication to complete). One thread, one
/// connection at a time, `Connection: close`; every request is recorded.
final class StandInSyncGateway: @unchecked Sendable {
    struct Request {
        let method: String
        let path: String
        let headers: [String: String]
        let body: Data
    }

    static let cookieName = "SyncGatewaySession"
    static let cookieValue = "d5e1b4c2a3f60789"

    private let listenFD: Int32
    let port: UInt16
    private let lock = NSLock()
    private var recorded: [Request] = []
    private var stopped = false
    /// The accepted login: path (`_facebook`) and the exact JSON object expected.
    let loginPath: String
    let expectedLogin: [String: String]

    var requests: [Request] { lock.lock(); defer { lock.unlock() }; return recorded }
    var url: URL { URL(string: "http://127.0.0.1:\(port)/db")! }

    init(loginPath: String, expectedLogin: [String: String]) throws {
        self.loginPath = loginPath
        self.expectedLogin = expectedLogin
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EIO) }
        LoopbackSocket.reuseAddress(fd)
        guard LoopbackSocket.bind(fd), listen(fd, 16) == 0 else { close(fd); throw POSIXError(.EADDRINUSE) }
        listenFD = fd
        port = LoopbackSocket.boundPort(fd)
        let thread = Thread { [self] in serve() }
        thread.start()
    }

    func stop() {
        lock.lock(); stopped = true; lock.unlock()
        shutdown(listenFD, Int32(SHUT_RDWR))
        close(listenFD)
    }

    private func serve() {
        while true {
            let client = accept(listenFD, nil, nil)
            if client < 0 {
                lock.lock(); let done = stopped; lock.unlock()
                if done { return }
                continue
            }
            var timeout = timeval(tv_sec: 10, tv_usec: 0)
            setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            handle(client)
            close(client)
        }
    }

    private func handle(_ fd: Int32) {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        var headerEnd: Range<Data.Index>?
        while headerEnd == nil {
            let n = read(fd, &buffer, buffer.count)
            if n <= 0 { return }
            data.append(contentsOf: buffer[0..<n])
            headerEnd = data.range(of: Data("\r\n\r\n".utf8))
        }
        let head = String(decoding: data[..<headerEnd!.lowerBound], as: UTF8.self)
        var lines = head.components(separatedBy: "\r\n")
        let requestLine = lines.removeFirst().split(separator: " ")
        guard requestLine.count >= 2 else { return }
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        var body = Data(data[headerEnd!.upperBound...])
        let length = Int(headers["content-length"] ?? "0") ?? 0
        while body.count < length {
            let n = read(fd, &buffer, buffer.count)
            if n <= 0 { break }
            body.append(contentsOf: buffer[0..<n])
        }
        let request = Request(method: String(requestLine[0]), path: String(requestLine[1]), headers: headers, body: body)
        lock.lock(); recorded.append(request); lock.unlock()
        let (status, extra, json) = respond(to: request)
        let reason = [200: "OK", 201: "Created", 401: "Unauthorized", 404: "Not Found"][status] ?? "Status"
        var response = "HTTP/1.1 \(status) \(reason)\r\nServer: Couchbase Sync Gateway/1.4.1\r\n"
        response += "Content-Type: application/json\r\nContent-Length: \(json.utf8.count)\r\nConnection: close\r\n"
        for (name, value) in extra { response += "\(name): \(value)\r\n" }
        response += "\r\n" + json
        let bytes = Array(response.utf8)
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBufferPointer { write(fd, $0.baseAddress, $0.count) }
            if n <= 0 { return }
            sent += n
        }
    }

    private func respond(to request: Request) -> (Int, [(String, String)], String) {
        let path = request.path.split(separator: "?", maxSplits: 1).first.map(String.init) ?? request.path
        if request.method == "POST" && path == "/db/\(loginPath)" {
            let object = (try? JSONSerialization.jsonObject(with: request.body)) as? [String: String]
            guard object == expectedLogin else { return (401, [], #"{"error":"Unauthorized","reason":"Invalid login"}"#) }
            return (200, [("Set-Cookie", "\(Self.cookieName)=\(Self.cookieValue); Path=/db/; HttpOnly")], #"{"ok":true}"#)
        }
        let cookie = request.headers["cookie"] ?? ""
        guard cookie.contains("\(Self.cookieName)=\(Self.cookieValue)") else {
            return (401, [("WWW-Authenticate", #"Basic realm="Couchbase Sync Gateway""#)],
                    #"{"error":"Unauthorized","reason":"Login required"}"#)
        }
        switch (request.method, path) {
        case ("GET", "/db/"), ("GET", "/db"):
            return (200, [], #"{"db_name":"db","update_seq":0,"committed_update_seq":0,"instance_start_time":1}"#)
        case (_, "/db/_changes"):
            return (200, [], #"{"results":[],"last_seq":0}"#)
        case ("PUT", _) where path.hasPrefix("/db/_local/"):
            return (201, [], #"{"id":"x","ok":true,"rev":"0-1"}"#)
        default:
            return (404, [], #"{"error":"not_found","reason":"missing"}"#)
        }
    }
}
