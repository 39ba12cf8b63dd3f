import Foundation
import SQLiteKit

/// One index as LiteCore records it (spec 2.2): a row of the `indexes` table, or, in files made
/// before 2.5, a plain SQLite index on `kv_default` (or an FTS table `kv_default::name`).
package struct IndexRecord: Sendable, Equatable {
    /// LiteCore's `C4IndexType`: 0 value, 1 full-text, 2 array, 3 predictive, 4 vector.
    package enum Kind: Int, Sendable { case value = 0, fullText = 1, array = 2, predictive = 3, vector = 4 }

    package var name: String
    package var type: Int
    package var keyStore: String
    /// The JSON array of the index's key expressions (spec 9.1), as LiteCore stores it.
    package var expression: String?
    /// The SQLite table the index lives in, for the index types that have one (full-text: `kv_default::name`).
    package var indexTableName: String? = nil
}

/// Indexes on a collection, made and recorded as LiteCore makes them (spec 2.1, 2.2): a value
/// index is `CREATE INDEX "name" ON "kv_default" (fl_value(body, 'a'), …) [WHERE …]`, a
/// full-text index an FTS4 table (see `DataFile+FullTextIndexes`); each has a row in `indexes`.
/// Real LiteCore puts no implicit WHERE on a value index (deleted rows are indexed; queries filter them).
extension DataFile {
    static let indexesTable = "indexes"
    /// LiteCore 2.5 adds the `indexes` table with the first index and marks the file 301 (spec 2.1).
    static let indexesSchemaVersion = 301
    /// 3.3+ (schema 503) prefixes recorded expressions with their language: `=j` JSON, `=n` N1QL.
    static let jsonPrefix = "=j"
    static let whereClauseSchemaVersion = 503
    /// The default collection's table, where files older than 2.5 keep their unrecorded indexes.
    static var indexedTable: String { Schema2.defaultTable }

