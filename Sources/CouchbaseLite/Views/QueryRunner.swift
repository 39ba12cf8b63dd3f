import CCollation
import Foundation
import JSONCore
import SQLiteKit

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

    private func encodeKey(_ key: Any) throws -> [UInt8] {
        do {
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
        let usePostFilter = options.postFilter != nil
        return try database.read { store in
            guard let record = try store.viewRecord(named: view.name) else {
                throw CBLError.notFound("View '\(view.name)' not found")
            }
            let b = bounds
            // A reduce needs neither document IDs nor their order: read the index table alone.
            var request = SQLiteStore.ViewRowsRequest()
            request.lean = reduce && b.minDocID == nil && b.maxDocID == nil && !options.prefetch
            request.withBodies = options.prefetch
            request.descending = options.descending
            var keyTexts: [[UInt8]] = []
            if let keys = options.keys {
                keyTexts = try keys.map(encodeKey)
                request.keys = keyTexts.map { String(decoding: $0, as: UTF8.self) }
            }
            func bound(_ key: Any?, inclusive: Bool, docID: String?) throws -> SQLiteStore.ViewKeyBound? {
                guard let key else { return nil }
                return .init(key: String(decoding: try encodeKey(key), as: UTF8.self), inclusive: inclusive, documentID: docID)
            }
            request.lowerBound = try bound(b.min, inclusive: b.inclusiveMin, docID: b.minDocID)
            request.upperBound = try bound(b.max, inclusive: b.inclusiveMax, docID: b.maxDocID)
            // iOS applies limit/skip to the map rows, also when reducing (spec 7.5).
            if !usePostFilter { request.page = pageClause }
            let stmt: SQLiteStore.ViewRows
            do {
                stmt = try store.viewRows(record, request)
            } catch let e as SQLiteError {
                throw CBLError.dbError("View '\(view.name)' index is unreadable: \(e.message)")
            }
            defer { stmt.reset() }

            var rows: [CBLQueryRow] = []
            do {
                if reduce {
                    rows = try reduceRows(stmt, store: store, reduceBlock: reduceBlock, grouped: grouped)
                } else {
                    // A small LIMIT (the common paged query) sizes the array once instead of growing it.
                    if !usePostFilter, options.limit <= 256 { rows.reserveCapacity(Int(options.limit)) }
                    while try stmt.step() {
                        rows.append(mapRow(stmt))
                    }
                    stmt.reset()
                    if !keyTexts.isEmpty { rows = regroup(rows, byKeys: keyTexts) }
                }
            } catch let e as SQLiteError {
                throw CBLError.dbError("View '\(view.name)' index is unreadable: \(e.message)")
            }
            if usePostFilter { rows = applyPostFilter(rows) }
            return CBLQueryEnumerator(database: database, rows: rows, sequenceNumber: record.lastSequence)
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

    /// Orders rows by the position of their key in `keys` (rows per key in index order).
    private func regroup(_ rows: [CBLQueryRow], byKeys keys: [[UInt8]]) -> [CBLQueryRow] {
        var out: [CBLQueryRow] = []
        var used = Set<ObjectIdentifier>()
        for key in keys {
            for row in rows where !used.contains(ObjectIdentifier(row)) && collate(row.keyStorage.jsonText, key, 0) == 0 {
                used.insert(ObjectIdentifier(row))
                out.append(row)
            }
        }
        return out
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

    private func reduceRows(_ stmt: SQLiteStore.ViewRows, store: SQLiteStore, reduceBlock: ThrowingReduce?,
                            grouped: Bool) throws -> [CBLQueryRow] {
        var output: [CBLQueryRow] = []
        var reducer = Reducer(block: reduceBlock)
        let arrayLimit = options.groupExact ? 0 : Int32(clamping: options.groupLevel)
        var groupKeyText: [UInt8]?
        var groupKey: Any?
        var sawRows = false

        func emitGroup() throws {
            var value = try reducer.finish()
            if let distinct = value as? DistinctKeys { value = distinct.count }
            if let value, !JSON.isValid(value) {
                throw CBLError.dbError("Reduce function returned a value that is not JSON: \(type(of: value))")
            }
            var key: Any? = grouped ? groupKey : nil
            if grouped, !options.groupExact, let array = key as? [Any], array.count > Int(arrayLimit) {
                key = Array(array.prefix(Int(arrayLimit)))
            }
            output.append(CBLQueryRow(database: database, key: LazyJSONValue(value: key),
                                      value: LazyJSONValue(value: value ?? NSNull()), sourceDocumentID: nil, sequence: 0))
        }

        while try stmt.step() {
            sawRows = true
            let keyText = stmt.key
            if grouped {
                if let current = groupKeyText, collate(keyText, current, arrayLimit) != 0 {
                    try emitGroup()
                    groupKeyText = nil
                }
                if groupKeyText == nil {
                    groupKeyText = keyText
                    groupKey = (try? JSON.parse(keyText)) ?? NSNull()
                }
            }
            guard reduceBlock != nil else { continue }
            let key = (try? JSON.parse(keyText)) ?? NSNull()
            let value: Any
            if let bytes = stmt.value {
                if bytes == [UInt8(ascii: "*")] {
                    value = stmt.lean ? starValue(sequence: stmt.sequence, store: store)
                        : starValue(docID: stmt.documentID, revID: stmt.revisionID, sequence: stmt.sequence, store: store)
                } else {
                    value = (try? JSON.parse(bytes)) ?? NSNull()
                }
            } else {
                value = NSNull()
            }
            try reducer.add(key: key, value: value)
        }
        stmt.reset()
        if grouped {
            if groupKeyText != nil { try emitGroup() }
        } else if sawRows {
            try emitGroup()
        }
        return output
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

    private func collate(_ a: [UInt8], _ b: [UInt8], _ arrayLimit: Int32) -> Int32 {
        a.withUnsafeBytes { pa in
            b.withUnsafeBytes { pb in
                cbl_json_collate(CBLCollationUnicode, pa.baseAddress, pa.count, pb.baseAddress, pb.count, arrayLimit)
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
