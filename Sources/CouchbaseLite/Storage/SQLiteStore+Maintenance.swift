import Foundation
import SQLiteKit

/// Compaction, purging and document expiration in the 1.x schema (spec 3.6–3.9).
extension SQLiteStore {
    // MARK: Compaction (spec 3.7)

    /// Discards the bodies of every non-leaf revision (compaction step 2): leaves, conflicting
    /// and deleted ones included, keep theirs.
    func discardNonLeafBodies() throws {
        try connection.run("UPDATE revs SET json=null, doc_type=null, no_attachments=1 WHERE current=0")
    }

    /// Moves the WAL's content into the database file and rewrites the file compactly
    /// (compaction step 3).
    func checkpointAndVacuum() throws {
        do {
            try connection.execute("PRAGMA wal_checkpoint(RESTART)")
            try connection.execute("VACUUM")
        } catch let e as SQLiteError {
            throw CBLError.database(e)
        }
    }

    /// Copies everything committed into `db.sqlite3` itself and empties the WAL, so the file can
    /// be copied, replaced or re-keyed alone.
    func truncateWAL() throws {
        try connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    }

    /// Every document's numeric ID with the highest generation among its revisions: the work
    /// list of the one-time bulk prune (spec 3.6).
    func highestGenerations() throws -> [(numericID: Int64, generation: Int)] {
        let stmt = try connection.prepare(
            "SELECT doc_id, MAX(CAST(substr(revid, 1, instr(revid, '-') - 1) AS INTEGER)) FROM revs GROUP BY doc_id")
        var work: [(Int64, Int)] = []
        try stmt.forEachRow { work.append(($0.int64(0), $0.int(1))) }
        return work
    }

    // MARK: Purge (spec 3.8)

    /// Deletes a document's `docs` row; the schema's cascade removes its revisions and their
    /// view rows. No tombstone is left.
    func purgeDocument(numericID: Int64) throws {
        try connection.run("DELETE FROM docs WHERE doc_id=?", [.integer(numericID)])
        if connection.changes > 0 { try forgetViewRowCounts() }
    }

    /// Marks every view's row count unknown (`total_docs` -1, the schema's default, counted again
    /// when next needed): a purge's cascade removes index rows without the indexer seeing it.
    func forgetViewRowCounts() throws {
        try connection.run("UPDATE views SET total_docs=-1 WHERE total_docs>=0")
    }

    /// Deletes the rows of a revision purge: the parents left childless become leaves again,
    /// and a document left without revisions loses its `docs` row.
    func purgeRevisions(numericID: Int64, plan: RevsTableTree.PurgePlan) throws {
        let delete = try connection.cached(static: "DELETE FROM revs WHERE sequence=?")
        for sequence in plan.sequences { try delete.run([.integer(sequence)]) }
        if !plan.sequences.isEmpty { try forgetViewRowCounts() }
        for parent in plan.formerParents {
            try connection.run("UPDATE revs SET current=1 WHERE sequence=? AND NOT EXISTS (SELECT 1 FROM revs WHERE parent=?)",
                               [.integer(parent), .integer(parent)])
        }
        if try connection.scalarInt("SELECT count(*) FROM revs WHERE doc_id=?", [.integer(numericID)]) == 0 {
            try purgeDocument(numericID: numericID)
        }
    }

    /// The purge sequence: the `info` key `purge_seq` (ours; absent until the first purge).
    var purgeSequence: Int {
        get throws { try info("purge_seq").flatMap { Int($0) } ?? 0 }
    }

    /// Adds `count` to the purge sequence, in the caller's transaction.
    func advancePurgeSequence(by count: Int) throws {
        guard count > 0 else { return }
        try setInfo("purge_seq", String(try purgeSequence + count))
    }

    // MARK: Expiration (spec 3.9; whole seconds since 1970, NULL or 0 for none)

    /// A document's expiration time in seconds since 1970; nil when it has none.
    func expirationTimestamp(docID: String) throws -> Int64? {
        guard let seconds = try connection.scalarInt("SELECT expiry_timestamp FROM docs WHERE docid=?", [.text(docID)]),
              seconds > 0 else { return nil }
        return seconds
    }

    /// Sets a document's expiration time (seconds since 1970), or clears it with nil (iOS stores NULL).
    func setExpirationTimestamp(_ seconds: Int64?, docID: String) throws {
        let value: SQLiteValue = seconds.map { .integer($0) } ?? .null
        try connection.run("UPDATE docs SET expiry_timestamp=? WHERE docid=?", [value, .text(docID)])
    }

    /// The IDs of the documents whose expiration time is `now` or earlier.
    func expiredDocumentIDs(now: Int64) throws -> [String] {
        let stmt = try connection.cached(static:
            "SELECT docid FROM docs WHERE expiry_timestamp IS NOT NULL AND expiry_timestamp > 0 AND expiry_timestamp <= ?")
        var ids: [String] = []
        try stmt.bind(now, at: 1)
        try stmt.forEachRow { ids.append($0.string(0) ?? "") }
        return ids
    }

    /// The earliest expiration time of any document; nil when none expires.
    func nextExpirationTimestamp() throws -> Int64? {
        try connection.scalarInt("SELECT MIN(expiry_timestamp) FROM docs WHERE expiry_timestamp IS NOT NULL AND expiry_timestamp > 0")
    }
}
