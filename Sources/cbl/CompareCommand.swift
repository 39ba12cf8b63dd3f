import ArgumentParser
import CouchbaseLite
import CouchbaseLiteJavaScript
import CouchbaseLiteUpgrade
import Foundation

struct Compare: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run a 1.x view and a N1QL query side by side and explain every difference.",
        discussion: """
            The view side reads the view's STORED index in the 1.x file (what the app's map function
            emitted), or, when the database holds _design/DESIGN defining the view (a REST-era app's
            JavaScript), indexes that view in a scratch copy. The N1QL side runs over the converted database (--converted), or over a
            conversion made on the fly in a temporary directory. Name the N1QL columns id, key and
            optionally value; rows are matched by document ID and key (by key for reduced views).
            Each difference is explained by a named rule (null/MISSING, booleans as numbers,
            BINARY vs Unicode collation, case, accents, arrays/objects as blobs, group_level,
            dropped revisions, design documents, …) or flagged UNEXPLAINED.

            Exit status: 0 equal, 1 different, 2 error.

            EXAMPLES:
              cbl compare old.cblite2 --view app/byName --map-only \\
                --n1ql "SELECT meta().id AS id, name AS key FROM _ WHERE type='user' ORDER BY name COLLATE UNICODE, meta().id"
              cbl compare old.cblite2 --view app/byDate --group-level 2 --reduce count \\
                --n1ql "SELECT [d[0], d[1]] AS key, count(*) AS value FROM _ WHERE d IS VALUED GROUP BY d[0], d[1] ORDER BY d[0], d[1]"
              cbl compare old.cblite2 --view app/byName --n1ql "…" --json > report.json
              cbl compare old.cblite2 --view app/byName --n1ql "…" --html report.html
              cbl compare old.cblite2 --view app/byName --map-only --suggest
              cbl compare old.cblite2 --view app/byName --map-only --suggest --filter type='"user"' --key-path name
            """)

    @Argument(help: "The 1.x database (NAME.cblite2).")
    var database: String

    @Option(help: "The view (design/name) whose stored index to read, or a design document's JavaScript view.")
    var view: String

    @Option(help: "The N1QL query (or a JSON query starting with { or [).")
    var n1ql: String?

    @Flag(help: "Propose the N1QL query and value index that reproduce the view, and verify them.")
    var suggest = false

    @Option(help: "With --suggest: a document filter the map applies, path=JSON (e.g. type='\"task\"'); repeatable.")
    var filter: [String] = []

    @Option(help: "With --suggest: the key's property path (repeat for an array key); default: inferred.")
    var keyPath: [String] = []

    @Option(help: "With --suggest: the value's property path.")
    var valuePath: String?

    @Option(help: "With --suggest: the array property whose elements are emitted one row each.")
    var unnest: String?

    @Option(help: "The converted 2.x database (default: convert into a temporary directory).")
    var converted: String?

    @OptionGroup var flags: ViewQueryFlags

    @OptionGroup(title: "Encryption")
    var encryption: EncryptionKeyOptions

    @Option(help: "A N1QL parameter, name=JSON (e.g. --param type='\"user\"'); repeatable.")
    var param: [String] = []

    @Flag(help: "Print the report as JSON.")
    var json = false

    @Option(help: "Also write a self-contained HTML page showing both result lists side by side.")
    var html: String?

    @Flag(help: "No colours, even on a terminal.")
    var noColor = false

    func validate() throws {
        if suggest == (n1ql != nil) { throw ValidationError("Give either --n1ql QUERY or --suggest") }
    }

    func run() throws {
        if CBLView.compiler() == nil { CBLView.setCompiler(CBLJSViewCompiler()) }
        if suggest { return try runSuggestion() }
        let report = try compare()
        if let html {
            try Data(report.html().utf8).write(to: URL(fileURLWithPath: html))
        }
        if json {
            FileHandle.standardOutput.write(try report.jsonData())
            print()
        } else {
            print(report.terminalText(color: !noColor && isatty(STDOUT_FILENO) != 0), terminator: "")
        }
        if !report.isEqual { throw ExitCode(ExitStatus.problemFound) }
    }

    private func runSuggestion() throws {
        var description: MapDescription?
        if !filter.isEmpty || !keyPath.isEmpty || valuePath != nil || unnest != nil {
            var filters: [MapDescription.Filter] = []
            for (path, value) in try parseAssignments(filter, option: "--filter") {
                let parsed = try parseJSONArgument(value, option: "--filter")
                guard let json = try? JSONValue(foundation: parsed) else { throw CommandFailure("--filter \(value): not a JSON value") }
                filters.append(.init(path: path, value: json))
            }
            description = MapDescription(filters: filters, keyPaths: keyPath, unnestPath: unnest, valuePath: valuePath)
        }
        let s = try comparison().suggest(view: view, options: try viewOptions(), description: description)
        if let html { try Data(s.report.html().utf8).write(to: URL(fileURLWithPath: html)) }
        if json {
            struct Out: Encodable {
                let description: MapDescription, n1ql: String, index: [String], indexName: String, verified: Bool, notes: [String]
            }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            FileHandle.standardOutput.write(try encoder.encode(Out(description: s.description, n1ql: s.n1ql, index: s.indexExpressions,
                                                                   indexName: s.indexName, verified: s.verified, notes: s.notes)))
            print()
        } else {
            let d = s.description
            print("map:    " + (d.filters.map { "\($0.path) == \(ComparedValue.value($0.value).json)" } + (d.unnestPath.map { ["one row per element of \($0)"] } ?? [])
                                  + ["key \(d.keyPaths.joined(separator: ", "))"] + (d.valuePath.map { ["value \($0)"] } ?? [])).joined(separator: "; "))
            print("N1QL:   \(s.n1ql)")
            print("index:  \(s.indexSwift)")
            print(s.verified ? "verified: the query gives the view's rows in the view's order" : "NOT verified: \(s.report.differences.count) differences remain")
            for note in s.notes { print("note:   \(note)") }
        }
        if !s.verified { throw ExitCode(ExitStatus.problemFound) }
    }

    private func comparison() throws -> ViewComparison {
        ViewComparison(legacyDatabase: URL(fileURLWithPath: database).standardizedFileURL,
                       convertedDatabase: converted.map { URL(fileURLWithPath: $0).standardizedFileURL },
                       encryptionKey: try encryption.key())
    }

    private func compare() throws -> ComparisonReport {
        var parameters: [String: Any] = [:]
        for (name, value) in try parseAssignments(param, option: "--param") {
            parameters[name] = try parseJSONArgument(value, option: "--param")
        }
        return try comparison().compare(view: .stored(name: view), options: try viewOptions(), n1ql: n1ql ?? "", parameters: parameters)
    }

    private func viewOptions() throws -> ViewQueryOptions {
        try flags.validateCombinations()
        return try flags.viewOptions()
    }
}
