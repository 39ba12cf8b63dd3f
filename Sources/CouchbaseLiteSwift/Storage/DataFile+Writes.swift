import Foundation
import SQLiteKit

/// Saving, deleting and purging documents of a collection in the file's own layout: 2.x rows
/// (rev tree in `body`, spec 3.3) or 3.x rev-tree rows (`body` + `extra`, deleted documents in
/// the `kv_del_` table when the file has it, spec 3.4). Each collection has its own sequences.
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
            layouts = [:]
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

    /// Stores `tree` as the document's row in `keyStore` with its next sequence, replacing
    /// `existing` (the row as read before the edit), and advances its `kvmeta.lastSeq`.
    /// Returns the new sequence.
    package func writeRecord(docID: String, tree: LiteCoreRevTree, existing: DocumentRecord?,
                             in keyStore: KeyStore = .default) throws -> UInt64 {
        try checkWritable()
        guard let current = tree.current else {
            throw CouchbaseLiteError(.assertionFailed, "Cannot store an empty revision tree for '\(docID)'")
        }
        let layout = try existingLayout(of: keyStore)
        let last = try lastSequence(of: keyStore)
        let sequence = last + 1
        let flags = tree.documentFlags
        let deleted = flags.contains(.deleted)
        let table = deleted && layout.hasDeletedTable ? keyStore.deletedTable : keyStore.table
        let oldTable = try existing.map { _ in try tableHolding(docID, in: keyStore) } ?? nil
        let columns: [String]
        let values: [SQLiteValue]
        if layout.hasExtraColumn {
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
            try connection.run("UPDATE \(KeyStore.quoted(table)) SET \(sets) WHERE key=?", values + [.text(docID)])
        } else {
            var allColumns = ["key"] + columns
            var allValues = [SQLiteValue.text(docID)] + values
            if let oldTable {
                // A 3.x document moving between its kv_ and kv_del_ tables keeps its expiration.
                try connection.run("DELETE FROM \(KeyStore.quoted(oldTable)) WHERE key=?", [.text(docID)])
                let hasExpiration = table == keyStore.table ? layout.hasExpirationColumn : layout.deletedHasExpirationColumn
                if let ms = existing?.expiration, hasExpiration {
                    allColumns.append("expiration")
                    allValues.append(.integer(ms))
                }
            }
            let marks = allColumns.map { _ in "?" }.joined(separator: ", ")
            try connection.run("INSERT INTO \(KeyStore.quoted(table)) (\(allColumns.joined(separator: ", "))) VALUES (\(marks))", allValues)
        }
        try setLastSequence(sequence, of: keyStore)
        try saveSharedKeysIfChanged()
        return sequence
    }

    /// Removes every trace of a document (LiteCore's purge); counts it in `kvmeta.purgeCnt` where
    /// the file has that column (302+). Returns false when there was no such document.
    package func purgeRecord(docID: String, in keyStore: KeyStore = .default) throws -> Bool {
        try checkWritable()
        guard let table = try tableHolding(docID, in: keyStore) else { return false }
        try connection.run("DELETE FROM \(KeyStore.quoted(table)) WHERE key=?", [.text(docID)])
        try incrementPurgeCount(of: keyStore)
        return true
    }

    /// Sets (milliseconds since 1970, spec 5) or clears a document's expiration.
    package func updateExpiration(docID: String, milliseconds: Int64?, in keyStore: KeyStore = .default) throws {
        try checkWritable()
        if let milliseconds {
            try setExpiration(docID: docID, milliseconds: milliseconds, in: keyStore)
        } else if try existingLayout(of: keyStore).hasExpirationColumn {
            try connection.run("UPDATE \(KeyStore.quoted(keyStore.table)) SET expiration=NULL WHERE key=?", [.text(docID)])
        }
        let layout = try existingLayout(of: keyStore)
        if layout.hasDeletedTable, layout.deletedHasExpirationColumn {
            try connection.run("UPDATE \(KeyStore.quoted(keyStore.deletedTable)) SET expiration=? WHERE key=?",
                               [milliseconds.map { .integer($0) } ?? .null, .text(docID)])
        }
    }

    /// The key-store's live or (3.1+) deleted-documents table, whichever has the document's row.
    private func tableHolding(_ docID: String, in keyStore: KeyStore) throws -> String? {
        let layout = try existingLayout(of: keyStore)
        var tables = [keyStore.table]
        if layout.hasDeletedTable { tables.append(keyStore.deletedTable) }
        for table in tables where try connection.scalarInt("SELECT count(*) FROM \(KeyStore.quoted(table)) WHERE key=?", [.text(docID)]) ?? 0 > 0 {
            return table
        }
        return nil
    }
}
