import Foundation
import JSONCore

/// Full-text search: `MATCH(index, 'query')` and `RANK(index)` (spec 9.1), translated as
/// LiteCore's translator does: each index searched is JOINed by its FTS table,
/// `JOIN "kv_default::index" AS "<idx1>" ON "<idx1>".docid = _doc.rowid`; MATCH becomes
/// `"<idx1>"."kv_default::index" MATCH 'query'` and RANK `rank(matchinfo("<idx1>"."kv_default::index"))`.
/// MATCH is only allowed in the WHERE clause, at its top level or in a top-level AND (FTS4 cannot
/// evaluate a MATCH under OR or NOT), and once per index.
extension QueryTranslator {
    /// One full-text index a query searches.
    struct FullTextSearch {
        /// The index name and the SQL alias of the collection it indexes.
        var indexName: String
        var sourceAlias: String
        /// The FTS table and its alias in the SQL.
        var table: String
        var sqlAlias: String

        /// The FTS4 column that names the whole table in MATCH and matchinfo().
        var tableColumn: String { "\"\(sqlAlias)\".\(DataFile.quoted(table))" }
    }

    /// Registers the MATCH() calls of `whereClause`, checking where they stand.
    mutating func collectFullTextSearches(in whereClause: QueryTree?) throws {
        guard let whereClause else { return }
        try collectMatches(whereClause, topLevel: true)
    }

    private mutating func collectMatches(_ e: QueryTree, topLevel: Bool) throws {
        if case .object(let dict) = e {
            for (_, value) in dict { try collectMatches(value, topLevel: false) }
            return
        }
        guard case (let rawOp, let args)? = e.operation else {
            if case .array(let items) = e {
                for item in items { try collectMatches(item, topLevel: false) }
            }
            return
        }
        let op = rawOp.uppercased()
        if op == "MATCH()" {
            guard topLevel else { throw Self.invalid("MATCH can only appear at top-level, or in a top-level AND") }
            try argCount(args, 2...2, "MATCH()")
            let (source, name) = try fullTextIndex(args[0], function: "MATCH")
            guard fullTextSearch(name, source) == nil else {
                throw Self.invalid("Sorry, multiple MATCHes of the same property are not allowed")
            }
            let table = DataFile.fullTextTableName(table: source.tables?.table ?? self.table, index: name)
            fullTextSearches.append(FullTextSearch(indexName: name, sourceAlias: source.sqlAlias, table: table,
                                                   sqlAlias: "<idx\(fullTextSearches.count + 1)>"))
            return
        }
        // The operands of a top-level AND are top-level too; nothing under another operator is.
        let childrenAreTopLevel = topLevel && op == "AND"
        for child in args { try collectMatches(child, topLevel: childrenAreTopLevel) }
    }

    /// The collection and index a MATCH()/RANK() names: `index` or `alias.index`.
    private func fullTextIndex(_ argument: QueryTree, function: String) throws -> (Source, String) {
        guard let text = argument.stringValue, !text.isEmpty else {
            throw Self.invalid("The first argument of \(function)() must be an index name")
        }
        var keys: [String] = []
        for component in try PropertyPath(parsing: text).components {
            guard case .key(let key) = component else { throw Self.invalid("Invalid index name '\(text)' in \(function)()") }
            keys.append(key)
        }
        if keys.count > 1, let source = sources.first(where: { $0.kind == .collection && $0.alias == keys[0] }) {
            return (source, keys.dropFirst().joined(separator: "."))
        }
        return (sources[0], keys.joined(separator: "."))
    }

    private func fullTextSearch(_ name: String, _ source: Source) -> FullTextSearch? {
        fullTextSearches.first { $0.indexName == name && $0.sourceAlias == source.sqlAlias }
    }

    /// `MATCH(index, query)`: only in the WHERE clause, where it was registered.
    mutating func matchSQL(_ args: [QueryTree]) throws -> String {
        guard translatingWhere else { throw Self.invalid("a MATCH is not allowed outside the WHERE clause") }
        try argCount(args, 2...2, "MATCH()")
        let (source, name) = try fullTextIndex(args[0], function: "MATCH")
        guard let search = fullTextSearch(name, source) else {
            throw Self.invalid("MATCH can only appear at top-level, or in a top-level AND")
        }
        return "(\(search.tableColumn) MATCH \(try expr(args[1])))"
    }

    /// `RANK(index)`: the relevance of the row's match of that index.
    mutating func rankSQL(_ args: [QueryTree]) throws -> String {
        try argCount(args, 1...1, "RANK()")
        let (source, name) = try fullTextIndex(args[0], function: "RANK")
        guard let search = fullTextSearch(name, source) else { throw Self.invalid("RANK() cannot be used without MATCH()") }
        return "rank(matchinfo(\(search.tableColumn)))"
    }

    /// The JOINs of the FTS tables searched, appended to the FROM clause.
    var fullTextJoinsSQL: String {
        fullTextSearches.map { search in
            " JOIN \(DataFile.quoted(search.table)) AS \"\(search.sqlAlias)\" ON \"\(search.sqlAlias)\".docid = \(search.sourceAlias).rowid"
        }.joined()
    }

    /// A full-text index key as an FTS column (LiteCore's `FTSColumnName` and `FTSExpressionSQL`):
    /// a document property, named by its path (`text`, `note.body`), whose text is
    /// `fl_fts_value(<row>.body, 'path')`. Anything but a property cannot be full-text indexed.
    mutating func fullTextIndexColumn(_ key: QueryTree, rowAlias: String) throws -> (name: String, sql: String) {
        let tree = Self.shorthand(key)
        guard let head = tree.operatorName, head.hasPrefix("."), head.count > 1 else {
            throw Self.invalid("A full-text index can only index document properties, not \(tree.jsonText)")
        }
        let components = try propertyComponents(tree)
        guard !components.isEmpty else { throw Self.invalid("A full-text index needs a property") }
        let path = PropertyPath(components).string
        return (path, "fl_fts_value(\(rowAlias.isEmpty ? "" : rowAlias + ".")body, \(Self.stringLiteral(path)))")
    }
}
