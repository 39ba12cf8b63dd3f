import CouchbaseLite
import Foundation

/// `_all_docs`, `_design_docs` and `_local_docs`: the documents of a database as rows, with the
/// row options CouchDB's couch_mrview takes.
extension RESTRouter {
    // MARK: _all_docs

    /// `_all_docs`, and `_design_docs` (`prefix` `_design/`). With `keys`, rows come in the
    /// order of the keys (reversed by `descending`) before `skip` and `limit`, and a key that is
    /// not a string, or names no document, is a `{"key":…,"error":"not_found"}` row, as CouchDB has them.
    func allDocs(_ db: CBLDatabase, _ request: RESTRequest, prefix: String? = nil) throws -> RESTResponse {
        let (_, q, keys) = try rowQueryParameters(request)
        try checkDocumentIDRange(q, keys: keys)
        let includeDocs = try q.bool("include_docs")
        let conflicts = try q.bool("conflicts")
        let withAttachments = try q.bool("attachments")
        let encodingInfo = try q.bool("att_encoding_info")
        let query = db.createAllDocumentsQuery()
        query.prefetch = includeDocs
        if try q.bool("only_conflicts") {
            query.allDocsMode = .onlyConflicts
        } else if conflicts {
            query.allDocsMode = .showConflicts
        }

        @Sendable func rowJSON(_ row: CBLQueryRow) -> [String: Any]? {
            guard let docID = row.sourceDocumentID, let value = row.value as? [String: Any] else { return nil }
            var out: [String: Any] = ["id": docID, "key": docID, "value": value]
            if includeDocs {
                if value["deleted"] as? Bool == true {
                    out["doc"] = NSNull()
                } else if var doc = row.documentProperties {
                    if conflicts, let leaves = value["_conflicts"] as? [String] {
                        let others = leaves.filter { $0 != value["rev"] as? String }
                        if !others.isEmpty { doc["_conflicts"] = others }
                    }
                    out["doc"] = Self.includedDocument(db, doc, attachments: withAttachments, encodingInfo: encodingInfo)
                }
            }
            return out
        }

        var rows: [Any] = []
        var offset: Any = NSNull()
        var updateSeq = Int(db.lastSequenceNumber)
        var next: () throws -> [String: Any]?
        if let keys {
            let skip = try q.int("skip") ?? 0
            let limit = try q.int("limit")
            var seen = Set<String>()
            query.keys = keys.compactMap { $0 as? String }.filter { seen.insert($0).inserted }
            let result = try query.run()
            updateSeq = Int(result.sequenceNumber)
            var found: [String: [String: Any]] = [:]
            for row in result {
                if let out = rowJSON(row), let id = out["id"] as? String { found[id] = out }
            }
            var ordered = try q.bool("descending") ? Array(keys.reversed()) : keys
            ordered = Array(ordered.dropFirst(skip))
            if let limit { ordered = Array(ordered.prefix(limit)) }
            rows = ordered.map { key in
                if let id = key as? String, let row = found[id] { return row }
                return ["key": key, "error": "not_found"] as [String: Any]
            }
            var remaining = rows[...]
            next = { remaining.popFirst() as? [String: Any] }
        } else {
            let skip = try applyRowOptions(q, keys: nil, to: query)
            if let prefix { Self.clamp(query, toPrefix: prefix) }
            let result = try query.run()
            updateSeq = Int(result.sequenceNumber)
            // CouchDB's offset counts the rows before the start key (and those skipped).
            var rowsBefore = skip
            if prefix == nil, let start = query.startKey {
                let before = db.createAllDocumentsQuery()
                before.descending = query.descending
                before.allDocsMode = query.allDocsMode
                before.endKey = start
                before.inclusiveEnd = false
                rowsBefore += Int(try before.run().count)
            }
            offset = rowsBefore
            // Rows are turned into JSON as the client reads them (RowListing).
            next = {
                while let row = result.nextRow() {
                    guard let out = rowJSON(row) else { continue }
                    if let prefix, let id = out["id"] as? String, !id.hasPrefix(prefix) { continue }
                    return out
                }
                return nil
            }
        }
        var meta: [(String, Any)] = [
            ("total_rows", try prefix.map { try Self.countDocuments(db, prefix: $0) } ?? Int(db.documentCount)),
            ("offset", offset),
        ]
        if try q.bool("update_seq") { meta.append(("update_seq", state.sequenceValue(Int64(updateSeq)))) }
        return RowListing.response(meta: meta, next: next)
    }

