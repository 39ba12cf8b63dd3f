import Foundation

extension Database {
    // MARK: Indexes

    /// Creates the index `name` described by `config` on the default collection; replaces an
    /// index of that name with other keys, does nothing when an identical one exists. Stored as
    /// LiteCore stores it (spec 2.2), so real Couchbase Lite sees and uses it.
    public func createIndex(_ config: IndexConfiguration, name: String) throws {
        try createIndex(config, name: name, on: .default)
    }

    func createIndex(_ config: IndexConfiguration, name: String, on keyStore: KeyStore) throws {
        let keys = try config.indexKeys()
        var translator = QueryTranslator()
        let sql = try keys.map { try translator.indexExpression($0) }
        let json = try JSONSerialization.data(withJSONObject: keys, options: [.sortedKeys, .withoutEscapingSlashes])
        try withOpenFile { file in
            try QueryFunctions.register(on: file)
            for collation in translator.collations { try QueryFunctions.registerCollation(collation, on: file) }
            try file.createValueIndex(name: name, expression: String(decoding: json, as: UTF8.self), keys: sql, on: keyStore)
        }
    }

    /// Creates the index `name` (2.x spelling of ``createIndex(_:name:)``).
    public func createIndex(_ index: Index, withName name: String) throws {
        try createIndex(index, name: name)
    }

    /// Deletes the index `name` of the default collection; nothing happens when there is none
    /// (as in Couchbase Lite).
    public func deleteIndex(forName name: String) throws {
        try withOpenFile { file in _ = try file.deleteIndex(name: name, in: .default) }
    }

    /// The names of the default collection's indexes, sorted (2.x `indexes`).
    public var indexes: [String] {
        (try? getIndexes()) ?? []
    }

    /// The names of the default collection's indexes, sorted (3.x `getIndexes()`).
    public func getIndexes() throws -> [String] {
        try withOpenFile { try $0.indexRecords(keyStore: .default).map(\.name) }
    }
}
