import Foundation
import JSONCore

/// The user a write is made for, as CouchDB's validation sees it: the `userCtx` and `secObj`
/// arguments of `validate_doc_update`, and whether the user may write design documents.
///
/// A listener that authenticates CouchDB users makes its writes inside
/// ``acting(as:_:)``; every save on that thread (`putRevision`, `forceInsert`, the puller's
/// inserts) then passes this user to the design documents' validations, and refuses a design
/// document from a user who is not the database's admin (CouchDB's `check_is_admin`). Without a
/// current user a write acts as CouchDB's admin party, as it always did.
package struct CBLRequestUser: Sendable, Equatable {
    /// The user's name; nil for an anonymous request (CouchDB's `"name": null`).
    package var name: String?
    /// The user's roles (`_admin` among them for a server admin), as `userCtx.roles`.
    package var roles: [String]
    /// The database's `_security` object, passed as `secObj`.
    package var securityObject: JSONValue
    /// True for a server admin or one of the database's admins: may write design documents.
    package var isDatabaseAdmin: Bool

    /// A user with `name`, `roles`, the database's `_security` object and its admin standing.
    package init(name: String?, roles: [String], securityObject: JSONValue = .object(JSONObject()),
                 isDatabaseAdmin: Bool) {
        self.name = name
        self.roles = roles
        self.securityObject = securityObject
        self.isDatabaseAdmin = isDatabaseAdmin
    }

    // MARK: The current writing user

    /// Runs `body` with `user` as the calling thread's writing user (nil: none, as outside any
    /// call), restoring the previous one afterwards, also when `body` throws. The innermost call wins.
    ///
    /// A thread-local, not a task-local: the listener writes synchronously on its thread pool's
    /// threads, and a database write runs its body on the calling thread.
    package static func acting<R>(as user: CBLRequestUser?, _ body: () throws -> R) rethrows -> R {
        try scope.with(user, body)
    }

    /// `acting(as:_:)` when `user` is set, else `body` under whatever user is current.
    static func acting<R>(ifSet user: CBLRequestUser?, _ body: () throws -> R) rethrows -> R {
        guard let user else { return try body() }
        return try acting(as: user, body)
    }

    /// The calling thread's writing user (set by ``acting(as:_:)``), nil when there is none.
    package static var current: CBLRequestUser? { scope.current }

    /// The thread-local slot holding the current user.
    private static let scope = ThreadLocalScope<CBLRequestUser>(purpose: "the writing user")

    // MARK: What validation sees

    /// CouchDB's message when a user who is not an admin writes a design document.
    static let notAdminMessage = "You are not a db or server admin."

    /// The error refusing this user a design document write, nil for a database admin: 401 for
    /// an anonymous user, 403 for a named one (CouchDB's `check_is_admin`, `throw_security_error`).
    var designDocumentWriteError: CBLError? {
        if isDatabaseAdmin { return nil }
        return name == nil ? .unauthorized(Self.notAdminMessage) : .forbidden(Self.notAdminMessage)
    }

    /// The error refusing the current user a write of `docID`, when it is a design document and
    /// the user is not the database's admin; nil otherwise (and with no current user). The ID is
    /// looked at first, so a save of any other document does not read the thread-local.
    static func designDocumentWriteRefusal(docID: String) -> CBLError? {
        guard CBLDatabase.startsWithUnderscore(docID), docID.hasPrefix("_design/") else { return nil }
        return current?.designDocumentWriteError
    }

    /// `validate_doc_update`'s `userCtx` for this user writing to the database `databaseName`.
    func validationUserContext(databaseName: String) -> [String: Any] {
        ["db": databaseName, "name": name.map { $0 as Any } ?? NSNull(), "roles": roles]
    }

    /// `validate_doc_update`'s `secObj`: the `_security` object's members (none when it is not an object).
    var validationSecurityObject: [String: Any] {
        if case .object(let members) = securityObject { return members.foundation }
        return [:]
    }
}
