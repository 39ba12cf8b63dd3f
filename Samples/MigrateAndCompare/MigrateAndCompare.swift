import CouchbaseLite
import CouchbaseLiteUpgrade
import Foundation

/// MigrateAndCompare: moving a 1.x app's views to 2.x N1QL queries.
///
///     swift run MigrateAndCompare                                # the sample shop database
///     swift run MigrateAndCompare PATH/NAME.cblite2 [VIEW ...]   # a real 1.x database (copied, never modified)
///     swift run MigrateAndCompare --write-sample DIR             # only write the sample's shop.cblite2 into DIR
///
/// Upgrades the 1.x database to the 2.x format (`DatabaseUpgrader`), then for each view compares
/// the rows its stored index holds with a N1QL query over the upgraded database
/// (`ViewComparison`): every difference is explained by a named rule (collation, null vs
/// MISSING, …). Finally it asks for a N1QL query that reproduces the view (`suggest`) and checks it.
/// On the sample database a naive query is compared first, to show the rules at work.
@main
enum MigrateAndCompare {
    static func main() {
        do {
            // `--write-sample DIR`: only write the sample shop's 1.x database (shop.cblite2) into DIR,
            // for trying `cbl migrate-plan` and `cbl upgrade --catch-up` on it (MIGRATING.md).
            let arguments = Array(CommandLine.arguments.dropFirst())
            if arguments.first == "--write-sample" {
                guard arguments.count == 2 else { throw SampleError("usage: MigrateAndCompare --write-sample DIR") }
                let bundle = try ShopDatabase.create(in: URL(fileURLWithPath: arguments[1], isDirectory: true))
                print(bundle.path)
                exit(0)
            }
            let succeeded = try MigrateAndCompareRun(arguments: Array(CommandLine.arguments.dropFirst())).run()
            exit(succeeded ? 0 : 1)
        } catch {
            FileHandle.standardError.write(Data("MigrateAndCompare: error: \(error)\n".utf8))
            exit(1)
        }
    }
}

/// A view, how to query it, and the N1QL query someone would write first.
struct Counterpart {
    var view: String
    var options: ViewQueryOptions
    var naiveN1QL: String?
}

final class MigrateAndCompareRun {
    private let arguments: [String]
    private let work = FileManager.default.temporaryDirectory.appendingPathComponent("MigrateAndCompare-\(UUID().uuidString)", isDirectory: true)
    private let color = isatty(STDOUT_FILENO) != 0

    init(arguments: [String]) throws {
        if let first = arguments.first, first.hasPrefix("-") {
            throw SampleError("usage: MigrateAndCompare [PATH/NAME.cblite2 [VIEW ...]]")
        }
        if let path = arguments.first {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else {
                throw SampleError("\(path) is not a database bundle (a NAME.cblite2 directory)")
            }
        }
        self.arguments = arguments
    }

    /// True when every comparison ran and (on the sample database) every suggestion verified.
    func run() throws -> Bool {
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }

        // 1. The 1.x database: the one given, or the sample the app "shipped" with.
        //    A given database is copied first and only the copy is used: the app's file stays as it was.
        let usingSample = arguments.isEmpty
        let source: URL
        if usingSample {
            source = try ShopDatabase.create(in: work.appendingPathComponent("shipped", isDirectory: true))
        } else {
            let given = URL(fileURLWithPath: arguments[0], isDirectory: true)
            source = work.appendingPathComponent("given", isDirectory: true).appendingPathComponent(given.lastPathComponent)
            try FileManager.default.createDirectory(at: source.deletingLastPathComponent(), withIntermediateDirectories: true)
            try FileManager.default.copyItem(at: given, to: source)
        }
        let (documentCount, viewNames) = try inspect(source)
        print("1.x database \(source.lastPathComponent): \(documentCount) documents, views: \(viewNames.isEmpty ? "(none)" : viewNames.joined(separator: ", "))")

