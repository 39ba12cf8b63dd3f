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
        XCTAssertEqual(live.first?["seq"] as? Int, 3)
        XCTAssertFalse(a.isEmpty)
    }

    func testURLOptionsStartAtOnceAndLimitClosesTheSocket() async throws {
        try putDoc("/db/a", ["v": 1])
        try putDoc("/db/b", ["v": 2])
        try putDoc("/db/c", ["v": 3])
        let port = listener.port
        let logger = self.logger
        let (messages, close) = try await withTimeout(15) { () -> ([String], Int?) in
            let received = LockedBox<[String]>([])
            let frame = try await WebSocketClient.connect(
                url: "ws://127.0.0.1:\(port)/db/_changes?feed=websocket&since=1&limit=2", logger: logger) { inbound, _, _ in
                for try await message in inbound.messages(maxSize: 1 << 20) {
                    if case .text(let text) = message { received.update { $0.append(text) } }
                }
            }
            var code: Int?
            if case .normalClosure? = frame?.closeCode { code = 1000 }
            return (received.value, code)
        }
        // One batch with the two rows, then the server closes (the limit is reached).
        XCTAssertEqual(messages.count, 1, "\(messages)")
        XCTAssertEqual(rows(messages.first ?? "").map { $0["id"] as? String ?? "" }, ["b", "c"])
        XCTAssertEqual(close, 1000)
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
        listener.stop()
        let secure = CBLListener(manager: manager, port: 0)
        secure.bindAddress = "127.0.0.1"
        try secure.setAnonymousSSLIdentity(label: "WebSocket Test")
        try secure.start()
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
