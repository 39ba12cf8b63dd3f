import Foundation
import JSONCore

/// An index named in a query (3.x `IndexExpressionProtocol`), such as a full-text index for
/// ``FullTextFunction/match(_:query:)``.
public protocol IndexExpressionProtocol {}

/// A full-text index named in a query, optionally of a named data source (`.from(alias)`).
public protocol FullTextIndexExpressionProtocol: IndexExpressionProtocol {
    /// The same index on the data source named `alias`.
    func from(_ alias: String) -> IndexExpressionProtocol
}

/// The index name as MATCH()/RANK() take it in the JSON query tree: `name` or `alias.name`.
struct FullTextIndexExpression: FullTextIndexExpressionProtocol {
    let name: String
    let alias: String?

    var path: String {
        let escapedName = name.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: ".", with: "\\.")
        guard let alias else { return escapedName }
        return alias.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: ".", with: "\\.") + "." + escapedName
    }

    func from(_ alias: String) -> IndexExpressionProtocol { FullTextIndexExpression(name: name, alias: alias) }
}

extension Expression {
    /// The full-text index `name`, for ``FullTextFunction/match(_:query:)`` and `FullTextFunction.rank(_:)`.
    public static func fullTextIndex(_ name: String) -> FullTextIndexExpressionProtocol {
        FullTextIndexExpression(name: name, alias: nil)
    }
}

/// Full-text search functions (2.x/3.x `FullTextFunction`): `MATCH()` and `RANK()` (spec 9.1).
public final class FullTextFunction {
    private init() {}

    /// Whether the document's text in the full-text `index` matches `query` (FTS4 syntax: words,
    /// `prefix*`, `"a phrase"`, `AND`, `OR`, `NOT`, `NEAR`). Only in a WHERE clause, at its top
    /// level or in a top-level AND.
    public static func match(_ index: IndexExpressionProtocol, query: String) -> ExpressionProtocol {
        QueryExpression(.operationNode("MATCH()", [.string(path(index)), .string(query)]))
    }

    /// How well the document matches the query's MATCH of `index` (higher is better).
    public static func rank(_ index: IndexExpressionProtocol) -> ExpressionProtocol {
        QueryExpression(.operationNode("RANK()", [.string(path(index))]))
    }

    /// Whether the document's text in the full-text index `indexName` matches `query` (2.x/3.0 spelling).
    public static func match(indexName: String, query: String) -> ExpressionProtocol {
        match(Expression.fullTextIndex(indexName), query: query)
    }

    /// How well the document matches the query's MATCH of the index `indexName` (2.x/3.0 spelling).
    public static func rank(_ indexName: String) -> ExpressionProtocol {
        rank(Expression.fullTextIndex(indexName))
    }

    private static func path(_ index: IndexExpressionProtocol) -> String {
        (index as? FullTextIndexExpression)?.path ?? ""
    }
}
