import CouchbaseLite
import Foundation
import JSONCore

extension RESTRouter {
    /// How many changes a filtered feed reads at a time: a filter's `limit` counts the rows
    /// that pass, so the feed reads on until it has enough or the database is exhausted.
    static let filteredChangesBatch = 500

    /// The change rows after `options.since`, and the `last_seq` to report.
    func changeRows(_ db: CBLDatabase, _ options: ChangesOptions) throws -> ([ChangesRow], Int64) {
        let lastSequence = db.lastSequenceNumber
        let test = try changesFilterTest(db, options.filter)
        // Filters see the winner's body; other leaves are read when `style=all_docs` asks for them.
        let needBodies = options.includeDocs || (test != nil && options.filter?.readsDocuments == true)
        var rows: [ChangesRow] = []
        var limited = false
        var since = options.since
        scanning: while true {
            let batch = test == nil ? options.limit : (options.descending ? nil : Self.filteredChangesBatch)
            let changes = try db.syncChanges(since: since, limit: batch, descending: options.descending,
                                             allLeaves: options.allLeaves, docIDs: options.docIDs,
                                             activeOnly: options.activeOnly, includeDocs: needBodies)
            for change in changes {
                guard let row = try changeRow(db, change, options, test: test) else { continue }
                rows.append(row)
                if let limit = options.limit, rows.count >= limit { limited = true; break scanning }
            }
            guard test != nil, !options.descending, let batch, changes.count >= batch, let last = changes.last else { break }
            since = last.sequence
        }
        let lastRowSeq = rows.last?.sequence.localSequence
        let lastSeq: Int64
        if options.descending {
            lastSeq = lastRowSeq ?? options.since
        } else if limited, let lastRowSeq {
            lastSeq = lastRowSeq
        } else {
            // Everything after `since` was scanned: the feed is caught up with the database.
            lastSeq = max(lastSequence, lastRowSeq ?? 0, options.since)
        }
        return (rows, lastSeq)
    }

    /// One row of the feed, nil when the filter passes none of the document's revisions. With
    /// `style=all_docs` each leaf is tested and only passing ones are listed (CouchDB's filter_revs).
    func changeRow(_ db: CBLDatabase, _ change: SyncChange, _ options: ChangesOptions,
                   test: ChangesRevisionTest?) throws -> ChangesRow? {
        var revIDs = change.revIDs
        if let test {
            var leafBodies: [String: SyncRevision]?
            revIDs = try change.revIDs.filter { revID in
                try test(change.docID, revID) {
                    if revID == change.winnerRevID {
                        return Self.typedFilterDocument(docID: change.docID, revID: revID, deleted: change.deleted,
                                                        body: change.winnerBody)
                    }
                    if leafBodies == nil {
                        let leaves = try db.syncLeaves(docID: change.docID, withBodies: true)
                        leafBodies = Dictionary(leaves.map { ($0.revID, $0) }, uniquingKeysWith: { a, _ in a })
                    }
                    let leaf = leafBodies?[revID]
                    return Self.typedFilterDocument(docID: change.docID, revID: revID, deleted: leaf?.deleted ?? false,
                                                    body: leaf?.body)
                }
            }
            if revIDs.isEmpty { return nil }
        }
        var row = ChangesRow(sequence: state.sequence(change.sequence), docID: change.docID, revIDs: revIDs,
                             deleted: change.deleted)
        if options.includeDocs {
            let doc = try changeDocument(db, change, options)
            if case .selector(_, let fields?)? = options.filter, let typed = try? JSONObject(foundation: doc) {
                row.document = (try? JSON.data(.object(fields.extract(from: typed)), sortedKeys: true)) ?? JSONText.bytes(doc)
            } else {
                row.document = JSONText.bytes(doc)
            }
        }
        return row
    }

    /// A revision as filters receive it, typed (its members in stored order): its properties plus
    /// `_id`, `_rev` and `_deleted`.
    static func typedFilterDocument(docID: String, revID: String, deleted: Bool, body: [UInt8]?) -> JSONObject {
        var doc = JSONObject()
        doc["_id"] = .string(docID)
        doc["_rev"] = .string(revID)
        if let body, !body.isEmpty, let props = try? JSON.object(body) {
            for (key, value) in props { doc[key] = value }
        }
        if deleted { doc["_deleted"] = true }
        return doc
    }

    /// A revision as filters receive it: its properties plus `_id`, `_rev` and `_deleted`.
    static func filterDocument(docID: String, revID: String, deleted: Bool, body: [UInt8]?) -> [String: Any] {
        var doc: [String: Any] = [:]
        if let body, !body.isEmpty, let props = try? JSON.parseObject(body) { doc = props }
        doc["_id"] = docID
        doc["_rev"] = revID
        if deleted { doc["_deleted"] = true }
        return doc
    }

    /// The winning revision for `include_docs`, with what `conflicts`, `attachments` and
    /// `att_encoding_info` ask for, as CouchDB's changes feed gives it.
    func changeDocument(_ db: CBLDatabase, _ change: SyncChange, _ options: ChangesOptions) throws -> [String: Any] {
        var doc = Self.filterDocument(docID: change.docID, revID: change.winnerRevID, deleted: change.deleted,
                                      body: change.winnerBody)
        var stored = doc["_attachments"] as? [String: Any]
        if (options.conflicts || options.attachments) && !change.deleted,
           let revision = try db.syncRevision(docID: change.docID, revID: change.winnerRevID) {
            var body = SyncBodyOptions()
            body.conflicts = options.conflicts
            body.attachments = options.attachments
            doc = try db.syncDocumentBody(revision, body)
            if stored == nil { stored = revision.properties?["_attachments"] as? [String: Any] }
        }
        if var attachments = doc["_attachments"] as? [String: Any] {
            // CouchDB shows how an attachment is stored only when asked (`att_encoding_info`).
            for (name, value) in attachments {
                guard var meta = value as? [String: Any] else { continue }
                let storedMeta = stored?[name] as? [String: Any]
                if options.attEncodingInfo, let encoding = storedMeta?["encoding"] as? String {
                    meta["encoding"] = encoding
                    meta["encoded_length"] = storedMeta?["encoded_length"]
                } else {
                    meta["encoding"] = nil
                    meta["encoded_length"] = nil
                }
                attachments[name] = meta
            }
            doc["_attachments"] = attachments
        }
        return doc
    }
}
