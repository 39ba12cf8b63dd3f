import Foundation

extension QueryTranslator.CollectionTables {
    /// The tables of the collection a FROM item names (spec 2.3): `_`, `_default`,
    /// `_default._default` and (when no collection has that name) the database's own name mean
    /// the default collection; `name` and `_default.name` a collection of the default scope;
    /// `scope.name` one of another scope. Throws `.invalidQuery` naming a collection that does not
    /// exist or cannot exist.
    static func resolve(scope: String?, collection: String?, databaseName: String,
                        in file: DataFile) throws -> Self {
        let keyStore: KeyStore
        let path = [scope, collection].compactMap { $0 }.joined(separator: ".")
        if let collection {
            if scope == nil && collection == "_" {
                keyStore = .default
            } else if scope == nil, collection == databaseName, try !namesCollection(collection, in: file) {
                // The database's name means the default collection unless a collection has it.
                keyStore = .default
            } else {
                do {
                    try KeyStore.validate(collection: collection, scope: scope)
                } catch let e as CouchbaseLiteError {
                    throw CouchbaseLiteError(.invalidQuery, "\"\(path)\" is not a valid collection name (\(e.message))")
                }
                keyStore = KeyStore(collection: collection, scope: scope)
            }
        } else {
            keyStore = .default
        }
        guard let layout = try file.layout(of: keyStore) else {
            throw CouchbaseLiteError(.invalidQuery, "No such collection \"\(path)\" in database '\(databaseName)'")
        }
        var tables = Self(keyStore: keyStore, table: keyStore.table)
        if layout.hasDeletedTable {
            // The two tables are unioned column by column, so both must have the same columns.
            let live = try file.connection.columns(of: keyStore.table)
            let deleted = try file.connection.columns(of: keyStore.deletedTable)
            if Set(live) == Set(deleted) {
                tables.deletedTable = keyStore.deletedTable
                tables.unionColumns = live.map { KeyStore.quoted($0) }
            }
        }
        return tables
    }

    /// Whether `name` is the name of a collection of the default scope in `file`.
    private static func namesCollection(_ name: String, in file: DataFile) throws -> Bool {
        guard KeyStore.isValidName(name) else { return false }
        return try file.layout(of: KeyStore(collection: name, scope: nil)) != nil
    }
}
