import Foundation
import SQLiteKit

/// Writing revisions: local edits, inserting replicated revisions with their history, pruning (spec 3.5, 3.6).
extension SQLiteStore {
    /// Inserts one revision row as a leaf. Returns its sequence, or nil when an identical
    /// revision already exists (the UNIQUE(doc_id, revid) constraint; spec 3.5 step 7).
    func insertRevisionRow(numericID: Int64, revID: String, parentSequence: Int64?, current: Bool,
                           deleted: Bool, body: [UInt8]?, hasAttachments: Bool, docType: String?) throws -> Int64? {
        if let body {
            return try body.withUnsafeBytes {
                try insertRevisionRow(numericID: numericID, revID: revID, parentSequence: parentSequence, current: current,
                                      deleted: deleted, bodyBytes: $0, hasAttachments: hasAttachments, docType: docType)
            }
        }
        return try insertRevisionRow(numericID: numericID, revID: revID, parentSequence: parentSequence, current: current,
                                     deleted: deleted, bodyBytes: nil, hasAttachments: hasAttachments, docType: docType)
    }

    /// ``insertRevisionRow(numericID:revID:parentSequence:current:deleted:body:hasAttachments:docType:)``
    /// with the body in a buffer (nil = no body); SQLite copies it.
    func insertRevisionRow(numericID: Int64, revID: String, parentSequence: Int64?, current: Bool,
                           deleted: Bool, bodyBytes body: UnsafeRawBufferPointer?, hasAttachments: Bool,
                           docType: String?) throws -> Int64? {
        let stmt = try connection.cached(static:
            "INSERT INTO revs (doc_id, revid, parent, current, deleted, no_attachments, json, doc_type) VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
        defer { stmt.reset() }
        try stmt.bind(numericID, at: 1)
        try stmt.bind(revID, at: 2)
        try stmt.bind(parentSequence, at: 3)
        try stmt.bind(current, at: 4)
        try stmt.bind(deleted, at: 5)
        try stmt.bind(!hasAttachments, at: 6)
        if let body { try stmt.bindBlob(body, at: 7) } else { try stmt.bindNull(at: 7) }
        try stmt.bind(current ? docType : nil, at: 8)
        do {
            try stmt.step()
        } catch let e as SQLiteError where e.isConstraintViolation {
            return nil
        }
        return connection.lastInsertRowID
    }

    /// ``insertRevisionRow(numericID:revID:parentSequence:current:deleted:bodyBytes:hasAttachments:docType:)``
    /// for a document's first revision: a current, live leaf without parent or attachments. The
    /// same row, with the constant columns in the SQL (half the bindings).
    func insertFirstRevisionRow(numericID: Int64, revID revIDText: UnsafeRawBufferPointer, body: UnsafeRawBufferPointer,
                                docType: String?) throws -> Int64? {
        let stmt = try connection.cached(static:
            "INSERT INTO revs (doc_id, revid, parent, current, deleted, no_attachments, json, doc_type) VALUES (?, ?, NULL, 1, 0, 1, ?, ?)")
        // Text and body are bound in place: the statement is reset before they go away.
        func run(_ docType: UnsafeBufferPointer<UInt8>?) throws -> Int64? {
            defer { stmt.reset() }
            try stmt.bind(numericID, at: 1)
            try stmt.bindTextNoCopy(revIDText, at: 2)
            try stmt.bindBlobNoCopy(body, at: 3)
            if let docType { try stmt.bindTextNoCopy(UnsafeRawBufferPointer(docType), at: 4) } else { try stmt.bindNull(at: 4) }
            do {
                try stmt.step()
            } catch let e as SQLiteError where e.isConstraintViolation {
                return nil
            }
            return connection.lastInsertRowID
        }
        guard var docType else { return try run(nil) }
        return try docType.withUTF8 { try run($0) }
    }

    /// Marks a revision as no longer a leaf. Returns true if it was one.
    @discardableResult
    func makeNonLeaf(sequence: Int64) throws -> Bool {
        try connection.run("UPDATE revs SET current=0, doc_type=null WHERE sequence=? AND current!=0", [.integer(sequence)])
        return connection.changes > 0
    }

    /// Repairs a NULL parent link of an existing revision (spec 3.5 step 7).
    func setParentIfMissing(numericID: Int64, revID: String, parentSequence: Int64) throws {
        try connection.run("UPDATE revs SET parent=? WHERE doc_id=? AND revid=? AND parent IS NULL",
                           [.integer(parentSequence), .integer(numericID), .text(revID)])
    }

    /// Prunes a document's tree to `depth` generations below its newest revisions (spec 3.6).
    /// Returns the number of rows deleted.
    @discardableResult
    func prune(numericID: Int64, minGenerationToKeep minGen: Int, depth: Int) throws -> Int {
        guard minGen > 1 else { return 0 }
        let leafCount = try connection.scalarInt("SELECT count(*) FROM revs WHERE doc_id=? AND current=1", [.integer(numericID)]) ?? 0
        if leafCount <= 1 {
            // REVID collation makes `revid < 'N-'` mean "generation < N".
            try connection.run("DELETE FROM revs WHERE doc_id=? AND revid < ? AND current=0",
                               [.integer(numericID), .text("\(minGen)-")])
            return connection.changes
        }
        // Several branches: keep up to `depth` ancestors of every leaf, delete the rest.
        var deleted = 0
        let delete = try connection.cached(static: "DELETE FROM revs WHERE sequence=?")
        for sequence in try revisionTree(numericID: numericID).sequencesBeyondDepth(depth) {
            try delete.run([.integer(sequence)])
            deleted += 1
        }
        return deleted
    }

    /// Inserts a revision received with its history (new_edits=false; spec 3.5 "forceInsert").
    ///
    /// `history` lists the revision's ID first, then its ancestors, newest first. Returns the new
    /// row's sequence, or nil when the revision was already present.
    func forceInsert(docID: String, revID: String, history: [String], deleted: Bool, body: [UInt8]?,
                     hasAttachments: Bool, docType: String?, maxDepth: Int) throws -> (sequence: Int64?, numericID: Int64) {
        precondition(history.first == revID)   // kept: its one caller passes `history.first` as `revID`
        let (numericID, isNew) = try createNumericID(of: docID)
        var known: [String: (sequence: Int64, current: Bool)] = [:]
        if !isNew {
            let stmt = try connection.cached(static: "SELECT revid, sequence, current FROM revs WHERE doc_id=?")
            try stmt.bind(numericID, at: 1)
            try stmt.forEachRow { known[$0.string(0) ?? ""] = ($0.int64(1), $0.bool(2)) }
        }
        let commonIndex = history.firstIndex { known[$0] != nil }
        if commonIndex == 0 { return (nil, numericID) }    // already have it

        var missing = commonIndex.map { Array(history[..<$0]) } ?? history
        if commonIndex == nil, missing.count > maxDepth { missing = Array(missing.prefix(maxDepth)) }
        var parentSequence: Int64? = commonIndex.map { known[history[$0]]!.sequence }

        // Ancestors oldest first, as bodiless non-leaf rows, then the revision itself.
        for ancestor in missing.dropFirst().reversed() {
            parentSequence = try insertRevisionRow(numericID: numericID, revID: ancestor, parentSequence: parentSequence,
                                                   current: false, deleted: false, body: nil, hasAttachments: false,
                                                   docType: nil)
        }
        let sequence = try insertRevisionRow(numericID: numericID, revID: revID, parentSequence: parentSequence,
                                             current: true, deleted: deleted, body: body,
                                             hasAttachments: hasAttachments, docType: docType)
        if let index = commonIndex, let ancestor = known[history[index]] {
            try makeNonLeaf(sequence: ancestor.sequence)
        }
        // Prune when the incoming generation exceeds the depth (spec 3.6).
        let maxGen = max(RevisionID.generation(revID), known.keys.map(RevisionID.generation).max() ?? 0)
        if maxGen > maxDepth {
            let minGen = maxGen - maxDepth + 1
            let lowest = min(RevisionID.generation(missing.last ?? revID), known.keys.map(RevisionID.generation).min() ?? Int.max)
            if lowest < minGen { try prune(numericID: numericID, minGenerationToKeep: minGen, depth: maxDepth) }
        }
        return (sequence, numericID)
    }
}
