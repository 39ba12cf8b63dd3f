import CouchbaseLite
import Foundation
import JSONCore

/// The parsed parameters of a `_changes` request.
struct ChangesOptions: Sendable {
    enum Feed: String, Sendable { case normal, longpoll, continuous }
    var feed = Feed.normal
    var since: Int64 = 0
    var limit: Int?
    var descending = false
    var allLeaves = false
    var includeDocs = false
    var activeOnly = false
    var docIDs: [String]?
    /// A filter registered in Swift (`setFilterNamed`), and the request parameters it receives.
    var filterName: String?
    var filterParams: [String: String] = [:]
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
        try requireMethod(request, "GET", "POST")
        var params = request.query
        var bodyDocIDs: [String]?
        if request.method == "POST" {
            try requireJSONBody(request)
            let body = request.body.isEmpty ? [:] : try JSONText.parseObject(request.body)
            if let ids = body["doc_ids"] {
                guard let list = ids as? [Any], let strings = list as? [String] else {
                    throw RESTError(400, "bad_request", "`doc_ids` must be an array of strings")
                }
                bodyDocIDs = strings
            }
            // The URL wins; the body (what Sync Gateway-era replicators also send) fills the gaps.
            mergeBodyParameters(body, into: &params, except: "doc_ids")
        }
        let q = QueryParams(values: params)
        var options = ChangesOptions()
        if let feed = q["feed"] {
            switch feed {
            case "normal", "": options.feed = .normal
            case "longpoll": options.feed = .longpoll
            case "continuous": options.feed = .continuous
            default: throw RESTError(400, "bad_request", "Unsupported feed type '\(feed)': use normal, longpoll or continuous")
            }
        }
        if let since = q["since"] {
            if since == "now" {
                options.since = db.lastSequenceNumber
            } else if let n = Int64(since.trimmingCharacters(in: CharacterSet(charactersIn: "\""))), n >= 0 {
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
        options.activeOnly = try q.bool("active_only")
        options.timeout = try q.int("timeout")
        if let hb = q["heartbeat"] {
            options.heartbeat = hb == "true" ? 60_000 : try q.int("heartbeat")
            if let h = options.heartbeat, h < 100 { options.heartbeat = 100 }
        }
        if let filter = q["filter"] {
            if filter == "_doc_ids" {
                if let ids = bodyDocIDs {
                    options.docIDs = ids
                } else if let raw = try q.json("doc_ids", lenient: false) {
                    guard let list = raw as? [Any], let strings = list as? [String] else {
                        throw RESTError(400, "bad_request", "`doc_ids` filter parameter is not a list of doc ids.")
                    }
                    options.docIDs = strings
                } else {
                    throw RESTError(400, "bad_request", "filter=_doc_ids needs a `doc_ids` list")
                }
            } else if try db.filterNamedOrCompiled(filter) != nil {   // or a design document's (JavaScript) filter
                options.filterName = filter
                options.filterParams = params
            } else {
                throw RESTError(404, "not_found",
                                "Filter '\(filter)' is not registered (JavaScript filters are not supported; register it with setFilterNamed)")
            }
        }
        if options.feed != .normal {
            if options.descending { throw RESTError(400, "bad_request", "descending is only allowed with feed=normal") }
            return .changesFeed(ChangesFeedRequest(database: db, options: options))
        }
        let (rows, lastSeq) = try changeRows(db, options)
        return .response(.json(200, ["results": rows, "last_seq": Int(lastSeq)]))
    }

    /// The change rows after `options.since`, and the `last_seq` to report.
    func changeRows(_ db: CBLDatabase, _ options: ChangesOptions) throws -> ([[String: Any]], Int64) {
        let lastSequence = db.lastSequenceNumber
        let filter = try options.filterName.flatMap(db.filterNamedOrCompiled)
        let changes = try db.syncChanges(since: options.since, limit: filter == nil ? options.limit : nil,
                                         descending: options.descending, allLeaves: options.allLeaves,
                                         docIDs: options.docIDs, activeOnly: options.activeOnly,
                                         includeDocs: options.includeDocs)
        var rows: [[String: Any]] = []
        var limited = false
        for change in changes {
            if let filter {
                let params: [AnyHashable: Any] = options.filterParams.reduce(into: [:]) { $0[$1.key] = $1.value }
                guard let rev = db.document(withID: change.docID)?.revision(withID: change.winnerRevID),
                      filter(rev, params) else { continue }
            }
            rows.append(changeRow(change, includeDocs: options.includeDocs))
            if let limit = options.limit, rows.count >= limit { limited = true; break }
        }
        let lastRowSeq = (rows.last?["seq"] as? Int).map(Int64.init)
        let lastSeq: Int64
        if options.descending {
            lastSeq = lastRowSeq ?? options.since
        } else if limited, let lastRowSeq {
            lastSeq = lastRowSeq
        } else {
            // Everything after `since` was scanned: the feed is caught up with the database.
            lastSeq = max(lastSequence, lastRowSeq ?? 0, options.since)
        }
        return (rows, lastSeq)
    }

    func changeRow(_ change: SyncChange, includeDocs: Bool) -> [String: Any] {
        var row: [String: Any] = [
            "seq": Int(change.sequence),
            "id": change.docID,
            "changes": change.revIDs.map { ["rev": $0] },
        ]
        if change.deleted { row["deleted"] = true }
        if includeDocs {
            var doc: [String: Any] = [:]
            if let body = change.winnerBody, !body.isEmpty, let props = try? JSON.parseObject(body) { doc = props }
            doc["_id"] = change.docID
            doc["_rev"] = change.winnerRevID
            if change.deleted { doc["_deleted"] = true }
            row["doc"] = doc
        }
        return row
    }
}
