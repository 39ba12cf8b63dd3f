import CouchbaseLite
import Foundation
import JSONCore

/// Replications started through `POST /_replicate`, listed by `GET /_active_tasks`.
// @unchecked because the task table is only touched under its lock.
final class ReplicationTasks: @unchecked Sendable {
    struct Task {
        let sessionID: String
        let source: String
        let target: String
        let continuous: Bool
        /// The replication shown by `_active_tasks` (a relay's push leg).
        let replication: CBLReplication
        /// Set for a remote → remote replication.
        var relay: ReplicationRelay?

        var isRunning: Bool { relay?.running ?? replication.running }
    }

    private let lock = NSLock()
    private var tasks: [Task] = []
    private var counter = 0

    func add(source: String, target: String, continuous: Bool, replication: CBLReplication,
             relay: ReplicationRelay? = nil) -> String {
        lock.lock(); defer { lock.unlock() }
        counter += 1
        let id = "repl" + String(format: "%03d", counter)
        tasks.append(Task(sessionID: id, source: source, target: target, continuous: continuous, replication: replication,
                          relay: relay))
        return id
    }

    /// Running tasks (finished ones are dropped as they are listed, their relays closed).
    var running: [Task] {
        lock.lock()
        let finished = tasks.filter { !$0.isRunning }
        tasks.removeAll { !$0.isRunning }
        let live = tasks
        lock.unlock()
        for task in finished { task.relay?.close() }
        return live
    }

    func find(sessionID: String?, source: String, target: String, continuous: Bool) -> Task? {
        running.first { task in
            if let sessionID { return task.sessionID == sessionID }
            return task.source == source && task.target == target && task.continuous == continuous
        }
    }

    func stopAll() {
        lock.lock()
        let all = tasks
        tasks.removeAll()
        lock.unlock()
        for task in all {
            task.replication.stop()
            task.relay?.stop()
        }
    }
}

extension RESTRouter {
    /// An endpoint of `_replicate`: a local database name, or a URL (string, or
    /// `{"url": …, "headers": {…}, "auth": {"basic": {"username", "password"}}}`).
    private struct Endpoint {
        var localName: String?
        var url: URL?
        var headers: [String: String] = [:]
        var authenticator: CBLAuthenticatorProtocol?
        /// The endpoint as the request named it, for matching and `_active_tasks` (credentials removed).
        var display: String

        init(_ value: Any?, role: String) throws {
            var urlString: String?
            if let s = value as? String {
                urlString = s
            } else if let object = value as? [String: Any] {
                urlString = object["url"] as? String
                if let headers = object["headers"] as? [String: Any] {
                    for (k, v) in headers { self.headers[k] = "\(v)" }
                }
                if let basic = (object["auth"] as? [String: Any])?["basic"] as? [String: Any],
                   let user = basic["username"] as? String, let password = basic["password"] as? String {
                    authenticator = CBLAuthenticator.basicAuthenticator(withName: user, password: password)
                }
            }
            guard let text = urlString, !text.isEmpty else {
                throw RESTError(400, "bad_request", "Missing or invalid \(role) in the replication request")
            }
            if text.lowercased().hasPrefix("http://") || text.lowercased().hasPrefix("https://") {
                guard let parsed = URL(string: text) else { throw RESTError(400, "bad_request", "Invalid \(role) URL") }
                url = parsed
                var c = URLComponents(url: parsed, resolvingAgainstBaseURL: false)
                c?.user = nil
                c?.password = nil
                display = c?.string ?? text
            } else {
                guard CBLManager.isServableDatabaseName(text) else {
                    throw RESTError(400, "illegal_database_name", RESTRouter.illegalNameReason(text))
                }
                localName = text
                display = text
            }
        }
    }

    /// `POST /_replicate`: starts (or with `cancel`, stops) a replication between a local
    /// database and a remote one, two local ones, or two remote ones (through a relay database).
    /// One-shot requests answer when done.
    func replicate(_ request: RESTRequest) throws -> RESTResponse {
        try requireJSONBody(request)
        let body = try JSONText.parseObject(request.body)
        let source = try Endpoint(body["source"], role: "source")
        let target = try Endpoint(body["target"], role: "target")
        let continuous = body["continuous"] as? Bool ?? false
        let tasks = state.replicationTasks

        if body["cancel"] as? Bool == true {
            guard let task = tasks.find(sessionID: body["replication_id"] as? String ?? body["session_id"] as? String,
                                        source: source.display, target: target.display, continuous: continuous) else {
                throw RESTError(404, "not_found", "No such replication is running")
            }
            task.replication.stop()
            task.relay?.stop()
            return .json(200, ["ok": true, "session_id": task.sessionID])
        }
        if let sourceURL = source.url, let targetURL = target.url {
            return try relay(source: source, sourceURL, target: target, targetURL, body: body, continuous: continuous)
        }

        // Pull into a local target, or push from a local source; two local databases replicate
        // through this listener's own URL (with the caller's credentials).
        let replication: CBLReplication
        let createTarget = body["create_target"] as? Bool ?? false
        if let targetName = target.localName {
            let writer = try localReplicationUser(request, database: targetName, creating: createTarget)
            let db: CBLDatabase
            if createTarget {
                db = try manager.databaseNamed(targetName)
            } else {
                db = try openDatabase(targetName)
            }
            var remote = source
            if let sourceName = source.localName {
                _ = try openDatabase(sourceName)
                guard let url = URL(string: state.absoluteURL(request, path: [sourceName])), url.scheme != nil else {
                    throw RESTError(400, "bad_request", "Cannot replicate between local databases without a Host header")
                }
                remote.url = url
                for name in ["authorization", "cookie"] {
                    if let value = request.header(name) { remote.headers[name == "authorization" ? "Authorization" : "Cookie"] = value }
                }
            }
            replication = db.createPullReplication(remote.url!)
            replication.headers = remote.headers
            replication.authenticator = remote.authenticator
            // What it writes is validated as the user who asked (validate_doc_update, design documents).
            replication.actingUser = writer
        } else if let sourceName = source.localName, let url = target.url {
            _ = try localReplicationUser(request, database: sourceName, creating: false)
            let db = try openDatabase(sourceName)
            replication = db.createPushReplication(url)
            replication.headers = target.headers
            replication.authenticator = target.authenticator
            replication.createTarget = createTarget
        } else {
            throw RESTError(400, "bad_request", "One of source and target must be a local database")
        }
        replication.continuous = continuous
        try applyReplicationOptions(body, to: replication)

        let sessionID = tasks.add(source: source.display, target: target.display, continuous: continuous,
                                  replication: replication)
        if continuous {
            replication.start()
            return .json(202, ["ok": true, "session_id": sessionID])
        }
        if let error = replication.runToCompletion() as? CBLError {
            return .error(Self.replicationFailure(error))
        }
        return .json(200, [
            "ok": true, "session_id": sessionID,
            "docs_read": Int(replication.completedChangesCount), "changes": Int(replication.changesCount),
        ])
    }

