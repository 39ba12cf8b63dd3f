import CFullText
import Fleece
import Foundation
import JSONCore
import SQLiteKit

/// A query over a database's collections (the 2.x/3.x `Query`); the `QueryBuilder` steps
/// (`From`, `Where`, `OrderBy`, …) are subclasses, as in Couchbase Lite. Thread-safe: its
/// compiled form and `parameters` are behind its lock.
// @unchecked because the tree (JSON values) is immutable after init and `compiled`/`parameters` are only touched under `lock`.
public class Query: @unchecked Sendable {
    /// The database the query runs on; nil only for a `QueryBuilder` query whose `from(_:)`
    /// source is not a `DataSource` (its error is then reported on first use).
    private let origin: Database?
    /// The database the query runs on, or the query's error when it has none.
    var database: Database {
        get throws {
            guard let origin else { throw Self.noDataSource }
            return origin
        }
    }
    /// 2.x raises when `from(_:)` is given a source it did not make; a `QueryBuilder` query
    /// cannot throw while it is built, so this is what running it throws.
    static let noDataSource = CouchbaseLiteError(
        .invalidQuery, "QueryBuilder.from(_:) needs a DataSource.database(_:) or DataSource.collection(_:) source")
    /// The values of the query's `$parameters`; set before `execute()`.
    public var parameters: Parameters? {
        get { lock.lock(); defer { lock.unlock() }; return currentParameters }
        set { lock.lock(); defer { lock.unlock() }; currentParameters = newValue }
    }
    private var currentParameters: Parameters?
    /// The query tree the SQL is translated from (a `QueryBuilder` tree that holds a value JSON
    /// has no place for is reported when the query is first used).
    let expression: Swift.Result<QueryTree, CouchbaseLiteError>
    /// The tree (null when the query has none: see `expression`).
    var tree: QueryTree { (try? expression.get()) ?? .null }
    private let lock = NSLock()
    private var compiled: Compiled?

    /// The translation and what every run of it needs, worked out once.
    private struct Compiled {
        let output: QueryTranslator.Output
        /// The column names, shared by every result row.
        let keys: ResultKeys
        /// Each `$parameter` and its SQL name (`:p_…`).
        let parameters: [(name: String, sqlName: String)]

        init(_ output: QueryTranslator.Output) {
            self.output = output
            keys = ResultKeys(output.columnTitles)
            parameters = output.parameters.sorted().map { ($0, ":" + QueryTranslator.parameterName($0)) }
        }
    }

    /// The `QueryBuilder` clauses of a builder step (what the next step adds to); empty for a
    /// N1QL/JSON query.
    let clauses: BuilderClauses

    /// A N1QL/JSON query: compiled now, so a bad query fails at creation, as in LiteCore.
    init(database: Database, tree: QueryTree) throws {
        self.origin = database
        self.clauses = BuilderClauses()
        self.expression = .success(tree)
        compiled = Compiled(try Self.compile(tree, on: database))
    }

    /// A `QueryBuilder` query: building never throws in 2.x, so it is compiled on first use
    /// (`execute()`, `explain()`, `columnNames`), which reports any error.
    init(clauses: BuilderClauses) {
        self.clauses = clauses
        self.origin = clauses.database
        guard origin != nil else {
            expression = .failure(Self.noDataSource)
            return
        }
        expression = clauses.tree
    }

    /// The SQL translation of `tree`, compiled once.
    var translation: QueryTranslator.Output {
        get throws { try prepared.output }
    }

    private var prepared: Compiled {
        get throws {
            lock.lock()
            defer { lock.unlock() }
            if let compiled { return compiled }
            let c = Compiled(try Self.compile(try expression.get(), on: database))
            compiled = c
            return c
        }
    }

    private static func compile(_ tree: QueryTree, on database: Database) throws -> QueryTranslator.Output {
        // Compiled on a reader (or on the writer inside a write on this thread), so creating a
        // query does not wait for another thread's `inBatch`.
        let translation = try database.withReadFile { file in
            // FROM items name collections; which tables they are is read from the file now.
            var translator = QueryTranslator(resolver: { scope, collection in
                try QueryTranslator.CollectionTables.resolve(scope: scope, collection: collection,
                                                             databaseName: database.name, in: file)
            })
            let translation = try translator.translate(tree)
            if !translation.usesExpiration { try check(translation, on: file) }
            return translation
        }
        guard translation.usesExpiration else { return translation }
        // `meta().expiration` needs the column, added on the writer as LiteCore adds it; a
        // read-only file keeps its schema, and the query then fails to compile below.
        try? database.withWriteFile { file in
            for keyStore in translation.keyStores { try? file.addExpirationColumn(to: keyStore) }
        }
        try database.withReadFile { try check(translation, on: $0) }
        return translation
    }

