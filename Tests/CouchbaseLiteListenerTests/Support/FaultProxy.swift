import CBLTestSupport
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// An HTTP/1.1 proxy on 127.0.0.1 that sits between a replicator and a listener and injects
/// faults: it reads each request (head + `Content-Length` body), asks `decide` what to do with
/// it, and either forwards it (one upstream connection per request) or misbehaves. Every
/// client connection is closed after one exchange, so each request is one decision.
final class FaultProxy: @unchecked Sendable {
    enum Fault: Sendable {
        /// Forward and relay the answer.
        case pass
        /// Close the connection without answering (connection reset / dropped).
        case drop
        /// Answer this status with a JSON error body.
        case status(Int)
        /// Wait this long before closing without answering (past the client's timeout).
        case stall(TimeInterval)
        /// Forward, then relay only this fraction of the answer's bytes and close.
        case cut(Double)
        /// Read only part of the request body, then close (an upload cut mid-stream).
        case cutUpload
        /// Forward, then relay the answer (head and body as received) as this returns it.
        case rewrite(@Sendable ([UInt8]) -> [UInt8])
        /// Read part of the request body, run this (the test kills the peer with SIGKILL), then
        /// close: the peer died while the upload was under way.
        case killMidUpload(@Sendable () -> Void)
    }

    struct Seen: Sendable {
        let method: String
        let path: String
        let fault: String
        /// The `Content-Type` of the answer relayed from upstream.
        var responseContentType: String?
    }

    let upstreamPort: UInt16
    private(set) var port: UInt16 = 0
    private var listenFD: Int32 = -1
    private let lock = NSLock()
    private var decideBlock: @Sendable (Int, String, String) -> Fault
    private var requests: [Seen] = []
    private var stopped = false
    private var hangsMultipartPUTs = false

    /// When true, every `PUT` with a `multipart/related` body is read and never answered (the
    /// connection stays open until the client gives up), whatever `decide` says; other requests
    /// are decided as usual. This is what a CouchDB 3 cluster with a node down does to a
    /// `new_edits=false` multipart upload while `_bulk_docs`, `_revs_diff` and `_local` work.
    var neverAnswersMultipartPUTs: Bool {
        get { lock.lock(); defer { lock.unlock() }; return hangsMultipartPUTs }
        set { lock.lock(); hangsMultipartPUTs = newValue; lock.unlock() }
    }

