import CouchbaseLite
import Foundation
import JSONCore

/// What a handler produced: a finished response, or a changes feed that must wait for
/// database changes (longpoll / continuous), which the async layer runs.
enum RESTOutcome: Sendable {
    case response(RESTResponse)
    case changesFeed(ChangesFeedRequest)
}

/// Dispatches REST requests to handlers. Synchronous: it runs on worker threads because every
/// database call may block (SQLite I/O, the database lock).
final class RESTRouter: Sendable {
    let state: ListenerState

    init(state: ListenerState) {
        self.state = state
    }

    var manager: CBLManager { state.manager }

    /// Handles one request; never throws (errors become CouchDB error responses). Credentials
    /// and read-only mode were decided before, by ListenerAccessMiddleware (HTTP requests and
    /// WebSocket upgrades alike).
    func handle(_ request: RESTRequest) -> RESTOutcome {
        do {
            let outcome = try route(request)
            // HEAD gets the GET answer's headers (ListenerHeadMiddleware drops the body): a
            // streamed body is released unread, its length (when known) kept.
            if request.method == "HEAD", case .response(var response) = outcome, let stream = response.stream {
                stream.close()
                response.stream = nil
                if let length = stream.length { response.setHeader("Content-Length", String(length)) }
                return .response(response)
            }
            return outcome
        } catch {
            return .response(.error(RESTError.from(error)))
        }
    }

    // MARK: Routing

    private func route(_ request: RESTRequest) throws -> RESTOutcome {
        let s = request.segments
        guard let first = s.first else { return .response(try serverRoot(request)) }
        if first.hasPrefix("_") {
            return .response(try serverEndpoint(first, request))
        }
        let dbName = first
        if s.count == 1 { return .response(try databaseRoot(dbName, request)) }

        let second = s[1]
        // Database endpoints.
        if second.hasPrefix("_") && second != "_design" && second != "_local"
            && !second.hasPrefix("_design/") && !second.hasPrefix("_local/") {
            let db = try openDatabase(dbName)
            switch second {
            case "_all_docs":
                guard s.count == 2 else { throw RESTError.missing }
                return .response(try allDocs(db, request))
            case "_changes":
                guard s.count == 2 else { throw RESTError.missing }
                return try changes(db, request)
            case "_bulk_docs":
                guard s.count == 2 else { throw RESTError.missing }
                return .response(try bulkDocs(db, request))
            case "_bulk_get":
                guard s.count == 2 else { throw RESTError.missing }
                return try bulkGet(db, request)
            case "_revs_diff":
                guard s.count == 2 else { throw RESTError.missing }
                return .response(try revsDiff(db, request))
            case "_purge":
                guard s.count == 2 else { throw RESTError.missing }
                return .response(try purge(db, request))
            case "_compact":
                if s.count == 3 { return .response(try compactDesignIndexes(db, designDoc: s[2], request)) }
                guard s.count == 2 else { throw RESTError.missing }
                return .response(try compact(db, request))
            case "_temp_view":
                // CouchDB 2 dropped temporary views; its answer says so.
                throw RESTError(410, "gone", "Temporary views are not supported in CouchDB")
            case "_ensure_full_commit":
                try requireMethod(request, "POST")
                return .response(ensureFullCommit())
            case "_design_docs":
                guard s.count == 2 else { throw RESTError.missing }
                return .response(try allDocs(db, request, prefix: "_design/"))
            case "_local_docs":
                guard s.count == 2 else { throw RESTError.missing }
                return .response(try localDocs(db, request))
            case "_revs_limit":
                guard s.count == 2 else { throw RESTError.missing }
                return .response(try revsLimit(db, request))
            default:
                // A write naming a reserved ID (`PUT /db/_foo`, `PUT /db/_foo/att`) is CouchDB's
                // 400; reading one finds nothing.
                if s.count == 2 || !["GET", "HEAD"].contains(request.method) { throw RESTError.illegalDocID }
                throw RESTError.missing
            }
        }

        // Documents: `_design/x` and `_local/x` take two segments (or one containing `/`).
        var docID = second
        var rest = Array(s.dropFirst(2))
        try checkLocalDocumentPath(s)
        if (second == "_design" || second == "_local") {
            guard let name = rest.first, !name.isEmpty else { throw RESTError.illegalDocID }
            docID = second + "/" + name
            rest.removeFirst()
        }
        if request.nonUTF8Segments.contains(1) || (docID != second && request.nonUTF8Segments.contains(2)) {
            throw RESTError(400, "illegal_docid", "Document id must be valid UTF-8")
        }
        let db = try openDatabase(dbName)
        if docID.hasPrefix("_local/") {
            guard rest.isEmpty else { throw RESTError(400, "bad_request", "Local documents have no attachments") }
            return .response(try localDocument(db, docID: docID, request))
        }
        if docID.hasPrefix("_design/"), rest.first == "_view" {
            guard rest.count == 2 else { throw RESTError.missing }
            return .response(try view(db, designDoc: String(docID.dropFirst(8)), view: rest[1], request))
        }
        if docID.hasPrefix("_design/"), let op = rest.first, op.hasPrefix("_") {
            if op == "_info", rest.count == 1 { return .response(try designInfo(db, designDoc: String(docID.dropFirst(8)), request)) }
            throw RESTError(501, "not_implemented", "Design document handler '\(op)' is not supported")
        }
        if rest.isEmpty { return try document(db, docID: docID, request) }
        return .response(try attachment(db, docID: docID, name: rest.joined(separator: "/"), request))
    }

