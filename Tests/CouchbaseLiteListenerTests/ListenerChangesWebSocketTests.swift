import CouchbaseLite
import CouchbaseLiteListener
import Foundation
import HTTPTypes
import HummingbirdWSClient
import Logging
import NIOSSL
import XCTest

/// `_changes?feed=websocket` (issue 18 B8) as 1.x's WebSocket change tracker uses it: options in
/// the first message, batches as JSON arrays, `[]` once caught up.
final class ListenerChangesWebSocketTests: ListenerTestCase {
    var db: CBLDatabase!

    override func setUpWithError() throws {
        try super.setUpWithError()
        db = try createDB()
    }

    private let logger = Logger(label: "ListenerChangesWebSocketTests")

    /// Runs `body` and fails (instead of hanging) if it takes longer than `seconds`.
    private func withTimeout<T: Sendable>(_ seconds: Double, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await body() }
            group.addTask {
                try await Task.sleep(nanoseconds: UInt64(seconds * 1_000_000_000))
                return nil
            }
            guard let first = try await group.next(), let value = first else {
                group.cancelAll()
                throw HTTPClientError(description: "timed out after \(seconds) s")
            }
            group.cancelAll()
            return value
        }
    }

    private func rows(_ message: String) -> [[String: Any]] {
        (try? JSONSerialization.jsonObject(with: Data(message.utf8))) as? [[String: Any]] ?? []
    }

    func testOptionsInFirstMessageThenLiveBatches() async throws {
        let a = try putDoc("/db/a", ["v": 1])
        try putDoc("/db/b", ["v": 2])
        let port = listener.port
        let db = self.db!
        let logger = self.logger
        let messages = try await withTimeout(15) { () -> [String] in
            let received = LockedBox<[String]>([])
            try await WebSocketClient.connect(url: "ws://127.0.0.1:\(port)/db/_changes?feed=websocket", logger: logger) {
                inbound, outbound, _ in
                try await outbound.write(.text(#"{"since": 1, "include_docs": true}"#))
                for try await message in inbound.messages(maxSize: 1 << 20) {
                    guard case .text(let text) = message else { continue }
                    received.update { $0.append(text) }
                    if text == "[]" {
                        // Caught up: a new change arrives as its own batch.
                        DispatchQueue.global().async { _ = try? db.document(withID: "c")?.putProperties(["v": 3]) }
                    } else if received.value.count == 3 {
                        try await outbound.close(.normalClosure, reason: nil)
                    }
                }
            }
            return received.value
        }
        XCTAssertEqual(messages.count, 3, "\(messages)")
        guard messages.count == 3 else { return }
        let first = rows(messages[0])
        XCTAssertEqual(first.map { $0["id"] as? String ?? "" }, ["b"])
        XCTAssertEqual((first.first?["doc"] as? [String: Any])?["v"] as? Int, 2)
        XCTAssertEqual(messages[1], "[]")
        let live = rows(messages[2])
        XCTAssertEqual(live.map { $0["id"] as? String ?? "" }, ["c"])
        XCTAssertEqual(seqNumber(live.first?["seq"]), 3)
        XCTAssertFalse(a.isEmpty)
    }

    func testURLOptionsStartAtOnceAndLimitClosesTheSocket() throws {
        try putDoc("/db/a", ["v": 1])
        try putDoc("/db/b", ["v": 2])
        try putDoc("/db/c", ["v": 3])
        // Read at the byte level: the server answers the upgrade and, with the options in the URL,
        // sends the batch and its close frame at once — often in the same TCP segment as the 101,
        // which is exactly what a client must cope with.
        let frames = try RawWebSocket.exchange(port: listener.port, path: "/db/_changes?feed=websocket&since=1&limit=2")
        // One batch with the two rows, then the server closes (the limit is reached) with 1000.
        XCTAssertEqual(frames.map(\.opcode), [1, 8], "\(frames)")
        guard frames.count == 2 else { return }
        XCTAssertEqual(rows(String(decoding: frames[0].payload, as: UTF8.self)).map { $0["id"] as? String ?? "" }, ["b", "c"])
        XCTAssertEqual(frames[1].payload.prefix(2).reduce(0) { $0 << 8 | Int($1) }, 1000)
    }

    func testRefusedOptionsCloseWithTheError() async throws {
        let port = listener.port
        let logger = self.logger
        let reason = try await withTimeout(15) { () -> String? in
            let frame = try await WebSocketClient.connect(url: "ws://127.0.0.1:\(port)/db/_changes?feed=websocket",
                                                          logger: logger) { inbound, outbound, _ in
                try await outbound.write(.text(#"{"since": "yesterday"}"#))
                for try await _ in inbound.messages(maxSize: 1 << 20) {}
            }
            return frame?.reason
        }
        XCTAssertEqual(reason, "400 bad_request: Malformed sequence supplied in 'since' parameter.")
    }

    /// Over HTTPS (the anonymous identity) the feed is `wss:`.
    func testSecureWebSocketFeed() async throws {
        let secure = try startSecureListener(label: "WebSocket Test")
        defer { secure.stop() }
        try db.document(withID: "s")!.putProperties(["tls": true])
        let port = secure.port
        let logger = self.logger
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.certificateVerification = .none
        let configuration = tls
        let messages = try await withTimeout(15) { () -> [String] in
            let received = LockedBox<[String]>([])
            try await WebSocketClient.connect(url: "wss://127.0.0.1:\(port)/db/_changes?feed=websocket",
                                              configuration: .init(closeTimeout: .seconds(2), sniHostname: "localhost"),
                                              tlsConfiguration: configuration, logger: logger) { inbound, outbound, _ in
                try await outbound.write(.text("{}"))
                for try await message in inbound.messages(maxSize: 1 << 20) {
                    if case .text(let text) = message { received.update { $0.append(text) } }
                    if received.value.count == 2 { try await outbound.close(.normalClosure, reason: nil) }
                }
            }
            return received.value
        }
        XCTAssertEqual(messages.count, 2, "\(messages)")
        XCTAssertEqual(rows(messages.first ?? "").first?["id"] as? String, "s")
        XCTAssertEqual(messages.last, "[]")
    }

    /// Stopping the listener ends open WebSocket feeds promptly (the socket closes; stop() returns).
    func testStoppingTheListenerEndsWebSocketFeeds() async throws {
        let port = listener.port
        let logger = self.logger
        let listener = self.listener!
        let start = Date()
        let messages = try await withTimeout(15) { () -> [String] in
            let received = LockedBox<[String]>([])
            _ = try? await WebSocketClient.connect(url: "ws://127.0.0.1:\(port)/db/_changes?feed=websocket", logger: logger) {
                inbound, outbound, _ in
                try await outbound.write(.text(#"{"heartbeat": 100}"#))
                for try await message in inbound.messages(maxSize: 1 << 20) {
                    guard case .text(let text) = message else { continue }
                    received.update { $0.append(text) }
                    if text == "[]" { DispatchQueue.global().async { listener.stop() } }
                }
            }
            return received.value
        }
        XCTAssertEqual(messages, ["[]"])
        XCTAssertLessThan(Date().timeIntervalSince(start), 10)
    }

    func testUpgradeIsAuthenticatedAndNeedsGET() async throws {
        let upgrade = ["Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13",
                       "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="]
        // Without an upgrade: a clear 400.
        expectError(try get("/db/_changes?feed=websocket"), 400, "bad_request")
        // A refused upgrade (missing database, no credentials) is not upgraded: hummingbird-websocket
        // answers it with an empty 400 and closes; the same GET without `Upgrade` says why.
        let missing = try get("/nodb/_changes?feed=websocket", headers: upgrade)
        XCTAssertEqual(missing.status, 400)
        XCTAssertEqual(missing.body, [])
        // With passwords, the upgrade needs credentials like any request.
        listener.setPasswords(["admin": "secret"])
        let anonymous = try get("/db/_changes?feed=websocket", headers: upgrade)
        XCTAssertEqual(anonymous.status, 400)
        expectError(try get("/db/_changes?feed=websocket"), 401, "unauthorized")
        var credentials = HTTPFields()
        credentials[.authorization] = "Basic " + Data("admin:secret".utf8).base64EncodedString()
        let headers = credentials
        let port = listener.port
        let logger = self.logger
        let messages = try await withTimeout(15) { () -> [String] in
            let received = LockedBox<[String]>([])
            try await WebSocketClient.connect(url: "ws://127.0.0.1:\(port)/db/_changes?feed=websocket",
                                              configuration: .init(additionalHeaders: headers), logger: logger) {
                inbound, outbound, _ in
                try await outbound.write(.text("{}"))
                for try await message in inbound.messages(maxSize: 1 << 20) {
                    if case .text(let text) = message { received.update { $0.append(text) } }
                    try await outbound.close(.normalClosure, reason: nil)
                }
            }
            return received.value
        }
        // An empty database: caught up at once.
        XCTAssertEqual(messages, ["[]"])
    }
}

/// A minimal WebSocket client over a blocking loopback socket (RFC 6455): sends the upgrade
/// request, reads the frames the server sends up to and including its close frame, answers that
/// close (masked, as a client must), and returns the frames. Bounded by a timeout.
enum RawWebSocket {
    struct Frame: CustomStringConvertible {
        let opcode: UInt8
        let payload: [UInt8]
        var description: String { "op \(opcode): \(String(decoding: payload, as: UTF8.self))" }
    }

    static func exchange(port: UInt16, path: String, timeout: TimeInterval = 10) throws -> [Frame] {
        let fd = try RawHTTPClient.connectedSocket(port: port, timeout: timeout)
        defer { close(fd) }
        func sendAll(_ bytes: [UInt8]) { RawHTTPClient.sendAll(fd, bytes) }
        sendAll(Array(("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n").utf8))
        let deadline = Date().addingTimeInterval(timeout)
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        func receive() throws {
            guard Date() < deadline else { throw HTTPClientError(description: "timed out after \(data.count) bytes") }
            let n = recv(fd, &buffer, buffer.count, 0)
            if n > 0 { data += buffer[0..<n]; return }
            if n < 0, errno == EINTR { return }
            throw HTTPClientError(description: "connection ended after \(data.count) bytes: \(String(decoding: data, as: UTF8.self))")
        }
        while RawHTTPClient.find([13, 10, 13, 10], in: data) == nil { try receive() }
        let headEnd = RawHTTPClient.find([13, 10, 13, 10], in: data)! + 4
        let status = String(decoding: data[0..<headEnd], as: UTF8.self).split(separator: " ").dropFirst().first
        guard status == "101" else { throw HTTPClientError(description: "no upgrade: \(String(decoding: data, as: UTF8.self))") }
        var at = headEnd
        var frames: [Frame] = []
        while frames.last?.opcode != 8 {
            // Server frames are unmasked: FIN/opcode, length (7 bits, or 126 + 16 bits, or 127 + 64 bits).
            while data.count < at + 2 { try receive() }
            var length = Int(data[at + 1] & 0x7F)
            var header = 2
            if length == 126 {
                while data.count < at + 4 { try receive() }
                length = Int(data[at + 2]) << 8 | Int(data[at + 3]); header = 4
            } else if length == 127 {
                while data.count < at + 10 { try receive() }
                length = data[(at + 2)..<(at + 10)].reduce(0) { $0 << 8 | Int($1) }; header = 10
            }
            while data.count < at + header + length { try receive() }
            frames.append(Frame(opcode: data[at] & 0x0F, payload: Array(data[(at + header)..<(at + header + length)])))
            at += header + length
        }
        // Answer the close with the same code, masked with a zero key.
        let code = frames.last!.payload.prefix(2)
        sendAll([0x88, 0x80 | UInt8(code.count), 0, 0, 0, 0] + code)
        return frames
    }
}
