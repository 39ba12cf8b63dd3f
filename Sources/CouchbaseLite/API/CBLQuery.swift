import Foundation

/// When a query brings its view's index up to date.
public enum CBLIndexUpdateMode: Int, Sendable {
    /// Update the index before running (default).
    case before
    /// Query the index as it is.
    case never
    /// Query the index as it is, then update it in the background.
    case after
}

/// What an all-documents query returns.
public enum CBLAllDocsMode: Int, Sendable {
    /// Live documents only.
    case allDocs
    /// Deleted documents too.
    case includeDeleted
    /// Live documents, with their conflicting revisions listed.
    case showConflicts
    /// Only documents in conflict.
    case onlyConflicts
    /// In sequence (changes-feed) order; keys are sequence numbers.
    case bySequence
}

/// A query over a view's index, or over all documents (`createAllDocumentsQuery()`).
///
/// Set options, then `run()`. Safe to use from any thread; options are read when the query runs.
// @unchecked because the options are only touched under `lock`; `database` and `view` are lets of thread-safe classes.
public class CBLQuery: NSObject, @unchecked Sendable {
    /// The database queried.
    public let database: CBLDatabase
    /// The view queried; nil for an all-documents query.
    public let view: CBLView?

    private let lock = NSLock()
    private var options = QueryOptions()

    init(database: CBLDatabase, view: CBLView?) {
        self.database = database
        self.view = view
    }

    private func get<T>(_ keyPath: KeyPath<QueryOptions, T>) -> T {
        lock.lock(); defer { lock.unlock() }
        return options[keyPath: keyPath]
    }

    private func set<T>(_ keyPath: WritableKeyPath<QueryOptions, T>, _ value: T) {
        lock.lock(); defer { lock.unlock() }
        options[keyPath: keyPath] = value
    }

    /// The first key to return (the last when `descending`).
    public var startKey: Any? { get { get(\.startKey) } set { set(\.startKey, newValue) } }
    /// The last key to return (the first when `descending`).
    public var endKey: Any? { get { get(\.endKey) } set { set(\.endKey, newValue) } }
    /// Among rows with key == `startKey`, start at this document ID.
    public var startKeyDocID: String? { get { get(\.startKeyDocID) } set { set(\.startKeyDocID, newValue) } }
    /// Among rows with key == `endKey`, stop at this document ID.
    public var endKeyDocID: String? { get { get(\.endKeyDocID) } set { set(\.endKeyDocID, newValue) } }
    /// Whether `startKey` itself is included (default true).
    public var inclusiveStart: Bool { get { get(\.inclusiveStart) } set { set(\.inclusiveStart, newValue) } }
    /// Whether `endKey` itself is included (default true).
    public var inclusiveEnd: Bool { get { get(\.inclusiveEnd) } set { set(\.inclusiveEnd, newValue) } }
    /// Return rows in descending key order (then `startKey` is the high end).
    public var descending: Bool { get { get(\.descending) } set { set(\.descending, newValue) } }
    /// The maximum number of rows (default unlimited).
    public var limit: UInt { get { get(\.limit) } set { set(\.limit, newValue) } }
    /// How many rows to skip first.
    public var skip: UInt { get { get(\.skip) } set { set(\.skip, newValue) } }
    /// Only rows with these keys, in this order.
    public var keys: [Any]? { get { get(\.keys) } set { set(\.keys, newValue) } }
    /// Match keys by prefix: 1 = strings by prefix / arrays by their first elements, 2+ = deeper (1.x docs).
    public var prefixMatchLevel: UInt { get { get(\.prefixMatchLevel) } set { set(\.prefixMatchLevel, newValue) } }
    /// Skip the reduce function and return map rows.
    public var mapOnly: Bool { get { get(\.mapOnly) } set { set(\.mapOnly, newValue) } }
    /// Group rows by the first N elements of array keys (and by equal keys) and reduce each group.
    public var groupLevel: UInt { get { get(\.groupLevel) } set { set(\.groupLevel, newValue) } }
    /// A built-in reducer for this query only, used instead of the view's reduce: lets tools reduce
    /// a view's stored index (whose app closure is not available). Its errors (a `_sum` of
    /// non-numbers) make `run()` throw.
    package var builtinReducer: CBLBuiltinReducer? { get { get(\.builtinReducer) } set { set(\.builtinReducer, newValue) } }
    /// Counts the index rows before the first row returned, into the result's
    /// ``CBLQueryEnumerator/offset`` (CouchDB's `offset`, for paging); costs one counting query
    /// per run, so it is off by default. Map queries without `keys` only.
    public var countsOffset: Bool { get { get(\.countsOffset) } set { set(\.countsOffset, newValue) } }
    /// When to update the view index.
    public var indexUpdateMode: CBLIndexUpdateMode { get { get(\.indexUpdateMode) } set { set(\.indexUpdateMode, newValue) } }
    /// Filters rows after the index lookup (`NSPredicate(block: { row, _ in … })`); limit/skip then apply to the filtered rows.
    public var postFilter: NSPredicate? { get { get(\.postFilter) } set { set(\.postFilter, newValue) } }
    /// Load each row's document together with the row.
    public var prefetch: Bool { get { get(\.prefetch) } set { set(\.prefetch, newValue) } }
    /// All-documents queries: which documents to return.
    public var allDocsMode: CBLAllDocsMode { get { get(\.allDocsMode) } set { set(\.allDocsMode, newValue) } }

