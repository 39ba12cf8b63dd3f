import Foundation
import JSONCore

/// Called by a map function for each index row: `emit(key, value)`.
public typealias CBLMapEmitBlock = (_ key: Any, _ value: Any?) -> Void
/// A map function: gets a document's properties and emits rows.
public typealias CBLMapBlock = (_ doc: [String: Any], _ emit: @escaping CBLMapEmitBlock) -> Void
/// A reduce function: gets keys and values (or, when `rereduce`, earlier reduce results) and returns one value.
public typealias CBLReduceBlock = (_ keys: [Any], _ values: [Any], _ rereduce: Bool) -> Any

/// How a view's keys are ordered (1.x `CBLViewCollation`; a design document's
/// `"options": {"collation": "raw"}`).
public enum CBLViewCollation: Int, Sendable {
    /// CouchDB's default view collation: types in JSON order, strings by Unicode (ICU) rules.
    case unicode
    /// CouchDB's `raw` collation: numbers < false < null < true < objects < arrays < strings,
    /// strings by code point.
    case raw
    /// The JSON order of types, strings by ASCII (byte) order (1.x `kCBLViewCollationASCII`).
    case ascii

    /// The `COLLATE` clause of key comparisons in SQL (the index is in `JSON` order).
    var sqlSuffix: String {
        switch self {
        case .unicode: return ""
        case .raw: return " COLLATE JSON_RAW"
        case .ascii: return " COLLATE JSON_ASCII"
        }
    }
}

/// A map/reduce view: an index of rows emitted by a map function over every document,
/// stored in the 1.x schema (`views` row + `maps_N` table) and updated incrementally.
// @unchecked because its mutable fields (map, reduce, version…) are only touched holding `database.lock`
// (`withLockHeld`, or `withLock` where the database's own state is touched too).
public final class CBLView: NSObject, @unchecked Sendable {
    /// The database the view indexes.
    public let database: CBLDatabase
    /// The view name (may contain `/`, as in `design/view`).
    public let name: String

    // Guarded by database.lock (`database.lock.withLockHeld`):
    private var map: CBLMapBlock?
    /// The JSON-text form of `map` when a compiler made it (see `CBLJSONMapFunction`).
    private var jsonMap: CBLJSONMapFunction?
    private var reduce: CBLReduceBlock?
    private var version: String?
    private var docType: String?
    private var keyCollation: CBLViewCollation = .unicode
    private var designOptions = DesignOptions()

    /// What a design document's `options` ask of the views it defines (CouchDB).
    package struct DesignOptions: Equatable, Sendable {
        /// `include_design`: design documents are mapped too.
        package var includeDesign = false
        /// `local_seq`: a JavaScript map gets `_local_seq` (a Swift map always does, as in 1.x).
        package var localSeq = false
        package init(includeDesign: Bool = false, localSeq: Bool = false) {
            self.includeDesign = includeDesign
            self.localSeq = localSeq
        }
    }

    init(database: CBLDatabase, name: String) {
        self.database = database
        self.name = name
    }

    /// The map function, or nil before `setMapBlock` was called in this process.
    public var mapBlock: CBLMapBlock? {
        database.lock.withLockHeld { map }
    }

    /// The JSON-text form of the map function, when a compiler made one.
    var jsonMapFunction: CBLJSONMapFunction? {
        database.lock.withLockHeld { jsonMap }
    }

    /// The reduce function, if any.
    public var reduceBlock: CBLReduceBlock? {
        database.lock.withLockHeld { reduce }
    }

    /// If set, only documents whose `type` property equals this are mapped (uses `revs.doc_type`).
    public var documentType: String? {
        get { database.lock.withLockHeld { docType } }
        set { database.lock.withLockHeld { docType = newValue } }
    }

    /// How the view's keys are ordered when queried (default ``CBLViewCollation/unicode``). The
    /// index is kept in the Unicode order; a query orders by this collation. Set from a design
    /// document's `options.collation` for views compiled from one.
    public var collation: CBLViewCollation {
        get { database.lock.withLockHeld { keyCollation } }
        set { database.lock.withLockHeld { keyCollation = newValue } }
    }

    /// The design document options the view was compiled with (none for a view set in Swift).
    package var designDocumentOptions: DesignOptions {
        get { database.lock.withLockHeld { designOptions } }
        set { database.lock.withLockHeld { designOptions = newValue } }
    }

    /// Defines the view's map function. A different `version` than the stored one discards the index.
    ///
    /// As in 1.x, the map function must be a pure function of the document it gets: it may be
    /// called on an indexing thread rather than the caller's (big index updates map on a helper
    /// thread while the rows are written), never concurrently with itself, and it must not call
    /// back into the database.
    @discardableResult
    public func setMapBlock(_ mapBlock: @escaping CBLMapBlock, version: String) -> Bool {
        setMapBlock(mapBlock, reduce: nil, version: version)
    }

    /// Defines the view's map and reduce functions.
    @discardableResult
    public func setMapBlock(_ mapBlock: @escaping CBLMapBlock, reduce reduceBlock: CBLReduceBlock?, version: String) -> Bool {
        // The app's own functions take over from a design document's (the listener stops recompiling it).
        database.forgetDesignDocumentView(named: name)
        return setMap(CBLCompiledMap(block: mapBlock), reduce: reduceBlock, version: version)
    }

