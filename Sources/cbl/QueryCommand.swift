import ArgumentParser
import CouchbaseLite
import Foundation

/// `cbl query PATH VIEW`: a 1.x view query on the view's stored index, or an all-docs query.
struct ViewQuery: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "query",
        abstract: "Query a 1.x view's stored index, or all documents, with the 1.x query options.",
        discussion: """
            Reads the rows the app's map function stored (the maps_N table): the function itself \
            is not in the file, so the index is used as it is, never updated (a stale index is \
            reported on standard error). Keys are JSON: quote strings ('"abc"'). Output is one \
            JSON object per row, {"key":…,"value":…,"id":…} (plus "doc" with --include-docs), \
            or an aligned table with --table.

            The app's reduce function is not in the file either: --reduce applies a built-in one \
            (count, sum or stats, like CouchDB's _count/_sum/_stats) to the stored rows, with \
            --group / --group-level grouping them as 1.x does. As in 1.x (iOS), --limit and --skip \
            apply to the map rows before reducing. Grouping without --reduce gives one row per \
            group with a null value, as 1.x does for a view without a reduce function.

            --all-docs queries the documents themselves (key = document ID, value = {"rev":…}); \
            --include-deleted, --conflicts, --only-conflicts and --by-sequence choose which.

            EXAMPLES:
              cbl query app.cblite2 design/by_date --start-key '[2016,1]' --end-key '[2016,12,{}]'
              cbl query app.cblite2 --view design/by_date --descending --limit 10 --include-docs
              cbl query app.cblite2 design/by_type --key '"task"' --key '"list"'
              cbl query app.cblite2 design/by_date --reduce count --group-level 2 --table
              cbl query app.cblite2 --all-docs --start-key '"doc1"' --conflicts

            EXIT STATUS: 0 rows printed (possibly none); 2 bad path, not a 1.x database, no such \
            view, bad option or key.
            """)

    @Argument(help: "The 1.x database: NAME.cblite2.")
    var path: String

    @OptionGroup(title: "Encryption")
    var encryption: EncryptionKeyOptions

    @Argument(help: ArgumentHelp("The view to query, as design/name (same as --view).", valueName: "view"))
    var viewArgument: String?

    @Option(name: .customLong("view"), help: ArgumentHelp("The view to query, as design/name.", valueName: "name"))
    var viewOption: String?

    @Flag(name: .customLong("all-docs"), help: "Query all documents instead of a view.")
    var allDocs = false

    @OptionGroup var flags: ViewQueryFlags

    @Flag(name: .customLong("include-docs"), help: "Add each row's document as \"doc\" (a linked {\"_id\":…} value's document for views).")
    var includeDocs = false

    @Flag(name: .customLong("include-deleted"), help: "--all-docs: deleted documents too.")
    var includeDeleted = false

    @Flag(help: "--all-docs: list each document's conflicting revisions in its value (\"_conflicts\").")
    var conflicts = false

    @Flag(name: .customLong("only-conflicts"), help: "--all-docs: only documents in conflict.")
    var onlyConflicts = false

    @Flag(name: .customLong("by-sequence"), help: "--all-docs: in sequence order (keys are then sequence numbers).")
    var bySequence = false

    @Flag(help: "Print an aligned table instead of JSON lines.")
    var table = false

    private var viewName: String? { viewOption ?? viewArgument }
    private var reduces: Bool { flags.reduces }

    func validate() throws {
        if let viewOption, let viewArgument, viewOption != viewArgument {
            throw ValidationError("the view is given twice ('\(viewArgument)' and --view '\(viewOption)')")
        }
        if allDocs == (viewName != nil) {
            throw ValidationError(allDocs ? "give either a view or --all-docs, not both" : "give a view (design/name or --view) or --all-docs")
        }
        let modes = [(includeDeleted, "--include-deleted"), (conflicts, "--conflicts"), (onlyConflicts, "--only-conflicts"),
                     (bySequence, "--by-sequence")].filter(\.0).map(\.1)
        if allDocs {
            let viewOnly = [(flags.reduce != nil, "--reduce"), (flags.group, "--group"), (flags.groupLevel != nil, "--group-level"),
                            (flags.mapOnly, "--map-only"), (flags.startKeyDocID != nil, "--start-key-doc-id"),
                            (flags.endKeyDocID != nil, "--end-key-doc-id")].filter(\.0).map(\.1)
            if let first = viewOnly.first { throw ValidationError("\(first) applies to view queries, not --all-docs") }
            if modes.count > 1 { throw ValidationError("\(modes.joined(separator: " and ")) exclude each other") }
        } else if let first = modes.first {
            throw ValidationError("\(first) applies to --all-docs queries")
        }
        try flags.validateCombinations()
        if includeDocs && reduces {
            throw ValidationError("--include-docs applies to map rows, not reduced or grouped ones")
        }
    }

    func run() throws {
        let bundle = try DatabaseBundle.locate(path, key: try encryption.key())
        try bundle.require(.v1, "views and all-docs queries need a 1.x database (use `cbl n1ql` for 2.x/3.x)")
        let opened = try bundle.openV1(readOnly: true)
        defer { opened.close() }
        let db = opened.database

        let query: CBLQuery
        if let viewName {
            guard let view = db.existingViewNamed(viewName) else {
                let names = db.allViews.map(\.name)
                throw CommandFailure("no view '\(viewName)' in \(path) ("
                                     + (names.isEmpty ? "it has no views)" : "its views: \(names.joined(separator: ", ")))"))
            }
            if view.stale {
                note("query", "the index of view '\(viewName)' is stale: indexed through sequence "
                     + "\(view.lastSequenceIndexed) of \(db.lastSequenceNumber); rows are as last indexed")
            }
            query = view.createQuery()
            query.indexUpdateMode = .never
        } else {
            query = db.createAllDocumentsQuery()
            query.allDocsMode = includeDeleted ? .includeDeleted : conflicts ? .showConflicts
                : onlyConflicts ? .onlyConflicts : bySequence ? .bySequence : .allDocs
        }
        // Key range, limits and (views) the built-in reduce and grouping: the app's reduce is a
        // closure, not in the file; grouping without a reducer gives null values, as 1.x does.
        try flags.viewOptions().apply(to: query)
        query.prefetch = includeDocs

        let rows = try query.run().allObjects
        let output = Output()
        if reduces {
            printRows(rows.map { [("key", jsonText($0.key)), ("value", jsonText($0.value))] }, output)
        } else {
            printRows(rows.map(members), output)
        }
        output.flush()
    }

    /// A map or all-docs row's members: key, value, id (doc with --include-docs); an all-docs
    /// `--key` naming no document gives `"error":"not_found"` as CouchDB does.
    private func members(_ row: CBLQueryRow) -> [(String, String)] {
        guard let id = row.sourceDocumentID else {
            return [("key", jsonText(row.key)), ("error", jsonText("not_found"))]
        }
        var out = [("key", jsonText(row.key)), ("value", jsonText(row.value)), ("id", jsonText(id))]
        if includeDocs { out.append(("doc", jsonText(row.documentProperties.map(plainJSON)))) }
        return out
    }

    private func printRows(_ rows: [[(String, String)]], _ output: Output) {
        guard table else {
            for row in rows { output.line(jsonObjectLine(row)) }
            return
        }
        var columns: [String] = []
        for row in rows { for (name, _) in row where !columns.contains(name) { columns.append(name) } }
        if columns.isEmpty { columns = reduces ? ["key", "value"] : ["key", "value", "id"] }
        var text = TextTable(columns: columns)
        for row in rows {
            let byName = Dictionary(row, uniquingKeysWith: { a, _ in a })
            text.add(columns.map { byName[$0] ?? "" })
        }
        text.render(into: output)
    }
}

extension CBLBuiltinReducer: ExpressibleByArgument {
    /// `count`, `sum` or `stats` (CouchDB's `_count`… spellings too).
    public init?(argument: String) { self.init(named: argument) }

    public static var allValueStrings: [String] { allCases.map { String($0.rawValue.dropFirst()) } }
}
