import Foundation
import JSONCore

/// A full-text index on document properties (3.x `FullTextIndexConfiguration`): queries search it
/// with `MATCH(name, 'words')` and order by `RANK(name)`. Stored as LiteCore stores it, an FTS4
/// table `kv_default::name` with the `unicodesn` tokenizer (spec 2.2).
public struct FullTextIndexConfiguration: IndexConfiguration, IndexSpecConvertible {
    /// Whether accents and other diacritical marks are ignored, unless stated: false.
    public static let defaultIgnoreAccents = false

    /// The N1QL expressions indexed: document properties holding text.
    public let expressions: [String]
    /// A N1QL predicate (3.2 partial index): only documents satisfying it are indexed.
    public let `where`: String?
    /// Whether diacritical marks are ignored (`"café"` matches `"cafe"`).
    public let ignoreAccents: Bool
    /// The ISO-639 code of the text's language (`"en"`, `"fr"`), which selects stop words and word
    /// stemming; nil means the current locale's language, `""` no language features.
    public let language: String?

    /// A full-text index on `expressions`; with `where`, of the documents satisfying it only.
    public init(_ expressions: [String], where: String? = nil,
                ignoreAccents: Bool? = FullTextIndexConfiguration.defaultIgnoreAccents, language: String? = nil) {
        self.expressions = expressions
        self.where = `where`
        self.ignoreAccents = ignoreAccents ?? Self.defaultIgnoreAccents
        self.language = language
    }

    /// A partial full-text index (3.2 argument order).
    public init(_ expressions: [String], where: String?, language: String?, ignoreAccents: Bool) {
        self.init(expressions, where: `where`, ignoreAccents: ignoreAccents, language: language)
    }

    public func indexKeys() throws -> [Any] {
        try expressions.map { try IndexSpec.parse($0).foundation }
    }

    func indexSpec() throws -> IndexSpec {
        IndexSpec(kind: .fullText(FullTextIndexOptions(language: language, ignoreAccents: ignoreAccents)),
                  keys: try expressions.map(IndexSpec.parse), whereClause: try `where`.map(IndexSpec.parse))
    }
}

/// A 2.x full-text index built by `IndexBuilder.fullTextIndex(items:)`, refined with
/// ``language(_:)`` and ``ignoreAccents(_:)``.
public struct FullTextIndex: Index, IndexSpecConvertible {
    let items: [FullTextIndexItem]
    private var languageCode: String?
    private var ignoresAccents = FullTextIndexConfiguration.defaultIgnoreAccents

    init(items: [FullTextIndexItem]) {
        self.items = items
    }

    /// The same index for text in `language` (ISO-639 code; nil: the current locale's, `""`: none).
    public func language(_ language: String?) -> FullTextIndex {
        var copy = self
        copy.languageCode = language
        return copy
    }

    /// The same index, ignoring diacritical marks or not.
    public func ignoreAccents(_ ignoreAccents: Bool) -> FullTextIndex {
        var copy = self
        copy.ignoresAccents = ignoreAccents
        return copy
    }

    public func indexKeys() throws -> [Any] { items.map(\.tree.foundation) }

    func indexSpec() throws -> IndexSpec {
        IndexSpec(kind: .fullText(FullTextIndexOptions(language: languageCode, ignoreAccents: ignoresAccents)),
                  keys: items.map(\.tree), whereClause: nil)
    }
}

/// One property of a 2.x full-text index.
public struct FullTextIndexItem: Sendable {
    let tree: QueryTree

    /// The document property at `path` (dotted, e.g. `"note.text"`).
    public static func property(_ path: String) -> FullTextIndexItem {
        FullTextIndexItem(tree: .operationNode("." + path))
    }
}
