import CCollation
import Foundation
import JSONCore
import SQLiteKit

extension CBLViewCollation {
    /// The C collator's mode for this collation.
    var cMode: CBLJSONCollationMode {
        switch self {
        case .unicode: return CBLCollationUnicode
        case .raw: return CBLCollationRaw
        case .ascii: return CBLCollationASCII
        }
    }
}

/// Executes view and all-documents queries (spec 7.4–7.6).
struct QueryRunner {
    let database: CBLDatabase
    let options: QueryOptions

    /// How many values are reduced at once before their results are re-reduced (keeps memory bounded).
    static let reduceChunkSize = 10_000

    // MARK: Keys and ranges

    /// Prefix-extends a key for `prefixMatchLevel` (spec 7.4): strings get U+FFFF appended;
    /// arrays get `{}` appended (level 1) or their last element extended (deeper levels).
    static func prefixExtend(_ key: Any, level: UInt) -> Any {
        guard level > 0 else { return key }
        if let typed = key as? JSONValue { return prefixExtend(typed, level: level) }
        if let s = key as? String { return s + "\u{FFFF}" }
        if let array = key as? [Any] {
            if level == 1 { return array + [[String: Any]()] }
            guard let last = array.last else { return array }
            var extended = array
            extended[extended.count - 1] = prefixExtend(last, level: level - 1)
            return extended
        }
        return key
    }

    /// ``prefixExtend(_:level:)`` of a typed key.
    static func prefixExtend(_ key: JSONValue, level: UInt) -> JSONValue {
        guard level > 0 else { return key }
        switch key {
        case .string(let s): return .string(s + "\u{FFFF}")
        case .array(var items):
            if level == 1 { return .array(items + [.object([:])]) }
            guard let last = items.last else { return key }
            items[items.count - 1] = prefixExtend(last, level: level - 1)
            return .array(items)
        default: return key
        }
    }

    private func encodeKey(_ key: Any) throws -> [UInt8] { try Self.keyText(key) }

    /// A query key's JSON text as the index holds keys: canonical, objects' members sorted; a typed
    /// key (a `JSONValue`, as the listener reads its parameters) keeps its objects' member order,
    /// which CouchDB's collation compares member by member (`{"b":2,"a":1}` finds only the rows
    /// emitted so).
    static func keyText(_ key: Any) throws -> [UInt8] {
        do {
            if let typed = key as? JSONValue { return try JSON.data(typed, sortedKeys: false) }
            return try JSON.data(key, sortedKeys: true)
        } catch {
            throw CBLError.badRequest("Query key is not JSON: \(error)")
        }
    }

    /// The range bounds after swapping for `descending` and prefix extension.
    private var bounds: (min: Any?, max: Any?, inclusiveMin: Bool, inclusiveMax: Bool, minDocID: String?, maxDocID: String?) {
        let minKey = options.descending ? options.endKey : options.startKey
        var maxKey = options.descending ? options.startKey : options.endKey
        if let key = maxKey, options.prefixMatchLevel > 0 { maxKey = Self.prefixExtend(key, level: options.prefixMatchLevel) }
        return (minKey, maxKey,
                options.descending ? options.inclusiveEnd : options.inclusiveStart,
                options.descending ? options.inclusiveStart : options.inclusiveEnd,
                options.descending ? options.endKeyDocID : options.startKeyDocID,
                options.descending ? options.startKeyDocID : options.endKeyDocID)
    }

    // MARK: View queries

    /// One key range a view query reads: the whole query's, or one per key of `keys`.
    private struct KeyRange {
        var lower: SQLiteStore.ViewKeyBound?
        var upper: SQLiteStore.ViewKeyBound?
    }

    /// The ranges to read, in output order. With `keys`, each key is its own range, in the
    /// order given (a key listed twice is read twice, as CouchDB does), and the document-ID
    /// bounds apply within each key.
    private func keyRanges() throws -> [KeyRange] {
        let b = bounds
        if let keys = options.keys {
            return try keys.map { key in
                let text = String(decoding: try encodeKey(key), as: UTF8.self)
                return KeyRange(lower: .init(key: text, inclusive: true, documentID: b.minDocID),
                                upper: .init(key: text, inclusive: true, documentID: b.maxDocID))
            }
        }
        func bound(_ key: Any?, inclusive: Bool, docID: String?) throws -> SQLiteStore.ViewKeyBound? {
            guard let key else { return nil }
            return .init(key: String(decoding: try encodeKey(key), as: UTF8.self), inclusive: inclusive, documentID: docID)
        }
        return [KeyRange(lower: try bound(b.min, inclusive: b.inclusiveMin, docID: b.minDocID),
                         upper: try bound(b.max, inclusive: b.inclusiveMax, docID: b.maxDocID))]
    }

