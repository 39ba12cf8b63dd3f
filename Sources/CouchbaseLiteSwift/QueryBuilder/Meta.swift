import JSONCore

/// A document metadata expression that can name the data source it reads (`.from(alias)`).
public protocol MetaExpressionProtocol: ExpressionProtocol {
    /// The same metadata of the data source named `alias`.
    func from(_ alias: String?) -> ExpressionProtocol
}

/// `meta().id` and friends as 2.x builds them: `["._id"]`, `[".alias._id"]` (spec 9.1).
final class MetaExpression: TreeExpression, MetaExpressionProtocol, Sendable {
    let key: String
    let node: BuilderNode
    init(_ key: String, alias: String? = nil) {
        self.key = key
        node = .success(.operationNode((alias.map { "." + $0 } ?? "") + "." + key))
    }
    func from(_ alias: String?) -> ExpressionProtocol { MetaExpression(key, alias: alias) }
}

/// Document metadata in queries (2.x `Meta`).
public final class Meta {
    private init() {}
    /// The document ID.
    public static var id: MetaExpressionProtocol { MetaExpression("_id") }
    /// The document's sequence number.
    public static var sequence: MetaExpressionProtocol { MetaExpression("_sequence") }
    /// Whether the document is deleted (referencing it makes the query see deleted documents).
    public static var deleted: MetaExpressionProtocol { MetaExpression("_deleted") }
    /// The document's expiration time (milliseconds since 1970), or MISSING.
    public static var expiration: MetaExpressionProtocol { MetaExpression("_expiration") }
    /// The document's current revision ID.
    public static var revisionID: MetaExpressionProtocol { MetaExpression("_revisionID") }
}
