import CFullText
import Foundation
import SQLiteKit

/// A full-text index as the query layer describes it to the storage: the FTS columns and the SQL
/// computing them, already translated from the index's JSON expressions.
package struct FullTextIndexDefinition: Sendable {
    package var name: String
    /// The JSON array of the indexed properties and the WHERE's JSON, as recorded in `indexes`.
    package var expression: String
    package var whereExpression: String?
    /// The FTS4 column of each indexed property: its path (`text`, `note.body`).
    package var columns: [String]
    /// For each column, its text computed from the row aliased `new` (`fl_fts_value(new.body, 'text')`).
    package var newRowValues: [String]
    /// A partial index's condition on the row aliased `new`, and on `old`.
    package var newRowCondition: String?
    package var oldRowCondition: String?
    /// The language code for stop words and stemming (nil: none) and whether accents are ignored.
    package var language: String?
    package var ignoreDiacritics: Bool
}

/// Full-text indexes as LiteCore makes them (spec 2.2, LiteCore's `SQLiteKeyStore+FTSIndexes`): an
/// FTS4 virtual table `"kv_default::NAME"` with one column per indexed property and the `unicodesn`
/// tokenizer; its `docid` is the document row's `rowid`. Triggers named after the table (`::ins`,
/// `::del`, `::preupdate`, `::postupdate`) keep it in sync with `kv_default`; the `indexes` row has
/// type 1 and the table's name. Language and accent options live only in the tokenizer arguments.
extension DataFile {
    /// The tokenizer LiteCore registers and names in every FTS table it creates.
    static let fullTextTokenizerName = "unicodesn"
    /// Trigger suffixes of every LiteCore generation (2.0 kept `upd`; 3.x pre/post-update).
    static let fullTextTriggerSuffixes = ["ins", "del", "upd", "preupdate", "postupdate"]

    /// LiteCore's name of the FTS table of index `index` on the key-store table `table`.
    static func fullTextTableName(table: String, index: String) -> String {
        table + "::" + index
    }

    /// Registers the `unicodesn` tokenizer on a connection (needed to read, write or drop any FTS
    /// table that names it, including through `kv_default`'s triggers).
    static func registerFullTextTokenizer(on connection: SQLiteConnection) throws {
        do {
            try connection.registerFTS3Tokenizer(named: fullTextTokenizerName, module: cbl_unicodesn_module())
        } catch let e as SQLiteError {
            throw CouchbaseLiteError(.unsupported, "This SQLite cannot register the '\(fullTextTokenizerName)' full-text tokenizer: \(e.message)")
        }
    }

    /// The `tokenize=` argument LiteCore writes (its `writeTokenizerOptions`): stop words for the
    /// language, a stemmer where one exists here, and `remove_diacritics=0` unless accents are
    /// ignored (the tokenizer's default removes them). Stemmers LiteCore has but this package has
    /// not (anything but English) are left out, as LiteCore leaves out ones it lacks, so that both
    /// tokenize such a table alike.
    static func tokenizerArguments(language: String?, ignoreDiacritics: Bool) -> String {
        var sql = "tokenize=\(fullTextTokenizerName)"
        if let language, !language.isEmpty {
            let code = language.split(separator: "_", maxSplits: 1).first.map(String.init) ?? language
            let safe = code.replacingOccurrences(of: "\"", with: "")
            sql += " \"stopwords=\(safe)\""
            if cbl_unicodesn_has_stemmer(safe) != 0 { sql += " \"stemmer=\(safe)\"" }
        }
        if !ignoreDiacritics { sql += " \"remove_diacritics=0\"" }
        return sql
    }

