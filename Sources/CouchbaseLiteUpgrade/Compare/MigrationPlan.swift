import CouchbaseLite
import CouchbaseLiteSwift
import Foundation
import JSONCore

/// A whole-database migration plan: for every view of a 1.x database, the N1QL query and value
/// index that replace it, verified by running both sides over one conversion made on the fly.
public struct MigrationPlan: Codable, Sendable {
    /// How well a suggested query reproduces its view.
    public enum Verdict: String, Codable, Sendable, Comparable {
        /// Same rows, same order, same values.
        case equal = "equal"
        /// Differences remain, and a named rule explains each of them.
        case explained = "equal with explained differences"
        /// The suggestion could not express the view (or a difference no rule explains remains).
        case handWritten = "needs a hand-written query"

        var rank: Int { self == .equal ? 0 : self == .explained ? 1 : 2 }
        public static func < (a: Verdict, b: Verdict) -> Bool { a.rank < b.rank }
    }

    /// How many differences one rule explains.
    public struct RuleCount: Codable, Sendable, Equatable {
        /// The rule's name (``DifferenceRule``'s raw value), title, count, explanation and reference.
        public var rule: String
        public var title: String
        public var count: Int
        public var explanation: String
        public var reference: String
    }

    /// One view query (the map rows, or a reduce with a grouping) and its replacement.
    public struct Entry: Codable, Sendable {
        /// The view, `design/name`.
        public var view: String
        /// Where the view's definition comes from: `stored index` or `design document`.
        public var source: String
        /// The query verified: `map` or `reduce _count group` / `reduce _sum group_level=1`.
        public var query: String
        public var verdict: Verdict
        /// True when both sides were run and gave the same rows in the same order.
        public var verified: Bool
        /// The suggested N1QL query (columns `id`, `key`, `value`), empty when the view could not be run.
        public var n1ql: String
        /// The same query as 2.x QueryBuilder code in Swift (or a comment saying why there is none).
        public var queryBuilderSwift: String
        /// The value index's name and expressions.
        public var indexName: String
        public var indexExpressions: [String]
        /// The index as 2.x Swift code.
        public var indexSwift: String
        /// The map the suggestion was built from (given or inferred), nil when none could be found.
        public var map: MapDescription?
        /// The rows each side gave when both were run.
        public var viewRowCount: Int
        public var n1qlRowCount: Int
        /// Time to run the view query (its index already up to date) and the N1QL query, in milliseconds.
        public var viewMilliseconds: Double
        public var n1qlMilliseconds: Double
        /// The rules that explain the remaining differences, most first.
        public var rules: [RuleCount]
        /// What the suggestion could not express (why the view needs a hand-written query).
        public var unexpressed: [String]
        /// The first differences (at most `MigrationPlanner.differenceLimit`).
        public var differences: [RowDifference]
        /// How many differences there were in all.
        public var differenceCount: Int
    }

    /// The 1.x database planned (its bundle's name).
    public var database: String
    /// One entry per view query, by view name.
    public var entries: [Entry]
    /// Documents converted for the verification, and how long planning took (ms).
    public var convertedDocuments: Int
    public var milliseconds: Double
    /// What the plan could not look at (e.g. the reduce functions of stored views, which live in the app's code).
    public var notes: [String]

    /// Each view's verdict: the worst of its queries'.
    public var viewVerdicts: [(view: String, verdict: Verdict)] {
        var order: [String] = [], worst: [String: Verdict] = [:]
        for e in entries {
            if worst[e.view] == nil { order.append(e.view) }
            worst[e.view] = max(worst[e.view] ?? .equal, e.verdict)
        }
        return order.map { ($0, worst[$0]!) }
    }

    /// How many views have each verdict.
    public func count(_ verdict: Verdict) -> Int { viewVerdicts.filter { $0.verdict == verdict }.count }

    /// True when no view needs a hand-written query.
    public var isComplete: Bool { !entries.contains { $0.verdict == .handWritten } }
}

/// Plans the migration of every view of a 1.x database: the stored indexes (the `views` table) and
/// the JavaScript views of `_design/` documents (when a view compiler is registered).
///
/// ```swift
/// let plan = try MigrationPlanner(legacyDatabase: URL(fileURLWithPath: "app.cblite2")).plan()
/// for e in plan.entries { print(e.view, e.verdict.rawValue, e.n1ql) }
/// ```
public struct MigrationPlanner: Sendable {
    /// How many differences an entry keeps (the count is kept whole).
    public static let differenceLimit = 20

    /// The comparison every view is verified with (it owns the scratch copy and the conversion).
    public let comparison: ViewComparison

    /// A planner for the 1.x database at `legacyDatabase` (a `NAME.cblite2` bundle, never opened in place).
    public init(legacyDatabase: URL, encryptionKey: CBLSymmetricKey? = nil) {
        comparison = ViewComparison(legacyDatabase: legacyDatabase, encryptionKey: encryptionKey)
    }

    /// A view to plan: its name, where it is defined, and its built-in reduce if the design document names one.
    struct Target {
        var name: String
        var source: String
        var reduce: CBLBuiltinReducer?
        var reduceSource: String?
    }

    /// Converts the database once (in a scratch directory) and plans every view over that conversion.
    public func plan() throws -> MigrationPlan {
        let started = DispatchTime.now().uptimeNanoseconds
        return try comparison.withDatabases { legacy, converted in
            var entries: [MigrationPlan.Entry] = []
            for target in try targets(legacy) {
                entries += plan(target, legacy: legacy, converted: converted)
            }
            var notes: [String] = []
            if entries.contains(where: { $0.source == "stored index" }) {
                notes.append("A stored index holds the map's rows only: a reduce the app ran over it is in the app's code, not in the file. "
                             + "Verify those queries with `cbl compare --view NAME --reduce count|sum|stats --group-level N --suggest`.")
            }
            return MigrationPlan(database: comparison.legacyDatabase.lastPathComponent, entries: entries,
                                 convertedDocuments: Int(converted.count),
                                 milliseconds: Self.milliseconds(since: started), notes: notes)
        }
    }

