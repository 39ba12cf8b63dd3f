import Foundation
import SQLiteKit

/// One index as LiteCore records it (spec 2.2): a row of the `indexes` table, or, in files made
/// before 2.5, a plain SQLite index on `kv_default` named by the user.
package struct IndexRecord: Sendable, Equatable {
    /// LiteCore's `C4IndexType`: 0 value, 1 full-text, 2 array, 3 predictive, 4 vector.
    package enum Kind: Int, Sendable { case value = 0, fullText = 1, array = 2, predictive = 3, vector = 4 }

    package var name: String
    package var type: Int
    package var keyStore: String
    /// The JSON array of the index's key expressions (spec 9.1), as LiteCore stores it.
    package var expression: String?
}

/// Value indexes on the default collection, made and recorded as LiteCore makes them (spec 2.1,
/// 2.2): `CREATE INDEX "name" ON "kv_default" (fl_value(body, 'a'), …)` plus a row in `indexes`.
/// Real LiteCore puts no WHERE on a value index (deleted rows are indexed; queries filter them).
extension DataFile {
    static let indexesTable = "indexes"
    /// LiteCore 2.5 adds the `indexes` table with the first index and marks the file 301 (spec 2.1).
    static let indexesSchemaVersion = 301
    static let jsonPrefix = "=j"

    /// The `LCUnicode_…` collations the file's index expressions use: writes to `kv_default`
    /// evaluate them, so they are registered when the database opens.
    package func collationsUsedByIndexes() throws -> Set<String> {
        let stmt = try connection.prepare("SELECT sql FROM sqlite_master WHERE type='index' AND sql LIKE '%LCUnicode%'")
        var names: Set<String> = []
        while try stmt.step() {
            let sql = stmt.string(0) ?? ""
            var rest = sql[...]
            while let r = rest.range(of: "LCUnicode_") {
                let tail = rest[r.lowerBound...]
                let name = tail.prefix { $0.isLetter || $0.isNumber || $0 == "_" }
                names.insert(String(name))
                rest = tail.dropFirst(name.count)
            }
        }
        return names
    }

    /// The indexes of `keyStore` (nil: of every collection): the `indexes` table's rows, or the
    /// user's SQLite indexes on `kv_default` in a file older than 2.5.
    package func indexRecords(keyStore: KeyStore? = nil) throws -> [IndexRecord] {
        if try connection.tableExists(Self.indexesTable) {
            let stmt = try connection.prepare("SELECT name, type, keyStore, expression FROM indexes ORDER BY name")
            var out: [IndexRecord] = []
            while try stmt.step() {
                let record = IndexRecord(name: stmt.string(0) ?? "", type: Int(stmt.int64(1)),
                                         keyStore: stmt.string(2) ?? "", expression: stmt.string(3))
                if keyStore == nil || record.keyStore == keyStore?.name { out.append(record) }
            }
            return out
        }
        if let keyStore, !keyStore.isDefault { return [] }
        let stmt = try connection.prepare("""
            SELECT name FROM sqlite_master WHERE type='index' AND tbl_name='kv_default' AND sql IS NOT NULL \
            AND name NOT LIKE 'kv\\_%' ESCAPE '\\' ORDER BY name
            """)
        var out: [IndexRecord] = []
        while try stmt.step() {
            out.append(IndexRecord(name: stmt.string(0) ?? "", type: IndexRecord.Kind.value.rawValue,
                                   keyStore: Schema2.defaultKeyStore, expression: nil))
        }
        return out
    }

