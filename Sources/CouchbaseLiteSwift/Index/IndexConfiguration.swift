import Foundation
import JSONCore

/// What an index is made of (3.x `IndexConfiguration`); pass one to `Database.createIndex(_:name:)`.
public protocol IndexConfiguration: Sendable {
    /// The index's key expressions as LiteCore's JSON query syntax (spec 9.1).
    func indexKeys() throws -> [Any]
}

/// A value index on N1QL expressions (3.x `ValueIndexConfiguration`), e.g. `["name", "address.city"]`:
/// a SQLite index the query planner uses for WHERE, ORDER BY and joins on those expressions.
public struct ValueIndexConfiguration: IndexConfiguration, IndexSpecConvertible {
    /// The N1QL expressions indexed, most significant first.
    public let expressions: [String]
    /// A N1QL predicate (3.2 partial index): only documents satisfying it are indexed.
    public let `where`: String?

    /// A value index on `expressions` (N1QL expressions, usually property paths); with `where`,
    /// a partial index of the documents satisfying that N1QL predicate.
    public init(_ expressions: [String], where: String? = nil) {
        self.expressions = expressions
        self.where = `where`
    }

    public func indexKeys() throws -> [Any] {
        try expressions.map { try IndexSpec.parse($0).foundation }
    }

    func indexSpec() throws -> IndexSpec {
        IndexSpec(kind: .value, keys: try expressions.map(IndexSpec.parse), whereClause: try `where`.map(IndexSpec.parse))
    }
}

/// An index description of the 2.x API (`IndexBuilder.valueIndex(items:)`, `fullTextIndex(items:)`).
public protocol Index: IndexConfiguration {}

/// A 2.x value index built by `IndexBuilder.valueIndex(items:)`.
public struct ValueIndex: Index, IndexSpecConvertible {
    let items: [ValueIndexItem]

    public func indexKeys() throws -> [Any] { items.map(\.tree.foundation) }

    func indexSpec() throws -> IndexSpec { IndexSpec(kind: .value, keys: items.map(\.tree), whereClause: nil) }
}

/// One key of a 2.x value index.
public struct ValueIndexItem: Sendable {
    let tree: QueryTree

    /// The document property at `path` (dotted, e.g. `"address.city"`).
    public static func property(_ path: String) -> ValueIndexItem {
        ValueIndexItem(tree: .operationNode("." + path))
    }

    /// The N1QL expression `n1ql` (e.g. `"lower(name)"`).
    public static func n1ql(_ n1ql: String) throws -> ValueIndexItem {
        ValueIndexItem(tree: try IndexSpec.parse(n1ql))
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

    /// A full-text index on `items` (document properties holding text).
    public static func fullTextIndex(items: FullTextIndexItem...) -> FullTextIndex {
        FullTextIndex(items: items)
    }

    /// A full-text index on `items` (document properties holding text).
    public static func fullTextIndex(items: [FullTextIndexItem]) -> FullTextIndex {
        FullTextIndex(items: items)
    }
}
