import CouchbaseLite
import Foundation

/// Every path the listener answers, in one table, in the order CouchDB resolves them; the first
/// row whose pattern matches the request's path answers it.
///
/// A pattern is matched against the parsed path segments (each percent-decoded on its own), after
/// ``RESTRouter/resolvedPath(_:)`` made a design or local document's ID one segment, whether the
/// client sent `_design/x` or `_design%2Fx`. Its parts:
///
/// - `name`: that segment exactly.
/// - `{db}`: a database, opened before anything else is looked at (`404` when there is none).
///   `{dbname}`: a database name the handler opens (or creates). Neither starts with `_`.
/// - `{docid}`: a document ID: a segment not starting with `_`, or a design document's
///   `_design/…`. `_design/{ddoc}`: a design document (`{ddoc}` its name); `_local/{docid}`: a
///   local document.
/// - `{_endpoint}`: a segment starting with `_` (a document's has matched a row above).
/// - `{name}` (`{node}`, `{view}`, …): any one segment.
/// - `{attachment+}`: one or more segments, joined with `/`; `{rest*}` / `{rest+}`: zero / one
///   or more segments, ignored.
///
/// The methods come first: `HEAD` is allowed wherever `GET` is, `*` is any method (the handler
/// answers), and another method is `405` with these in `Allow`, once the database is open.
extension RESTRouter {
    static let routes: [Route] = [
        // Server
        Route("GET", "/") { r, m in .response(try r.serverRoot(m.request)) },
        Route("GET", "/_all_dbs") { r, m in .response(try r.allDatabases(m.request)) },
        Route("GET", "/_uuids") { r, m in .response(try r.uuids(m.request)) },
        Route("GET", "/_active_tasks") { r, _ in .response(.json(200, r.activeTasks())) },
        Route("GET", "/_membership") { r, _ in .response(r.membership()) },
        Route("GET", "/_node/{node}/_config") { r, m in .response(try r.configuration(m.request)) },
        Route("GET", "/_node/{node}/_config/{section}") { r, m in .response(try r.configuration(m.request)) },
        Route("GET,PUT,DELETE", "/_node/{node}/_config/{section}/{key}") { r, m in .response(try r.configuration(m.request)) },
        Route("GET", "/_config") { r, m in .response(try r.configuration(m.request)) },
        Route("GET", "/_config/{section}") { r, m in .response(try r.configuration(m.request)) },
        Route("GET,PUT,DELETE", "/_config/{section}/{key}") { r, m in .response(try r.configuration(m.request)) },
        Route("GET,HEAD,POST,DELETE", "/_session") { r, m in .response(try r.session(m.request)) },
        Route("POST", "/_replicate") { r, m in .response(try r.replicate(m.request)) },
        Route("*", "/_up") { _, _ in .response(.json(200, ["status": "ok"])) },
        // `_node/_local/_versions`, or this node's name, which CouchDB 3 accepts too.
        Route("GET", "/_node/{node}/_versions") { r, m in .response(try r.nodeVersions(m.request)) },
        Route("*", "/{_endpoint}") { _, m in
            throw RESTError(400, "illegal_database_name", RESTRouter.illegalNameReason(m.endpoint))
        },
        Route("*", "/{_endpoint}/{rest+}") { _, _ in throw RESTError.missing },

        // Databases
        Route("GET,HEAD,PUT,POST,DELETE", "/{dbname}") { r, m in .response(try r.databaseRoot(m.dbName, m.request)) },
        Route("GET,POST", "/{db}/_all_docs") { r, m in .response(try r.allDocs(m.db, m.request)) },
        Route("GET,POST", "/{db}/_changes") { r, m in try r.changes(m.db, m.request) },
        Route("POST", "/{db}/_bulk_docs") { r, m in .response(try r.bulkDocs(m.db, m.request)) },
        Route("POST", "/{db}/_bulk_get") { r, m in try r.bulkGet(m.db, m.request) },
        Route("POST", "/{db}/_revs_diff") { r, m in .response(try r.revsDiff(m.db, m.request)) },
        Route("POST", "/{db}/_purge") { r, m in .response(try r.purge(m.db, m.request)) },
        Route("POST", "/{db}/_compact") { r, m in .response(try r.compact(m.db, m.request)) },
        Route("POST", "/{db}/_compact/{ddoc}") { r, m in
            .response(try r.compactDesignIndexes(m.db, designDoc: m.ddoc, m.request))
        },
        // CouchDB 2 dropped temporary views; its answer says so.
        Route("*", "/{db}/_temp_view/{rest*}") { _, _ in
            throw RESTError(410, "gone", "Temporary views are not supported in CouchDB")
        },
        Route("POST", "/{db}/_ensure_full_commit/{rest*}") { r, _ in .response(r.ensureFullCommit()) },
        Route("GET,POST", "/{db}/_design_docs") { r, m in .response(try r.allDocs(m.db, m.request, prefix: "_design/")) },
        Route("GET,POST", "/{db}/_local_docs") { r, m in .response(try r.localDocs(m.db, m.request)) },
        Route("PUT,GET", "/{db}/_revs_limit") { r, m in .response(try r.revsLimit(m.db, m.request)) },
        Route("GET,PUT", "/{db}/_purged_infos_limit") { r, m in .response(try r.purgedInfosLimit(m.db, m.request)) },
        Route("GET,PUT", "/{db}/_security") { r, m in .response(try r.security(m.db, m.request)) },

        // Documents
        Route("GET,HEAD,PUT,DELETE", "/{db}/_local/{docid}") { r, m in
            .response(try r.localDocument(m.db, docID: m.docID, m.request))
        },
        Route("GET,POST", "/{db}/_design/{ddoc}/_view/{view}") { r, m in
            .response(try r.view(m.db, designDoc: m.ddoc, view: m.view, m.request))
        },
        Route("*", "/{db}/_design/{ddoc}/_view/{rest*}") { _, _ in throw RESTError.missing },
        Route("GET", "/{db}/_design/{ddoc}/_info") { r, m in .response(try r.designInfo(m.db, designDoc: m.ddoc, m.request)) },
        Route("*", "/{db}/_design/{ddoc}/{_endpoint}/{rest*}") { _, m in
            throw RESTError(501, "not_implemented", "Design document handler '\(m.endpoint)' is not supported")
        },
        Route("DELETE,GET,HEAD,POST,PUT,COPY", "/{db}/{docid}") { r, m in try r.document(m.db, docID: m.docID, m.request) },
        // Methods (GET, HEAD, PUT, DELETE) are the handler's: it checks the ID and revision first.
        Route("*", "/{db}/{docid}/{attachment+}") { r, m in
            .response(try r.attachment(m.db, docID: m.docID, name: m.attachment, m.request))
        },

        // Any other `/{db}/_name…`: an endpoint above with other segments finds nothing; a write
        // naming a reserved ID (`PUT /db/_foo`, `PUT /db/_foo/att`) is CouchDB's 400, reading
        // one finds nothing.
        Route("*", "/{db}/{_endpoint}/{rest*}") { _, m in
            if RESTRouter.databaseEndpoints.contains(m.endpoint) { throw RESTError.missing }
            if m.path.count == 2 || !(m.request.method == "GET" || m.request.method == "HEAD") { throw RESTError.illegalDocID }
            throw RESTError.missing
        },
    ]

