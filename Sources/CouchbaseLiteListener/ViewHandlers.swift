import CouchbaseLite
import Foundation
import JSONCore

/// `GET|POST /{db}/_design/{ddoc}/_view/{view}` over views registered in Swift as `ddoc/view`, or
/// defined in the design document and compiled with the registered view compiler.
extension RESTRouter {
    func view(_ db: CBLDatabase, designDoc: String, view viewName: String, _ request: RESTRequest) throws -> RESTResponse {
        let fullName = "\(designDoc)/\(viewName)"
        guard let view = try designView(db, name: fullName) else {
            throw try missingViewError(db, designDoc: designDoc, view: viewName)
        }
        let (params, q, keys) = try rowQueryParameters(request, keysMustBeArray: "`keys` member must be an array.")
        let hasReduce = view.reduceBlock != nil
        let group = params["group"] != nil ? try q.bool("group") : nil
        let groupLevel = try q.int("group_level")
        let reduceParam = params["reduce"] != nil ? try q.bool("reduce") : nil
        let includeDocs = try q.bool("include_docs")
        let conflicts = try q.bool("conflicts")
        let withAttachments = try q.bool("attachments")
        let encodingInfo = try q.bool("att_encoding_info")
        let reducing = hasReduce && reduceParam != false
        // The checks of CouchDB's couch_mrview_util:validate_args, in its order.
        if !reducing {
            if group == true || groupLevel != nil { throw RESTError.queryParse("Invalid use of grouping on a map view.") }
            if reduceParam == true { throw RESTError.queryParse("Reduce is invalid for map-only views.") }
        } else {
            if group == false, let level = groupLevel, level > 0 {
                throw RESTError.queryParse("Can't specify group=false and group_level>0 at the same time")
            }
            if let keys, keys.count > 1, group != true, groupLevel == nil {
                throw RESTError.queryParse("Multi-key fetches for reduce views must use `group=true`")
            }
            if includeDocs { throw RESTError.queryParse("`include_docs` is invalid for reduce") }
            if conflicts { throw RESTError.queryParse("`conflicts` is invalid for reduce views.") }
        }
        if keys == nil, q["key"] == nil, let start = try q.viewKey("startkey") ?? q.viewKey("start_key"),
           let end = try q.viewKey("endkey") ?? q.viewKey("end_key") {
            let descending = try q.bool("descending")
            if view.keyRangeIsReversed(start: start, end: end, descending: descending) {
                throw RESTError.queryParse("No rows can match your key range, reverse your start_key and end_key or set descending=\(descending ? "false" : "true")")
            }
        }

        let query = view.createQuery()
        query.mapOnly = !reducing
        if reducing {
            if group == true { query.groupLevel = 9999 } else if let level = groupLevel { query.groupLevel = UInt(level) }
        }
        query.prefetch = includeDocs
        let skip = try applyRowOptions(q, keys: keys, to: query)
        if let level = try q.int("prefix_match_level") { query.prefixMatchLevel = UInt(level) }
        query.startKeyDocID = q["startkey_docid"] ?? q["start_key_doc_id"]
        query.endKeyDocID = q["endkey_docid"] ?? q["end_key_doc_id"]
        switch q["stale"] {
        case nil, "false": query.indexUpdateMode = .before
        case "ok": query.indexUpdateMode = .never
        case "update_after": query.indexUpdateMode = .after
        case _?: throw RESTError.queryParse("Invalid value for `stale`.")
        }
        if let update = q["update"] {
            switch update {
            case "true": query.indexUpdateMode = .before
            case "false": query.indexUpdateMode = .never
            case "lazy": query.indexUpdateMode = .after
            default: throw RESTError.queryParse("Invalid value for `update`.")
            }
        }

        query.countsOffset = !reducing
        let result = try query.run()
        var meta: [(String, Any)] = []
        if !reducing {
            meta.append(("total_rows", view.indexedRowCount))
            meta.append(("offset", result.offset ?? skip))
        }
        if try q.bool("update_seq") { meta.append(("update_seq", state.sequenceValue(Int64(result.sequenceNumber)))) }
        // Rows are turned into JSON as the client reads them (RowListing).
        return RowListing.response(meta: meta) {
            guard let row = result.nextRow() else { return nil }
            if let failure = row.reduceError {
                return ["key": JSONFragment(row.keyJSON), "error": RESTError.from(failure).error, "reason": failure.message]
            }
            // Keys and values as the index holds them: objects keep their emitted member order.
            var out: [String: Any] = ["key": JSONFragment(row.keyJSON),
                                      "value": row.valueJSON.map(JSONFragment.init) ?? row.value ?? NSNull()]
            if let id = row.sourceDocumentID { out["id"] = id }
            if includeDocs {
                out["doc"] = Self.rowDocument(db, row, conflicts: conflicts)
                    .map { Self.includedDocument(db, $0, attachments: withAttachments, encodingInfo: encodingInfo) } ?? NSNull()
            }
            return out
        }
    }

