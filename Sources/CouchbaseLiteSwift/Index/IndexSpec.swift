import Foundation

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
// @unchecked because its expressions are immutable JSON trees (`Any` is not Sendable in type).
struct IndexSpec: @unchecked Sendable {
    enum Kind: Equatable {
        case value
        case fullText(FullTextIndexOptions)
    }

    var kind: Kind
    var keys: [Any]
    var whereClause: Any?

    /// A N1QL expression as a JSON query tree.
    static func parse(_ n1ql: String) throws -> Any {
        do {
            return try N1QLParser.parseExpression(n1ql)
        } catch let e as N1QLSyntaxError {
            throw CouchbaseLiteError(e)
        }
    }

    /// The spec of any configuration: the package's own types describe themselves; another
    /// `IndexConfiguration` is taken as a value index on its keys.
    init(_ config: IndexConfiguration) throws {
        if let convertible = config as? IndexSpecConvertible {
            self = try convertible.indexSpec()
        } else {
            self.init(kind: .value, keys: try config.indexKeys(), whereClause: nil)
        }
    }

    init(kind: Kind, keys: [Any], whereClause: Any?) {
        self.kind = kind
        self.keys = keys
        self.whereClause = whereClause
    }

    /// The keys as the JSON text LiteCore records in the `indexes` table.
    var keysJSON: String { get throws { try Self.json(keys) } }
    /// The WHERE as JSON text, when there is one.
    var whereJSON: String? { get throws { try whereClause.map { try Self.json($0) } } }

    static func json(_ tree: Any) throws -> String {
        let data = try JSONSerialization.data(withJSONObject: tree, options: [.sortedKeys, .withoutEscapingSlashes, .fragmentsAllowed])
        return String(decoding: data, as: UTF8.self)
    }
}

/// The package's index descriptions, which know their `IndexSpec` (Couchbase Lite's `IndexConfigConvertable`).
protocol IndexSpecConvertible {
    func indexSpec() throws -> IndexSpec
}