    /// The `_name` endpoints of a database the table names (`_all_docs`, `_changes`, …).
    static let databaseEndpoints: Set<String> = Set(routes.compactMap { route -> String? in
        guard route.pattern.parts.count >= 2, case .database(opened: true) = route.pattern.parts[0],
              case .literal(let name) = route.pattern.parts[1] else { return nil }
        return name
    })

    /// Answers a request through the table: the first matching row's database opened, its
    /// methods checked, then its handler.
    func route(_ request: RESTRequest) throws -> RESTOutcome {
        let path = try Self.resolvedPath(request)
        for route in Self.routes {
            guard let bound = route.pattern.match(path) else { continue }
            var match = RouteMatch(request: request, path: path, bound: bound)
            if route.pattern.opensDatabase { match.database = try openDatabase(bound.dbName) }
            if let methods = route.methods, !methods.contains(request.method),
               !(request.method == "HEAD" && methods.contains("GET")) {
                throw RESTError.methodNotAllowed(route.allow)
            }
            return try route.handler(self, match)
        }
        // Unreachable: every path matches one of the last rows of each group.
        throw RESTError.missing
    }

    /// The path as the table reads it: a design or local document's ID as one segment
    /// (`/db/_design/x` → `db`, `_design/x`). What cannot name a document is refused here,
    /// before the database is opened: a `_local` path without an ID or with more segments, a
    /// `_design` without a name, an ID that is not UTF-8.
    static func resolvedPath(_ request: RESTRequest) throws -> [String] {
        let s = request.segments
        guard s.count >= 2, !s[0].hasPrefix("_") || ListenerState.isSystemDatabase(s[0]) else { return s }
        let second = s[1]
        let twoSegmentID = second == "_design" || second == "_local"
        guard !second.hasPrefix("_") || twoSegmentID || second.hasPrefix("_design/") || second.hasPrefix("_local/") else {
            return s
        }
        try checkLocalDocumentPath(s)
        var path = s
        if twoSegmentID {
            guard s.count > 2, !s[2].isEmpty else { throw RESTError.illegalDocID }
            path.replaceSubrange(1...2, with: CollectionOfOne(second + "/" + s[2]))
        }
        if request.nonUTF8Segments.contains(1) || (twoSegmentID && request.nonUTF8Segments.contains(2)) {
            throw RESTError(400, "illegal_docid", "Document id must be valid UTF-8")
        }
        return path
    }
}

