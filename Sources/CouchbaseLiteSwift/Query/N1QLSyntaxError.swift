import Foundation

/// A N1QL (SQL++) text the parser rejects, with where it stopped and what it expected there.
public struct N1QLSyntaxError: Error, LocalizedError, CustomStringConvertible, Sendable, Equatable {
    /// UTF-8 byte offset of the offending token in the query text (LiteCore reports the same kind of offset).
    public let offset: Int
    /// 1-based line of the offending token.
    public let line: Int
    /// 1-based column (in Unicode scalars) of the offending token.
    public let column: Int
    /// What the parser would have accepted at that point, e.g. `"FROM, WHERE, or end of query"`.
    public let expected: String
    /// The text found there, or `"end of query"`.
    public let found: String
    /// Extra detail for errors that are not a plain unexpected token (unknown function, bad count).
    public let detail: String?

    public var message: String {
        let head = "N1QL syntax error at line \(line), column \(column) (offset \(offset))"
        if let detail { return "\(head): \(detail)" }
        return "\(head): expected \(expected), found \(found)"
    }

    public var description: String { message }
    public var errorDescription: String? { message }
}

extension CouchbaseLiteError {
    /// The 2.x API reports a N1QL syntax error as `invalidQuery` (LiteCore's kC4ErrorInvalidQuery).
    public init(_ syntaxError: N1QLSyntaxError) {
        self.init(.invalidQuery, syntaxError.message)
    }
}