    /// Creates (or replaces, when it differs) a full-text index; returns false when an identical
    /// one existed. Existing documents are indexed at once.
    @discardableResult
    package func createFullTextIndex(_ index: FullTextIndexDefinition, on keyStore: KeyStore = .default) throws -> Bool {
        try checkWritable()
        try Self.validateIndexName(index.name)
        guard !index.columns.isEmpty, index.columns.count == index.newRowValues.count else {
            throw CouchbaseLiteError(.invalidParameter, "A full-text index needs at least one property")
        }
        _ = try existingLayout(of: keyStore)
        let table = keyStore.table
        let ftsTable = Self.fullTextTableName(table: table, index: index.name)
        let columns = index.columns.map(Self.quoted).joined(separator: ", ")
        let values = index.newRowValues.joined(separator: ", ")
        let createSQL = "CREATE VIRTUAL TABLE \(Self.quoted(ftsTable)) USING fts4(\(columns), "
            + Self.tokenizerArguments(language: index.language, ignoreDiacritics: index.ignoreDiacritics) + ")"
        return try inTransaction {
            if let existing = try indexRecords().first(where: { $0.name == index.name }) {
                let sql = try connection.scalarString("SELECT sql FROM sqlite_master WHERE type='table' AND name=?", [.text(ftsTable)])
                if existing.type == IndexRecord.Kind.fullText.rawValue && existing.keyStore == keyStore.name && sql == createSQL { return false }
                try dropIndex(existing)
            }
            try ensureIndexesTable()
            try connection.execute(createSQL)
            let whereNew = index.newRowCondition.map { "WHERE \($0)" } ?? ""
            let whereOld = index.oldRowCondition.map { "WHERE \($0)" } ?? ""
            try connection.execute("INSERT INTO \(Self.quoted(ftsTable)) (docid, \(columns)) SELECT rowid, \(values) "
                                   + "FROM \(Self.quoted(table)) AS new \(whereNew)")
            let insertNew = "INSERT INTO \(Self.quoted(ftsTable)) (docid, \(columns)) VALUES (new.rowid, \(values))"
            let deleteOld = "DELETE FROM \(Self.quoted(ftsTable)) WHERE docid = old.rowid"
            try createTrigger(ftsTable, on: table, "ins", "AFTER INSERT", whereNew, insertNew)
            try createTrigger(ftsTable, on: table, "del", "AFTER DELETE", whereOld, deleteOld)
            try createTrigger(ftsTable, on: table, "preupdate", "BEFORE UPDATE OF body", whereOld, deleteOld)
            try createTrigger(ftsTable, on: table, "postupdate", "AFTER UPDATE OF body", whereNew, insertNew)
            try registerIndex(name: index.name, kind: .fullText,
                              recorded: recordedExpressions(index.expression, index.whereExpression), indexTableName: ftsTable,
                              keyStore: keyStore)
            return true
        }
    }

    /// `CREATE TRIGGER "<fts table>::<suffix>" <when> ON "kv_default" [WHEN …] BEGIN …; END`,
    /// spelled as LiteCore spells it (a WHERE clause becomes the trigger's WHEN).
    private func createTrigger(_ ftsTable: String, on table: String, _ suffix: String, _ operation: String,
                               _ condition: String, _ statement: String) throws {
        var when = condition
        if when.hasPrefix("WHERE") { when = "WHEN" + when.dropFirst(5) }
        try connection.execute("CREATE TRIGGER \(Self.quoted(ftsTable + "::" + suffix)) \(operation) ON "
                               + "\(Self.quoted(table)) \(when)  BEGIN \(statement); END")
    }

    /// Drops an FTS table and every trigger any LiteCore generation named after it.
    func dropFullTextTable(_ ftsTable: String) throws {
        for suffix in Self.fullTextTriggerSuffixes {
            try connection.execute("DROP TRIGGER IF EXISTS \(Self.quoted(ftsTable + "::" + suffix))")
        }
        try connection.execute("DROP TABLE IF EXISTS \(Self.quoted(ftsTable))")
    }
}

extension DataFile {
    /// The Snowball English stem the `unicodesn` tokenizer indexes `word` (lowercase) under.
    static func englishStem(_ word: String) -> String {
        let utf8 = Array(word.utf8)
        guard !utf8.isEmpty else { return word }
        let capacity = utf8.count * 2 + 8
        var out = [CChar](repeating: 0, count: capacity)
        let n = utf8.withUnsafeBytes { w in
            out.withUnsafeMutableBufferPointer { o in
                cbl_snowball_english_stem(w.baseAddress!.assumingMemoryBound(to: CChar.self), w.count, o.baseAddress!, capacity)
            }
        }
        guard n >= 0 else { return word }
        return String(decoding: out[..<Int(n)].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
