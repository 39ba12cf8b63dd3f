import CouchbaseLite
import Foundation
import JSONCore

/// The `filter` of a `_changes` request, as parsed (CouchDB's `couch_changes:configure_filter`).
/// Plain values, so waiting feeds can carry it; ``RESTRouter/changesFilterTest(_:_:)`` turns
/// it into a test on revisions where the database work runs.
enum ChangesFilter: Sendable {
    /// `_doc_ids`: applied in the changes query itself (``ChangesOptions/docIDs``).
    case documentIDs
    /// `_design`: design documents only.
    case designDocuments
    /// `_view` with `view=design/view`: documents for which the view's map emits a row.
    case view(String)
    /// `_selector`: documents a Mango selector matches; with `fields`, included documents hold
    /// only those fields (CouchDB's `fields` of the POST body).
    case selector(MangoSelector, fields: MangoFields?)
    /// A filter function `design/filter`, and the request parameters it receives as `req.query`.
    case named(String, parameters: [String: String])
}

extension ChangesFilter {
    /// Whether the filter reads revision bodies (else the feed need not load them).
    var readsDocuments: Bool {
        switch self {
        case .view, .selector: return true
        case .documentIDs, .designDocuments, .named: return false
        }
    }
}

/// Decides whether one revision of a changed document passes a filter; `document` gives the
/// revision's body as CouchDB hands it to filters (`_id`, `_rev`, `_deleted`, stubs).
typealias ChangesRevisionTest = (_ docID: String, _ revID: String, _ document: () throws -> JSONObject) throws -> Bool

extension RESTRouter {
    // MARK: The functions filters refer to by name

    /// The filter function named `design/filter` (or any name given to `setFilterNamed`), nil
    /// when there is none: a filter registered in Swift, else the design document's (JavaScript,
    /// with the registered filter compiler). The single place a named `_changes` filter is resolved.
    func namedChangesFilter(_ db: CBLDatabase, _ name: String) throws -> CBLFilterBlock? {
        try db.filterNamedOrCompiled(name)
    }

    /// The map function of the view `design/view` for `filter=_view`, nil when there is none:
    /// a view registered in Swift (`setMapBlock`), else the design document's (JavaScript, with
    /// the registered view compiler). The single place `_view` filters resolve a map.
    func changesViewMap(_ db: CBLDatabase, _ name: String) throws -> CBLMapBlock? {
        try designView(db, name: name)?.mapBlock
    }

    // MARK: Parsing

    /// Parses `filter=` (and what it needs: `doc_ids`, `view`, the POST body's `selector`),
    /// with CouchDB's errors. Sets `options.docIDs` for `_doc_ids`.
    func parseChangesFilter(_ name: String, _ db: CBLDatabase, _ request: RESTRequest, query q: QueryParams,
                            params: [String: String], body: JSONObject?, bodyDocIDs: [String]?,
                            into options: inout ChangesOptions) throws -> ChangesFilter? {
        switch name {
        case "":
            return nil
        case "_doc_ids":
            if let ids = bodyDocIDs {
                options.docIDs = ids
            } else if let raw = try q.json("doc_ids") {
                guard let list = raw as? [Any], let strings = list as? [String] else {
                    throw RESTError(400, "bad_request", "`doc_ids` filter parameter is not a list of doc ids.")
                }
                options.docIDs = strings
            } else {
                throw RESTError(400, "bad_request", "filter=_doc_ids needs a `doc_ids` list")
            }
            return .documentIDs
        case "_design":
            return .designDocuments
        case "_view":
            guard let view = q["view"], !view.isEmpty else {
                throw RESTError(400, "bad_request", "`view` filter parameter is not provided.")
            }
            let parts = view.split(separator: "/", omittingEmptySubsequences: true)
            guard parts.count == 2 else {
                throw RESTError(400, "bad_request", "`view` must be of the form `designname/viewname`")
            }
            let fullName = parts.joined(separator: "/")
            guard try changesViewMap(db, fullName) != nil else { throw RESTError(404, "not_found", "missing") }
            return .view(fullName)
        case "_selector":
            guard request.method == "POST", let body else {
                throw RESTError(400, "bad_request", "Selector must be specified in POST payload")
            }
            do {
                let selector = try MangoSelector(body["selector"])
                return .selector(selector, fields: try body["fields"].map { try MangoFields($0) })
            } catch let error as MangoError {
                // CouchDB's `_changes` reports selector errors as `bad_request` with Mango's reason.
                throw RESTError(400, "bad_request", error.reason)
            }
        default:
            if name.hasPrefix("_") { throw RESTError(400, "bad_request", "unknown builtin filter name") }
            if try namedChangesFilter(db, name) != nil { return .named(name, parameters: params) }
            if name.split(separator: "/", omittingEmptySubsequences: true).count != 2 {
                throw RESTError(400, "bad_request", "`filter` must be of the form `designname/filtername`")
            }
            throw RESTError(404, "not_found", "missing")
        }
    }

    // MARK: Evaluation

    /// The test a filter applies to each revision; nil when every revision passes (no filter,
    /// or `_doc_ids`, which the changes query applies). Runs on a worker thread.
    func changesFilterTest(_ db: CBLDatabase, _ filter: ChangesFilter?) throws -> ChangesRevisionTest? {
        switch filter {
        case nil, .documentIDs?:
            return nil
        case .designDocuments?:
            return { docID, _, _ in docID.hasPrefix("_design/") }
        case .selector(let selector, _)?:
            return { _, _, document in selector.matches(.object(try document())) }
        case .view(let name)?:
            guard let map = try changesViewMap(db, name) else { throw RESTError(404, "not_found", "missing") }
            return { _, _, document in
                // Passes when the map emits at least one row for the revision (CouchDB's filter_view).
                var emitted = false
                map(try document().foundation) { _, _ in emitted = true }
                return emitted
            }
        case .named(let name, let parameters)?:
            guard let block = try namedChangesFilter(db, name) else { throw RESTError(404, "not_found", "missing") }
            let params: [AnyHashable: Any] = parameters.reduce(into: [:]) { $0[$1.key] = $1.value }
            return { docID, revID, _ in
                guard let revision = db.document(withID: docID)?.revision(withID: revID) else { return false }
                return block(revision, params)
            }
        }
    }
}
