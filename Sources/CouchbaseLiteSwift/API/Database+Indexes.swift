import Foundation

extension Database {
    // MARK: Indexes

    /// Creates the index `name` described by `config` (a value or full-text index, optionally
    /// partial); replaces an index of that name that differs, does nothing when an identical one
    /// exists. Stored as LiteCore stores it (spec 2.2), so real Couchbase Lite sees and uses it.
    public func createIndex(_ config: IndexConfiguration, name: String) throws {
        let spec = try IndexSpec(config)
        var translator = QueryTranslator()
        let keysJSON = try spec.keysJSON
        let whereJSON = try spec.whereJSON
        switch spec.kind {
        case .value:
            let keys = try spec.keys.map { try translator.indexExpression($0) }
            let whereSQL = try spec.whereClause.map { try translator.indexExpression($0) }
            try withOpenFile { file in
                try QueryFunctions.register(on: file)
                for collation in translator.collations { try QueryFunctions.registerCollation(collation, on: file) }
                try file.createValueIndex(name: name, expression: keysJSON, keys: keys,
                                          whereSQL: whereSQL, whereExpression: whereJSON)
            }
        case .fullText(let options):
            let columns = try spec.keys.map(Self.fullTextColumn)
            let values = columns.map { "fl_fts_value(new.body, \(QueryTranslator.stringLiteral($0)))" }
            let newCondition = try spec.whereClause.map { try translator.indexExpression($0, rowAlias: "new") }
            let oldCondition = try spec.whereClause.map { try translator.indexExpression($0, rowAlias: "old") }
            let definition = FullTextIndexDefinition(
                name: name, expression: keysJSON, whereExpression: whereJSON, columns: columns, newRowValues: values,
                newRowCondition: newCondition, oldRowCondition: oldCondition,
                language: options.effectiveLanguage, ignoreDiacritics: options.ignoreAccents)
            try withOpenFile { file in
                try QueryFunctions.register(on: file)
                for collation in translator.collations { try QueryFunctions.registerCollation(collation, on: file) }
                try file.createFullTextIndex(definition)
            }
        }
    }

    /// Creates the index `name` (2.x spelling of ``createIndex(_:name:)``).
    public func createIndex(_ index: Index, withName name: String) throws {
        try createIndex(index, name: name)
    }

    /// Deletes the index `name`; nothing happens when there is none (as in Couchbase Lite).
    public func deleteIndex(forName name: String) throws {
        try withOpenFile { file in
            // Dropping an FTS table instantiates its tokenizer.
            try QueryFunctions.register(on: file)
            _ = try file.deleteIndex(name: name)
        }
    }

    /// The names of the database's indexes, sorted (2.x `indexes`).
    public var indexes: [String] {
        (try? getIndexes()) ?? []
    }

    /// The names of the database's indexes, sorted (3.x `getIndexes()`).
    public func getIndexes() throws -> [String] {
        try withOpenFile { try $0.indexRecords().map(\.name) }
    }

    /// The FTS column of a full-text index key (LiteCore's `FTSColumnName`): a property path,
    /// as `text` or `note.body`; anything else cannot be full-text indexed.
    private static func fullTextColumn(_ key: Any) throws -> String {
        let tree = QueryTranslator.shorthand(key)
        guard let a = tree as? [Any], let head = a.first as? String, head.hasPrefix("."), head.count > 1 else {
            throw CouchbaseLiteError(.invalidQuery, "A full-text index can only index document properties, not \(tree)")
        }
        var components = try PropertyPath(parsing: head).components
        for item in a.dropFirst() {
            guard let key = item as? String else { throw CouchbaseLiteError(.invalidQuery, "Invalid full-text index property \(tree)") }
            components.append(.key(key))
        }
        guard !components.isEmpty else { throw CouchbaseLiteError(.invalidQuery, "A full-text index needs a property") }
        return PropertyPath(components).string
    }
}
