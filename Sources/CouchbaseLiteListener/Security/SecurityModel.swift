import CouchbaseLite
import Foundation
import JSONCore

/// Who a request acts as: CouchDB's `userCtx` (a name, or none for anonymous, and roles;
/// server administrators have the role `_admin`).
struct UserContext: Sendable, Equatable {
    var name: String?
    var roles: [String]
    /// How the request authenticated (`default` for Basic, `cookie`), for `GET /_session`.
    var authenticatedBy: String?

    static let anonymous = UserContext(name: nil, roles: [], authenticatedBy: nil)
    /// Anyone, when the listener has no administrators (CouchDB's "admin party").
    static let adminParty = UserContext(name: nil, roles: ["_admin"], authenticatedBy: nil)

    var isServerAdmin: Bool { roles.contains("_admin") }

    /// `{"name": …, "roles": […]}` (with `"db"` when given), as validation functions and
    /// `_session` see it.
    func json(db: String? = nil) -> JSONObject {
        var out = JSONObject()
        if let db { out["db"] = .string(db) }
        out["name"] = name.map(JSONValue.string) ?? .null
        out["roles"] = .array(roles.map(JSONValue.string))
        return out
    }
}

/// A database's `_security` object: its admins and members, each by names and roles.
struct SecurityObject: Sendable, Equatable {
    struct Group: Sendable, Equatable {
        var names: [String] = []
        var roles: [String] = []

        init(names: [String] = [], roles: [String] = []) {
            self.names = names
            self.roles = roles
        }

        init(_ value: JSONValue?) {
            guard case .object(let object)? = value else { return }
            names = object["names"]?.arrayValue?.compactMap(\.stringValue) ?? []
            roles = object["roles"]?.arrayValue?.compactMap(\.stringValue) ?? []
        }

        /// CouchDB's `is_authorized`: a shared role (`_admin` always counts), or the name listed.
        func admits(_ user: UserContext) -> Bool {
            if user.roles.contains(where: { $0 == "_admin" || roles.contains($0) }) { return true }
            if let name = user.name { return names.contains(name) }
            return false
        }
    }

    /// The object as stored and answered by `GET /db/_security`.
    let json: JSONValue
    let admins: Group
    let members: Group

    init(_ json: JSONValue) {
        self.json = json
        guard case .object(let object) = json else {
            admins = Group()
            members = Group()
            return
        }
        admins = Group(object["admins"])
        // `readers` is CouchDB 1.0's name for members.
        members = Group(object["members"] ?? object["readers"])
    }

    /// CouchDB 3's default for a database that never had a `_security` set (`[couchdb]
    /// default_security = admin_only`): only administrators.
    static let adminOnly = SecurityObject(.object([
        "members": .object(["roles": .array(["_admin"])]),
        "admins": .object(["roles": .array(["_admin"])]),
    ]))
    /// `default_security = everyone`: no members listed, so anyone may read and write.
    static let everyone = SecurityObject(.object(JSONObject()))

    /// No members named: the database is open to everyone.
    var isPublic: Bool { members.names.isEmpty && members.roles.isEmpty }

    func isAdmin(_ user: UserContext) -> Bool { admins.admits(user) }

    func isMember(_ user: UserContext) -> Bool { isAdmin(user) || isPublic || members.admits(user) }

    /// Checks a `PUT /db/_security` body as CouchDB does: an object whose `admins` and
    /// `members` (when present) are objects with lists of strings.
    static func validated(_ body: JSONValue) throws -> SecurityObject {
        guard case .object(let object) = body else {
            throw RESTError(400, "bad_request", "Security object must be a JSON object")
        }
        for groupName in ["admins", "members", "readers"] {
            guard let group = object[groupName] else { continue }
            guard case .object(let members) = group else {
                throw RESTError(400, "bad_request", "\(groupName) must be a JSON object")
            }
            for field in ["names", "roles"] {
                guard let list = members[field] else { continue }
                guard case .array(let items) = list, items.allSatisfy({ $0.stringValue != nil }) else {
                    throw RESTError(400, "bad_request", "\(field) must be a JSON list of strings")
                }
            }
        }
        return SecurityObject(body)
    }
}

/// CouchDB's refusal of a user who may not do something: `401 unauthorized` when anonymous
/// (logging in may help), `403 forbidden` when named.
func securityRefusal(_ user: UserContext, _ reason: String? = nil) -> RESTError {
    if user.name == nil {
        return RESTError(401, "unauthorized", reason ?? "You are not authorized to access this db.")
    }
    return RESTError(403, "forbidden", reason ?? "You are not allowed to access this db.")
}
