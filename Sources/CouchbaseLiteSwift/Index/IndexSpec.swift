import Foundation
import JSONCore

/// Tokenizer options of a full-text index (LiteCore's `C4IndexOptions` as CBL fills them).
struct FullTextIndexOptions: Sendable, Equatable {
    /// The configured language: nil for the current locale's, `""` for none.
    var language: String?
    var ignoreAccents: Bool

    /// The language code the tokenizer gets, as Couchbase Lite picks it: the configured one, else
    /// the current locale's; nil when there is none (`""`).
    var effectiveLanguage: String? {
        let code = language ?? Locale.current.language.languageCode?.identifier
        guard let code, !code.isEmpty else { return nil }
        return code
    }
}

/// What `createIndex` stores, whatever API described it (LiteCore's `IndexSpec`): the index type,
/// its key expressions and its optional WHERE (a partial index), as JSON query trees (spec 9.1).
struct IndexSpec: Sendable {
    enum Kind: Equatable {
        case value
        case fullText(FullTextIndexOptions)
    }

    var kind: Kind
    var keys: [QueryTree]
    var whereClause: QueryTree?

    /// A N1QL expression as a JSON query tree.
    static func parse(_ n1ql: String) throws -> QueryTree {
        do {
            return try N1QLParser.parseExpressionTree(n1ql)
        } catch let e as N1QLSyntaxError {
            throw CouchbaseLiteError(e)
        }
    }

    /// The spec of any configuration: the package's own types describe themselves; another
    /// `IndexConfiguration` is taken as a value index on its keys (Foundation values, the public
    /// protocol's form, converted here).
    init(_ config: IndexConfiguration) throws {
        if let convertible = config as? IndexSpecConvertible {
            self = try convertible.indexSpec()
        } else {
            self.init(kind: .value, keys: try config.indexKeys().map { try QueryTree(queryValue: $0) }, whereClause: nil)
        }
    }

    init(kind: Kind, keys: [QueryTree], whereClause: QueryTree?) {
        self.kind = kind
        self.keys = keys
        self.whereClause = whereClause
    }

    /// The keys as the JSON text LiteCore records in the `indexes` table.
    var keysJSON: String { get throws { try Self.json(.array(keys)) } }
    /// The WHERE as JSON text, when there is one.
    var whereJSON: String? { get throws { try whereClause.map { try Self.json($0) } } }

    /// Compact JSON, members sorted, slashes unescaped.
    static func json(_ tree: QueryTree) throws -> String {
        try JSON.string(tree, sortedKeys: true)
    }
}

/// The package's index descriptions, which know their `IndexSpec` (Couchbase Lite's `IndexConfigConvertable`).
protocol IndexSpecConvertible {
    func indexSpec() throws -> IndexSpec
}
