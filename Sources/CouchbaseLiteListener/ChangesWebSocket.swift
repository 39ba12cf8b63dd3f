import CouchbaseLite
import Foundation
import HTTPTypes
import HummingbirdWebSocket
import Logging
import NIOCore

/// `GET /db/_changes?feed=websocket` with `Upgrade: websocket`: the changes feed of 1.x's
/// listener and Sync Gateway 1.x over a WebSocket, as 1.x's `CBLWebSocketChangeTracker` reads it.
///
/// - The feed's options are the URL's; when the URL names nothing but `feed`, the server waits
///   for the first text message and takes it as the options (the JSON a POST body would carry,
///   e.g. `{"since":5,"include_docs":true}`), which is what 1.x clients send on opening.
/// - Each batch of changes is one text message holding a JSON array of change rows; an empty
///   array `[]` is sent once, when the feed has sent what there was and starts waiting (1.x's
///   trackers take it as "caught up").
/// - `heartbeat` sends unsolicited pong frames while idle (RFC 6455 5.5.3's one-way heartbeat).
/// - The server closes normally at the `limit` or `timeout` (no timeout when a heartbeat is
///   given), and with 1011 and the error as reason when the options are refused; a client
///   closing ends the feed.
enum ChangesWebSocket {
    typealias Handler = WebSocketDataHandler<HTTP1WebSocketUpgradeChannel.Context>

    /// Whether an HTTP/1 request is a changes-feed upgrade this listener takes; checked before
    /// the request reaches the responder (which answers every other request, and refused
    /// upgrades with their error).
    static func shouldUpgrade(_ head: HTTPRequest, router: RESTRouter) async -> ShouldUpgradeResult<Handler> {
        guard head.method == .get, let target = head.path, target.contains("feed=websocket"),
              let (segments, query) = try? RESTRequest.parseTarget(target),
              segments.count == 2, segments[1] == "_changes", query["feed"] == "websocket" else {
            return .dontUpgrade
        }
        var headers: [String: String] = [:]
        for field in head.headerFields {
            let name = field.name.canonicalName
            headers[name] = headers[name].map { $0 + ", " + field.value } ?? field.value
        }
        if headers["host"] == nil, let authority = head.authority { headers["host"] = authority }
        let request = RESTRequest(method: "GET", segments: segments, query: query, headers: headers, body: [])
        // Authentication and the options go through the router, as for any request.
        guard let outcome = await router.state.onWorker({ router.handle(request) }),
              case .changesFeed(let feed) = outcome, feed.options.feed == .websocket else {
            return .dontUpgrade
        }
        let waitsForOptions = Set(query.keys) == ["feed"]
        return .upgrade([:]) { inbound, outbound, _ in
            try await run(feed, waitsForOptions: waitsForOptions, request: request, router: router,
                          inbound: inbound, outbound: outbound)
        }
    }

    private static func run(_ initial: ChangesFeedRequest, waitsForOptions: Bool, request: RESTRequest,
                            router: RESTRouter, inbound: WebSocketInboundStream,
                            outbound: WebSocketOutboundWriter) async throws {
        var iterator = inbound.makeAsyncIterator()
        var feed = initial
        if waitsForOptions {
            guard let message = try await iterator.nextMessage(maxSize: 1 << 20) else { return }
            let body: [UInt8]
            switch message {
            case .text(let text): body = Array(text.utf8)
            case .binary(let buffer): body = Array(buffer.readableBytesView)
            }
            var headers = request.headers
            headers["content-type"] = "application/json"
            var withBody = RESTRequest(method: "POST", segments: request.segments, query: request.query,
                                       headers: headers, body: body)
            withBody.user = request.user
            let optionsRequest = withBody
            let db = initial.database
            let parsed = await router.state.onWorker { () -> Result<ChangesOptions, RESTError> in
                do { return .success(try router.changesOptions(db, optionsRequest)) } catch { return .failure(RESTError.from(error)) }
            }
            switch parsed {
            case .success(var options)?:
                options.feed = .websocket
                feed = ChangesFeedRequest(database: db, options: options)
            case .failure(let error)?:
                try await outbound.close(.unexpectedServerError, reason: "\(error.status) \(error.error): \(error.reason)")
                return
            case nil:
                try await outbound.close(.goingAway, reason: "The listener is stopping")
                return
            }
        }
        let loop = ChangesFeedLoop(router: router, feed: feed)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                // Whatever ends the feed (the limit, the timeout, an error), the client is told with a
                // close frame: it never waits on a socket the feed has left.
                do {
                _ = try await loop.run(untilRows: false) { event in
                    switch event {
                    case .rows(let rows, _):
                        if !rows.isEmpty {
                            // Split into frames of the negotiated size (a batch of documents can be large).
                            try await outbound.writeTextMessage("[" + rows.map(\.json).joined(separator: ",") + "]")
                        }
                    case .caughtUp:
                        try await outbound.writeTextMessage("[]")
                    case .heartbeat:
                        try await outbound.write(.pong)
                    }
                }
                } catch {
                    let failure = RESTError.from(error)
                    try? await outbound.close(.unexpectedServerError, reason: "\(failure.status) \(failure.error): \(failure.reason)")
                    return
                }
                try? await outbound.close(.normalClosure, reason: nil)
            }
            // Reading on until the client closes (or answers our close) ends the feed.
            while try await iterator.next() != nil {}
            group.cancelAll()
        }
    }
}