    /// Creates (or replaces, when its keys differ) the value index `name` on the SQL `keys`
    /// (translated from `expression`, the JSON array recorded for LiteCore) over `keyStore`'s
    /// table. Index names are unique in the file, as in LiteCore: an index of that name on another
    /// collection is replaced. Returns false when an identical index already existed.
    @discardableResult
    package func createValueIndex(name: String, expression: String, keys: [String],
                                  on keyStore: KeyStore = .default) throws -> Bool {
        try checkWritable()
        guard !name.isEmpty else { throw CouchbaseLiteError(.invalidParameter, "An index needs a name") }
        guard !keys.isEmpty else { throw CouchbaseLiteError(.invalidParameter, "A value index needs at least one expression") }
        _ = try existingLayout(of: keyStore)
        let createSQL = "CREATE INDEX \(Self.quoted(name)) ON \(Self.quoted(keyStore.table)) (\(keys.joined(separator: ", ")))"
        return try inTransaction {
            // 3.3+ (schema 503) prefixes the recorded expression with its language: `=j` JSON, `=n` N1QL.
            let recorded = schemaVersion >= 503 ? Self.jsonPrefix + expression : expression
            if let existing = try indexRecords().first(where: { $0.name == name }) {
                // LiteCore compares the index's SQL; the recorded expression says the same.
                let sql = try connection.scalarString("SELECT sql FROM sqlite_master WHERE type='index' AND name=?", [.text(name)])
                let same = existing.expression == recorded || existing.expression == Self.jsonPrefix + expression
                    || sql == createSQL
                if existing.type == IndexRecord.Kind.value.rawValue && existing.keyStore == keyStore.name && same { return false }
                try dropIndex(name: name)
            }
            try ensureIndexesTable()
            try connection.run(createSQL)
            try connection.run("INSERT INTO indexes (name, type, keyStore, expression, indexTableName) VALUES (?, ?, ?, ?, NULL)",
                               [.text(name), .integer(Int64(IndexRecord.Kind.value.rawValue)),
                                .text(keyStore.name), .text(recorded)])
            return true
        }
    }

    /// Removes the index `name` of `keyStore` (nil: of any collection), SQLite index and record;
    /// false when there was none.
    @discardableResult
    package func deleteIndex(name: String, in keyStore: KeyStore? = nil) throws -> Bool {
        try checkWritable()
        return try inTransaction {
            guard try indexRecords(keyStore: keyStore).contains(where: { $0.name == name }) else { return false }
            try dropIndex(name: name)
            return true
        }
    }

    private func dropIndex(name: String) throws {
        try connection.run("DROP INDEX IF EXISTS \(Self.quoted(name))")
        if try connection.tableExists(Self.indexesTable) {
            try connection.run("DELETE FROM indexes WHERE name = ?", [.text(name)])
        }
    }

    /// The `indexes` table in the columns the file's schema version has (spec 2.1, 2.2).
    private func ensureIndexesTable() throws {
        guard try !connection.tableExists(Self.indexesTable) else { return }
        // 2.0/2.1 indexes (plain SQLite ones) are registered in the new table, as LiteCore does.
        let oldStyle = try indexRecords()
        // Column lists as each LiteCore generation creates the table.
        let columns: String
        if schemaVersion >= 503 {
            columns = "name TEXT PRIMARY KEY, type INTEGER NOT NULL, keyStore TEXT NOT NULL, expression TEXT, whereClause TEXT, indexTableName TEXT, lastSeq TEXT"
        } else if schemaVersion >= 501 {
            columns = "name TEXT PRIMARY KEY, type INTEGER NOT NULL, keyStore TEXT NOT NULL, expression TEXT, indexTableName TEXT, lastSeq INTEGER"
        } else {
            columns = "name TEXT PRIMARY KEY, type INTEGER NOT NULL, keyStore TEXT NOT NULL, expression TEXT, indexTableName TEXT"
        }
        try connection.run("CREATE TABLE indexes (\(columns))")
        for index in oldStyle {
            try connection.run("INSERT INTO indexes (name, type, keyStore, expression, indexTableName) VALUES (?, ?, ?, NULL, NULL)",
                               [.text(index.name), .integer(Int64(index.type)), .text(index.keyStore)])
        }
        if schemaVersion < Self.indexesSchemaVersion {
            try connection.setUserVersion(Self.indexesSchemaVersion)
            refreshSchemaVersion()
        }
    }

    static func quoted(_ identifier: String) -> String {
        "\"" + identifier.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