    /// `skip` and `limit` over the rows a query outputs (map rows, or reduced rows when reducing:
    /// CouchDB, 1.x's ForestDB storage and .NET count grouped rows; spec 7.5).
    private struct RowWindow {
        var toSkip: Int
        var remaining: Int
        /// Whether the next output row is kept (and counts it).
        mutating func admit() -> Bool {
            if toSkip > 0 { toSkip -= 1; return false }
            guard remaining > 0 else { return false }
            remaining -= 1
            return true
        }
        var isFull: Bool { remaining == 0 }
        static let unbounded = RowWindow(toSkip: 0, remaining: .max)
    }

    func runView(_ view: CBLView) throws -> CBLQueryEnumerator {
        let reduceBlock: ThrowingReduce? = options.builtinReducer.map { r in { try r.reduce(keys: $0, values: $1, rereduce: $2) } }
            ?? view.reduceBlock.map { block in
                { keys, values, rereduce in
                    let result = block(keys, values, rereduce)
                    // A compiled reduce that failed hands back its error (a reduce block cannot throw).
                    if let failure = result as? CBLReduceFailure { throw failure.error }
                    return result
                }
            }
        let grouped = !options.mapOnly && (options.groupLevel > 0 || options.groupExact)
        var reduce = !options.mapOnly && (reduceBlock != nil || grouped)
        if let requested = options.reduceSpecified {
            if requested && reduceBlock == nil && !grouped {
                throw CBLError.badRequest("View '\(view.name)' has no reduce function")
            }
            reduce = requested && (reduceBlock != nil || grouped)
        }
        let collation = view.collation
        let usePostFilter = options.postFilter != nil
        return try database.read { store in
            guard let record = try store.viewRecord(named: view.name) else {
                throw CBLError.notFound("View '\(view.name)' not found")
            }
            let ranges = try keyRanges()
            let b = bounds
            var request = SQLiteStore.ViewRowsRequest()
            // A reduce needs neither document IDs nor their order: read the index table alone.
            request.lean = reduce && b.minDocID == nil && b.maxDocID == nil && !options.prefetch
            request.withBodies = options.prefetch
            request.descending = options.descending
            request.collation = collation
            // A post-filter takes skip and limit after filtering; one range of map rows pages in SQL.
            var window = usePostFilter ? RowWindow.unbounded
                : RowWindow(toSkip: Int(clamping: options.skip), remaining: Int(clamping: options.limit))
            if !usePostFilter && !reduce && ranges.count == 1 {
                request.page = pageClause
                window = .unbounded
            }

            var rows: [CBLQueryRow] = []
            var reducer = GroupReducer(runner: self, block: reduceBlock, grouped: grouped,
                                       collation: collation.cMode, store: store)
            do {
                for range in ranges where !window.isFull {
                    request.lowerBound = range.lower
                    request.upperBound = range.upper
                    let stmt = try store.viewRows(record, request)
                    defer { stmt.reset() }
                    if reduce {
                        try reducer.read(stmt, into: &rows, window: &window)
                        if grouped { try reducer.finishGroup(into: &rows, window: &window) }
                    } else {
                        // A small LIMIT (the common paged query) sizes the array once instead of growing it.
                        if ranges.count == 1, !usePostFilter, options.limit <= 256 { rows.reserveCapacity(Int(options.limit)) }
                        while !window.isFull, try stmt.step() {
                            if window.admit() { rows.append(mapRow(stmt)) }
                        }
                    }
                }
                if reduce && !grouped { try reducer.finishGroup(into: &rows, window: &window) }
            } catch let e as SQLiteError {
                throw CBLError.dbError("View '\(view.name)' index is unreadable: \(e.message)")
            }
            if usePostFilter { rows = applyPostFilter(rows) }
            var offset: Int?
            if options.countsOffset, !reduce, options.keys == nil {
                let start = options.descending ? ranges[0].upper : ranges[0].lower
                let before = try start.map { try store.countViewRows(record, before: $0, descending: options.descending,
                                                                       collation: collation) } ?? 0
                offset = Int(before) + Int(clamping: options.skip)
            }
            return CBLQueryEnumerator(database: database, rows: rows, sequenceNumber: record.lastSequence, offset: offset)
        }
    }

