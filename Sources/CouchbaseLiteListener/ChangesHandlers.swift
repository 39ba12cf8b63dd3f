import CouchbaseLite
import Foundation
import JSONCore

/// The parsed parameters of a `_changes` request.
struct ChangesOptions: Sendable {
    enum Feed: String, Sendable { case normal, longpoll, continuous, eventsource, websocket }
    var feed = Feed.normal
    var since: Int64 = 0
    var limit: Int?
    var descending = false
    var allLeaves = false
    var includeDocs = false
    /// With `include_docs`: `_conflicts` in each document.
    var conflicts = false
    /// With `include_docs`: attachment bodies inline (base64), not stubs.
    var attachments = false
    /// With `include_docs`: `encoding` and `encoded_length` of gzip-stored attachments.
    var attEncodingInfo = false
    var activeOnly = false
    var docIDs: [String]?
    var filter: ChangesFilter?
    /// Milliseconds; nil = the default.
    var timeout: Int?
    var heartbeat: Int?
}

/// A changes feed that waits for database changes; run by the async layer.
struct ChangesFeedRequest: Sendable {
    let database: CBLDatabase
    let options: ChangesOptions
}

extension RESTRouter {
    func changes(_ db: CBLDatabase, _ request: RESTRequest) throws -> RESTOutcome {
        let options = try changesOptions(db, request)
        if options.feed == .websocket, request.method != "GET" || request.header("upgrade")?.lowercased() != "websocket" {
            throw RESTError(400, "bad_request", "feed=websocket needs a WebSocket upgrade request (GET with `Upgrade: websocket`)")
        }
        if options.feed != .normal {
            return .changesFeed(ChangesFeedRequest(database: db, options: options))
        }
        let (rows, lastSeq) = try changeRows(db, options)
        return .response(Self.changesAnswer(rows, lastSequence: state.sequence(lastSeq)))
    }

    /// A `feed=normal` body as CouchDB writes it, one row a line, encoded and sent a few rows
    /// at a time.
    static func changesAnswer(_ rows: [ChangesRow], lastSequence: RemoteSequence) -> RESTResponse {
        RESTResponse(status: 200, headers: [("Content-Type", "application/json"), ("Cache-Control", "must-revalidate")],
                     stream: .json(head: ChangesRow.feedPrefix, items: rows, separator: ChangesRow.feedSeparator,
                                   tail: ChangesRow.feedSuffix(lastSequence: lastSequence)) { row, writer in
                         row.encode(into: &writer)
                     })
    }

    /// Parses a `_changes` request (URL parameters, and a POST body's members) with CouchDB's errors.
    func changesOptions(_ db: CBLDatabase, _ request: RESTRequest) throws -> ChangesOptions {
        var params = request.query
        var bodyDocIDs: [String]?
        var body: JSONObject?
        if request.method == "POST" {
            try requireJSONBody(request)
            body = request.body.isEmpty ? JSONObject() : try JSONText.object(request.body)
            if let ids = body?["doc_ids"] {
                let strings = ids.arrayValue?.compactMap(\.stringValue)
                guard let strings, strings.count == ids.arrayValue?.count else {
                    throw RESTError(400, "bad_request", "`doc_ids` must be an array of strings")
                }
                bodyDocIDs = strings
            }
            // The URL wins; the body (what Sync Gateway-era replicators also send) fills the gaps.
            mergeBodyParameters(body ?? JSONObject(), into: &params, except: "doc_ids")
        }
        let q = QueryParams(values: params)
        var options = ChangesOptions()
        if let feed = q["feed"] {
            switch feed {
            case "normal", "": options.feed = .normal
            case "longpoll": options.feed = .longpoll
            case "continuous", "live": options.feed = .continuous
            case "eventsource": options.feed = .eventsource
            case "websocket": options.feed = .websocket
            default:
                throw RESTError(400, "bad_request",
                                "Supported `feed` types: normal, continuous, live, longpoll, eventsource, websocket")
            }
        }
        // A reconnecting EventSource resumes after the last event it saw (CouchDB does the same).
        var since = q["since"]
        if options.feed == .eventsource, let lastEventID = request.header("last-event-id") { since = lastEventID }
        if let since {
            if since == "now" {
                options.since = db.lastSequenceNumber
            } else if let n = RemoteSequence.localSequence(since) {
                options.since = n
            } else {
                throw RESTError(400, "bad_request", "Malformed sequence supplied in 'since' parameter.")
            }
        }
        options.limit = try q.int("limit")
        if options.limit == 0 { options.limit = 1 }
        options.descending = try q.bool("descending")
        if let style = q["style"] {
            guard style == "all_docs" || style == "main_only" else {
                throw RESTError(400, "bad_request", "Invalid style '\(style)'")
            }
            options.allLeaves = style == "all_docs"
        }
        options.includeDocs = try q.bool("include_docs")
        options.conflicts = try q.bool("conflicts")
        options.attachments = try q.bool("attachments")
        options.attEncodingInfo = try q.bool("att_encoding_info")
        options.activeOnly = try q.bool("active_only")
        options.timeout = try q.int("timeout")
        if let hb = q["heartbeat"] {
            options.heartbeat = try Self.heartbeat(hb)
        }
        if let filter = q["filter"] {
            options.filter = try parseChangesFilter(filter, db, request, query: q, params: params, body: body,
                                                    bodyDocIDs: bodyDocIDs, into: &options)
        }
        if options.feed != .normal && options.descending {
            throw RESTError(400, "bad_request", "descending is only allowed with feed=normal")
        }
        return options
    }

    /// `heartbeat=true` (60 s) or milliseconds, with CouchDB's errors (chttpd_db).
    static func heartbeat(_ raw: String) throws -> Int {
        if raw == "true" { return 60_000 }
        guard let n = Int(raw) else {
            throw RESTError(400, "bad_request", "Invalid heartbeat value. Expecting a positive integer value (in milliseconds).")
        }
        guard n >= 0 else {
            throw RESTError(400, "bad_request", "The heartbeat value should be a positive integer (in milliseconds).")
        }
        // Tiny heartbeats would only spin.
        return max(n, 100)
    }
}
