import CouchbaseLite
import Foundation

/// `/_all_dbs`, `/_uuids` and `_ensure_full_commit`, answered as CouchDB 3 answers them.
extension RESTRouter {
    /// `GET /_all_dbs` with the row options CouchDB takes there (it lists its `_dbs` database
    /// through `_all_docs`): `startkey`/`endkey` (JSON strings), `inclusive_end`, `descending`,
    /// `skip`, `limit`.
    func allDatabases(_ request: RESTRequest) throws -> RESTResponse {
        let q = QueryParams(values: request.query)
        let descending = try q.bool("descending")
        let inclusiveEnd = try q.bool("inclusive_end", default: true)
        let skip = try q.int("skip") ?? 0
        let limit = try q.int("limit")
        func key(_ names: String...) throws -> String? {
            for name in names {
                guard let value = try q.json(name) else { continue }
                guard let string = value as? String else {
                    throw RESTError.queryParse("`\(name)` must be a database name (a JSON string)")
                }
                return string
            }
            return nil
        }
        let start = try key("startkey", "start_key")
        let end = try key("endkey", "end_key")
        var names = manager.allDatabaseNames.sorted()
        if descending { names.reverse() }
        // In the direction of the listing: `start` is where it begins, `end` where it stops.
        func before(_ a: String, _ b: String) -> Bool { descending ? a > b : a < b }
        names = names.filter { name in
            if let start, before(name, start) { return false }
            if let end { return inclusiveEnd ? !before(end, name) : before(name, end) }
            return true
        }
        var rows = names.dropFirst(skip)
        if let limit { rows = rows.prefix(limit) }
        return .json(200, Array(rows))
    }

    /// `GET /_uuids?count=N`: random UUIDs with the cache-busting headers CouchDB sends (one
    /// `Cache-Control: no-cache`, `Pragma`, a past `Expires`, an `ETag`).
    func uuids(_ request: RESTRequest) throws -> RESTResponse {
        let count: Int
        if let raw = request.query["count"] {
            guard let n = Int(raw), n >= 0 else { throw RESTError(400, "bad_request", "count must be a positive integer") }
            count = n
        } else {
            count = 1
        }
        guard count <= 1000 else { throw RESTError(400, "bad_request", "count parameter too large") }
        let settings = state.configuration.settings
        let uuids = state.uuids.make(count, algorithm: settings.uuidAlgorithm ?? .random, utcIDSuffix: settings.utcIDSuffix)
        let etag = "\"" + MultipartWriter.newBoundary() + "\""
        return .json(200, ["uuids": uuids], headers: [
            ("Cache-Control", "no-cache"), ("Pragma", "no-cache"),
            ("Expires", "Mon, 01 Jan 1990 00:00:00 GMT"), ("ETag", etag),
        ])
    }

    /// `POST /{db}/_ensure_full_commit`: every write is already durable when answered. CouchDB 3
    /// answers `instance_start_time` `"0"`, which its replicator takes as "unchanged".
    func ensureFullCommit() -> RESTResponse {
        .json(201, ["ok": true, "instance_start_time": "0"])
    }

    /// CouchDB's answers for `_local` paths that name no local document: `/db/_local`,
    /// `/db/_local%2F` (400 "Invalid _local document id.") and `/db/_local/x/y` (400, local
    /// documents have no attachments).
    static func checkLocalDocumentPath(_ segments: [String]) throws {
        guard segments.count >= 2 else { return }
        let second = segments[1]
        if second == "_local/" || (second == "_local" && (segments.count == 2 || segments[2].isEmpty)) {
            throw RESTError(400, "bad_request", "Invalid _local document id.")
        }
        if (second == "_local" && segments.count > 3) || (second.hasPrefix("_local/") && segments.count > 2) {
            throw RESTError(400, "bad_request", "_local documents do not accept attachments.")
        }
    }
}