    func requireMethod(_ request: RESTRequest, _ allowed: String...) throws {
        if !allowed.contains(request.method) && !(request.method == "HEAD" && allowed.contains("GET")) {
            throw RESTError.methodNotAllowed(allowed.joined(separator: ","))
        }
    }

    /// POST bodies of JSON endpoints must be JSON (CouchDB answers 415 otherwise).
    func requireJSONBody(_ request: RESTRequest) throws {
        if let type = request.contentType, type != "application/json" {
            throw RESTError.notJSONContentType
        }
    }

    /// The named database, or 404.
    func openDatabase(_ name: String) throws -> CBLDatabase {
        guard CBLManager.isValidDatabaseName(name), manager.databaseExistsNamed(name) else {
            throw RESTError.noDatabase
        }
        do {
            return try manager.existingDatabaseNamed(name)
        } catch let e as CBLError where e.code == 404 {
            throw RESTError.noDatabase
        }
    }

    // MARK: Server endpoints

    private func serverRoot(_ request: RESTRequest) throws -> RESTResponse {
        try requireMethod(request, "GET")
        return .json(200, [
            "couchdb": "Welcome",
            "CouchbaseLite": CBLVersion(),
            "version": CBLVersion(),
            "uuid": state.serverUUID,
            "vendor": ["name": "Couchbase Lite (Swift, Linux)", "version": CBLVersion()],
        ])
    }

    private func serverEndpoint(_ name: String, _ request: RESTRequest) throws -> RESTResponse {
        // `_node/_local/_versions` (or this node's name, which CouchDB 3 accepts too).
        if name == "_node", request.segments.count == 3, request.segments[2] == "_versions" {
            return try nodeVersions(request)
        }
        guard request.segments.count == 1 else { throw RESTError(404, "not_found", "missing") }
        switch name {
        case "_all_dbs":
            return try allDatabases(request)
        case "_uuids":
            return try uuids(request)
        case "_active_tasks":
            try requireMethod(request, "GET")
            return .json(200, activeTasks())
        case "_session":
            return try session(request)
        case "_replicate":
            return try replicate(request)
        case "_up":
            return .json(200, ["status": "ok"])
        default:
            throw RESTError(400, "illegal_database_name", Self.illegalNameReason(name))
        }
    }

    private func session(_ request: RESTRequest) throws -> RESTResponse {
        switch request.method {
        case "GET", "HEAD":
            let roles: [String] = (request.user != nil || state.passwords == nil) ? ["_admin"] : []
            return .json(200, [
                "ok": true,
                "userCtx": ["name": request.user.map { $0 as Any } ?? NSNull(), "roles": roles],
                "info": ["authentication_handlers": ["cookie", "default"],
                         "authenticated": request.header("authorization") != nil ? "default" : "cookie"],
            ])
        case "POST":
            var name: String?
            var password: String?
            if request.contentType == "application/json" {
                let body = try JSONText.parseObject(request.body)
                name = body["name"] as? String
                password = body["password"] as? String
            } else {
                let (_, form) = try RESTRequest.parseTarget("/?" + String(decoding: request.body, as: UTF8.self))
                name = form["name"]
                password = form["password"]
            }
            guard let name, let password, let token = state.login(name: name, password: password) else {
                throw RESTError(401, "unauthorized", "Name or password is incorrect.")
            }
            return .json(200, ["ok": true, "name": name, "roles": ["_admin"]],
                         headers: [("Set-Cookie", "AuthSession=\(token); Version=1; Path=/; HttpOnly")])
        case "DELETE":
            state.logout(request)
            return .json(200, ["ok": true],
                         headers: [("Set-Cookie", "AuthSession=; Version=1; Path=/; HttpOnly; Max-Age=0")])
        default:
            throw RESTError.methodNotAllowed("GET,HEAD,POST,DELETE")
        }
    }

    static func illegalNameReason(_ name: String) -> String {
        "Name: '\(name)'. Only lowercase characters (a-z), digits (0-9), and any of the characters _, $, (, ), +, -, and / are allowed. Must begin with a letter."
    }
}
