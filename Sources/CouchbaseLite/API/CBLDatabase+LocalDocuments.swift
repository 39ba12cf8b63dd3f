import Foundation
import JSONCore

/// Local documents: `_local/…` documents that are never replicated and keep no history (spec 5).
extension CBLDatabase {
    static func localDocID(_ id: String) -> String {
        id.hasPrefix("_local/") ? id : "_local/" + id
    }

    /// The properties of a local document (with `_id` and `_rev`), or nil.
    public func existingLocalDocument(withID localDocID: String) -> [String: Any]? {
        let fullID = CBLDatabase.localDocID(localDocID)
        guard let (revID, body) = try? read({ try $0.localDocument(fullID) }) ?? nil else { return nil }
        var props = (body.isEmpty ? [:] : (try? JSON.parseObject(body))) ?? [:]
        props["_id"] = fullID
        props["_rev"] = revID
        return props
    }

    /// Creates, replaces or (with nil) deletes a local document.
    public func putLocalDocument(_ properties: [String: Any]?, withID localDocID: String) throws {
        guard let properties else {
            try deleteLocalDocument(withID: localDocID)
            return
        }
        try putLocalDocument(properties, withID: localDocID, prevRevID: nil, checkRev: false)
    }

    /// MVCC form used by the REST API: `prevRevID` must match the current revision when `checkRev`.
    @discardableResult
    func putLocalDocument(_ properties: [String: Any], withID localDocID: String, prevRevID: String?,
                          checkRev: Bool) throws -> String {
        let fullID = CBLDatabase.localDocID(localDocID)
        guard fullID.utf8.count > 7 else { throw CBLError.badID("Invalid local document ID '\(localDocID)'") }
        try CBLDatabase.checkSpecialKeys(properties)
        let body = try CBLDatabase.storedBody(properties)
        return try write { store in
            try store.putLocalDocument(fullID, body: body, prevRevID: prevRevID, checkRev: checkRev)
        }
    }

    /// Deletes a local document; throws 404 if it doesn't exist.
    public func deleteLocalDocument(withID localDocID: String) throws {
        try deleteLocalDocument(withID: localDocID, revID: nil)
    }

    func deleteLocalDocument(withID localDocID: String, revID: String?) throws {
        let fullID = CBLDatabase.localDocID(localDocID)
        try write { store in try store.deleteLocalDocument(fullID, revID: revID) }
    }

    /// Every local document as (full `_local/…` ID, revision ID, stored JSON body), in ID order;
    /// for tools (`cbl dump --local`): 1.x has no public API listing them.
    package func allLocalDocuments() throws -> [(docID: String, revID: String, json: [UInt8])] {
        try read { try $0.allLocalDocuments() }
    }
}
