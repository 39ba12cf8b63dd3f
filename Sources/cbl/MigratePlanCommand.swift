import ArgumentParser
import CouchbaseLite
import CouchbaseLiteJavaScript
import CouchbaseLiteUpgrade
import Foundation

struct MigratePlan: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate-plan",
        abstract: "For every view of a 1.x database, the verified N1QL query and value index that replace it.",
        discussion: """
            Plans every view: the stored indexes of the 1.x file and the JavaScript views of its
            _design/ documents (a built-in _count/_sum/_stats reduce is planned grouped too). The
            database is converted ONCE into a temporary directory; for each view the suggested N1QL
            query (as `cbl compare --suggest` proposes it) is run against the view and the view is
            classed: equal, equal with explained differences (each named by a rule), or needs a
            hand-written query (saying what the suggestion could not express). Each entry gives the
            N1QL string, the QueryBuilder form in Swift, the value index, and both sides' timings.
            The given database is never opened in place.

            Exit status: 0 every view equal or explained, 1 some need hand-written queries, 2 error.

            EXAMPLES:
              cbl migrate-plan app.cblite2
              cbl migrate-plan app.cblite2 --json > plan.json
              cbl migrate-plan app.cblite2 --html plan.html
            """)

    @Argument(help: "The 1.x database (NAME.cblite2).")
    var database: String

    @Flag(help: "Print the plan as JSON (sorted keys, for CI).")
    var json = false

    @Option(help: "Also write the plan as one self-contained HTML page.")
    var html: String?

    @OptionGroup(title: "Encryption")
    var encryption: EncryptionKeyOptions

    func run() throws {
        if CBLView.compiler() == nil { CBLView.setCompiler(CBLJSViewCompiler()) }
        let planner = MigrationPlanner(legacyDatabase: URL(fileURLWithPath: database).standardizedFileURL,
                                       encryptionKey: try encryption.key())
        let plan = try planner.plan()
        if let html { try Data(plan.html().utf8).write(to: URL(fileURLWithPath: html)) }
        if json {
            FileHandle.standardOutput.write(try plan.jsonData())
            print()
        } else {
            print(plan.text(), terminator: "")
        }
        if !plan.isComplete { throw ExitCode(ExitStatus.problemFound) }
    }
}