    /// `decide(index, method, path)` is called for every request, counting from 0.
    init(upstreamPort: UInt16, decide: @escaping @Sendable (Int, String, String) -> Fault) throws {
        self.upstreamPort = upstreamPort
        self.decideBlock = decide
        listenFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        LoopbackSocket.reuseAddress(listenFD)
        guard LoopbackSocket.bind(listenFD), listen(listenFD, 64) == 0 else {
            throw HTTPClientError(description: "proxy bind/listen failed")
        }
        port = LoopbackSocket.boundPort(listenFD)
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    var url: String { "http://127.0.0.1:\(port)" }

    func setDecision(_ decide: @escaping @Sendable (Int, String, String) -> Fault) {
        lock.lock(); decideBlock = decide; lock.unlock()
    }

    var seen: [Seen] {
        lock.lock(); defer { lock.unlock() }
        return requests
    }

    func stop() {
        lock.lock()
        stopped = true
        lock.unlock()
        shutdown(listenFD, Int32(SHUT_RDWR))
        close(listenFD)
    }

    deinit { if !stopped { stop() } }

    private func acceptLoop() {
        while true {
            let fd = accept(listenFD, nil, nil)
            if fd < 0 {
                lock.lock(); let done = stopped; lock.unlock()
                if done { return }
                if errno == EINTR { continue }
                return
            }
            Thread { [self] in handle(fd) }.start()
        }
    }

    private func handle(_ client: Int32) {
        defer { close(client) }
        var tv = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        guard let (head, initial) = readHead(client) else { return }
        let headText = String(decoding: head, as: UTF8.self)
        let requestLine = headText.split(separator: "\r\n", maxSplits: 1).first.map(String.init) ?? ""
        let parts = requestLine.split(separator: " ")
        let method = parts.first.map(String.init) ?? ""
        let path = parts.count > 1 ? String(parts[1]) : ""
        let isMultipartPUT = method == "PUT" && headText.lowercased().contains("content-type: multipart/related")
        if isMultipartPUT && neverAnswersMultipartPUTs {
            lock.lock()
            requests.append(Seen(method: method, path: path, fault: "hang"))
            lock.unlock()
            hang(client)
            return
        }
        lock.lock()
        let index = requests.count
        let decide = decideBlock
        lock.unlock()
        let fault = decide(index, method, path)
        lock.lock()
        let position = requests.count
        requests.append(Seen(method: method, path: path, fault: "\(fault)"))
        lock.unlock()
        if case .cutUpload = fault {
            _ = readBody(client, head: head, initial: initial, limitFraction: 0.5)
            return
        }
        if case .killMidUpload(let kill) = fault {
            _ = readBody(client, head: head, initial: initial, limitFraction: 0.5)
            kill()
            return
        }
        guard let (finalHead, body) = readBody(client, head: head, initial: initial, limitFraction: nil) else { return }
        switch fault {
        case .drop:
            return
        case .stall(let seconds):
            Thread.sleep(forTimeInterval: seconds)
            return
        case .status(let code):
            let json = "{\"error\":\"injected\",\"reason\":\"fault proxy answered \(code)\"}"
            let response = "HTTP/1.1 \(code) Injected\r\nContent-Type: application/json\r\nContent-Length: \(json.utf8.count)\r\nConnection: close\r\n\r\n\(json)"
            writeAll(client, Array(response.utf8))
        case .cutUpload, .killMidUpload:
            return
        case .pass, .cut, .rewrite:
            guard var answer = forward(head: String(decoding: finalHead, as: UTF8.self), body: body) else { return }
            if let end = RawHTTPClient.find([13, 10, 13, 10], in: answer) {
                let head = String(decoding: answer[0..<end], as: UTF8.self)
                // This connection closes after the answer: say so, or the client reuses it and
                // its next request fails on a closed connection (a fault nobody decided).
                let lines = head.components(separatedBy: "\r\n").filter {
                    let l = $0.lowercased()
                    return !l.hasPrefix("connection:") && !l.hasPrefix("keep-alive:")
                }
                answer = Array((lines + ["Connection: close"]).joined(separator: "\r\n").utf8) + answer[end...]
                let type = head.components(separatedBy: "\r\n").first { $0.lowercased().hasPrefix("content-type:") }
                lock.lock()
                requests[position].responseContentType = type.map { String($0.dropFirst("content-type:".count)).trimmingCharacters(in: .whitespaces) }
                lock.unlock()
            }
            switch fault {
            case .cut(let fraction):
                writeAll(client, Array(answer.prefix(max(1, Int(Double(answer.count) * fraction)))))
            case .rewrite(let transform):
                writeAll(client, transform(answer))
            default:
                writeAll(client, answer)
            }
        }
    }

    /// Reads (and discards) whatever the client sends, never answering, until it closes the
    /// connection or the proxy stops.
    private func hang(_ fd: Int32) {
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n == 0 { return }
            if n < 0 {
                lock.lock(); let done = stopped; lock.unlock()
                if done || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) { return }
            }
        }
    }

    /// Reads the request head; returns it and the body bytes read with it.
    private func readHead(_ fd: Int32) -> ([UInt8], [UInt8])? {
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        var headEnd: Int?
        while headEnd == nil {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { return nil }
            data += buffer[0..<n]
            headEnd = RawHTTPClient.find([13, 10, 13, 10], in: data)
        }
        return (Array(data[0..<headEnd!]), Array(data[(headEnd! + 4)...]))
    }

    /// Reads a `Content-Length` body (chunked bodies to the terminator, then re-framed with a
    /// length); with `limitFraction`, stops after that part of the declared length.
    private func readBody(_ fd: Int32, head: [UInt8], initial: [UInt8], limitFraction: Double?) -> ([UInt8], [UInt8])? {
        var body = initial
        var buffer = [UInt8](repeating: 0, count: 65536)
        let text = String(decoding: head, as: UTF8.self).lowercased()
        // By lines: "\r\n" is one Character, so a scan for "\r" would run past the line's end.
        if let line = text.components(separatedBy: "\r\n").first(where: { $0.hasPrefix("content-length:") }) {
            let declared = Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) ?? 0
            let length = limitFraction.map { Int(Double(declared) * $0) } ?? declared
            while body.count < length {
                let n = recv(fd, &buffer, buffer.count, 0)
                if n <= 0 { return nil }
                body += buffer[0..<n]
            }
        } else if text.contains("transfer-encoding: chunked") {
            while RawHTTPClient.find([48, 13, 10, 13, 10], in: body) == nil {
                if let limitFraction, body.count > Int(65536 * limitFraction) { return nil }
                let n = recv(fd, &buffer, buffer.count, 0)
                if n <= 0 { return nil }
                body += buffer[0..<n]
            }
            body = (try? RawHTTPClient.dechunk(body)) ?? body
            return (Array(rewriteHead(String(decoding: head, as: UTF8.self), length: body.count).utf8), body)
        }
        return (head, body)
    }

    private func rewriteHead(_ head: String, length: Int) -> String {
        var lines = head.components(separatedBy: "\r\n").filter { !$0.lowercased().hasPrefix("transfer-encoding:") }
        lines.append("Content-Length: \(length)")
        return lines.joined(separator: "\r\n")
    }

    /// Sends the request upstream with `Connection: close` and returns the whole answer, with
    /// `Connection: close` so the client does not reuse the connection.
    private func forward(head: String, body: [UInt8]) -> [UInt8]? {
        var lines = head.components(separatedBy: "\r\n").filter {
            let l = $0.lowercased()
            return !l.hasPrefix("connection:") && !l.hasPrefix("keep-alive:")
        }
        lines.append("Connection: close")
        let request = Array((lines.joined(separator: "\r\n") + "\r\n\r\n").utf8) + body
        guard let raw = try? RawHTTPClient(port: upstreamPort, timeout: 60).exchange(request, timeout: 60, halfClose: false) else { return nil }
        return raw
    }

    private func writeAll(_ fd: Int32, _ bytes: [UInt8]) {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return }
            sent += n
        }
    }
}
