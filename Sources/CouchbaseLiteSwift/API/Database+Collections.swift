import Foundation

extension Database {
    // MARK: Collections and scopes (3.x)

    /// The name of the default scope, `_default`.
    public static let defaultScopeName = KeyStore.defaultScopeName
    /// The name of the default collection, `_default`.
    public static let defaultCollectionName = KeyStore.defaultCollectionName

    /// The default collection `_default._default`, where the 2.x document calls act.
    public func defaultCollection() throws -> Collection {
        try withReadFile { _ in Collection(database: self, keyStore: .default) }
    }

    /// The default scope `_default`.
    public func defaultScope() throws -> Scope {
        try withReadFile { _ in Scope(name: KeyStore.defaultScopeName, database: self) }
    }

    /// The collection `name` in `scope` (nil: the default scope), or nil when there is none.
    /// Throws `.invalidParameter` for a name no collection can have.
    public func collection(name: String, scope: String? = nil) throws -> Collection? {
        try KeyStore.validate(collection: name, scope: scope)
        let keyStore = KeyStore(collection: name, scope: scope)
        return try withReadFile { file in
            try file.layout(of: keyStore) == nil ? nil : Collection(database: self, keyStore: keyStore)
        }
    }

    /// Creates the collection `name` in `scope` (nil: the default scope), or returns it when it
    /// exists. Names are 1–251 characters of `A-Z a-z 0-9 _ - %`, not starting with `_` or `%`,
    /// and case-sensitive; anything else throws `.invalidParameter`.
    ///
    /// The tables are the ones real Couchbase Lite 3.x creates (`kv_.name` or `kv_.scope.name`,
    /// upper-case letters escaped, and a `kv_del_` twin). A database still in the 2.x layout is
    /// first upgraded to the 3.1 schema, as Couchbase Lite 3.1 upgrades any file it opens: its
    /// documents stay as they are, but Couchbase Lite 2.x can no longer open it.
    @discardableResult
    public func createCollection(name: String, scope: String? = nil) throws -> Collection {
        try KeyStore.validate(collection: name, scope: scope)
        let keyStore = KeyStore(collection: name, scope: scope)
        return try withWriteFile { file in
            try file.createKeyStore(keyStore)
            return Collection(database: self, keyStore: keyStore)
        }
    }

    /// Deletes the collection `name` in `scope` (nil: the default scope) with its documents and
    /// indexes; nothing happens when there is none. The default collection cannot be deleted.
    public func deleteCollection(name: String, scope: String? = nil) throws {
        try KeyStore.validate(collection: name, scope: scope)
        let keyStore = KeyStore(collection: name, scope: scope)
        guard !keyStore.isDefault else {
            throw CouchbaseLiteError(.invalidParameter, "The default collection cannot be deleted")
        }
        try withWriteFile { file in _ = try file.deleteKeyStore(keyStore) }
    }

    /// The collections of `scope` (nil: the default scope), sorted by name (the default
    /// collection first); empty when the scope has none.
    public func collections(scope: String? = nil) throws -> [Collection] {
        let scope = scope ?? KeyStore.defaultScopeName
        return try withReadFile { file in
            try file.collectionKeyStores()
                .filter { $0.collectionSpec?.scope == scope }
                .map { Collection(database: self, keyStore: $0) }
        }
    }

    /// The scopes that have collections, the default scope always first.
    public func scopes() throws -> [Scope] {
        try withReadFile { file in
            var names = [KeyStore.defaultScopeName]
            for keyStore in try file.collectionKeyStores() {
                if let scope = keyStore.collectionSpec?.scope, !names.contains(scope) { names.append(scope) }
            }
            return names.map { Scope(name: $0, database: self) }
        }
    }

    /// The scope `name`, or nil when it has no collection (the default scope always exists).
    public func scope(name: String) throws -> Scope? {
        try scopes().first { $0.name == name }
    }
}
