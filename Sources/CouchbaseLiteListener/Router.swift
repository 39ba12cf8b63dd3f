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

    /// Handles one request through the route table (RouteTable.swift); never throws (errors
    /// become CouchDB error responses). Credentials and read-only mode were decided before, by
    /// ListenerAccessMiddleware (HTTP requests and WebSocket upgrades alike).
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

    func serverRoot(_ request: RESTRequest) throws -> RESTResponse {
        .json(200, [
            "couchdb": "Welcome",
            "CouchbaseLite": CBLVersion(),
            "version": CBLVersion(),
            "uuid": state.serverUUID,
            "vendor": ["name": "Couchbase Lite (Swift, Linux)", "version": CBLVersion()],
        ])
    }

    func session(_ request: RESTRequest) throws -> RESTResponse {
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
