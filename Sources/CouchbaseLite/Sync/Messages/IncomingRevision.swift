import Foundation
import JSONCore

/// A revision as a peer sends it (a `_bulk_get` result, a `GET ?revs=true` answer, a
/// multipart document): read once, from the one parse of the answer, into what inserting it
/// needs (spec 9.4). Its `_revisions` is read here and nowhere else; its other members stay typed
/// (``body``) until the store writes them, once.
package struct IncomingRevision: Sendable {
    package let docID: String
    package let revID: String
    package let deleted: Bool
    /// The history from `_revisions`, newest first, starting with ``revID`` (the revision
    /// alone when the peer sent none).
    package let history: [String]
    /// The peer sent `_revisions`.
    package let hasRevisions: Bool
    /// `_attachments`, nil when absent.
    package var attachments: [String: IncomingAttachment]?
    /// Every other member, in the order the peer sent them.
    package let body: JSONObject
    /// The stored body keeps ``body``'s member order (CouchDB keeps a document's members as its
    /// client wrote them; the listener asks for that). Otherwise it is 1.x's canonical JSON, sorted.
    package let keepsMemberOrder: Bool
    /// The `type` property (the 1.x `docs.doc_type` column).
    package var docType: String? { body["type"]?.stringValue }
    /// Other `_`-prefixed members (`_conflicts`, `_revs_info`…, or unknown ones 1.x refuses):
    /// such a revision goes through the full insertion checks.
    package let specialKeys: [String]

    /// Members this type reads itself.
    private static func isOwnKey(_ key: String) -> Bool {
        key == "_id" || key == "_rev" || key == "_deleted" || key == "_revisions" || key == "_attachments"
    }

    /// Reads a revision; 400 for a missing or invalid `_id`/`_rev`/`_revisions` (the checks
    /// `new_edits=false` makes, spec 9.4).
    package init(json doc: JSONObject, keepsMemberOrder: Bool = false) throws {
        self.keepsMemberOrder = keepsMemberOrder
        guard let docID = doc["_id"]?.stringValue else { throw CBLError.badRequest("Revision without an _id") }
        guard let revID = doc["_rev"]?.stringValue, RevisionID.generation(revID) > 0 else {
            throw CBLError.badRequest("new_edits=false requires a valid _rev")
        }
        self.docID = docID
        self.revID = revID
        deleted = doc["_deleted"]?.boolValue ?? false
        if let revisions = doc["_revisions"] {
            guard case .object(let dict) = revisions, let h = RevisionID.history(fromRevisions: dict),
                  !h.isEmpty, h.allSatisfy({ RevisionID.generation($0) > 0 }) else {
                throw CBLError.badRequest("Invalid _revisions")
            }
            guard h.first == revID else { throw CBLError.badRequest("_revisions do not start with _rev") }
            history = h
            hasRevisions = true
        } else {
            history = [revID]
            hasRevisions = false
        }
        if let raw = doc["_attachments"] {
            guard case .object(let dict) = raw else { throw CBLError.badAttachment("_attachments must be an object") }
            var atts: [String: IncomingAttachment] = [:]
            for (name, meta) in dict { atts[name] = try IncomingAttachment(json: meta, name: name) }
            attachments = atts
        }
        var body = JSONObject(minimumCapacity: doc.count)
        var special: [String] = []
        for (key, value) in doc where !IncomingRevision.isOwnKey(key) {
            body[key] = value
            if key.hasPrefix("_") && key != "_removed" { special.append(key) }
        }
        self.body = body
        specialKeys = special
    }

    /// Reads a dictionary-based revision (the listener's `[String: Any]` bodies, multipart uploads
    /// whose attachment bodies are `Data`), its members put in `memberOrder` when given (the stored
    /// body then keeps it), else stored sorted.
    package init(foundation doc: [String: Any], memberOrder: JSONMemberOrder? = nil) throws {
        var typed = doc
        let attachments = doc["_attachments"]
        typed["_attachments"] = nil
        let object: JSONObject
        do {
            object = try JSONObject(foundation: typed)
        } catch {
            throw CBLError.badJSON("\(error)")
        }
        if let memberOrder, case .object(let ordered) = JSONValue.object(object).ordered(by: memberOrder) {
            try self.init(json: ordered, keepsMemberOrder: true)
        } else {
            try self.init(json: object)
        }
        if let attachments {
            guard let dict = attachments as? [String: Any] else { throw CBLError.badAttachment("_attachments must be an object") }
            var atts: [String: IncomingAttachment] = [:]
            for (name, meta) in dict { atts[name] = try IncomingAttachment(foundation: meta, name: name) }
            self.attachments = atts
        }
    }

    /// Reads a revision from JSON text.
    package init(jsonText: [UInt8]) throws {
        let doc: JSONObject
        do {
            doc = try JSON.object(jsonText)
        } catch {
            throw CBLError.badJSON("a revision must be a JSON object")
        }
        try self.init(json: doc)
    }

    /// The stored body of a revision without attachments: ``body`` written once, canonical
    /// (sorted) or in its member order (``keepsMemberOrder``).
    package func storedBody() throws -> [UInt8] {
        do {
            var writer = JSONWriter(capacity: 256)
            try writer.writeObject(body, sortedKeys: !keepsMemberOrder)
            return writer.bytes
        } catch {
            throw CBLError.badJSON("\(error)")
        }
    }

    /// The member order the stored body keeps (nil: sorted).
    package var storedMemberOrder: JSONMemberOrder? {
        keepsMemberOrder ? JSONMemberOrder(unsortedIn: .object(body)) : nil
    }

    /// The attachments that are stubs: bodies the receiver must already have.
    package var stubNames: [String] {
        (attachments ?? [:]).filter { $0.value.data == nil }.map(\.key)
    }

    /// The revision as the dictionary-based insertion reads it: the properties with
    /// `_attachments` and `_deleted` (no `_id`/`_rev`/`_revisions`: those are arguments).
    package func insertionProperties() throws -> [String: Any] {
        var dict = body.foundation
        if let attachments { dict["_attachments"] = attachments.mapValues(\.metadata) }
        if deleted { dict["_deleted"] = true }
        return dict
    }

    /// Writes the revision as CouchDB sends it: `_id`, `_rev`, `_deleted`, the properties,
    /// `_attachments`, `_revisions`.
    package func encode(into writer: inout JSONWriter) {
        writer.writeRaw(#"{"_id":"#.utf8)
        writer.writeString(docID)
        writer.writeRaw(#","_rev":"#.utf8)
        writer.writeString(revID)
        if deleted { writer.writeRaw(#","_deleted":true"#.utf8) }
        for (key, value) in keepsMemberOrder ? Array(body) : body.sortedMembers {
            writer.writeRawByte(UInt8(ascii: ","))
            writer.writeString(key)
            writer.writeRawByte(UInt8(ascii: ":"))
            try? writer.write(value, sortedKeys: !keepsMemberOrder)
        }
        if let attachments {
            writer.writeRaw(#","_attachments":{"#.utf8)
            let names = attachments.keys.sorted { $0.utf16.lexicographicallyPrecedes($1.utf16) }
            for (index, name) in names.enumerated() {
                if index > 0 { writer.writeRawByte(UInt8(ascii: ",")) }
                writer.writeString(name)
                writer.writeRawByte(UInt8(ascii: ":"))
                attachments[name]!.encode(into: &writer)
            }
            writer.writeRawByte(UInt8(ascii: "}"))
        }
        if hasRevisions {
            writer.writeRaw(#","_revisions":"#.utf8)
            let revisions = RevisionID.revisionsDictionary(history)
            if let start = revisions["start"] as? Int, let ids = revisions["ids"] as? [String] {
                writer.writeRaw(#"{"start":\#(start),"ids":["#.utf8)
                for (index, id) in ids.enumerated() {
                    if index > 0 { writer.writeRawByte(UInt8(ascii: ",")) }
                    writer.writeString(id)
                }
                writer.writeRaw("]}".utf8)
            } else {
                try? writer.write(revisions)
            }
        }
        writer.writeRawByte(UInt8(ascii: "}"))
    }

    /// The revision as JSON text.
    package var encoded: [UInt8] {
        var writer = JSONWriter(capacity: 256)
        encode(into: &writer)
        return writer.bytes
    }
}
