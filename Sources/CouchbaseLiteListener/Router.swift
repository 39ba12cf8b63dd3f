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
        // The first log-in against the authentication database readies it (its `_design/_auth`).
        state.authenticator.readyAuthenticationDatabase = { [weak self] db in
            try? self?.prepareAuthenticationDatabase(db, creating: true)
        }
    }

    var manager: CBLManager { state.manager }

    /// Handles one request through the route table (RouteTable.swift); never throws (errors
    /// become CouchDB error responses). Credentials and read-only mode were decided before, by
    /// ListenerAccessMiddleware (HTTP requests and WebSocket upgrades alike).
    func handle(_ request: RESTRequest) -> RESTOutcome {
        // Every write the request makes is validated as its user (design documents, validate_doc_update).
        let outcome = CBLRequestUser.acting(as: request.access.requestUser) {
            // Attachments it stores are compressed as CouchDB's configuration says (reads store nothing).
            request.method == "GET" || request.method == "HEAD" ? handleAsUser(request)
                : AttachmentCompression.applying(state.attachmentCompression) { handleAsUser(request) }
        }
        return request.query["callback"] == nil ? outcome : jsonp(outcome, for: request)
    }

    private func handleAsUser(_ request: RESTRequest) -> RESTOutcome {
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

    /// POST bodies of JSON endpoints must be JSON (CouchDB answers 415 otherwise).
    func requireJSONBody(_ request: RESTRequest) throws {
        if let type = request.contentType, type != "application/json" {
            throw RESTError.notJSONContentType
        }
    }

    /// The named database, or 404.
    func openDatabase(_ name: String) throws -> CBLDatabase {
        guard CBLManager.isServableDatabaseName(name), manager.databaseExistsNamed(name) else {
            throw RESTError.noDatabase
        }
        let db: CBLDatabase
        do {
            db = try manager.existingDatabaseNamed(name)
        } catch let e as CBLError where e.code == 404 {
            throw RESTError.noDatabase
        }
        if name == state.configuration.authenticationDatabase { try prepareAuthenticationDatabase(db, creating: false) }
        return db
    }

    // MARK: Server endpoints

    func serverRoot(_ request: RESTRequest) throws -> RESTResponse {
        .json(200, [
            "couchdb": "Welcome",
            "CouchbaseLite": CBLVersion(),
            "version": CBLVersion(),
            "uuid": state.serverUUID,
            "vendor": ["name": "Couchbase Lite (Swift, Linux)", "version": CBLVersion()],
        ])
    }

    /// `/_session`: who the request is (`GET`), logging in for a cookie (`POST`, JSON or form),
    /// logging out (`DELETE`), as CouchDB answers them.
    func session(_ request: RESTRequest) throws -> RESTResponse {
        switch request.method {
        case "GET", "HEAD":
            let user = request.access.user
            // `?basic=true` insists on Basic credentials (CouchDB's "force basic login").
            if request.query["basic"] == "true", user.name == nil, state.authenticator.hasAdmins {
                throw RESTError(401, "unauthorized", "Name or password is incorrect.")
            }
            var info: JSONObject = ["authentication_handlers": .array(["cookie", "default"]),
                                    "authentication_db": .string(state.configuration.authenticationDatabase)]
            if let by = user.authenticatedBy { info["authenticated"] = .string(by) }
            let body: JSONObject = ["ok": true, "userCtx": .object(user.json()), "info": .object(info)]
            return .json(200, encoded: try JSON.data(.object(body), sortedKeys: false))
        case "POST":
            var name: String?
            var password: String?
            if request.contentType == "application/json" {
                let body = try JSONText.object(request.body)
                // CouchDB takes `username` for `name` too.
                name = body["name"]?.stringValue ?? body["username"]?.stringValue
                password = body["password"]?.stringValue
            } else {
                let (_, form) = try RESTRequest.parseTarget("/?" + String(decoding: request.body, as: UTF8.self))
                name = form["name"] ?? form["username"]
                password = form["password"]
            }
            guard let name, let password else {
                throw RESTError(401, "unauthorized", "Name or password is incorrect.")
            }
            let (outcome, cookie) = state.authenticator.logIn(name: name, password: password, peer: request.peerAddress)
            guard case .user(let user) = outcome else {
                if case .refused(let error) = outcome { throw error }
                throw ListenerAuthenticator.incorrect
            }
            let body: JSONObject = ["ok": true, "name": .string(name), "roles": .array(user.roles.map(JSONValue.string))]
            return .json(200, encoded: try JSON.data(.object(body), sortedKeys: false), headers: cookie.map { [("Set-Cookie", $0)] } ?? [])
        case "DELETE":
            return .json(200, ["ok": true], headers: [("Set-Cookie", ListenerAuthenticator.endedSessionCookie)])
        default:
            throw RESTError.methodNotAllowed("GET,HEAD,POST,DELETE")
        }
    }

    static func illegalNameReason(_ name: String) -> String {
        "Name: '\(name)'. Only lowercase characters (a-z), digits (0-9), and any of the characters _, $, (, ), +, -, and / are allowed. Must begin with a letter."
    }
}
