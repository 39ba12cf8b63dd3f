import Foundation
import JSONCore

/// A replication checkpoint as the peer keeps it: the `_local/<checkpoint-id>` document
/// (spec 9.6). 1.x writes `lastSequence`; CouchDB's replicator `source_last_seq`, `session_id`
/// and a `history`. Members this type does not interpret are kept as JSON text and written
/// back unchanged, so a save replaces only the sequence.
package struct Checkpoint: Sendable, Equatable {
    /// `_local/…`.
    package var id: String
    package var rev: String?
    /// The 1.x member: the last sequence fully replicated, as text.
    package var lastSequence: String?
    /// Every other member, by name, as JSON text.
    package var otherMembers: [String: String]

    package init(id: String, rev: String? = nil, lastSequence: String? = nil, otherMembers: [String: String] = [:]) {
        self.id = id
        self.rev = rev
        self.lastSequence = lastSequence
        self.otherMembers = otherMembers
    }

    /// Reads a checkpoint document; `fallbackID` names it when `_id` is missing.
    package init(json: JSONObject, fallbackID: String) throws {
        id = json["_id"]?.stringValue ?? fallbackID
        rev = json["_rev"]?.stringValue
        // 1.x stores text, but peers that wrote a number are read too.
        lastSequence = RemoteSequence(json: json["lastSequence"])?.checkpointString
        var others: [String: String] = [:]
        for (key, value) in json where key != "_id" && key != "_rev" && key != "lastSequence" {
            others[key] = try JSON.string(value, sortedKeys: false)
        }
        otherMembers = others
    }

    /// Reads a checkpoint document from JSON text; 502 when it is not an object.
    package init(jsonText: [UInt8], fallbackID: String) throws {
        guard let object = try? JSON.object(jsonText) else {
            throw CBLError(502, "The remote checkpoint is not a JSON object")
        }
        try self.init(json: object, fallbackID: fallbackID)
    }

    /// The document as JSON text: `_id`, `_rev`, `lastSequence`, then the other members sorted.
    package var encoded: [UInt8] {
        var writer = JSONWriter(capacity: 128)
        writer.writeRaw(#"{"_id":"#.utf8)
        writer.writeString(id)
        if let rev {
            writer.writeRaw(#","_rev":"#.utf8)
            writer.writeString(rev)
        }
        if let lastSequence {
            writer.writeRaw(#","lastSequence":"#.utf8)
            writer.writeString(lastSequence)
        }
        for key in otherMembers.keys.sorted() {
            writer.writeRawByte(UInt8(ascii: ","))
            writer.writeString(key)
            writer.writeRawByte(UInt8(ascii: ":"))
            writer.writeRaw(otherMembers[key]!.utf8)
        }
        writer.writeRawByte(UInt8(ascii: "}"))
        return writer.bytes
    }
}