    /// Defines the view's functions from a compiler's output (the JSON form, if any, is what the indexer runs).
    @discardableResult
    func setMap(_ compiled: CBLCompiledMap, reduce reduceBlock: CBLReduceBlock?, version: String) -> Bool {
        let changed = database.lock.withLockHeld {
            map = compiled.block
            jsonMap = compiled.json
            reduce = reduceBlock
            let changed = self.version != version
            self.version = version
            return changed
        }
        guard changed else { return true }
        // Registered holding the writer, not the lock (a read must never wait for the writer through it).
        do {
            try database.write(atomic: true) { store in _ = try store.registerView(named: name, version: version) }
            return true
        } catch {
            return false
        }
    }

    /// Swift 2-era spelling of ``setMapBlock(_:reduce:version:)``.
    @discardableResult
    public func setMapBlock(_ mapBlock: @escaping CBLMapBlock, reduceBlock: CBLReduceBlock?, version: String) -> Bool {
        setMapBlock(mapBlock, reduce: reduceBlock, version: version)
    }

    private var record: SQLiteStore.ViewRecord? {
        try? database.read { try $0.viewRecord(named: name) }
    }

    /// The database sequence the index is up to date with.
    public var lastSequenceIndexed: Int64 { record?.lastSequence ?? 0 }

    /// True if the index is behind the database.
    public var stale: Bool { lastSequenceIndexed < database.lastSequenceNumber }
    /// Same as ``stale``.
    public var isStale: Bool { stale }

    /// The number of rows in the index (updating it first).
    public var totalRows: UInt {
        try? updateIndex()
        return UInt(indexedRowCount)
    }

    /// The number of rows in the index as it is (no update first).
    package var indexedRowCount: Int {
        guard let record else { return 0 }
        if record.totalRows >= 0 { return Int(record.totalRows) }
        return Int((try? database.read { try $0.countRows(record) }) ?? 0)
    }

    /// Brings the index up to date with the database (and the other views of the same group).
    public func updateIndex() throws {
        try database.updateIndexes(for: self)
    }

    /// Updates the index in the background, then calls `onComplete`.
    public func updateIndexAsync(_ onComplete: @escaping @Sendable () -> Void) {
        DispatchQueue.global().async { [self] in
            try? updateIndex()
            onComplete()
        }
    }

    /// Discards the index; the next query rebuilds it.
    public func deleteIndex() {
        _ = try? database.write(atomic: true) { store in
            if let record = try store.viewRecord(named: name) { try store.deleteViewIndex(record) }
        }
    }

    /// Deletes the view and its index from the database.
    public func delete() {
        _ = try? database.write(atomic: true) { store in
            if let record = try store.viewRecord(named: name) { try store.deleteView(record) }
        }
        // The functions are released after the lock (their captures may call back into the database).
        let released = database.lock.withLock { s in
            defer {
                map = nil
                jsonMap = nil
                reduce = nil
                version = nil
                s.views[name] = nil
            }
            return (map, jsonMap, reduce, s.views[name])
        }
        _ = released
    }

    /// A new query on this view.
    public func createQuery() -> CBLQuery {
        CBLQuery(database: database, view: self)
    }

    /// Sums numeric values (a ready-made reduce helper, 1.x `+totalValues:`).
    public static func totalValues(_ values: [Any]) -> Double {
        values.reduce(0.0) { sum, value in
            switch value {
            case let n as Int: return sum + Double(n)
            case let d as Double: return sum + d
            case let n as NSNumber: return sum + n.doubleValue
            default: return sum
            }
        }
    }

    /// The group a view is indexed with: views sharing the text before the first `/` (spec 7.3).
    var groupName: String? {
        name.firstIndex(of: "/").map { String(name[..<$0]) }
    }

    public override var description: String { "CBLView[\(name)]" }
}

extension CBLDatabase {
    /// The view with this name, created (unregistered) if new. One instance per name.
    public func viewNamed(_ name: String) -> CBLView {
        lock.withLock { s in
            if let view = s.views[name] { return view }
            let view = CBLView(database: self, name: name)
            s.views[name] = view
            return view
        }
    }

    /// The view if it exists in the database or was created in this process; nil otherwise.
    public func existingViewNamed(_ name: String) -> CBLView? {
        if let known = lock.withLock({ $0.views[name] }) { return known }
        guard (try? read({ try $0.viewRecord(named: name) })) != nil else { return nil }
        return viewNamed(name)
    }

    /// Every view registered in the database file.
    public var allViews: [CBLView] {
        let names: [String] = (try? read { try $0.viewNames() }) ?? []
        return names.map(viewNamed)
    }

    /// Indexes `view` together with the other views of its group that have map functions.
    func updateIndexes(for view: CBLView) throws {
        var group = [view]
        if let prefix = view.groupName {
            // `mapBlock` takes the lock again (`withLockHeld`, which nests), never the state.
            group += lock.withLock { s in
                s.views.values.filter { $0 !== view && $0.groupName == prefix && $0.mapBlock != nil }
            }
        }
        guard view.mapBlock != nil else {
            throw CBLError.notFound("View '\(view.name)' has no map function")
        }
        if isReadOnly { return }
        // An index already up to date with the last commit needs no writer, so a query on it
        // never waits for a write in progress (inside a transaction this reads the writer).
        let upToDate = (try? read { store -> Bool in
            let last = try store.lastSequence
            return try group.allSatisfy { view in
                guard let record = try store.viewRecord(named: view.name) else { return true }
                return record.lastSequence >= last
            }
        }) ?? false
        if upToDate { return }
        _ = try write(atomic: true) { store in
            try ViewIndexer(store: store, views: group).run()
        }
    }
}