    var currentOptions: QueryOptions {
        lock.lock(); defer { lock.unlock() }
        return options
    }

    /// Runs the query.
    public func run() throws -> CBLQueryEnumerator {
        let options = currentOptions
        if let view {
            if options.indexUpdateMode == .before { try view.updateIndex() }
            let result = try QueryRunner(database: database, options: options).runView(view)
            if options.indexUpdateMode == .after { view.updateIndexAsync {} }
            return result
        }
        return try QueryRunner(database: database, options: options).runAllDocs()
    }

    /// Runs the query in the background and calls `onComplete` with the rows, or an empty result
    /// and the error. On success the error is ``CBLQueryNoError`` (the 1.4 header's block takes a non-optional error).
    public func runAsync(_ onComplete: @escaping @Sendable (CBLQueryEnumerator, Error) -> Void) {
        DispatchQueue.global().async { [self] in
            do {
                onComplete(try run(), CBLQueryNoError())
            } catch {
                onComplete(CBLQueryEnumerator(database: database, rows: [], sequenceNumber: 0), error)
            }
        }
    }

    /// Runs the query and returns its rows (async/await form).
    public func execute() async throws -> CBLQueryEnumerator {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async { [self] in
                continuation.resume(with: Result { try run() })
            }
        }
    }

    /// A live query with the same options, re-run as the database changes.
    public func asLive() -> CBLLiveQuery {
        let live = CBLLiveQuery(database: database, view: view)
        live.copyOptions(from: self)
        return live
    }

    /// Swift 2-era spelling of ``asLive()``.
    public func asLiveQuery() -> CBLLiveQuery { asLive() }

    func copyOptions(from other: CBLQuery) {
        let snapshot = other.currentOptions
        lock.lock(); defer { lock.unlock() }
        options = snapshot
    }
}

/// Passed to `runAsync`'s block when there was no error.
public struct CBLQueryNoError: Error, LocalizedError, Sendable {
    public var errorDescription: String? { "no error" }
}

extension CBLDatabase {
    /// A query over all documents, ordered by document ID (spec 7.6).
    public func createAllDocumentsQuery() -> CBLQuery {
        CBLQuery(database: self, view: nil)
    }
}

/// A snapshot of a query's options.
struct QueryOptions {
    var startKey: Any?
    var endKey: Any?
    var startKeyDocID: String?
    var endKeyDocID: String?
    var inclusiveStart = true
    var inclusiveEnd = true
    var descending = false
    var limit: UInt = .max
    var skip: UInt = 0
    var keys: [Any]?
    var prefixMatchLevel: UInt = 0
    var mapOnly = false
    var groupLevel: UInt = 0
    var indexUpdateMode: CBLIndexUpdateMode = .before
    var postFilter: NSPredicate?
    var prefetch = false
    var allDocsMode: CBLAllDocsMode = .allDocs
    /// REST `group=true`: group by whole keys.
    var groupExact = false
    /// REST `reduce=true|false`, when given.
    var reduceSpecified: Bool?
    var builtinReducer: CBLBuiltinReducer?
    var countsOffset = false
}
