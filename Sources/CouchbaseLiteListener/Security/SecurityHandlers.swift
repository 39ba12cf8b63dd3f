import CouchbaseLite
import Foundation
import JSONCore

/// `/{db}/_security`, the authentication database's own rules, `_membership` and the
/// configuration API.
extension RESTRouter {
    // MARK: _security

    /// `GET /{db}/_security` (members) and `PUT` (database admins, checked before): the
    /// database's admins and members, stored in the 1.x file's `info` table.
    func security(_ db: CBLDatabase, _ request: RESTRequest) throws -> RESTResponse {
        switch request.method {
        case "GET", "HEAD":
            let security = state.loadSecurity(ofDatabase: db.name) ?? .adminOnly
            return .json(200, encoded: try JSON.data(security.json, sortedKeys: false))
        case "PUT":
            try requireJSONBody(request)
            let body = try JSONText.value(request.body)
            let security = try SecurityObject.validated(body)
            try state.setSecurity(security, of: db)
            return .json(200, ["ok": true])
        default:
            throw RESTError.methodNotAllowed("GET,PUT")
        }
    }

    // MARK: The authentication database

    /// Readies the authentication database (`_users`): its `_design/_auth`, and the rules that
    /// document's `validate_doc_update` states, run in Swift whatever the JavaScript setting, as
    /// soon as the document exists. CouchDB's authentication cache makes the document once it
    /// watches the database; here `creating` makes it: when the database is created, on the first
    /// log-in against it, and when a client reads it.
    func prepareAuthenticationDatabase(_ db: CBLDatabase, creating: Bool) throws {
        if !state.isPrepared(db) {
            if db.existingDocument(withID: "_design/_auth") == nil {
                guard creating else { return }
                try CBLRequestUser.acting(as: nil) {
                    _ = try db.syncPutRevision(docID: "_design/_auth", prevRevID: nil,
                                               properties: ["language": "javascript",
                                                            "validate_doc_update": UsersDatabaseRules.designDocumentSource],
                                               deleting: false, allowConflict: false)
                }
            }
            guard state.markPrepared(db) else { return }
            db.setBuiltInValidation({ newDoc, oldDoc, userCtx, secObj in
                try UsersDatabaseRules.validate(newDoc: newDoc, oldDoc: oldDoc, userCtx: userCtx, secObj: secObj)
            }, forDesignDocument: "_design/_auth")
        }
    }

    /// What CouchDB's `_users` does to a document before saving it (`couch_users_db`
    /// `before_doc_update`): a user who is not an admin may write only their own document (an
    /// anonymous one may create one); a clear-text `password` is checked against
    /// `password_regexp` and replaced by its PBKDF2 hash. Other databases' documents pass as they are.
    func usersDatabaseDocument(_ db: CBLDatabase, docID: String, body: [String: Any]) throws -> [String: Any] {
        guard db.name == state.configuration.authenticationDatabase, !docID.hasPrefix("_local/") else { return body }
        try checkUsersDatabaseWriter(docID: docID)
        guard body["password"] is String, let typed = try? JSONObject(foundation: body) else { return body }
        return try hashingPassword(typed).foundation
    }

    /// ``usersDatabaseDocument(_:docID:body:)`` for a typed body.
    func usersDatabaseDocument(_ db: CBLDatabase, docID: String, body: JSONObject) throws -> JSONObject {
        guard db.name == state.configuration.authenticationDatabase, !docID.hasPrefix("_local/") else { return body }
        try checkUsersDatabaseWriter(docID: docID)
        guard body["password"]?.stringValue != nil else { return body }
        return try hashingPassword(body)
    }

    private func checkUsersDatabaseWriter(docID: String) throws {
        guard let writer = CBLRequestUser.current, !writer.isDatabaseAdmin, let name = writer.name else { return }
        if docID != "org.couchdb.user:" + name { throw RESTError.missing }
    }

