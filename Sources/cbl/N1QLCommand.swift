import ArgumentParser
import CouchbaseLiteSwift
import Foundation

/// `cbl n1ql PATH "SELECT …"`: a N1QL (SQL++) query on a 2.x/3.x database.
struct N1QL: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "n1ql",
        abstract: "Run a N1QL (SQL++) query on a 2.x/3.x database, or on a 1.x one converted on the fly.",
        discussion: """
            Prints one JSON object per result row, its members named as Couchbase Lite names the \
            columns (aliases, property names, $1, $2… for unnamed expressions); MISSING values are \
            left out. The database is opened read-only. A 1.x database is first converted, as \
            2.x would convert it on open, into a temporary directory that is deleted afterwards \
            (a note on standard error says so). Query the default collection as `FROM _`.

            EXAMPLES:
              cbl n1ql app.cblite2 "SELECT meta().id, name FROM _ WHERE type = 'task' ORDER BY name"
              cbl n1ql app.cblite2 "SELECT count(*) AS n FROM _ WHERE type = \\$type" --param type='"task"'
              cbl n1ql app.cblite2 "SELECT * FROM _ WHERE age > 30" --explain
              cbl n1ql old-1x.cblite2 "SELECT meta().id AS id FROM _" --table

            EXIT STATUS: 0 rows printed (possibly none); 2 bad path, unreadable database, or a \
            query that does not parse or compile (the message gives line and column).
            """)

    @Argument(help: "The database: NAME.cblite2 (2.x/3.x, or 1.x converted to a temporary copy).")
    var path: String

    @Argument(help: ArgumentHelp("The N1QL query.", valueName: "query"))
    var n1ql: String

    @Flag(help: "Print the SQL the query translates to and SQLite's plan for it instead of the rows.")
    var explain = false

    @Option(name: .customLong("param"), help: ArgumentHelp(
        "Set $NAME to VALUE, a JSON value (a VALUE that is not JSON is taken as a string); repeatable.",
        valueName: "name=value"))
    var parameters: [String] = []

    @Flag(help: "Print an aligned table instead of JSON lines.")
    var table = false

    func run() throws {
        let assignments = try parseAssignments(parameters, option: "--param")
        let bundle = try DatabaseBundle.locate(path)
        var opened = try QueryableDatabase(bundle: bundle, command: "n1ql")
        defer { opened.close() }
        let query: Query
        do {
            query = try opened.database.createQuery(n1ql)
        } catch let e as CouchbaseLiteError where bundle.format == .v2 && e.message.contains("no such column: _doc.expiration") {
            // LiteCore adds the expiration column when a query reads meta().expiration; a file
            // opened read-only cannot get it, so such a query runs on a temporary copy.
            opened.close()
            opened = try QueryableDatabase(bundle: bundle, command: "n1ql", copy: true)
            query = try opened.database.createQuery(n1ql)
        }
        if !assignments.isEmpty {
            var values: [String: Any] = [:]
            for (name, text) in assignments {
                values[name.hasPrefix("$") ? String(name.dropFirst()) : name] = (try? parseJSON(text)) ?? text
            }
            query.parameters = Parameters(values)
        }
        let output = Output()
        defer { output.flush() }
        if explain {
            output.line(try query.explain().trimmingCharacters(in: .newlines))
            return
        }
        let results = try query.execute()
        guard table else {
            for row in results { output.line(row.toJSON()) }
            return
        }
        var text = TextTable(columns: results.columnNames)
        for row in results {
            text.add(row.toArray().map { $0.map { jsonText(plainJSON($0)) } ?? "" })
        }
        text.render(into: output)
    }
}
