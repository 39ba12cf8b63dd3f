import Foundation
import JSONCore

/// `_revs_diff` (spec 9.5): the revisions a peer offers, per document, and the answer naming
/// those the receiver lacks with the revisions it has that could be their ancestors (the
/// sender's `atts_since`).
package enum RevsDiff {
    /// The revisions offered for one document.
    package struct Offer: Sendable, Equatable {
        package var docID: String
        package var revIDs: [String]

        package init(docID: String, revIDs: [String]) {
            self.docID = docID
            self.revIDs = revIDs
        }
    }

    /// The answer for one document that lacks some of the offered revisions.
    package struct Missing: Sendable, Equatable {
        package var missing: [String]
        package var possibleAncestors: [String]

        package init(missing: [String], possibleAncestors: [String] = []) {
            self.missing = missing
            self.possibleAncestors = possibleAncestors
        }
    }

    /// Reads a request body `{"doc": ["rev", …], …}`; 400 when a value is not a list of strings.
    package static func decodeRequest(_ body: [UInt8]) throws -> [Offer] {
        let object: JSONObject
        do {
            object = try JSON.object(body)
        } catch {
            throw CBLError.badRequest("The _revs_diff request is not a JSON object")
        }
        return try decodeRequest(json: object)
    }

    /// Reads a parsed request body, documents in the order sent.
    package static func decodeRequest(json object: JSONObject) throws -> [Offer] {
        try object.map { docID, value in
            guard let revIDs = strings(value) else {
                throw CBLError.badRequest("Revisions of '\(docID)' must be an array of strings")
            }
            return Offer(docID: docID, revIDs: revIDs)
        }
    }

    /// The strings of an array of strings; nil for anything else.
    private static func strings(_ value: JSONValue?) -> [String]? {
        guard case .array(let items)? = value else { return nil }
        var out: [String] = []
        out.reserveCapacity(items.count)
        for item in items {
            guard case .string(let s) = item else { return nil }
            out.append(s)
        }
        return out
    }

    /// Writes a request body, documents in the order given.
    package static func encodeRequest(_ offers: [Offer]) -> [UInt8] {
        var writer = JSONWriter(capacity: 64 * offers.count + 2)
        writer.writeRawByte(UInt8(ascii: "{"))
        for (index, offer) in offers.enumerated() {
            if index > 0 { writer.writeRawByte(UInt8(ascii: ",")) }
            writer.writeString(offer.docID)
            writer.writeRawByte(UInt8(ascii: ":"))
            writeList(offer.revIDs, into: &writer)
        }
        writer.writeRawByte(UInt8(ascii: "}"))
        return writer.bytes
    }

    /// Reads an answer `{"doc": {"missing": […], "possible_ancestors": […]}, …}`; 502 when
    /// malformed.
    package static func decodeAnswer(_ body: [UInt8]) throws -> [String: Missing] {
        guard let object = try? JSON.object(body) else {
            throw CBLError(502, "The _revs_diff answer is not a JSON object")
        }
        var answer: [String: Missing] = [:]
        answer.reserveCapacity(object.count)
        for (docID, value) in object {
            guard let missing = strings(value["missing"]) else {
                throw CBLError(502, "Malformed _revs_diff answer for '\(docID)'")
            }
            answer[docID] = Missing(missing: missing, possibleAncestors: strings(value["possible_ancestors"]) ?? [])
        }
        return answer
    }

    /// Writes an answer: documents sorted by ID, members in CouchDB's order, `possible_ancestors`
    /// only when there are some (as CouchDB does).
    package static func encodeAnswer(_ answer: [String: Missing]) -> [UInt8] {
        var writer = JSONWriter(capacity: 96 * answer.count + 2)
        writer.writeRawByte(UInt8(ascii: "{"))
        for (index, docID) in answer.keys.sorted().enumerated() {
            let entry = answer[docID]!
            if index > 0 { writer.writeRawByte(UInt8(ascii: ",")) }
            writer.writeString(docID)
            writer.writeRaw(#":{"missing":"#.utf8)
            writeList(entry.missing, into: &writer)
            if !entry.possibleAncestors.isEmpty {
                writer.writeRaw(#","possible_ancestors":"#.utf8)
                writeList(entry.possibleAncestors, into: &writer)
            }
            writer.writeRawByte(UInt8(ascii: "}"))
        }
        writer.writeRawByte(UInt8(ascii: "}"))
        return writer.bytes
    }

    private static func writeList(_ strings: [String], into writer: inout JSONWriter) {
        writer.writeRawByte(UInt8(ascii: "["))
        for (index, s) in strings.enumerated() {
            if index > 0 { writer.writeRawByte(UInt8(ascii: ",")) }
            writer.writeString(s)
        }
        writer.writeRawByte(UInt8(ascii: "]"))
    }
}