    /// The stored views and the design documents' views, by name.
    func targets(_ db: CBLDatabase) throws -> [Target] {
        var byName: [String: Target] = [:]
        for view in db.allViews { byName[view.name] = Target(name: view.name, source: "stored index") }
        let query = db.createAllDocumentsQuery()
        query.startKey = "_design/"
        query.endKey = "_design0"
        for row in try query.run() {
            guard let id = row.documentID, let props = db.existingDocument(withID: id)?.properties,
                  let views = props["views"] as? [String: Any] else { continue }
            let design = String(id.dropFirst("_design/".count))
            for (name, definition) in views where name != "lib" {
                guard let d = definition as? [String: Any], d["map"] is String else { continue }
                let source = (d["reduce"] as? String)?.trimmingCharacters(in: .whitespacesAndNewlines)
                byName["\(design)/\(name)"] = Target(name: "\(design)/\(name)", source: "design document",
                                                      reduce: source.flatMap(CBLBuiltinReducer.init(designDocumentSource:)),
                                                      reduceSource: source)
            }
        }
        return byName.values.sorted { $0.name < $1.name }
    }

    /// The map rows' entry and, for a built-in reduce, the grouped entries.
    func plan(_ target: Target, legacy: CBLDatabase, converted: Database) -> [MigrationPlan.Entry] {
        var mapOnly = ViewQueryOptions()
        mapOnly.mapOnly = true
        let (mapEntry, description) = entry(target, query: "map", options: mapOnly, description: nil, legacy: legacy, converted: converted)
        var out = [mapEntry]
        if let reduce = target.reduce {
            var grouped = ViewQueryOptions()
            grouped.reduce = reduce
            grouped.group = true
            out.append(entry(target, query: "reduce \(reduce.rawValue) group", options: grouped, description: description,
                             legacy: legacy, converted: converted).0)
            if (description?.keyPaths.count ?? 0) > 1 {
                var level = ViewQueryOptions()
                level.reduce = reduce
                level.groupLevel = 1
                out.append(entry(target, query: "reduce \(reduce.rawValue) group_level=1", options: level, description: description,
                                 legacy: legacy, converted: converted).0)
            }
        } else if let source = target.reduceSource {
            out[0].unexpressed.append("the reduce function is JavaScript (\(source.prefix(60))…): N1QL aggregates only replace _count, _sum and _stats")
            out[0].verdict = .handWritten
        }
        return out
    }

    private func entry(_ target: Target, query: String, options: ViewQueryOptions, description: MapDescription?,
                       legacy: CBLDatabase, converted: Database) -> (MigrationPlan.Entry, MapDescription?) {
        var e = MigrationPlan.Entry(view: target.name, source: target.source, query: query, verdict: .handWritten, verified: false,
                                    n1ql: "", queryBuilderSwift: "", indexName: "", indexExpressions: [], indexSwift: "", map: nil,
                                    viewRowCount: 0, n1qlRowCount: 0, viewMilliseconds: 0, n1qlMilliseconds: 0, rules: [],
                                    unexpressed: [], differences: [], differenceCount: 0)
        let s: ViewSuggestion
        do {
            s = try comparison.suggest(view: target.name, options: options, description: description, legacy: legacy, converted: converted)
        } catch {
            e.unexpressed = ["the view could not be run: \(error.localizedDescription)"]
            return (e, nil)
        }
        let report = s.report
        e.n1ql = s.n1ql
        e.map = s.description
        e.indexName = s.indexName
        e.indexExpressions = s.indexExpressions
        e.indexSwift = s.indexExpressions.isEmpty ? "// no index: the query reads every document" : s.indexSwift
        e.queryBuilderSwift = SuggestionWriter.queryBuilderSwift(description: s.description, options: options, n1ql: s.n1ql)
        e.viewRowCount = report.viewRows.count
        e.n1qlRowCount = report.n1qlRows.count
        e.verified = report.isEqual
        e.rules = report.countsByRule.map {
            MigrationPlan.RuleCount(rule: $0.rule.rawValue, title: $0.rule.title, count: $0.count,
                                    explanation: $0.rule.explanation, reference: $0.rule.reference)
        }
        e.differences = Array(report.differences.prefix(Self.differenceLimit))
        e.differenceCount = report.differences.count
        // The suggestion's notes other than the remaining rules' are what it could not express.
        e.unexpressed = s.notes.filter { !$0.hasPrefix("still ") }
        let unexplained = report.unexplained.count
        if unexplained > 0 { e.unexpressed.append("\(unexplained) differences no rule explains") }
        e.verdict = !e.unexpressed.isEmpty ? .handWritten : report.isEqual ? .equal : .explained
        // Timings: each side once more, the view's index already up to date.
        var t = DispatchTime.now().uptimeNanoseconds
        _ = try? comparison.runView(.stored(name: target.name), options: options, on: legacy)
        e.viewMilliseconds = Self.milliseconds(since: t)
        t = DispatchTime.now().uptimeNanoseconds
        _ = try? comparison.runN1QL(s.n1ql, parameters: [:], on: converted)
        e.n1qlMilliseconds = Self.milliseconds(since: t)
        return (e, s.description)
    }

    static func milliseconds(since start: UInt64) -> Double {
        (Double(DispatchTime.now().uptimeNanoseconds - start) / 1_000_000 * 1000).rounded() / 1000
    }
}
