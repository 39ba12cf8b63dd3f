import Foundation
import JSONCore

/// One entry of a `_bulk_get` answer (`{"id": …, "docs": [{"ok": …} | {"error": …}]}`): what
/// became of one requested revision. The puller reads them; the listener writes them, one at a
/// time as it streams its answer.
package struct BulkGetResult: Sendable {
    /// A revision that could not be returned, as the answer's `error` object names it.
    package struct Failure: Sendable, Equatable, Error {
        package var docID: String?
        package var revID: String?
        /// CouchDB's error name (`not_found`, `forbidden`…).
        package var error: String
        package var reason: String
        /// The HTTP status (Sync Gateway sends one; otherwise derived from ``error``).
        package var status: Int

        package init(docID: String?, revID: String?, error: String, reason: String, status: Int? = nil) {
            self.docID = docID
            self.revID = revID
            self.error = error
            self.reason = reason
            self.status = status ?? Failure.status(of: error)
        }

        /// Reads an `error` object.
        package init(json: JSONObject) {
            let name = json["error"]?.stringValue ?? "unknown"
            self.init(docID: json["id"]?.stringValue, revID: json["rev"]?.stringValue, error: name,
                      reason: json["reason"]?.stringValue ?? name, status: json["status"]?.intValue)
        }

        /// The status CouchDB answers with for an error name.
        static func status(of error: String) -> Int {
            switch error {
            case "not_found", "missing": return 404
            case "forbidden": return 403
            case "unauthorized": return 401
            case "gone": return 410
            case "bad_request": return 400
            default: return 502
            }
        }

        /// Writes the `error` object in CouchDB's member order (`id`, `rev`, `error`, `reason`);
        /// an unknown document or revision is `null` / `"undefined"` as CouchDB writes them.
        package func encode(into writer: inout JSONWriter) {
            writer.writeRaw(#"{"id":"#.utf8)
            if let docID { writer.writeString(docID) } else { writer.writeRaw("null".utf8) }
            writer.writeRaw(#","rev":"#.utf8)
            if let revID { writer.writeString(revID) } else { writer.writeRaw("null".utf8) }
            writer.writeRaw(#","error":"#.utf8)
            writer.writeString(error)
            writer.writeRaw(#","reason":"#.utf8)
            writer.writeString(reason)
            writer.writeRawByte(UInt8(ascii: "}"))
        }
    }

    /// One element of `docs`.
    package enum Entry: Sendable {
        /// A revision read from a peer's answer.
        case revision(IncomingRevision)
        /// A revision to send, already written as JSON text (the listener's documents, with
        /// whatever `_revs_info`/`_conflicts`/attachments the request asked for).
        case encodedRevision([UInt8])
        case failure(Failure)
    }

    /// The requested document ID (nil when the request entry had none).
    package var docID: String?
    package var docs: [Entry]

    package init(docID: String?, docs: [Entry]) {
        self.docID = docID
        self.docs = docs
    }

    /// Reads one parsed entry of `results`; a revision that cannot be read becomes a failure
    /// of that revision alone.
    package init(json: JSONObject) {
        docID = json["id"]?.stringValue
        var docs: [Entry] = []
        for item in json["docs"]?.arrayValue ?? [] {
            if case .object(let doc)? = item["ok"] {
                do {
                    docs.append(.revision(try IncomingRevision(json: doc)))
                } catch {
                    let e = error as? CBLError ?? CBLError(502, "\(error)")
                    docs.append(.failure(Failure(docID: doc["_id"]?.stringValue ?? json["id"]?.stringValue,
                                                 revID: doc["_rev"]?.stringValue, error: "bad_request",
                                                 reason: e.message, status: e.code)))
                }
            } else if case .object(let error)? = item["error"] {
                docs.append(.failure(Failure(json: error)))
            }
        }
        self.docs = docs
    }

    /// Reads a whole JSON answer (`{"results": [...]}`); 502 when it is not one.
    package static func decodeAnswer(_ body: [UInt8]) throws -> [BulkGetResult] {
        guard let object = try? JSON.object(body), case .array(let results)? = object["results"] else {
            throw CBLError(502, "_bulk_get answer has no results")
        }
        return results.compactMap { $0.objectValue.map(BulkGetResult.init(json:)) }
    }

    /// Writes the entry (`{"id":…,"docs":[…]}`).
    package func encode(into writer: inout JSONWriter) {
        writer.writeRaw(#"{"id":"#.utf8)
        if let docID { writer.writeString(docID) } else { writer.writeRaw("null".utf8) }
        writer.writeRaw(#","docs":["#.utf8)
        for (index, entry) in docs.enumerated() {
            if index > 0 { writer.writeRawByte(UInt8(ascii: ",")) }
            switch entry {
            case .revision(let revision):
                writer.writeRaw(#"{"ok":"#.utf8)
                revision.encode(into: &writer)
            case .encodedRevision(let json):
                writer.writeRaw(#"{"ok":"#.utf8)
                writer.writeRaw(json)
            case .failure(let failure):
                writer.writeRaw(#"{"error":"#.utf8)
                failure.encode(into: &writer)
            }
            writer.writeRawByte(UInt8(ascii: "}"))
        }
        writer.writeRaw("]}".utf8)
    }

    /// The opening of a JSON answer, before the entries.
    package static let answerPrefix = Array(#"{"results":["#.utf8)
    /// The end of a JSON answer, after the entries.
    package static let answerSuffix = Array("]}".utf8)
}