    /// The document of a row for `include_docs` (the emitting revision, or the linked one), with
    /// its `_conflicts` when `conflicts=true` (attachments: `includedDocument`).
    static func rowDocument(_ db: CBLDatabase, _ row: CBLQueryRow, conflicts: Bool) -> [String: Any]? {
        guard let doc = row.documentProperties else { return nil }
        guard conflicts, let id = doc["_id"] as? String, let rev = doc["_rev"] as? String,
              let revision = try? db.syncRevision(docID: id, revID: rev) else { return doc }
        var options = SyncBodyOptions()
        options.conflicts = true
        return (try? db.syncDocumentBody(revision, options)) ?? doc
    }

    /// The parameters of an `_all_docs` or view request: the query string merged with a POST
    /// body's members, and `keys` from the body or the query string. `keysMustBeArray`: the
    /// reason of the 400 for a body `keys` that is not an array (CouchDB words it differently for
    /// `_all_docs` and views).
    func rowQueryParameters(_ request: RESTRequest, keysMustBeArray: String = "`keys` body member must be an array.")
        throws -> (params: [String: String], q: QueryParams, keys: [Any]?) {
        var params = request.query
        var keys: [Any]?
        if request.method == "POST" {
            try requireJSONBody(request)
            let body = request.body.isEmpty ? JSONObject() : try JSONText.object(request.body)
            if let k = body["keys"] {
                guard case .array(let array) = k else { throw RESTError(400, "bad_request", keysMustBeArray) }
                keys = array.map(QueryParams.viewKey)
            }
            mergeBodyParameters(body, into: &params, except: "keys")
        }
        let q = QueryParams(values: params)
        if keys == nil, let raw = params["keys"] {
            guard let k = try? JSONText.value(Array(raw.utf8)) else { throw RESTError(400, "bad_request", "invalid UTF-8 JSON") }
            guard case .array(let array) = k else { throw RESTError.queryParse("`keys` must be an array of strings.") }
            keys = array.map(QueryParams.viewKey)
        }
        try validateRowOptions(q, keys: keys)
        return (params, q, keys)
    }

    /// Applies the row options `_all_docs` and views share (descending, inclusive_end, limit,
    /// skip, and keys / key / startkey…endkey). Returns `skip`.
    func applyRowOptions(_ q: QueryParams, keys: [Any]?, to query: CBLQuery) throws -> Int {
        query.descending = try q.bool("descending")
        query.inclusiveEnd = try q.bool("inclusive_end", default: true)
        if let limit = try q.int("limit") { query.limit = UInt(limit) }
        let skip = try q.int("skip") ?? 0
        query.skip = UInt(skip)
        if let keys {
            query.keys = keys
        } else if let key = try q.viewKey("key") {
            query.startKey = key
            query.endKey = key
        } else {
            query.startKey = try q.viewKey("startkey") ?? q.viewKey("start_key")
            query.endKey = try q.viewKey("endkey") ?? q.viewKey("end_key")
        }
        return skip
    }

    /// The view `ddoc/view`: one registered in Swift, else the design document's, compiled with
    /// the registered view compiler (again when the design document's revision changed); nil when
    /// there is none, or it is JavaScript and no compiler is registered.
    func designView(_ db: CBLDatabase, name: String) throws -> CBLView? {
        if let view = db.existingViewNamed(name), view.mapBlock != nil, !db.isDesignDocumentView(name) { return view }
        do {
            return try db.compileDesignDocumentView(named: name)
        } catch let error as CBLError where error.code == 501 {
            return nil   // no compiler: `missingViewError` says why
        }
    }

    /// Why a view cannot be queried: no design document, a JavaScript view we cannot run, or
    /// no such view.
    private func missingViewError(_ db: CBLDatabase, designDoc: String, view: String) throws -> RESTError {
        guard let rev = try db.syncWinningRevision(docID: "_design/" + designDoc), !rev.deleted,
              let props = rev.properties else {
            return RESTError(404, "not_found", "missing")
        }
        if let views = props["views"] as? [String: Any], let def = views[view] as? [String: Any], def["map"] != nil {
            let language = props["language"] as? String ?? "javascript"
            return RESTError(501, "not_implemented",
                             "\(language == "javascript" ? "JavaScript" : language) views are not enabled on this listener (no view compiler is registered: CBLView.setCompiler, or cbl serve without --no-javascript); register view '\(designDoc)/\(view)' in Swift")
        }
        return RESTError(404, "not_found", "missing_named_view")
    }
}