    private func hashingPassword(_ body: JSONObject) throws -> JSONObject {
        guard let password = body["password"]?.stringValue else { return body }
        let configuration = state.configuration
        try PasswordRequirements(setting: configuration.authSetting("password_regexp") ?? "").check(password)
        guard configuration.authSetting("password_scheme") ?? "pbkdf2" == "pbkdf2" else {
            throw RESTError(403, "forbidden", "Server cannot hash passwords at this time.")
        }
        var clean = body
        for key in ["derived_key", "iterations", "password_scheme", "password_sha", "preserve_salt", "pbkdf2_prf", "salt"] {
            clean[key] = nil
        }
        return CouchPasswords.hashingPassword(of: clean, iterations: configuration.passwordIterations, prf: configuration.passwordPRF)
    }

    // MARK: Cluster and configuration

    /// `GET /_membership`: this listener is CouchDB's single node.
    func membership() -> RESTResponse {
        .json(200, ["all_nodes": [Self.nodeName], "cluster_nodes": [Self.nodeName]])
    }

    /// The node name CouchDB gives a single node.
    static let nodeName = "nonode@nohost"

    /// `/_node/{node}/_config[/SECTION[/KEY]]` and `/_config/…`: read, set and delete settings
    /// (server admins only, checked before). `PUT` takes a JSON string and answers the previous
    /// value; `X-Couch-Persist: false` leaves the file alone.
    func configuration(_ request: RESTRequest) throws -> RESTResponse {
        var path = request.segments
        if path.first == "_node" {
            guard path.count >= 2, path[1] == "_local" || path[1] == Self.nodeName else {
                throw RESTError(404, "not_found", "unknown node \(path.count > 1 ? path[1] : "")")
            }
            path.removeFirst(2)
        } else {
            path.removeFirst()
        }
        path.removeFirst()   // `_config`
        let config = state.configuration
        switch path.count {
        case 0:
            var all = JSONObject()
            for (section, keys) in config.all().sorted(by: { $0.key < $1.key }) {
                all[section] = .object(Self.sortedObject(keys))
            }
            return .json(200, encoded: try JSON.data(.object(all), sortedKeys: false))
        case 1:
            return .json(200, encoded: try JSON.data(.object(Self.sortedObject(config.section(path[0]))), sortedKeys: false))
        default:
            let (section, key) = (path[0], path[1])
            let persist = request.header("x-couch-persist")?.lowercased() != "false"
            switch request.method {
            case "GET", "HEAD":
                guard let value = config.value(section, key) else {
                    throw RESTError(404, "not_found", "unknown_config_value")
                }
                return .json(200, encoded: try JSON.data(.string(value), sortedKeys: false))
            case "PUT":
                guard case .string(var value)? = try? JSONText.value(request.body) else {
                    throw RESTError(400, "bad_request", "Request body must be a JSON string")
                }
                if section == "admins" { value = config.hashedAdminPassword(value) }
                let previous = try config.set(section, key, to: value, persist: persist)
                configurationChanged(section, key: key)
                return .json(200, encoded: try JSON.data(.string(previous ?? ""), sortedKeys: false))
            case "DELETE":
                guard let previous = try config.set(section, key, to: nil, persist: persist) else {
                    throw RESTError(404, "not_found", "unknown_config_value")
                }
                configurationChanged(section, key: key)
                return .json(200, encoded: try JSON.data(.string(previous), sortedKeys: false))
            default:
                throw RESTError.methodNotAllowed("GET,PUT,DELETE")
            }
        }
    }

    /// Drops what was derived from a section that changed. A new authentication database is
    /// readied a moment later, as CouchDB's authentication cache does once it watches it.
    private func configurationChanged(_ section: String, key: String) {
        guard ["admins", "chttpd_auth", "couch_httpd_auth", "couchdb"].contains(section) else { return }
        state.authenticator.invalidate()
        state.forgetAllSecurity()
        guard key == "authentication_db" else { return }
        let name = state.configuration.authenticationDatabase
        DispatchQueue.global().asyncAfter(deadline: .now() + 1) { [weak self] in
            guard let self, self.manager.databaseExistsNamed(name),
                  let db = try? self.manager.existingDatabaseNamed(name) else { return }
            try? self.prepareAuthenticationDatabase(db, creating: true)
        }
    }

    private static func sortedObject(_ entries: [String: String]) -> JSONObject {
        var object = JSONObject()
        for (key, value) in entries.sorted(by: { $0.key < $1.key }) { object[key] = .string(value) }
        return object
    }
}
