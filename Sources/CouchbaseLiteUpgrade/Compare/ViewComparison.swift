import CouchbaseLite
import CouchbaseLiteSwift
import Foundation
import JSONCore
import SQLiteKit

/// The view side of a comparison: the view's stored index (what the app's own map function
/// emitted, read from the 1.x file) or a map (and reduce) closure run here.
public enum ViewDefinition {
    /// The view's stored index (`maps_N` rows) as the 1.x app left it; or, when the database holds
    /// a design document defining `name` and a view compiler is registered, that view indexed afresh.
    case stored(name: String)
    /// A map function (and reduce) given in Swift; the view is indexed in a scratch copy.
    case closure(name: String, map: CBLMapBlock, reduce: CBLReduceBlock?, version: String)

    public var name: String {
        switch self {
        case .stored(let name), .closure(let name, _, _, _): return name
        }
    }
}

/// The 1.x view query options a comparison runs the view with (`CBLQuery`'s).
public struct ViewQueryOptions {
    public var mapOnly = false
    public var keys: [Any]?
    public var startKey: Any?
    public var endKey: Any?
    public var startKeyDocID: String?
    public var endKeyDocID: String?
    public var inclusiveStart = true
    public var inclusiveEnd = true
    public var descending = false
    public var limit: UInt?
    public var skip: UInt = 0
    /// Group by the first N elements of array keys (0 = no grouping unless `group`).
    public var groupLevel: UInt = 0
    /// Group by whole keys (`group=true`).
    public var group = false
    /// A built-in reduce over the stored rows (the app's reduce closure is not in the file).
    public var reduce: CBLBuiltinReducer?
    public var prefixMatchLevel: UInt = 0

    public init() {}

    /// Sets these options on a 1.x view (or all-docs) query.
    public func apply(to query: CBLQuery) {
        query.mapOnly = mapOnly
        query.keys = keys
        query.startKey = startKey
        query.endKey = endKey
        query.startKeyDocID = startKeyDocID
        query.endKeyDocID = endKeyDocID
        query.inclusiveStart = inclusiveStart
        query.inclusiveEnd = inclusiveEnd
        query.descending = descending
        if let limit { query.limit = limit }
        query.skip = skip
        query.groupLevel = group ? 9999 : groupLevel
        query.prefixMatchLevel = prefixMatchLevel
        query.builtinReducer = reduce
    }

    /// The options that differ from the defaults, for reports.
    var summary: [String: String] {
        var s: [String: String] = [:]
        func json(_ v: Any?) -> String { ComparedValue(foundation: v).json }
        if mapOnly { s["mapOnly"] = "true" }
        if let keys { s["keys"] = json(keys) }
        if startKey != nil { s["startKey"] = json(startKey) }
        if endKey != nil { s["endKey"] = json(endKey) }
        if let startKeyDocID { s["startKeyDocID"] = startKeyDocID }
        if let endKeyDocID { s["endKeyDocID"] = endKeyDocID }
        if !inclusiveEnd { s["inclusiveEnd"] = "false" }
        if descending { s["descending"] = "true" }
        if let limit { s["limit"] = String(limit) }
        if skip > 0 { s["skip"] = String(skip) }
        if group { s["group"] = "true" }
        if groupLevel > 0 { s["groupLevel"] = String(groupLevel) }
        if let reduce { s["reduce"] = reduce.rawValue }
        if prefixMatchLevel > 0 { s["prefixMatchLevel"] = String(prefixMatchLevel) }
        return s
    }
}

