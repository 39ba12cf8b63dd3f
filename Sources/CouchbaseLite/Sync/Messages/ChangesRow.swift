import Foundation
import JSONCore

/// One row of a `_changes` feed (spec 9.3): a document, its sequence, and the leaf revisions
/// that changed (every leaf with `style=all_docs`, else the winner).
package struct ChangesRow: Sendable, Equatable {
    package var sequence: RemoteSequence
    package var docID: String
    package var revIDs: [String]
    /// The document's winning revision is a deletion.
    package var deleted: Bool
    /// The winning revision (`include_docs`) as JSON text; nil when not asked for.
    package var document: [UInt8]?

    package init(sequence: RemoteSequence, docID: String, revIDs: [String], deleted: Bool = false,
                 document: [UInt8]? = nil) {
        self.sequence = sequence
        self.docID = docID
        self.revIDs = revIDs
        self.deleted = deleted
        self.document = document
    }

    /// Reads a parsed row; 587 (CBL's "bad changes feed") when it is not one.
    package init(json row: JSONObject) throws {
        guard let docID = row["id"]?.stringValue, case .array(let changes)? = row["changes"],
              let sequence = RemoteSequence(json: row["seq"]) else {
            throw CBLError(587, "Malformed row in the remote changes feed")
        }
        self.docID = docID
        self.sequence = sequence
        revIDs = changes.compactMap { $0["rev"]?.stringValue }
        deleted = row["deleted"]?.boolValue ?? false
        document = try row["doc"].map { try JSON.data($0, sortedKeys: true) }
    }

    /// Writes the row in CouchDB's member order (`seq`, `id`, `changes`, `deleted`, `doc`).
    package func encode(into writer: inout JSONWriter) {
        writer.writeRaw(#"{"seq":"#.utf8)
        sequence.encode(into: &writer)
        writer.writeRaw(#","id":"#.utf8)
        writer.writeString(docID)
        writer.writeRaw(#","changes":["#.utf8)
        for (index, revID) in revIDs.enumerated() {
            writer.writeRaw((index == 0 ? #"{"rev":"# : #",{"rev":"#).utf8)
            writer.writeString(revID)
            writer.writeRawByte(UInt8(ascii: "}"))
        }
        writer.writeRawByte(UInt8(ascii: "]"))
        if deleted { writer.writeRaw(#","deleted":true"#.utf8) }
        if let document {
            writer.writeRaw(#","doc":"#.utf8)
            writer.writeRaw(document)
        }
        writer.writeRawByte(UInt8(ascii: "}"))
    }

    /// The row as JSON text.
    package var encoded: [UInt8] {
        var writer = JSONWriter(capacity: 128 + (document?.count ?? 0))
        encode(into: &writer)
        return writer.bytes
    }
}

extension ChangesRow {
    /// A whole `feed=normal`/`longpoll` answer: its rows and `last_seq` (nil when absent).
    package static func decodeFeed(_ body: [UInt8]) throws -> (rows: [ChangesRow], lastSequence: RemoteSequence?) {
        let object: JSONObject
        do {
            object = try JSON.object(body)
        } catch {
            throw CBLError(587, "The remote changes feed is not a JSON object")
        }
        guard case .array(let results)? = object["results"] else {
            throw CBLError(587, "The remote changes feed has no results list")
        }
        var rows: [ChangesRow] = []
        rows.reserveCapacity(results.count)
        for item in results {
            guard case .object(let row) = item else { throw CBLError(587, "Malformed row in the remote changes feed") }
            rows.append(try ChangesRow(json: row))
        }
        return (rows, RemoteSequence(json: object["last_seq"]))
    }

    /// The opening of a feed answer, before the rows (CouchDB puts each row on its own line).
    package static let feedPrefix = Array("{\"results\":[\n".utf8)

    /// What separates two rows of a feed answer (CouchDB 3 writes `,\r\n`).
    package static let feedSeparator = Array(",\r\n".utf8)

    /// The end of a feed answer, after the rows.
    package static func feedSuffix(lastSequence: RemoteSequence, pending: Int? = nil) -> [UInt8] {
        var writer = JSONWriter(capacity: 64)
        writer.writeRaw("\n],\n\"last_seq\":".utf8)
        lastSequence.encode(into: &writer)
        if let pending { writer.writeRaw(",\"pending\":\(pending)".utf8) }
        writer.writeRaw("}\n".utf8)
        return writer.bytes
    }
}
