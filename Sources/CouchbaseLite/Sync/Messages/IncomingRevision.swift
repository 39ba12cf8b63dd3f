import Foundation
import JSONCore

/// A revision as a peer sends it (a `_bulk_get` result, a `GET ?revs=true` answer, a
/// multipart document): read once into what inserting it needs (spec 9.4). Its `_revisions`
/// is parsed here and nowhere else; its other properties are kept as the canonical JSON the
/// store keeps, so a revision without attachments is stored without being parsed again.
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
    /// Every other member, as canonical JSON text (keys sorted, or in ``memberOrder``): the
    /// stored body of a revision without attachments.
    package let properties: [UInt8]
    /// The `type` property (the 1.x `docs.doc_type` column).
    package let docType: String?
    /// The member order of the text the revision was read from, when it is not sorted: the
    /// stored body keeps it (see ``JSONMemberOrder``).
    package let memberOrder: JSONMemberOrder?
    /// Other `_`-prefixed members (`_conflicts`, `_revs_info`…, or unknown ones 1.x refuses):
    /// such a revision goes through the full insertion checks.
    package let specialKeys: [String]

    /// Members this type reads itself.
    private static func isOwnKey(_ key: String) -> Bool {
        key == "_id" || key == "_rev" || key == "_deleted" || key == "_revisions" || key == "_attachments"
    }

    /// Reads a parsed revision; 400 for a missing or invalid `_id`/`_rev`/`_revisions`
    /// (the checks `new_edits=false` makes, spec 9.4).
    package init(json doc: [String: Any], memberOrder: JSONMemberOrder? = nil) throws {
        self.memberOrder = memberOrder
        guard let docID = doc["_id"] as? String else { throw CBLError.badRequest("Revision without an _id") }
        guard let revID = doc["_rev"] as? String, RevisionID.generation(revID) > 0 else {
            throw CBLError.badRequest("new_edits=false requires a valid _rev")
        }
        self.docID = docID
        self.revID = revID
        deleted = doc["_deleted"] as? Bool ?? false
        if let revisions = doc["_revisions"] {
            guard let dict = revisions as? [String: Any], let h = RevisionID.history(fromRevisions: dict),
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
            guard let dict = raw as? [String: Any] else { throw CBLError.badAttachment("_attachments must be an object") }
            var atts: [String: IncomingAttachment] = [:]
            for (name, meta) in dict { atts[name] = try IncomingAttachment(json: meta, name: name) }
            attachments = atts
        }
        var writer = JSONWriter(capacity: 256)
        do {
            if let memberOrder {
                try writer.writeObject(doc, order: memberOrder, skippingKey: IncomingRevision.isOwnKey)
            } else {
                try writer.writeObject(doc, sortedKeys: true, skippingKey: IncomingRevision.isOwnKey)
            }
        } catch {
            throw CBLError.badJSON("\(error)")
        }
        properties = writer.bytes
        docType = doc["type"] as? String
        specialKeys = doc.keys.filter { $0.hasPrefix("_") && !IncomingRevision.isOwnKey($0) && $0 != "_removed" }
    }

    /// Reads a revision from JSON text.
    package init(jsonText: [UInt8]) throws {
        let doc: [String: Any]
        do {
            doc = try JSON.parseObject(jsonText)
        } catch {
            throw CBLError.badJSON("a revision must be a JSON object")
        }
        try self.init(json: doc)
    }

    /// The attachments that are stubs: bodies the receiver must already have.
    package var stubNames: [String] {
        (attachments ?? [:]).filter { $0.value.data == nil }.map(\.key)
    }

    /// The revision as the dictionary-based insertion reads it: the properties with
    /// `_attachments` and `_deleted` (no `_id`/`_rev`/`_revisions`: those are arguments).
    package func insertionProperties() throws -> [String: Any] {
        var dict = properties.count <= 2 ? [:] : try JSON.parseObject(properties)
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
        if properties.count > 2 {
            writer.writeRawByte(UInt8(ascii: ","))
            writer.writeRaw(properties[1..<(properties.count - 1)])
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
        var writer = JSONWriter(capacity: properties.count + 128)
        encode(into: &writer)
        return writer.bytes
    }
}