/// Runs a 1.x view query and a N1QL query over the same data and explains every difference.
///
/// The 1.x database is never modified: it is copied into a scratch directory first. When no
/// converted database is given, the copy is converted there (as `cbl upgrade` would).
///
/// ```swift
/// var options = ViewQueryOptions()
/// options.mapOnly = true
/// let report = try ViewComparison(legacyDatabase: URL(fileURLWithPath: "old.cblite2"))
///     .compare(view: .stored(name: "tasks/byDate"), options: options,
///              n1ql: "SELECT meta().id AS id, date AS key FROM _ WHERE type = 'task' ORDER BY date COLLATE UNICODE, meta().id")
/// for d in report.differences { print(d.kind, d.rule.title, d.detail) }
/// ```
public final class ViewComparison: Sendable {
    public let legacyDatabase: URL
    public let convertedDatabase: URL?
    /// The key of an encrypted (SQLCipher) 1.x database.
    public let encryptionKey: CBLSymmetricKey?

    public init(legacyDatabase: URL, convertedDatabase: URL? = nil, encryptionKey: CBLSymmetricKey? = nil) {
        self.legacyDatabase = legacyDatabase
        self.convertedDatabase = convertedDatabase
        self.encryptionKey = encryptionKey
    }

    /// Compares `view` (queried with `options`) with the N1QL query `n1ql` (or a JSON query when it
    /// starts with `{` or `[`), which names its columns `id`, `key` and optionally `value`.
    public func compare(view: ViewDefinition, options: ViewQueryOptions = ViewQueryOptions(),
                        n1ql: String, parameters: [String: Any] = [:]) throws -> ComparisonReport {
        try withDatabases { legacy, converted in
            try report(view: view, options: options, n1ql: n1ql, parameters: parameters, legacy: legacy, converted: converted)
        }
    }