    /// A failed one-shot replication's answer: the remote's HTTP status when it gave one, else
    /// 502 (the listener acted as a gateway), with the replicator's message.
    private static func replicationFailure(_ error: CBLError) -> RESTError {
        RESTError(error.code >= 400 && error.code < 600 ? error.code : 502, RESTError.from(error).error, error.message)
    }

    /// `filter`, `query_params` and `doc_ids` of a `_replicate` request.
    private func applyReplicationOptions(_ body: [String: Any], to replication: CBLReplication) throws {
        if let filter = body["filter"] as? String { replication.filter = filter }
        if let params = body["query_params"] as? [String: Any] { replication.filterParams = params }
        if let ids = body["doc_ids"] {
            guard let list = ids as? [String] else { throw RESTError(400, "bad_request", "doc_ids must be an array of strings") }
            replication.documentIDs = list
        }
    }

    /// Remote → remote: the listener replicates as a service, through a private relay database
    /// (``ReplicationRelay``). The source's filter and `doc_ids` select what is pulled.
    private func relay(source: Endpoint, _ sourceURL: URL, target: Endpoint, _ targetURL: URL,
                       body: [String: Any], continuous: Bool) throws -> RESTResponse {
        let relay: ReplicationRelay
        do {
            relay = try ReplicationRelay(
                source: .init(url: sourceURL, headers: source.headers, authenticator: source.authenticator),
                target: .init(url: targetURL, headers: target.headers, authenticator: target.authenticator),
                continuous: continuous, createTarget: body["create_target"] as? Bool ?? false)
        } catch {
            throw RESTError(500, "internal_server_error", "Cannot create the relay database: \(error)")
        }
        do {
            try applyReplicationOptions(body, to: relay.pull)
        } catch {
            relay.close()
            throw error
        }
        let sessionID = state.replicationTasks.add(source: source.display, target: target.display, continuous: continuous,
                                                   replication: relay.push, relay: relay)
        if continuous {
            relay.startContinuous()
            return .json(202, ["ok": true, "session_id": sessionID])
        }
        if let error = relay.runOnce() as? CBLError {
            return .error(Self.replicationFailure(error))
        } else if let error = relay.pull.lastError ?? relay.push.lastError, !(error is CBLError) {
            return .error(RESTError(502, "bad_gateway", "\(error)"))
        }
        return .json(200, [
            "ok": true, "session_id": sessionID,
            "docs_read": Int(relay.pull.completedChangesCount), "changes": Int(relay.pull.changesCount),
            "docs_written": Int(relay.push.completedChangesCount),
        ])
    }

    /// `GET /_active_tasks`: running replications in the 1.x shape.
    func activeTasks() -> [[String: Any]] {
        state.replicationTasks.running.map { task in
            let r = task.replication
            var entry: [String: Any] = [
                "type": "Replication", "task": task.sessionID, "session_id": task.sessionID,
                "source": task.source, "target": task.target, "continuous": task.continuous,
            ]
            let completed = Int(r.completedChangesCount), total = Int(r.changesCount)
            switch r.status {
            case .active:
                entry["status"] = "Processed \(completed) / \(total) changes"
                entry["progress"] = total > 0 ? completed * 100 / total : 0
            case .idle: entry["status"] = "Idle"
            case .offline: entry["status"] = "Offline"
            case .stopped: entry["status"] = "Stopped"
            }
            if let error = r.lastError as? CBLError {
                entry["error"] = [error.code, error.message] as [Any]
            }
            return entry
        }
    }

    /// The user a replication acts as in a local database, checked as CouchDB checks it: a member
    /// may read and write it, creating it takes a server admin (`401`/`403` otherwise); nil when
    /// nothing is enforced.
    func localReplicationUser(_ request: RESTRequest, database name: String, creating: Bool) throws -> CBLRequestUser? {
        let access = request.access
        guard access.enforced else { return nil }
        let user = access.user
        guard let security = state.loadSecurity(ofDatabase: name) else {
            if creating && !user.isServerAdmin { throw ListenerAccessPolicy.notServerAdmin }
            return CBLRequestUser(name: user.name, roles: user.roles, isDatabaseAdmin: user.isServerAdmin)
        }
        let isAdmin = user.isServerAdmin || security.isAdmin(user)
        guard isAdmin || security.isMember(user) else { throw securityRefusal(user) }
        return CBLRequestUser(name: user.name, roles: user.roles, securityObject: security.json, isDatabaseAdmin: isAdmin)
    }
}