    /// The `LCUnicode_…` collations the file's index expressions (and index triggers) use: writes
    /// to `kv_default` evaluate them, so they are registered when the database opens.
    package func collationsUsedByIndexes() throws -> Set<String> {
        let stmt = try connection.prepare("SELECT sql FROM sqlite_master WHERE type IN ('index', 'trigger') AND sql LIKE '%LCUnicode%'")
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
    /// user's SQLite indexes and FTS tables on `kv_default` in a file older than 2.5.
    package func indexRecords(keyStore: KeyStore? = nil) throws -> [IndexRecord] {
        if try connection.tableExists(Self.indexesTable) {
            let stmt = try connection.prepare("SELECT name, type, keyStore, expression, indexTableName FROM indexes ORDER BY name")
            var out: [IndexRecord] = []
            while try stmt.step() {
                let record = IndexRecord(name: stmt.string(0) ?? "", type: Int(stmt.int64(1)), keyStore: stmt.string(2) ?? "",
                                         expression: stmt.string(3), indexTableName: stmt.string(4))
                if keyStore == nil || record.keyStore == keyStore?.name { out.append(record) }
            }
            return out
        }
        if let keyStore, !keyStore.isDefault { return [] }
        let table = Self.indexedTable
        let stmt = try connection.prepare("""
            SELECT name, 0 FROM sqlite_master WHERE type='index' AND tbl_name=? AND sql IS NOT NULL \
            AND name NOT LIKE 'kv\\_%' ESCAPE '\\' \
            UNION ALL SELECT name, 1 FROM sqlite_master WHERE type='table' AND substr(name, 1, length(?) + 2) = ? || '::' \
            AND sql LIKE 'CREATE VIRTUAL TABLE % USING fts%' ORDER BY 1
            """)
        try stmt.bind([.text(table), .text(table), .text(table)])
        var out: [IndexRecord] = []
        while try stmt.step() {
            let name = stmt.string(0) ?? ""
            if stmt.int64(1) == 1 {
                out.append(IndexRecord(name: String(name.dropFirst(table.count + 2)), type: IndexRecord.Kind.fullText.rawValue,
                                       keyStore: Schema2.defaultKeyStore, expression: nil, indexTableName: name))
            } else {
                out.append(IndexRecord(name: name, type: IndexRecord.Kind.value.rawValue,
                                       keyStore: Schema2.defaultKeyStore, expression: nil))
            }
        }
        return out.sorted { $0.name < $1.name }
    }

    /// Creates (or replaces, when it differs) the value index `name` on the SQL `keys` over
    /// `keyStore`'s table, made partial by `whereSQL` (both translated from the JSON trees
    /// `expression` and `whereExpression`, which are recorded for LiteCore). Index names are unique
    /// in the file, as in LiteCore: an index of that name on another collection is replaced.
    /// Returns false when an identical index already existed.
    @discardableResult
    package func createValueIndex(name: String, expression: String, keys: [String],
                                  whereSQL: String? = nil, whereExpression: String? = nil,
                                  on keyStore: KeyStore = .default) throws -> Bool {
        try checkWritable()
        try Self.validateIndexName(name)
        guard !keys.isEmpty else { throw CouchbaseLiteError(.invalidParameter, "A value index needs at least one expression") }
        _ = try existingLayout(of: keyStore)
        var createSQL = "CREATE INDEX \(Self.quoted(name)) ON \(Self.quoted(keyStore.table)) (\(keys.joined(separator: ", ")))"
        if let whereSQL { createSQL += " WHERE \(whereSQL)" }
        return try inTransaction {
            let recorded = recordedExpressions(expression, whereExpression)
            if let existing = try indexRecords().first(where: { $0.name == name }) {
                // LiteCore compares the index's SQL; the recorded expression says the same.
                let sql = try connection.scalarString("SELECT sql FROM sqlite_master WHERE type='index' AND name=?", [.text(name)])
                let same = sql == createSQL
                    || (whereExpression == nil && (existing.expression == recorded.expression || existing.expression == Self.jsonPrefix + expression))
                if existing.type == IndexRecord.Kind.value.rawValue && existing.keyStore == keyStore.name && same { return false }
                try dropIndex(existing)
            }
            try ensureIndexesTable()
            try connection.run(createSQL)
            try registerIndex(name: name, kind: .value, recorded: recorded, indexTableName: nil, keyStore: keyStore)
            return true
        }
    }

    /// Removes the index `name` of `keyStore` (nil: of any collection): its SQLite index or FTS
    /// table, triggers and record; false when there was none.
    @discardableResult
    package func deleteIndex(name: String, in keyStore: KeyStore? = nil) throws -> Bool {
        try checkWritable()
        return try inTransaction {
            guard let record = try indexRecords(keyStore: keyStore).first(where: { $0.name == name }) else { return false }
            try dropIndex(record)
            return true
        }
    }

    /// Drops what an index consists of and its `indexes` row (LiteCore's `deleteIndex`).
    func dropIndex(_ record: IndexRecord) throws {
        if try connection.tableExists(Self.indexesTable) {
            try connection.run("DELETE FROM indexes WHERE name = ?", [.text(record.name)])
        }
        if record.type == IndexRecord.Kind.fullText.rawValue {
            try dropFullTextTable(record.indexTableName
                                  ?? Self.fullTextTableName(table: KeyStore(name: record.keyStore).table, index: record.name))
        } else {
            try connection.run("DROP INDEX IF EXISTS \(Self.quoted(record.name))")
        }
    }

    /// What the `indexes` row records: the keys' JSON, and a partial index's WHERE — in the
    /// `expression` as `{"WHAT": …, "WHERE": …}` (what LiteCore's IndexSpec reads), or, in 3.3+
    /// files, in the `whereClause` column, both with the language prefix.
    func recordedExpressions(_ keys: String, _ whereExpression: String?) -> (expression: String, whereClause: String?) {
        if schemaVersion >= Self.whereClauseSchemaVersion {
            return (Self.jsonPrefix + keys, whereExpression.map { Self.jsonPrefix + $0 })
        }
        guard let whereExpression else { return (keys, nil) }
        return (#"{"WHAT":\#(keys),"WHERE":\#(whereExpression)}"#, nil)
    }

    /// Adds the `indexes` row of a new index (LiteCore's `registerIndex`).
    func registerIndex(name: String, kind: IndexRecord.Kind, recorded: (expression: String, whereClause: String?),
                       indexTableName: String?, keyStore: KeyStore) throws {
        var columns = ["name", "type", "keyStore", "expression", "indexTableName"]
        var values: [SQLiteValue] = [.text(name), .integer(Int64(kind.rawValue)), .text(keyStore.name),
                                     .text(recorded.expression), indexTableName.map { .text($0) } ?? .null]
        if let whereClause = recorded.whereClause {
            columns.append("whereClause")
            values.append(.text(whereClause))
        }
        let marks = columns.map { _ in "?" }.joined(separator: ", ")
        try connection.run("INSERT INTO indexes (\(columns.joined(separator: ", "))) VALUES (\(marks))", values)
    }

    /// The `indexes` table in the columns the file's schema version has (spec 2.1, 2.2).
    func ensureIndexesTable() throws {
        guard try !connection.tableExists(Self.indexesTable) else { return }
        // 2.0/2.1 indexes (plain SQLite ones, FTS tables) are registered in the new table, as LiteCore does.
        let oldStyle = try indexRecords()
        // Column lists as each LiteCore generation creates the table.
        let columns: String
        if schemaVersion >= Self.whereClauseSchemaVersion {
            columns = "name TEXT PRIMARY KEY, type INTEGER NOT NULL, keyStore TEXT NOT NULL, expression TEXT, whereClause TEXT, indexTableName TEXT, lastSeq TEXT"
        } else if schemaVersion >= 501 {
            columns = "name TEXT PRIMARY KEY, type INTEGER NOT NULL, keyStore TEXT NOT NULL, expression TEXT, indexTableName TEXT, lastSeq INTEGER"
        } else {
            columns = "name TEXT PRIMARY KEY, type INTEGER NOT NULL, keyStore TEXT NOT NULL, expression TEXT, indexTableName TEXT"
        }
        try connection.run("CREATE TABLE indexes (\(columns))")
        for index in oldStyle {
            try connection.run("INSERT INTO indexes (name, type, keyStore, expression, indexTableName) VALUES (?, ?, ?, NULL, ?)",
                               [.text(index.name), .integer(Int64(index.type)), .text(index.keyStore),
                                index.indexTableName.map { .text($0) } ?? .null])
        }
        if schemaVersion < Self.indexesSchemaVersion {
            try connection.setUserVersion(Self.indexesSchemaVersion)
            refreshSchemaVersion()
        }
    }

    /// LiteCore's rule: a name, without `"` (it is quoted into SQL).
    static func validateIndexName(_ name: String) throws {
        guard !name.isEmpty else { throw CouchbaseLiteError(.invalidParameter, "An index needs a name") }
        guard !name.contains("\"") else {
            throw CouchbaseLiteError(.invalidParameter, "Index name must not contain the double quote (\") character")
        }
    }

    /// An identifier in double quotes (the same quoting as key-store tables).
    static func quoted(_ identifier: String) -> String { KeyStore.quoted(identifier) }
}