    /// Opens a scratch copy of the 1.x database and the converted one (converting when needed).
    func withDatabases<R>(_ body: (CBLDatabase, Database) throws -> R) throws -> R {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("cbl-compare-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let legacy = try openLegacyCopy(in: scratch)
        defer { legacy.manager.close() }
        let converted = try openConverted(scratch: scratch)
        defer { try? converted.close() }
        return try body(legacy.database, converted)
    }

    func report(view: ViewDefinition, options: ViewQueryOptions, n1ql: String, parameters: [String: Any],
                legacy db1: CBLDatabase, converted: Database) throws -> ComparisonReport {
        // N1QL first: a malformed query fails before any view work.
        let n1qlSide = try runN1QL(n1ql, parameters: parameters, on: converted)
        let viewSide = try runView(view, options: options, on: db1)

        var matcher = RowMatcher()
        matcher.compareValues = n1qlSide.hasValueColumn
        matcher.orderedByKey = n1qlSide.orderedByKey
        matcher.descending = options.descending
        matcher.groupLevel = options.group ? 0 : options.groupLevel
        matcher.staleIndexSequence = viewSide.staleIndexSequence
        matcher.facts = { id in
            let doc = db1.document(withID: id)
            return DocumentFacts(liveInLegacy: doc?.currentRevision != nil, deletedInLegacy: doc?.isDeleted ?? false,
                                 legacySequence: doc?.currentRevision?.sequence,
                                 inConverted: converted.document(withID: id) != nil)
        }
        return ComparisonReport(
            view: view.name, viewOptions: options.summary, query: n1ql,
            matchedBy: viewSide.rows.contains { $0.documentID != nil } ? "document ID and key" : "key",
            viewRows: viewSide.rows, n1qlRows: n1qlSide.rows,
            differences: matcher.differences(viewRows: viewSide.rows, n1qlRows: n1qlSide.rows))
    }

    // MARK: The 1.x side

    private struct Legacy {
        let manager: CBLManager
        let database: CBLDatabase
    }

    private func openLegacyCopy(in scratch: URL) throws -> Legacy {
        let fm = FileManager.default
        var isDir: ObjCBool = false
        guard fm.fileExists(atPath: legacyDatabase.path, isDirectory: &isDir), isDir.boolValue else {
            throw ComparisonError.input("\(legacyDatabase.path) is not a database bundle (a NAME.cblite2 directory)")
        }
        let name = legacyDatabase.deletingPathExtension().lastPathComponent
        let dir = scratch.appendingPathComponent("legacy", isDirectory: true)
        try fm.createDirectory(at: dir, withIntermediateDirectories: true)
        // Everything below reads the copy: the given database is never opened, so not even
        // SQLite's -wal/-shm side files appear next to it.
        let copy = dir.appendingPathComponent("\(name).cblite2")
        try fm.copyItem(at: legacyDatabase, to: copy)
        if Self.isTwoXBundle(copy) {
            throw ComparisonError.input("\(legacyDatabase.lastPathComponent) is a 2.x/3.x database; give the 1.x database the app used")
        }
        let manager = try CBLManager(directory: dir.path)
        if let encryptionKey { manager.registerEncryptionKey(encryptionKey, forDatabaseNamed: name) }
        do {
            return Legacy(manager: manager, database: try manager.existingDatabaseNamed(name))
        } catch {
            throw ComparisonError.input("\(legacyDatabase.path) is not a readable 1.x database: \(error.localizedDescription)")
        }
    }

    /// Whether the bundle's SQLite file has the 2.x key-store tables (both formats call it db.sqlite3).
    static func isTwoXBundle(_ bundle: URL) -> Bool {
        let path = bundle.appendingPathComponent("db.sqlite3").path
        guard FileManager.default.fileExists(atPath: path),
              let c = try? SQLiteConnection(path: path, mode: .init(readOnly: true, create: false)) else { return false }
        defer { c.close() }
        let tables = try? c.scalarInt("SELECT count(*) FROM sqlite_master WHERE name='kv_default'")
        return (tables ?? nil ?? 0) > 0
    }

    struct ViewSide {
        var rows: [ComparedRow]
        var staleIndexSequence: Int64?
    }

    func runView(_ definition: ViewDefinition, options: ViewQueryOptions, on db: CBLDatabase) throws -> ViewSide {
        let view: CBLView
        let query: CBLQuery
        switch definition {
        case .stored(let name) where try CBLView.compiler() != nil && db.compileDesignDocumentView(named: name) != nil:
            // A design document's view (a REST-era app's JavaScript): the design document is the
            // source of truth, so the view is compiled and indexed afresh in the scratch copy.
            view = try db.compileDesignDocumentView(named: name)!
            query = view.createQuery()
            query.indexUpdateMode = .before
        case .stored(let name):
            guard let v = db.existingViewNamed(name) else {
                let names = db.allViews.map(\.name).sorted()
                throw ComparisonError.input("No view named '\(name)' in \(legacyDatabase.lastPathComponent)"
                                            + (names.isEmpty ? " (it has no views)" : "; its views: \(names.joined(separator: ", "))"))
            }
            view = v
            query = view.createQuery()
            query.indexUpdateMode = .never
        case .closure(let name, let map, let reduce, let version):
            view = db.viewNamed(name)
            view.setMapBlock(map, reduce: reduce, version: version)
            query = view.createQuery()
            query.indexUpdateMode = .before
        }
        options.apply(to: query)
        var rows: [ComparedRow] = []
        for (i, row) in try query.run().enumerated() {
            rows.append(ComparedRow(documentID: row.sourceDocumentID, key: ComparedValue(foundation: row.key ?? NSNull()),
                                    value: ComparedValue(foundation: row.value ?? NSNull()), index: i))
        }
        let indexed = view.lastSequenceIndexed
        return ViewSide(rows: rows, staleIndexSequence: indexed < db.lastSequenceNumber ? indexed : nil)
    }

    // MARK: The N1QL side

    private func openConverted(scratch: URL) throws -> Database {
        let bundle: URL
        if let convertedDatabase {
            bundle = scratch.appendingPathComponent("converted", isDirectory: true).appendingPathComponent(convertedDatabase.lastPathComponent)
            try FileManager.default.createDirectory(at: bundle.deletingLastPathComponent(), withIntermediateDirectories: true)
            try FileManager.default.copyItem(at: convertedDatabase, to: bundle)
        } else {
            bundle = scratch.appendingPathComponent("converted", isDirectory: true)
                .appendingPathComponent(legacyDatabase.lastPathComponent)
            var options = UpgradeOptions()
            options.encryptionKey = encryptionKey
            try DatabaseUpgrader(source: legacyDatabase, destination: bundle, options: options).run()
        }
        var config = DatabaseConfiguration()
        config.directory = bundle.deletingLastPathComponent().path
        return try Database(name: bundle.deletingPathExtension().lastPathComponent, config: config)
    }

    struct N1QLSide {
        var rows: [ComparedRow]
        var hasValueColumn: Bool
        var orderedByKey: Bool
    }

    /// Whether a query tree's ORDER BY starts with its `key` column's expression (or the `key`
    /// alias, or, for an array key `[a, b]`, the terms a, b), directions and collations aside.
    static func ordersByKey(_ tree: JSONObject) -> Bool {
        func strip(_ e: JSONValue) -> JSONValue {
            if case .array(let a) = e, let op = a.first?.stringValue?.uppercased() {
                if (op == "ASC" || op == "DESC"), a.count == 2 { return strip(a[1]) }
                if op == "COLLATE", a.count == 3 { return strip(a[2]) }
            }
            return e
        }
        guard let order = tree["ORDER_BY"]?.arrayValue, !order.isEmpty else { return false }
        let terms = order.map(strip)
        var keyExpression: JSONValue?
        for item in tree["WHAT"]?.arrayValue ?? [] {
            if case .array(let a) = item, a.count == 3, a[0].stringValue?.uppercased() == "AS", a[2].stringValue == "key" {
                keyExpression = strip(a[1])
            }
        }
        if terms[0] == [".key"] { return true }
        guard let key = keyExpression else { return false }
        if terms[0] == key { return true }
        if case .array(let parts) = key, parts.first == .string("[]") {
            let elements = Array(parts.dropFirst())
            return !elements.isEmpty && terms.count >= elements.count && Array(terms.prefix(elements.count)) == elements
        }
        return false
    }

    func runN1QL(_ text: String, parameters: [String: Any], on db: Database) throws -> N1QLSide {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        let query: Query
        let tree: JSONObject
        do {
            if trimmed.hasPrefix("{") || trimmed.hasPrefix("[") {
                query = try db.createQuery(json: trimmed)
                // `{…}` or LiteCore's `["SELECT", {…}]`.
                let parsed = try? JSON.value(trimmed)
                tree = parsed?.objectValue ?? parsed?.arrayValue?.last?.objectValue ?? [:]
            } else {
                query = try db.createQuery(trimmed)
                tree = try N1QLParser.parseTree(trimmed)
            }
        } catch {
            throw ComparisonError.query("\(error)")
        }
        let columns = try query.columnNames
        guard columns.contains("key") else {
            throw ComparisonError.query("The query must name its columns id, key and optionally value "
                                        + "(SELECT meta().id AS id, … AS key[, … AS value] FROM _ …); it has \(columns.joined(separator: ", "))")
        }
        if !parameters.isEmpty {
            let p = Parameters()
            for (k, v) in parameters { p.setValue(v, forName: k) }
            query.parameters = p
        }
        var rows: [ComparedRow] = []
        for (i, r) in try query.execute().allResults().enumerated() {
            let d = r.toDictionary()
            rows.append(ComparedRow(documentID: d["id"] as? String, key: ComparedValue(foundation: d["key"]),
                                    value: columns.contains("value") ? ComparedValue(foundation: d["value"]) : .value(.null), index: i))
        }
        return N1QLSide(rows: rows, hasValueColumn: columns.contains("value"), orderedByKey: Self.ordersByKey(tree))
    }
}

/// Why a comparison could not run (bad input, not a difference).
public enum ComparisonError: Error, CustomStringConvertible, LocalizedError {
    /// A database or view that is not there or not of the expected kind.
    case input(String)
    /// A query that does not parse or lacks the `key` column.
    case query(String)

    public var description: String {
        switch self {
        case .input(let m): return m
        case .query(let m): return m
        }
    }

    public var errorDescription: String? { description }
}