    /// `LIMIT`/`OFFSET` of the rows read (a limit of -1 has none).
    private var pageClause: (limit: Int64, offset: Int64) {
        (options.limit > UInt(Int64.max) ? -1 : Int64(options.limit), Int64(options.skip))
    }

    private func mapRow(_ stmt: SQLiteStore.ViewRows) -> CBLQueryRow {
        let value = stmt.value.map { LazyJSONValue(text: $0) }
        return CBLQueryRow(database: database, key: LazyJSONValue(text: stmt.key), value: value,
                           sourceDocumentID: stmt.documentID, sequence: stmt.sequence, revisionID: stmt.revisionID,
                           prefetchedBody: options.prefetch ? (stmt.body ?? []) : nil)
    }

    private func applyPostFilter(_ rows: [CBLQueryRow]) -> [CBLQueryRow] {
        guard let predicate = options.postFilter else { return rows }
        let filtered = rows.filter { predicate.evaluate(with: $0) }
        let skip = min(Int(clamping: options.skip), filtered.count)
        let remaining = filtered.count - skip
        let limit = min(Int(clamping: options.limit), remaining)
        return Array(filtered[skip..<(skip + limit)])
    }

    // MARK: Reduce

    /// Bounded-memory reduce: values are reduced in chunks whose results are re-reduced.
    typealias ThrowingReduce = (_ keys: [Any], _ values: [Any], _ rereduce: Bool) throws -> Any

    struct Reducer {
        let block: ThrowingReduce?
        var keys: [Any] = []
        var values: [Any] = []
        var partials: [Any] = []

        mutating func add(key: Any, value: Any) throws {
            guard let block else { return }
            keys.append(key)
            values.append(value)
            if values.count >= QueryRunner.reduceChunkSize {
                partials.append(try block(keys, values, false))
                keys.removeAll(keepingCapacity: true)
                values.removeAll(keepingCapacity: true)
            }
        }

        mutating func finish() throws -> Any? {
            guard let block else { return nil }
            defer { keys = []; values = []; partials = [] }
            if partials.isEmpty { return try block(keys, values, false) }
            if !values.isEmpty { partials.append(try block(keys, values, false)) }
            return try block([], partials, true)
        }
    }

    /// Reduces map rows into output rows (spec 7.5): one row per group of keys equal to the
    /// group's first key (to `groupLevel` array elements, under the view's collation), or one
    /// row for everything read when not grouping. Rows skipped by the window are not reduced.
    private struct GroupReducer {
        let runner: QueryRunner
        let grouped: Bool
        let collation: CBLJSONCollationMode
        let store: SQLiteStore
        let arrayLimit: Int32
        var reducer: Reducer
        var groupKeyText: [UInt8]?
        var sawRows = false

        init(runner: QueryRunner, block: ThrowingReduce?, grouped: Bool, collation: CBLJSONCollationMode, store: SQLiteStore) {
            self.runner = runner
            self.grouped = grouped
            self.collation = collation
            self.store = store
            self.arrayLimit = runner.options.groupExact ? 0 : Int32(clamping: runner.options.groupLevel)
            self.reducer = Reducer(block: block)
        }

        /// Reads the statement's rows, emitting each group it completes. Stops once the window is full.
        mutating func read(_ stmt: SQLiteStore.ViewRows, into output: inout [CBLQueryRow], window: inout RowWindow) throws {
            while !window.isFull, try stmt.step() {
                sawRows = true
                let keyText = stmt.key
                if grouped {
                    if let current = groupKeyText, runner.collate(keyText, current, arrayLimit, collation) != 0 {
                        try finishGroup(into: &output, window: &window)
                        if window.isFull { return }
                    }
                    if groupKeyText == nil { groupKeyText = keyText }
                }
                // A group the window skips is not reduced (the skip counts groups, at their end).
                guard reducer.block != nil, !(grouped && window.toSkip > 0) else { continue }
                let key = (try? JSON.parse(keyText)) ?? NSNull()
                try reducer.add(key: key, value: runner.reduceValue(stmt, store: store))
            }
        }