/// One row of ``RESTRouter/routes``.
struct Route: Sendable {
    /// The methods answered (nil: any, the handler decides).
    let methods: [String]?
    /// `Allow` for a `405`: the methods as the row names them.
    let allow: String
    let pattern: RoutePattern
    let handler: @Sendable (RESTRouter, RouteMatch) throws -> RESTOutcome

    init(_ methods: String, _ pattern: String, _ handler: @escaping @Sendable (RESTRouter, RouteMatch) throws -> RESTOutcome) {
        self.methods = methods == "*" ? nil : methods.split(separator: ",").map(String.init)
        self.allow = methods
        self.pattern = RoutePattern(pattern)
        self.handler = handler
    }
}

/// What a row's pattern bound in a path.
struct RouteBindings: Sendable {
    /// `{db}`, `{dbname}`.
    var dbName = ""
    /// `{docid}`, or the whole ID of `_design/{ddoc}` / `_local/{docid}` (`_design/x`).
    var docID = ""
    /// `{ddoc}`: a design document's name.
    var ddoc = ""
    var view = ""
    /// `{attachment+}`, its segments joined with `/`.
    var attachment = ""
    /// `{_endpoint}`.
    var endpoint = ""
}

/// A request matched by a row: what its pattern bound, and the database it opened.
@dynamicMemberLookup
struct RouteMatch: Sendable {
    let request: RESTRequest
    /// The resolved path (``RESTRouter/resolvedPath(_:)``).
    let path: [String]
    let bound: RouteBindings
    /// The database `{db}` names, opened by ``RESTRouter/route(_:)``.
    var database: CBLDatabase?

    subscript(dynamicMember binding: KeyPath<RouteBindings, String>) -> String { bound[keyPath: binding] }

    /// The database of a `{db}` row.
    var db: CBLDatabase {
        guard let database else { preconditionFailure("a route without {db} asked for its database") }
        return database
    }
}

/// A row's path pattern (``RESTRouter/routes`` describes the syntax), split into parts once.
struct RoutePattern: Sendable {
    enum Slot: Sendable { case db, docID, ddoc, view, attachment, endpoint, none }