    /// Registers what `translation` needs on `file`'s connection (collations) and prepares it
    /// there, so a bad query fails now.
    private static func check(_ translation: QueryTranslator.Output, on file: DataFile) throws {
        try registerCollations(translation, on: file)
        for table in translation.fullTextTables where try !file.connection.tableExists(table) {
            // LiteCore: NoSuchIndex, "'match' test requires a full-text index".
            let name = table.components(separatedBy: "::").dropFirst().joined(separator: "::")
            throw CouchbaseLiteError(.missingIndex, "'match' test requires a full-text index: there is no full-text index named '\(name)'")
        }
        do {
            _ = try file.connection.cached(translation.sql)
        } catch let e as SQLiteError {
            throw CouchbaseLiteError(.invalidQuery, "Query could not be compiled: \(e)")
        }
    }

    /// The collations the query uses, on the connection about to run it (each reader has its
    /// own; the SQL functions were registered when it opened).
    private static func registerCollations(_ translation: QueryTranslator.Output, on file: DataFile) throws {
        for name in translation.collations where !file.registeredCollations.contains(name) {
            try QueryFunctions.registerCollation(name, on: file)
            file.registeredCollations.insert(name)
        }
    }

    /// The result column names, as LiteCore names them (`$1`, property names, aliases).
    public var columnNames: [String] { get throws { try translation.columnTitles } }

    /// The SQL the query runs, SQLite's plan for it (`id|parent|notused|detail` rows) and the
    /// JSON query, in blank-line separated sections as LiteCore's `c4query_explain` has them.
    public func explain() throws -> String {
        let prepared = try prepared
        return try database.withReadFile { file in
            try Self.registerCollations(prepared.output, on: file)
            var out = prepared.output.sql + "\n\n"
            let stmt = try file.connection.prepare("EXPLAIN QUERY PLAN " + prepared.output.sql)
            try bind(stmt, prepared)
            while try stmt.step() {
                out += "\(stmt.int(0))|\(stmt.int(1))|\(stmt.int(2))|\(stmt.string(3) ?? "")\n"
            }
            if let json = try? JSON.string(try expression.get(), sortedKeys: true) { out += "\n" + json + "\n" }
            return out
        }
    }

    /// Runs the query and returns all of its rows.
    public func execute() throws -> ResultSet {
        let prepared = try prepared
        let translation = prepared.output
        // On a reader: the last commit, without waiting for a write in progress on another thread
        // (inside `inBatch` on this thread: on the writer, seeing the batch's writes).
        return try database.withReadFile { file in
            // The functions were registered when the connection opened. The compiled statement is
            // kept by the connection and re-bound on each run (SQLite re-plans it by itself when
            // the schema changes, e.g. after `createIndex`).
            if !translation.collations.isEmpty { try Self.registerCollations(translation, on: file) }
            let stmt: SQLiteStatement
            do {
                stmt = try file.connection.cached(translation.sql)
            } catch let e as SQLiteError {
                throw CouchbaseLiteError(.invalidQuery, "Query could not be compiled: \(e)")
            }
            defer { stmt.reset() }
            try bind(stmt, prepared)
            var rows: [Result] = []
            let titles = translation.columnTitles
            // The tokenizer reads MATCH strings while the statement steps (see CFullText.h).
            let searches = !translation.fullTextTables.isEmpty
            if searches { cbl_unicodesn_set_running_query(1) }
            defer { if searches { cbl_unicodesn_set_running_query(0) } }
            let keys = prepared.keys
            do {
                while try stmt.step() {
                    var values: [ResultValue] = []
                    values.reserveCapacity(titles.count)
                    for c in 0..<Int32(titles.count) {
                        values.append(ResultValue(stmt, column: c, sharedKeys: file.sharedKeys, blobStore: file.blobStore))
                    }
                    rows.append(Result(keys: keys, values: values))
                }
            } catch let e as SQLiteError {
                throw CouchbaseLiteError(.unexpectedError, "Query failed: \(e)")
            }
            return ResultSet(rows: rows, columnNames: titles)
        }
    }

