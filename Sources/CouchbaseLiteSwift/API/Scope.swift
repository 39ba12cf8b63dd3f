import Foundation

/// A namespace of collections in a database (3.x `Scope`). The default scope `_default` always
/// exists; another scope exists while it has at least one collection.
// @unchecked because its fields are lets; the database it calls is thread-safe.
public final class Scope: @unchecked Sendable, Hashable, CustomStringConvertible {
    /// The name of the default scope, `_default`.
    public static let defaultScopeName = KeyStore.defaultScopeName

    /// The scope's name.
    public let name: String
    /// The database the scope belongs to.
    public let database: Database

    init(name: String, database: Database) {
        self.name = name
        self.database = database
    }

    /// The scope's collections, sorted by name.
    public func collections() throws -> [Collection] {
        try database.collections(scope: name)
    }

    /// The scope's collection `name`, or nil when there is none.
    public func collection(name: String) throws -> Collection? {
        try database.collection(name: name, scope: self.name)
    }

    public var description: String { "Scope(\(name))" }

    public static func == (lhs: Scope, rhs: Scope) -> Bool {
        lhs.database === rhs.database && lhs.name == rhs.name
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(ObjectIdentifier(database))
        hasher.combine(name)
    }
}
