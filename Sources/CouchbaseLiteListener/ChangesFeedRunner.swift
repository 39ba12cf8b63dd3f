import CouchbaseLite
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// The waiting part of the changes feeds (longpoll, continuous, eventsource, websocket): reads
/// the rows after `since`, hands them on, waits for the database to change (with heartbeats),
/// and ends at the limit, the timeout, or when the listener stops. The wire format is the
/// caller's (``ChangesFeedRunner`` for HTTP, ``ChangesWebSocket``).
struct ChangesFeedLoop: Sendable {
    let router: RESTRouter
    let feed: ChangesFeedRequest

    /// Default wait when the client gives no timeout (CouchDB's 60 s).
    static let defaultTimeoutMS = 60_000

    /// What the loop hands on.
    enum Event {
        /// The rows read (JSON text and sequence each; possibly none) and the `last_seq` after them.
        case rows([(json: String, seq: Int64)], lastSeq: Int64)
        /// The feed has sent everything there was and starts waiting (once per feed).
        case caughtUp
        /// The feed is idle for a heartbeat interval.
        case heartbeat
    }

    /// How the loop ended: the last sequence reached, and whether the database went away.
    struct End {
        let lastSeq: Int64
        let failed: Bool
    }

    /// Runs the feed. `untilRows`: end after the first read that found rows (longpoll).
    func run(untilRows: Bool, _ emit: (Event) async throws -> Void) async throws -> End {
        let db = feed.database
        var options = feed.options
        let signal = ChangeSignal()
        let token = db.addChangeListener { _ in signal.fire() }
        defer { db.removeChangeListener(token) }
        let registered = router.state.register(signal)
        defer { router.state.unregister(signal) }
        let router = self.router

        let timeoutMS = options.timeout ?? (options.heartbeat == nil || untilRows ? Self.defaultTimeoutMS : Int.max)
        let deadline = Date().addingTimeInterval(Double(min(timeoutMS, 365 * 86_400_000)) / 1000)
        let heartbeat = options.heartbeat.map { Double($0) / 1000 }

        var sentRows = 0
        var caughtUp = false
        let originalLimit = options.limit
        while true {
            let snapshot = options
            let result = await router.state.onWorker { () -> Result<([(String, Int64)], Int64), RESTError> in
                do {
                    let (rows, last) = try router.changeRows(db, snapshot)
                    return .success((rows.map { (String(decoding: $0.encoded, as: UTF8.self), $0.sequence.localSequence ?? 0) }, last))
                } catch {
                    return .failure(RESTError.from(error))
                }
            }
            guard let (rows, lastSeq) = try? result?.get() else {
                // The database went away (deleted, closed) or the listener is stopping.
                return End(lastSeq: options.since, failed: true)
            }
            let typedRows = rows.map { (json: $0.0, seq: $0.1) }
            let stopping = !registered || signal.isStopping || Date() >= deadline
            if untilRows {
                if !rows.isEmpty || stopping {
                    try await emit(.rows(typedRows, lastSeq: lastSeq))
                    return End(lastSeq: lastSeq, failed: false)
                }
            } else {
                try await emit(.rows(typedRows, lastSeq: lastSeq))
                sentRows += rows.count
                options.since = lastSeq
                let limitReached = originalLimit.map { sentRows >= $0 } ?? false
                if limitReached || stopping { return End(lastSeq: lastSeq, failed: false) }
                if let originalLimit { options.limit = originalLimit - sentRows }
                if !caughtUp {
                    caughtUp = true
                    try await emit(.caughtUp)
                }
            }
            // Wait for a change, with heartbeats, until the deadline.
            var changed = false
            while !changed {
                let remaining = deadline.timeIntervalSinceNow
                if remaining <= 0 || signal.isStopping || Task.isCancelled { break }
                let slice = min(remaining, heartbeat ?? remaining)
                changed = await signal.wait(seconds: slice)
                if !changed, heartbeat != nil, deadline.timeIntervalSinceNow > 0 {
                    try await emit(.heartbeat)
                }
            }
        }
    }
}

/// Runs `feed=longpoll`, `feed=continuous` and `feed=eventsource` over HTTP: the response
/// starts at once and streams until the feed ends.
struct ChangesFeedRunner: Sendable {
    let router: RESTRouter
    let feed: ChangesFeedRequest

    func response() -> Response {
        if feed.options.feed == .websocket {
            // An upgrade the WebSocket layer did not take (it only takes GET `_changes`).
            return ListenerResponder.response(.error(RESTError(400, "bad_request", "feed=websocket needs a WebSocket upgrade request")))
        }
        var headers = HTTPFields()
        if feed.options.feed == .eventsource {
            // CouchDB's eventsource headers (chttpd_db changes_callback).
            headers[.contentType] = "text/event-stream"
            headers[.cacheControl] = "no-cache"
        } else {
            headers[.contentType] = "application/json"
            headers[.cacheControl] = "must-revalidate"
        }
        let runner = self
        return Response(status: .ok, headers: headers, body: ResponseBody { writer in
            // A client that hangs up makes writes fail; the writer must still be finished.
            try? await runner.run(&writer)
            try? await writer.finish(nil)
        })
    }

    private func write(_ text: String, _ writer: inout any ResponseBodyWriter) async throws {
        guard !text.isEmpty else { return }
        var buffer = ByteBufferAllocator().buffer(capacity: text.utf8.count)
        buffer.writeString(text)
        try await writer.write(buffer)
    }

    private func run(_ writer: inout any ResponseBodyWriter) async throws {
        let loop = ChangesFeedLoop(router: router, feed: feed)
        switch feed.options.feed {
        case .longpoll:
            let end = try await loop.run(untilRows: true) { event in
                switch event {
                case .rows(let rows, let lastSeq):
                    // The answer's rows as the normal feed frames them (`ChangesRow`'s framing).
                    try await write(String(decoding: ChangesRow.feedPrefix, as: UTF8.self)
                                    + rows.map(\.json).joined(separator: String(decoding: ChangesRow.feedSeparator, as: UTF8.self))
                                    + String(decoding: ChangesRow.feedSuffix(lastSequence: router.state.sequence(lastSeq)), as: UTF8.self),
                                    &writer)
                case .heartbeat:
                    try await write("\n", &writer)
                case .caughtUp:
                    break
                }
            }
            if end.failed { try await write("{\"results\":[],\n\"last_seq\":\(router.state.sequenceText(end.lastSeq))}\n", &writer) }
        case .eventsource:
            // Each change is an event whose id is its sequence; heartbeats are `heartbeat` events.
            _ = try await loop.run(untilRows: false) { event in
                switch event {
                case .rows(let rows, _):
                    try await write(rows.map { "data: \($0.json)\nid: \(router.state.sequenceText($0.seq))\n\n" }.joined(), &writer)
                case .heartbeat:
                    try await write("event: heartbeat\ndata: \n\n", &writer)
                case .caughtUp:
                    break
                }
            }
        default:
            let end = try await loop.run(untilRows: false) { event in
                switch event {
                case .rows(let rows, _):
                    try await write(rows.map { $0.json + "\n" }.joined(), &writer)
                case .heartbeat:
                    try await write("\n", &writer)
                case .caughtUp:
                    break
                }
            }
            try await write("{\"last_seq\":\(router.state.sequenceText(end.lastSeq))}\n", &writer)
        }
    }
}
