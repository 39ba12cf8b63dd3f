import Foundation
import SQLiteKit

/// Saving, deleting and purging documents of the default collection in the file's own layout:
/// 2.x rows (rev tree in `body`, spec 3.3) or 3.x rev-tree rows (`body` + `extra`, deleted
/// documents in `kv_del_default` when the file has it, spec 3.4).
extension DataFile {
    /// Runs `body` in a transaction (a savepoint when one is already open).
    package func inTransaction<R>(_ body: () throws -> R) throws -> R {
        try connection.begin()
        do {
            let result = try body()
            try connection.commit()
            return result
        } catch {
            try? connection.rollback()
            // The in-memory table keeps keys the rolled-back bodies added (codes are never
            // reused); the next write stores the table again so file and memory agree (spec 6.7).
            sharedKeysCountSaved = -1
            throw error
        }
    }

    /// `kv_info['maxRevTreeDepth']` (8-byte big-endian), else LiteCore's default (spec 2.4).
    package func maxRevTreeDepth() throws -> Int {
        guard let bytes = try info(Schema2.InfoKey.maxRevTreeDepth), bytes.count == 8 else {
            return Schema2.defaultMaxRevTreeDepth
        }
        let value = bytes.reduce(0) { $0 << 8 | UInt64($1) }
        return value > 0 && value < 10_000 ? Int(value) : Schema2.defaultMaxRevTreeDepth
    }

    /// Refuses writes to version-vector files (spec 3.6), which this package cannot keep consistent.
    package func checkWritable() throws {
        guard versioning < 2 else {
            throw CouchbaseLiteError(.unsupported, "\(directory.lastPathComponent) uses version vectors; writing them is not supported")
        }
    }

    /// Stores `tree` as the document's row with the next sequence, replacing `existing` (the row
    /// as read before the edit), and advances `kvmeta.lastSeq`. Returns the new sequence.
    package func writeRecord(docID: String, tree: RevisionTree, existing: DocumentRecord?) throws -> UInt64 {
        try checkWritable()
        guard let current = tree.current else {
            throw CouchbaseLiteError(.assertionFailed, "Cannot store an empty revision tree for '\(docID)'")
        }
        let last = try lastSequence()
        let sequence = last + 1
        let flags = tree.documentFlags
        let deleted = flags.contains(.deleted)
        let table = deleted && hasDeletedTable ? Schema2.deletedDefaultTable : Schema2.defaultTable
        let oldTable = try existing.map { _ in try tableHolding(docID) } ?? nil
        let columns: [String]
        let values: [SQLiteValue]
        if hasExtraColumn {
            columns = ["sequence", "flags", "version", "body", "extra"]
            values = [.integer(Int64(sequence)), .integer(flags.rawValue), .blob(current.revID),
                      .blob(current.body ?? []), .blob(tree.encoded(includeCurrentBody: false))]
        } else {
            columns = ["sequence", "flags", "version", "body"]
            values = [.integer(Int64(sequence)), .integer(flags.rawValue), .blob(current.revID), .blob(tree.encoded())]
        }
        if oldTable == table {
            // UPDATE, not INSERT OR REPLACE: the row keeps its `expiration`, as in LiteCore.
            let sets = columns.map { "\($0)=?" }.joined(separator: ", ")
            try connection.run("UPDATE \(quoteIdentifier(table)) SET \(sets) WHERE key=?", values + [.text(docID)])
        } else {
            var allColumns = ["key"] + columns
            var allValues = [SQLiteValue.text(docID)] + values
            if let oldTable {
                // A 3.x document moving between kv_default and kv_del_default keeps its expiration.
                try connection.run("DELETE FROM \(quoteIdentifier(oldTable)) WHERE key=?", [.text(docID)])
                if let ms = existing?.expiration, try connection.columns(of: table).contains("expiration") {
                    allColumns.append("expiration")
                    allValues.append(.integer(ms))
                }
            }
            let marks = allColumns.map { _ in "?" }.joined(separator: ", ")
            try connection.run("INSERT INTO \(quoteIdentifier(table)) (\(allColumns.joined(separator: ", "))) VALUES (\(marks))", allValues)
        }
        try connection.run("UPDATE kvmeta SET lastSeq=? WHERE name=?", [.integer(Int64(sequence)), .text(Schema2.defaultKeyStore)])
        try saveSharedKeysIfChanged()
        return sequence
    }

    /// Removes every trace of a document (LiteCore's purge); counts it in `kvmeta.purgeCnt` where
    /// the file has that column (302+). Returns false when there was no such document.
    package func purgeRecord(docID: String) throws -> Bool {
        try checkWritable()
        guard let table = try tableHolding(docID) else { return false }
        try connection.run("DELETE FROM \(quoteIdentifier(table)) WHERE key=?", [.text(docID)])
        if try connection.columns(of: "kvmeta").contains("purgeCnt") {
            try connection.run("UPDATE kvmeta SET purgeCnt=purgeCnt+1 WHERE name=?", [.text(Schema2.defaultKeyStore)])
        }
        return true
    }

    /// Sets (milliseconds since 1970, spec 5) or clears a document's expiration.
    package func updateExpiration(docID: String, milliseconds: Int64?) throws {
        try checkWritable()
        if let milliseconds {
            try setExpiration(docID: docID, milliseconds: milliseconds)
        } else if hasExpirationColumn {
            try connection.run("UPDATE kv_default SET expiration=NULL WHERE key=?", [.text(docID)])
        }
        if hasDeletedTable, try connection.columns(of: Schema2.deletedDefaultTable).contains("expiration") {
            try connection.run("UPDATE kv_del_default SET expiration=? WHERE key=?",
                               [milliseconds.map { .integer($0) } ?? .null, .text(docID)])
        }
    }

    /// `kv_default` or (3.1+) `kv_del_default`, whichever has the document's row.
    private func tableHolding(_ docID: String) throws -> String? {
        var tables = [Schema2.defaultTable]
        if hasDeletedTable { tables.append(Schema2.deletedDefaultTable) }
        for table in tables where try connection.scalarInt("SELECT count(*) FROM \(quoteIdentifier(table)) WHERE key=?", [.text(docID)]) ?? 0 > 0 {
            return table
        }
        return nil
    }
}
