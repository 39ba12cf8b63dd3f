import Foundation

extension Database {
    // MARK: Indexes

    /// Creates the index `name` described by `config` (a value or full-text index, optionally
    /// partial) on the default collection; replaces an index of that name that differs, does
    /// nothing when an identical one exists. Stored as LiteCore stores it (spec 2.2), so real
    /// Couchbase Lite sees and uses it.
    public func createIndex(_ config: IndexConfiguration, name: String) throws {
        try createIndex(config, name: name, on: .default)
    }

    func createIndex(_ config: IndexConfiguration, name: String, on keyStore: KeyStore) throws {
        let spec = try IndexSpec(config)
        var translator = QueryTranslator()
        let keysJSON = try spec.keysJSON
        let whereJSON = try spec.whereJSON
        switch spec.kind {
        case .value:
            let keys = try spec.keys.map { try translator.indexExpression($0) }
            let whereSQL = try spec.whereClause.map { try translator.indexExpression($0) }
            try withWriteFile { file in
                try QueryFunctions.register(on: file)
                for collation in translator.collations { try QueryFunctions.registerCollation(collation, on: file) }
                try file.createValueIndex(name: name, expression: keysJSON, keys: keys,
                                          whereSQL: whereSQL, whereExpression: whereJSON, on: keyStore)
            }
        case .fullText(let options):
            let columns = try spec.keys.map { try translator.fullTextIndexColumn($0, rowAlias: "new") }
            let newCondition = try spec.whereClause.map { try translator.indexExpression($0, rowAlias: "new") }
            let oldCondition = try spec.whereClause.map { try translator.indexExpression($0, rowAlias: "old") }
            let definition = FullTextIndexDefinition(
                name: name, expression: keysJSON, whereExpression: whereJSON,
                columns: columns.map(\.name), newRowValues: columns.map(\.sql),
                newRowCondition: newCondition, oldRowCondition: oldCondition,
                language: options.effectiveLanguage, ignoreDiacritics: options.ignoreAccents)
            try withWriteFile { file in
                try QueryFunctions.register(on: file)
                for collation in translator.collations { try QueryFunctions.registerCollation(collation, on: file) }
                try file.createFullTextIndex(definition, on: keyStore)
            }
        }
    }

    /// Creates the index `name` (2.x spelling of ``createIndex(_:name:)``).
    public func createIndex(_ index: Index, withName name: String) throws {
        try createIndex(index, name: name)
    }

    /// Deletes the index `name` of the default collection; nothing happens when there is none
    /// (as in Couchbase Lite).
    public func deleteIndex(forName name: String) throws {
        try deleteIndex(forName: name, in: .default)
    }

    func deleteIndex(forName name: String, in keyStore: KeyStore) throws {
        try withWriteFile { file in
            // Dropping an FTS table instantiates its tokenizer.
            try QueryFunctions.register(on: file)
            _ = try file.deleteIndex(name: name, in: keyStore)
        }
    }

    /// The names of the default collection's indexes, sorted (2.x `indexes`).
    public var indexes: [String] {
        (try? getIndexes()) ?? []
    }

    /// The names of the default collection's indexes, sorted (3.x `getIndexes()`).
    public func getIndexes() throws -> [String] {
        try withReadFile { try $0.indexRecords(keyStore: .default).map(\.name) }
    }
}