    private func bind(_ stmt: SQLiteStatement, _ prepared: Compiled) throws {
        let values = parameters?.snapshot ?? [:]
        for (name, sqlName) in prepared.parameters {
            let index = stmt.parameterIndex(sqlName)
            guard index > 0 else { continue }
            guard let value = values[name] else {
                try stmt.bindNull(at: index)       // an unset parameter is MISSING
                continue
            }
            try Self.bind(value, at: index, stmt)
        }
    }

    private static func bind(_ value: Any, at index: Int32, _ stmt: SQLiteStatement) throws {
        switch value {
        case let s as String: try stmt.bind(s, at: index)   // first: the common case, and cheap to test
        case let b as Bool where type(of: value) == Bool.self: try stmt.bind(Int64(b ? 1 : 0), at: index)
        case let n as NSNumber where isBoolean(n): try stmt.bind(Int64(n.boolValue ? 1 : 0), at: index)
        case let i as Int: try stmt.bind(Int64(i), at: index)
        case let i as Int64: try stmt.bind(i, at: index)
        case let d as Double: try stmt.bind(d, at: index)
        case let s as String: try stmt.bind(s, at: index)
        case is NSNull: try stmt.bindBlob([UInt8](), at: index)
        default:
            let bytes = try FleeceCoding.encode(value, sharedKeys: nil)
            try stmt.bindBlob(bytes, at: index)
        }
    }

    /// Whether a parameter's `n` is a boolean, as JSONCore's classifier tells (JSONSerialization's
    /// booleans too): parameters are the public API's values, classified here as they are bound.
    private static func isBoolean(_ n: NSNumber) -> Bool {
        if case .bool = ValueClassifier.classify(number: n) { return true }
        return false
    }
}

/// The values of a query's `$parameters` (2.x `Parameters`). Thread-safe: the values are behind a lock.
// @unchecked because `values` (JSON values, which Mutex's region checking refuses to hand out) is only touched under `lock`.
public final class Parameters: @unchecked Sendable {
    private let lock = NSLock()
    private var values: [String: Any] = [:]

    /// Parameters with the given values (name without the `$`).
    public init(_ values: [String: Any] = [:]) { self.values = values }

    /// The value of parameter `name`, or nil when unset (the query then sees MISSING).
    public func value(forName name: String) -> Any? { snapshot[name] }
    /// Sets parameter `name` (a JSON-compatible value; nil unsets it).
    @discardableResult public func setValue(_ value: Any?, forName name: String) -> Parameters {
        lock.lock()
        defer { lock.unlock() }
        values[name] = value
        return self
    }
    /// Every value, read at once (what one query run binds).
    var snapshot: [String: Any] {
        lock.lock()
        defer { lock.unlock() }
        return values
    }
    /// Sets parameter `name` to a string.
    @discardableResult public func setString(_ value: String?, forName name: String) -> Parameters { setValue(value, forName: name) }
    /// Sets parameter `name` to an integer.
    @discardableResult public func setInt(_ value: Int, forName name: String) -> Parameters { setValue(value, forName: name) }
    /// Sets parameter `name` to a 64-bit integer.
    @discardableResult public func setInt64(_ value: Int64, forName name: String) -> Parameters { setValue(value, forName: name) }
    /// Sets parameter `name` to a double.
    @discardableResult public func setDouble(_ value: Double, forName name: String) -> Parameters { setValue(value, forName: name) }
    /// Sets parameter `name` to a boolean.
    @discardableResult public func setBoolean(_ value: Bool, forName name: String) -> Parameters { setValue(value, forName: name) }
}

extension Database {
    /// A query from a N1QL (SQL++) string.
    public func createQuery(_ n1ql: String) throws -> Query {
        let tree: JSONObject
        do {
            tree = try N1QLParser.parseTree(n1ql)
        } catch let e as N1QLSyntaxError {
            throw CouchbaseLiteError(e)
        }
        return try Query(database: self, tree: .object(tree))
    }

    /// A query from LiteCore's JSON query syntax (spec 9.1), as text (read by JSONCore).
    public func createQuery(json: String) throws -> Query {
        try Query(database: self, tree: try QueryTree(queryJSON: json))
    }

    /// A query from an already parsed JSON query tree.
    package func createQuery(tree: JSONValue) throws -> Query {
        try Query(database: self, tree: tree)
    }
}
