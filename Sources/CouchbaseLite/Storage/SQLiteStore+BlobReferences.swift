import JSONCore
import SQLiteKit

/// The blob references of the 1.x `revs` table (spec 4.5): the one rule saying which blobs a
/// database still needs, used by compaction's garbage collector and by `cbl check`.
extension SQLiteStore {
    /// Calls `body` with every attachment of every revision that still has a body and is not
    /// marked `no_attachments=1` (the 1.x collector's rows), in document ID, then sequence order.
    func forEachBlobReference(_ body: (BlobReference) throws -> Void) throws {
        try Self.forEachBlobReference(on: connection, body)
    }

    /// ``forEachBlobReference(_:)`` on a connection opened on a 1.x file outside a store
    /// (read-only tools); the connection needs the 1.x collations (``registerCollations(on:)``).
    package static func forEachBlobReference(on connection: SQLiteConnection,
                                             _ body: (BlobReference) throws -> Void) throws {
        let stmt = try connection.prepare("""
            SELECT docs.docid, revs.revid, revs.json FROM revs LEFT JOIN docs ON docs.doc_id = revs.doc_id
            WHERE revs.no_attachments != 1 AND revs.json IS NOT NULL ORDER BY docs.docid, revs.sequence
            """)
        try stmt.forEachRow { row in
            guard let json = row.bytes(2), !json.isEmpty,
                  let properties = try? JSON.parseObject(json),
                  let attachments = properties["_attachments"] as? [String: Any] else { return }
            let documentID = row.string(0) ?? "", revisionID = row.string(1) ?? ""
            for (name, item) in attachments.sorted(by: { $0.key < $1.key }) {
                guard let meta = item as? [String: Any], let digest = meta["digest"] as? String else { continue }
                let gzip = (meta["encoding"] as? String) == "gzip"
                try body(BlobReference(documentID: documentID, revisionID: revisionID, attachmentName: name,
                                       digest: digest, key: BlobKey(digest: digest),
                                       storedLength: (gzip ? meta["encoded_length"] : meta["length"]) as? Int))
            }
        }
    }
}
