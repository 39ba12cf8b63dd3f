import Foundation
import SQLiteKit

/// Reading documents and revisions (spec 3.4).
extension SQLiteStore {
    var lastSequence: Int64 {
        get throws { try connection.scalarInt("SELECT seq FROM sqlite_sequence WHERE name='revs'") ?? 0 }
    }

    var documentCount: Int {
        get throws {
            Int(try connection.scalarInt("SELECT COUNT(DISTINCT doc_id) FROM revs WHERE current=1 AND deleted=0") ?? 0)
        }
    }

    /// The internal numeric ID of a document, or nil when the store has never seen it.
    func numericID(of docID: String) throws -> Int64? {
        let stmt = try connection.cached(static: "SELECT doc_id FROM docs WHERE docid=?")
        defer { stmt.reset() }
        try stmt.bind(docID, at: 1)
        return try stmt.step() ? stmt.int64(0) : nil
    }

    /// The numeric ID of a document, creating its `docs` row if needed. `isNew` tells which.
    func createNumericID(of docID: String) throws -> (id: Int64, isNew: Bool) {
        if let id = try createNumericIDIfNew(of: docID) { return (id, true) }
        guard let id = try numericID(of: docID) else { throw CBLError.dbError("docs row vanished for \(docID)") }
        return (id, false)
    }

    /// Creates the `docs` row of a document the store has never seen and returns its numeric ID;
    /// nil (and nothing written) when the row already exists.
    func createNumericIDIfNew(of docID: String) throws -> Int64? {
        let insert = try connection.cached(static: "INSERT OR IGNORE INTO docs (docid) VALUES (?)")
        var docID = docID
        return try docID.withUTF8 { text in
            // Bound in place: the statement is reset before `text` goes away.
            defer { insert.reset() }
            try insert.bindTextNoCopy(UnsafeRawBufferPointer(text), at: 1)
            try insert.step()
            return connection.changes > 0 ? connection.lastInsertRowID : nil
        }
    }

    /// The winning revision (spec 3.4): non-deleted leaves first, then highest revID.
    func winningRevision(docID: String, numericID: Int64, withBody: Bool = true) throws -> StoredRevision? {
        let stmt = try connection.cached(static:
            "SELECT sequence, revid, deleted, json FROM revs WHERE doc_id=? AND current=1 ORDER BY deleted ASC, revid DESC LIMIT 1")
        defer { stmt.reset() }
        try stmt.bind(numericID, at: 1)
        guard try stmt.step() else { return nil }
        return StoredRevision(docID: docID, revID: stmt.string(1) ?? "", sequence: stmt.int64(0),
                              deleted: stmt.bool(2), body: withBody ? stmt.bytes(3) : nil)
    }

    /// The winning revision of a document ID, or nil if it has none (one indexed join).
    func winningRevision(docID: String, withBody: Bool = true) throws -> StoredRevision? {
        let stmt = try connection.cached(static: withBody
            ? "SELECT sequence, revid, deleted, json FROM revs, docs WHERE docs.docid=? AND revs.doc_id=docs.doc_id AND current=1 ORDER BY deleted ASC, revid DESC LIMIT 1"
            : "SELECT sequence, revid, deleted FROM revs, docs WHERE docs.docid=? AND revs.doc_id=docs.doc_id AND current=1 ORDER BY deleted ASC, revid DESC LIMIT 1")
        defer { stmt.reset() }
        try stmt.bind(docID, at: 1)
        guard try stmt.step() else { return nil }
        return StoredRevision(docID: docID, revID: stmt.string(1) ?? "", sequence: stmt.int64(0),
                              deleted: stmt.bool(2), body: withBody ? stmt.bytes(3) : nil)
    }

    /// One revision by ID.
    func revision(docID: String, numericID: Int64, revID: String, withBody: Bool = true) throws -> StoredRevision? {
        let stmt = try connection.cached(static:
            "SELECT sequence, deleted, json, current FROM revs WHERE doc_id=? AND revid=? LIMIT 1")
        defer { stmt.reset() }
        try stmt.bind(numericID, at: 1)
        try stmt.bind(revID, at: 2)
        guard try stmt.step() else { return nil }
        return StoredRevision(docID: docID, revID: revID, sequence: stmt.int64(0), deleted: stmt.bool(1),
                              body: withBody ? stmt.bytes(2) : nil, isLeaf: stmt.bool(3))
    }

    func revision(docID: String, revID: String, withBody: Bool = true) throws -> StoredRevision? {
        guard let id = try numericID(of: docID) else { return nil }
        return try revision(docID: docID, numericID: id, revID: revID, withBody: withBody)
    }

    /// The body of a revision by sequence (nil if unavailable).
    func body(sequence: Int64) throws -> [UInt8]? {
        let stmt = try connection.cached(static: "SELECT json FROM revs WHERE sequence=?")
        defer { stmt.reset() }
        try stmt.bind(sequence, at: 1)
        guard try stmt.step() else { return nil }
        return stmt.bytes(0)
    }

    /// Every leaf of a document, winner first.
    func leaves(docID: String, numericID: Int64, withBodies: Bool = false) throws -> [StoredRevision] {
        let stmt = try connection.cached(static:
            "SELECT sequence, revid, deleted, json FROM revs WHERE doc_id=? AND current=1 ORDER BY deleted ASC, revid DESC")
        var result: [StoredRevision] = []
        try stmt.bind(numericID, at: 1)
        try stmt.forEachRow { row in
            result.append(StoredRevision(docID: docID, revID: row.string(1) ?? "", sequence: row.int64(0),
                                         deleted: row.bool(2), body: withBodies ? row.bytes(3) : nil))
        }
        return result
    }

    /// A document's revision tree (spec 3.4), newest sequence first; empty for an unknown document.
    func revisionTree(numericID: Int64) throws -> RevsTableTree {
        let stmt = try connection.cached(static:
            "SELECT sequence, revid, deleted, json IS NOT NULL, parent, current FROM revs WHERE doc_id=? ORDER BY sequence DESC")
        var nodes: [RevsTableTree.Node] = []
        try stmt.bind(numericID, at: 1)
        try stmt.forEachRow { row in
            nodes.append(RevsTableTree.Node(sequence: row.int64(0), revID: row.string(1) ?? "",
                                           parent: row.isNull(4) ? nil : row.int64(4), current: row.bool(5),
                                           deleted: row.bool(2), hasBody: row.bool(3)))
        }
        return RevsTableTree(nodes: nodes)
    }

    /// The history of a revision, itself first, following `parent` links (spec 3.4).
    func history(docID: String, numericID: Int64, sequence: Int64) throws -> [StoredRevision] {
        try revisionTree(numericID: numericID).history(of: sequence).map { node in
            StoredRevision(docID: docID, revID: node.revID, sequence: node.sequence,
                           deleted: node.deleted, body: nil, isLeaf: node.current)
        }
    }

    /// The rev IDs of a document's history, newest first.
    func historyRevIDs(docID: String, numericID: Int64, sequence: Int64) throws -> [String] {
        try history(docID: docID, numericID: numericID, sequence: sequence).map(\.revID)
    }

    /// All document IDs with their numeric IDs (used by the legacy upgrader and tests).
    func allDocIDs() throws -> [(Int64, String)] {
        let stmt = try connection.prepare("SELECT doc_id, docid FROM docs ORDER BY docid")
        var out: [(Int64, String)] = []
        try stmt.forEachRow { out.append(($0.int64(0), $0.string(1) ?? "")) }
        return out
    }
}
