import CouchbaseLite
import Foundation
import HTTPTypes
import Hummingbird
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
    /// Answers an HTTP/1 upgrade request before it reaches ``ListenerApplicationResponder`` (which
    /// answers every other request): `200` takes the upgrade, anything else refuses it. The
    /// request goes through the listener's own middleware (parsed once, then
    /// ``ListenerAccessMiddleware``), and the feed's options through the router, as for any request.
    struct UpgradeResponder: HTTPResponder, HTTPResponderBuilder {
        typealias Context = ChangesWebSocketContext
        let router: RESTRouter
        private let parse: ListenerParseMiddleware<Context>
        private let access: ListenerAccessMiddleware<Context>
        private let upgrade: WebSocketUpgradeMiddleware<Context>

        init(router: RESTRouter) {
            self.router = router
            parse = ListenerParseMiddleware(configuration: router.state.configuration)
            access = ListenerAccessMiddleware(policy: ListenerAccessPolicy(state: router.state))
            upgrade = WebSocketUpgradeMiddleware(
                shouldUpgrade: { _, context in context.feed == nil ? .dontUpgrade : .upgrade([:]) },
                onUpgrade: { inbound, outbound, upgraded in
                    let context = upgraded.requestContext
                    guard let feed = context.feed else { return }
                    try await ChangesWebSocket.run(feed, waitsForOptions: Set(context.restRequest.query.keys) == ["feed"],
                                                   request: context.restRequest, router: router,
                                                   inbound: inbound, outbound: outbound)
                })
        }

        func buildResponder() -> Self { self }

        func respond(to request: Request, context: Context) async throws -> Response {
            // Only `GET /db/_changes?feed=websocket` upgrades; others are refused unparsed.
            guard request.method == .get, request.head.path?.contains("feed=websocket") == true else {
                return Response(status: .notFound)
            }
            let router = self.router
            return try await parse.handle(request, context: context) { request, context in
                try await access.handle(request, context: context) { request, context in
                    let rest = context.restRequest
                    guard context.malformedTarget == nil, rest.segments.count == 2, rest.segments[1] == "_changes",
                          rest.query["feed"] == "websocket",
                          let outcome = await router.state.onWorker({ router.handle(rest) }),
                          case .changesFeed(let feed) = outcome, feed.options.feed == .websocket else {
                        return Response(status: .notFound)
                    }
                    var context = context
                    context.feed = feed
                    return try await upgrade.handle(request, context: context) { _, _ in Response(status: .notFound) }
                }
            }
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
            withBody.access = request.access
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

/// The context of a WebSocket upgrade request: the listener's (the request parsed once, the user
/// let through) and, once the router accepted it, the feed the upgraded connection runs.
struct ChangesWebSocketContext: ListenerContext, WebSocketRequestContext {
    var coreContext: CoreRequestContextStorage
    var restRequest = RESTRequest.unparsed
    var malformedTarget: RESTError?
    let webSocket = WebSocketHandlerReference<Self>()
    var feed: ChangesFeedRequest?
    let peerAddress: String?

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        peerAddress = source.channel.remoteAddress?.ipAddress
    }
}