        /// Emits the group in progress (the whole reduce when not grouping), if it has rows.
        mutating func finishGroup(into output: inout [CBLQueryRow], window: inout RowWindow) throws {
            guard grouped ? groupKeyText != nil : sawRows else { return }
            defer { groupKeyText = nil; sawRows = false; reducer = Reducer(block: reducer.block) }
            guard window.admit() else { return }
            var value: Any?
            var overflow: CBLDesignFunctionError?
            do {
                value = try reducer.finish()
            } catch let error as CBLDesignFunctionError where error.kind == .reduceOverflow {
                overflow = error
            }
            if let distinct = value as? DistinctKeys { value = distinct.count }
            if let value, !JSON.isValid(value) {
                throw CBLError.dbError("Reduce function returned a value that is not JSON: \(type(of: value))")
            }
            // The group's key: its first row's key text (object members in emitted order), an
            // array cut to the group level.
            var key = LazyJSONValue(value: nil)
            if grouped, let text = groupKeyText {
                key = LazyJSONValue(text: text)
                if !runner.options.groupExact, let array = key.value as? [Any], array.count > Int(arrayLimit) {
                    key = LazyJSONValue(value: Array(array.prefix(Int(arrayLimit))))
                }
            }
            output.append(CBLQueryRow(database: runner.database, key: key,
                                      value: overflow == nil ? LazyJSONValue(value: value ?? NSNull()) : nil,
                                      sourceDocumentID: nil, sequence: 0, reduceError: overflow))
        }
    }

    /// The value a map row contributes to a reduce: its JSON, or for `*` the emitting document.
    private func reduceValue(_ stmt: SQLiteStore.ViewRows, store: SQLiteStore) -> Any {
        guard let bytes = stmt.value else { return NSNull() }
        if bytes == [UInt8(ascii: "*")] {
            return stmt.lean ? starValue(sequence: stmt.sequence, store: store)
                : starValue(docID: stmt.documentID, revID: stmt.revisionID, sequence: stmt.sequence, store: store)
        }
        return (try? JSON.parse(bytes)) ?? NSNull()
    }

    /// `starValue` when only the sequence is known.
    private func starValue(sequence: Int64, store: SQLiteStore) -> Any {
        guard let identity = try? store.revisionIdentity(sequence: sequence) else { return NSNull() }
        return starValue(docID: identity.documentID, revID: identity.revisionID, sequence: sequence, store: store)
    }

    /// A `*` value is the emitting revision's whole document (spec 7.1).
    private func starValue(docID: String?, revID: String?, sequence: Int64, store: SQLiteStore) -> Any {
        guard let body = try? store.body(sequence: sequence) else { return NSNull() }
        var props: [String: Any] = body.isEmpty ? [:] : ((try? JSON.parseObject(body)) ?? [:])
        props["_id"] = docID
        props["_rev"] = revID
        return props
    }

    fileprivate func collate(_ a: [UInt8], _ b: [UInt8], _ arrayLimit: Int32, _ mode: CBLJSONCollationMode) -> Int32 {
        a.withUnsafeBytes { pa in
            b.withUnsafeBytes { pb in
                cbl_json_collate(mode, pa.baseAddress, pa.count, pb.baseAddress, pb.count, arrayLimit)
            }
        }
    }

    // MARK: All-documents queries (spec 7.6)

    func runAllDocs() throws -> CBLQueryEnumerator {
        let mode = options.allDocsMode
        return try database.read { store in
            let lastSequence = try store.lastSequence
            var rows: [CBLQueryRow] = []
            if let keys = options.keys {
                for case let docID as String in keys {
                    rows.append(try allDocsRow(docID: docID, store: store))
                }
            } else if mode == .bySequence {
                rows = try allDocsBySequence(store: store)
            } else {
                rows = try allDocsByID(store: store, mode: mode)
            }
            if options.postFilter != nil { rows = applyPostFilter(rows) }
            return CBLQueryEnumerator(database: database, rows: rows, sequenceNumber: lastSequence)
        }
    }