    enum Part: Sendable {
        case literal(String)
        /// `{db}` (opened) or `{dbname}`.
        case database(opened: Bool)
        /// `{docid}`.
        case document
        /// `_design/{ddoc}`, `_local/{docid}`: one resolved segment starting with the prefix.
        case prefixedDocument(prefix: String, nameSlot: Slot)
        /// `{_endpoint}`.
        case reserved
        /// `{view}`, `{node}`, `{ddoc}`.
        case segment(Slot)
        /// `{attachment+}`, `{rest*}`, `{rest+}`: the rest of the path (the last part).
        case remainder(minimum: Int, Slot)
    }

    let parts: [Part]
    /// True when the pattern has `{db}`.
    let opensDatabase: Bool
    private let fixedCount: Int
    private let hasRemainder: Bool

    init(_ text: String) {
        var parts: [Part] = []
        let pieces = text.split(separator: "/").map(String.init)
        var i = 0
        while i < pieces.count {
            let piece = pieces[i]
            if (piece == "_design" || piece == "_local"), i + 1 < pieces.count, pieces[i + 1].hasPrefix("{") {
                parts.append(.prefixedDocument(prefix: piece + "/", nameSlot: piece == "_design" ? .ddoc : .none))
                i += 2
                continue
            }
            switch piece {
            case "{db}": parts.append(.database(opened: true))
            case "{dbname}": parts.append(.database(opened: false))
            case "{docid}": parts.append(.document)
            case "{_endpoint}": parts.append(.reserved)
            case "{view}": parts.append(.segment(.view))
            case "{ddoc}": parts.append(.segment(.ddoc))
            case "{node}", "{section}", "{key}": parts.append(.segment(.none))
            case "{attachment+}": parts.append(.remainder(minimum: 1, .attachment))
            case "{rest+}": parts.append(.remainder(minimum: 1, .none))
            case "{rest*}": parts.append(.remainder(minimum: 0, .none))
            default:
                precondition(!piece.hasPrefix("{"), "unknown route pattern part \(piece) in \(text)")
                parts.append(.literal(piece))
            }
            i += 1
        }
        precondition(parts.dropLast().allSatisfy { if case .remainder = $0 { false } else { true } },
                     "a remainder must end the pattern \(text)")
        self.parts = parts
        opensDatabase = parts.contains { if case .database(opened: true) = $0 { true } else { false } }
        hasRemainder = parts.last.map { if case .remainder = $0 { true } else { false } } ?? false
        fixedCount = hasRemainder ? parts.count - 1 : parts.count
    }

    /// The bindings when `path` (resolved) matches, else nil. Allocates nothing unless it
    /// matches an attachment name or a design document's name.
    func match(_ path: [String]) -> RouteBindings? {
        guard hasRemainder ? path.count >= fixedCount : path.count == fixedCount else { return nil }
        var match = RouteBindings()
        for (i, part) in parts.enumerated() {
            if case .remainder(let minimum, let slot) = part {
                guard path.count - i >= minimum else { return nil }
                if slot == .attachment { match.attachment = path[i...].joined(separator: "/") }
                return match
            }
            let segment = path[i]
            switch part {
            case .literal(let name):
                guard segment == name else { return nil }
            case .database:
                guard !segment.hasPrefix("_") || ListenerState.isSystemDatabase(segment) else { return nil }
                match.dbName = segment
            case .document:
                guard !segment.hasPrefix("_") || segment.hasPrefix("_design/") else { return nil }
                match.docID = segment
            case .prefixedDocument(let prefix, let slot):
                guard segment.hasPrefix(prefix) else { return nil }
                match.docID = segment
                if slot == .ddoc { match.ddoc = String(segment.dropFirst(prefix.count)) }
            case .reserved:
                guard segment.hasPrefix("_"), i > 0 || !ListenerState.isSystemDatabase(segment) else { return nil }
                match.endpoint = segment
            case .segment(let slot):
                switch slot {
                case .view: match.view = segment
                case .ddoc: match.ddoc = segment
                default: break
                }
            case .remainder:
                break
            }
        }
        return match
    }
}