        // 2. Upgrade it, as Couchbase Lite 2.x does when it opens a 1.x file.
        let converted = work.appendingPathComponent("converted", isDirectory: true).appendingPathComponent(source.lastPathComponent)
        let upgrade = try DatabaseUpgrader(source: source, destination: converted).run()
        print(upgrade.summary.replacingOccurrences(of: work.path + "/", with: ""))

        // 3. Each view against N1QL over the upgraded database.
        let counterparts: [Counterpart]
        if usingSample {
            counterparts = Self.sampleCounterparts
        } else {
            let requested = arguments.count > 1 ? Array(arguments.dropFirst()) : viewNames
            var mapOnly = ViewQueryOptions()
            mapOnly.mapOnly = true   // the app's reduce functions are not in the file
            counterparts = requested.map { Counterpart(view: $0, options: mapOnly, naiveN1QL: nil) }
        }
        let comparison = ViewComparison(legacyDatabase: source, convertedDatabase: converted)
        var verified = 0, unexplained = 0
        for counterpart in counterparts {
            let options = counterpart.options.mapOnly ? "map rows" : "groupLevel \(counterpart.options.groupLevel), reduce \(counterpart.options.reduce?.rawValue ?? "-")"
            print("\n=== \(counterpart.view) (\(options)) ===")
            if let naive = counterpart.naiveN1QL {
                print("-- a first N1QL attempt, compared with the view's stored index:")
                let report = try comparison.compare(view: .stored(name: counterpart.view), options: counterpart.options, n1ql: naive)
                print(report.terminalText(color: color))
                unexplained += report.unexplained.count
            }
            // The suggestion: inferred from the view's rows and the documents, then verified.
            let suggestion = try comparison.suggest(view: counterpart.view, options: counterpart.options)
            print("-- suggested N1QL: \(suggestion.n1ql)")
            print("   index:          \(suggestion.indexSwift)")
            if suggestion.verified {
                verified += 1
                print("   verified: same \(suggestion.report.viewRows.count) rows, same order, same values as the view")
            } else {
                print("   NOT verified:")
                print(suggestion.report.terminalText(color: color))
            }
            for note in suggestion.notes { print("   note: \(note)") }
        }
        print("\n\(verified) of \(counterparts.count) suggestions verified, \(unexplained) unexplained differences")
        // The sample checks itself; on a real database unverified suggestions are findings, not failures.
        return !usingSample || (verified == counterparts.count && unexplained == 0)
    }

    /// The sample's two views, queried as the app queried them, with the N1QL one writes first.
    static var sampleCounterparts: [Counterpart] {
        var mapOnly = ViewQueryOptions()
        mapOnly.mapOnly = true
        var perCustomer = ViewQueryOptions()
        perCustomer.groupLevel = 1
        perCustomer.reduce = .sum   // the app's reduce summed the totals: the built-in _sum does the same
        return [
            Counterpart(view: "users/byName", options: mapOnly,
                        naiveN1QL: "SELECT meta().id AS id, name AS key, email AS value FROM _ WHERE type = 'user' ORDER BY name"),
            Counterpart(view: "orders/byCustomer", options: perCustomer,
                        naiveN1QL: "SELECT [customer] AS key, sum(total) AS value FROM _ WHERE type = 'order' GROUP BY [customer] ORDER BY [customer]"),
        ]
    }

    /// The document count and view names of a 1.x database, read from a copy (opening a file
    /// with the 1.x API may write to it, e.g. upgrade a 1.2 schema; the upgrade must see it as the app left it).
    private func inspect(_ source: URL) throws -> (documents: UInt, views: [String]) {
        let copy = work.appendingPathComponent("inspect", isDirectory: true)
        try FileManager.default.createDirectory(at: copy, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: copy) }
        try FileManager.default.copyItem(at: source, to: copy.appendingPathComponent(source.lastPathComponent))
        let manager = try CBLManager(directory: copy.path)
        defer { manager.close() }
        let db = try manager.existingDatabaseNamed(source.deletingPathExtension().lastPathComponent)
        return (db.documentCount, db.allViews.map(\.name).sorted())
    }
}

/// A failure the sample reports (exit status 1).
struct SampleError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