    /// Narrows a query's key range to the IDs starting with `prefix`; `startkey` is the high
    /// end when descending, and `inclusive_end` keeps applying to the caller's end key.
    static func clamp(_ query: CBLQuery, toPrefix prefix: String) {
        let low = prefix, high = prefix + "\u{FFFF}"
        var lower = (query.descending ? query.endKey : query.startKey) as? String
        var upper = (query.descending ? query.startKey : query.endKey) as? String
        if lower.map({ $0 < low }) ?? true { lower = low }
        if upper.map({ $0 > high }) ?? true { upper = high }
        if query.descending {
            query.startKey = upper
            query.endKey = lower
        } else {
            query.startKey = lower
            query.endKey = upper
        }
    }

    /// Live documents whose IDs start with `prefix` (`_design_docs`' `total_rows`).
    static func countDocuments(_ db: CBLDatabase, prefix: String) throws -> Int {
        let query = db.createAllDocumentsQuery()
        query.startKey = prefix
        query.endKey = prefix + "\u{FFFF}"
        return Int(try query.run().count)
    }

    /// The option checks couch_mrview_util:validate_args makes before any row is read, as
    /// `400 query_parse_error` (parameters of the wrong type fail as they are read).
    func validateRowOptions(_ q: QueryParams, keys: [Any]?) throws {
        // One key is a key range of its own (CouchDB lets the other options stand beside it).
        if let keys, keys.count > 1, q["key"] != nil || q["startkey"] != nil || q["start_key"] != nil
            || q["endkey"] != nil || q["end_key"] != nil {
            throw RESTError.queryParse("`keys` is incompatible with `key`, `start_key` and `end_key`")
        }
        for name in ["descending", "inclusive_end", "include_docs", "conflicts", "update_seq", "group", "reduce", "sorted"] {
            _ = try q.bool(name)
        }
        for name in ["limit", "skip", "group_level"] { _ = try q.int(name) }
        for name in ["key", "startkey", "start_key", "endkey", "end_key"] { _ = try q.json(name) }
    }

    /// A range of document IDs whose ends are in the wrong order for the direction matches
    /// nothing: CouchDB says so rather than answering no rows (IDs collate raw, so the check
    /// is exact here; view keys collate otherwise and are not checked).
    func checkDocumentIDRange(_ q: QueryParams, keys: [Any]?) throws {
        if keys == nil, q["key"] == nil,
           let start = try q.json("startkey") ?? q.json("start_key"),
           let end = try q.json("endkey") ?? q.json("end_key"),
           let s = start as? String, let e = end as? String {
            let descending = try q.bool("descending")
            if descending ? s < e : s > e {
                throw RESTError.queryParse("No rows can match your key range, reverse your start_key and end_key or set descending=\(descending ? "false" : "true")")
            }
        }
    }

    // MARK: _local_docs

    /// `/{db}/_local_docs`: the local documents as `_all_docs` rows (CouchDB 3 answers
    /// `total_rows` and `offset` null here).
    func localDocs(_ db: CBLDatabase, _ request: RESTRequest) throws -> RESTResponse {
        let (_, q, keys) = try rowQueryParameters(request)
        try checkDocumentIDRange(q, keys: keys)
        let includeDocs = try q.bool("include_docs")
        let descending = try q.bool("descending")
        let inclusiveEnd = try q.bool("inclusive_end", default: true)
        let skip = try q.int("skip") ?? 0
        let limit = try q.int("limit")
        let all = try db.allLocalDocuments()
        func row(_ doc: (docID: String, revID: String, json: [UInt8])) -> [String: Any] {
            var out: [String: Any] = ["id": doc.docID, "key": doc.docID, "value": ["rev": doc.revID]]
            if includeDocs {
                var body = (try? JSONText.parseObject(doc.json)) ?? [:]
                body["_id"] = doc.docID
                body["_rev"] = doc.revID
                out["doc"] = body
            }
            return out
        }
        var rows: [Any]
        if let keys {
            var byID: [String: (docID: String, revID: String, json: [UInt8])] = [:]
            for doc in all { byID[doc.docID] = doc }
            rows = (descending ? Array(keys.reversed()) : keys).map { key in
                if let id = key as? String, let doc = byID[id] { return row(doc) }
                return ["key": key, "error": "not_found"] as [String: Any]
            }
        } else {
            var docs = descending ? Array(all.reversed()) : all
            let single = try q.json("key").map { $0 as? String ?? "" }
            let start = try single ?? (q.json("startkey") ?? q.json("start_key")) as? String
            let end = try single ?? (q.json("endkey") ?? q.json("end_key")) as? String
            func before(_ a: String, _ b: String) -> Bool { descending ? a > b : a < b }
            docs = docs.filter { doc in
                if let start, before(doc.docID, start) { return false }
                if let end { return inclusiveEnd ? !before(end, doc.docID) : before(doc.docID, end) }
                return true
            }
            rows = docs.map(row)
        }
        rows = Array(rows.dropFirst(skip))
        if let limit { rows = Array(rows.prefix(limit)) }
        return .json(200, ["total_rows": NSNull(), "offset": NSNull(), "rows": rows])
    }
}