    private func allDocsByID(store: SQLiteStore, mode: CBLAllDocsMode) throws -> [CBLQueryRow] {
        let b = bounds
        let stmt = try store.leavesByDocumentID(
            from: (b.min as? String).map { .init(value: $0, inclusive: b.inclusiveMin) },
            to: (b.max as? String).map { .init(value: $0, inclusive: b.inclusiveMax) },
            descending: options.descending, includeDeleted: mode == .includeDeleted, withBodies: options.prefetch)

        var rows: [CBLQueryRow] = []
        let usePostFilter = options.postFilter != nil
        var toSkip = usePostFilter ? 0 : Int(clamping: options.skip)
        let limit = usePostFilter ? Int.max : Int(clamping: options.limit)
        var current: (numericID: Int64, docID: String, revID: String, sequence: Int64, deleted: Bool, body: [UInt8]?)?
        var leaves: [String] = []

        func flush() {
            guard let doc = current else { return }
            defer { current = nil; leaves = [] }
            if mode == .onlyConflicts && leaves.count < 2 { return }
            if toSkip > 0 { toSkip -= 1; return }
            guard rows.count < limit else { return }
            var value: [String: Any] = ["rev": doc.revID]
            if doc.deleted { value["deleted"] = true }
            if (mode == .showConflicts || mode == .onlyConflicts), leaves.count > 1 { value["_conflicts"] = leaves }
            rows.append(CBLQueryRow(database: database, key: LazyJSONValue(value: doc.docID), value: LazyJSONValue(value: value),
                                    sourceDocumentID: doc.docID, sequence: doc.sequence, revisionID: doc.revID,
                                    prefetchedBody: options.prefetch ? (doc.body ?? []) : nil,
                                    conflicts: leaves.count > 1 ? leaves : nil))
        }

        while try stmt.step() {
            let numericID = stmt.documentNumericID
            if current?.numericID != numericID {
                flush()
                if rows.count >= limit { break }
                current = (numericID, stmt.documentID, stmt.revisionID, stmt.sequence, stmt.deleted,
                           options.prefetch ? stmt.body : nil)
            }
            leaves.append(stmt.revisionID)
        }
        flush()
        stmt.reset()
        return rows
    }

    private func allDocsRow(docID: String, store: SQLiteStore) throws -> CBLQueryRow {
        guard let numericID = try store.numericID(of: docID),
              let winner = try store.winningRevision(docID: docID, numericID: numericID, withBody: options.prefetch) else {
            return CBLQueryRow(database: database, key: LazyJSONValue(value: docID), value: nil, sourceDocumentID: nil, sequence: 0)
        }
        var value: [String: Any] = ["rev": winner.revID]
        if winner.deleted { value["deleted"] = true }
        return CBLQueryRow(database: database, key: LazyJSONValue(value: docID), value: LazyJSONValue(value: value),
                           sourceDocumentID: docID, sequence: winner.sequence, revisionID: winner.revID,
                           prefetchedBody: options.prefetch ? (winner.body ?? []) : nil)
    }

    private func allDocsBySequence(store: SQLiteStore) throws -> [CBLQueryRow] {
        let b = bounds
        let stmt = try store.leavesBySequence(
            from: (b.min as? Int).map { .init(value: Int64($0), inclusive: b.inclusiveMin) },
            to: (b.max as? Int).map { .init(value: Int64($0), inclusive: b.inclusiveMax) },
            descending: options.descending, withBodies: options.prefetch,
            page: options.postFilter == nil ? pageClause : nil)
        defer { stmt.reset() }
        var rows: [CBLQueryRow] = []
        while try stmt.step() {
            let docID = stmt.documentID
            var value: [String: Any] = ["rev": stmt.revisionID]
            if stmt.deleted { value["deleted"] = true }
            rows.append(CBLQueryRow(database: database, key: LazyJSONValue(value: docID), value: LazyJSONValue(value: value),
                                    sourceDocumentID: docID, sequence: stmt.sequence, revisionID: stmt.revisionID,
                                    prefetchedBody: options.prefetch ? (stmt.body ?? []) : nil))
        }
        return rows
    }
}

extension CBLView {
    /// True when `start` comes after `end` in the query's direction under the view's collation,
    /// so no row can match (CouchDB refuses such a query rather than answering no rows).
    package func keyRangeIsReversed(start: Any, end: Any, descending: Bool) -> Bool {
        guard let a = try? QueryRunner.keyText(start), let b = try? QueryRunner.keyText(end) else {
            return false
        }
        let order = a.withUnsafeBytes { pa in
            b.withUnsafeBytes { pb in cbl_json_collate(collation.cMode, pa.baseAddress, pa.count, pb.baseAddress, pb.count, 0) }
        }
        return descending ? order < 0 : order > 0
    }
}
