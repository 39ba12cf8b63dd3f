import Foundation

/// What an index is made of (3.x `IndexConfiguration`); pass one to `Database.createIndex(_:name:)`.
public protocol IndexConfiguration: Sendable {
    /// The index's key expressions as LiteCore's JSON query syntax (spec 9.1).
    func indexKeys() throws -> [Any]
}

/// A value index on N1QL expressions (3.x `ValueIndexConfiguration`), e.g. `["name", "address.city"]`:
/// a SQLite index the query planner uses for WHERE, ORDER BY and joins on those expressions.
public struct ValueIndexConfiguration: IndexConfiguration {
    /// The N1QL expressions indexed, most significant first.
    public let expressions: [String]

    /// A value index on `expressions` (N1QL expressions, usually property paths).
    public init(_ expressions: [String]) {
        self.expressions = expressions
    }

    public func indexKeys() throws -> [Any] {
        try expressions.map { text in
            do {
                return try N1QLParser.parseExpression(text)
            } catch let e as N1QLSyntaxError {
                throw CouchbaseLiteError(e)
            }
        }
    }
}

/// An index description of the 2.x API (`IndexBuilder.valueIndex(items:)`).
public protocol Index: IndexConfiguration {}

/// A 2.x value index built by `IndexBuilder.valueIndex(items:)`.
public struct ValueIndex: Index {
    let items: [ValueIndexItem]

    public func indexKeys() throws -> [Any] { items.map(\.json) }
}

/// One key of a 2.x value index.
public struct ValueIndexItem: @unchecked Sendable {
    let json: Any

    /// The document property at `path` (dotted, e.g. `"address.city"`).
    public static func property(_ path: String) -> ValueIndexItem {
        ValueIndexItem(json: ["." + path])
    }

    /// The N1QL expression `n1ql` (e.g. `"lower(name)"`).
    public static func n1ql(_ n1ql: String) throws -> ValueIndexItem {
        do {
            return ValueIndexItem(json: try N1QLParser.parseExpression(n1ql))
        } catch let e as N1QLSyntaxError {
            throw CouchbaseLiteError(e)
        }
    }
}

/// Factory of 2.x index descriptions.
public enum IndexBuilder {
    /// A value index on `items`, most significant first.
    public static func valueIndex(items: ValueIndexItem...) -> ValueIndex {
        ValueIndex(items: items)
    }

    /// A value index on `items`, most significant first.
    public static func valueIndex(items: [ValueIndexItem]) -> ValueIndex {
        ValueIndex(items: items)
    }
}
