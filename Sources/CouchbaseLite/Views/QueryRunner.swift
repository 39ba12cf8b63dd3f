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
            let table = "'\(record.table)'"
            let b = bounds
            // A reduce needs neither document IDs nor their order: read the index table alone.
            let lean = reduce && b.minDocID == nil && b.maxDocID == nil && !options.prefetch
            var sql = lean ? "SELECT key, value, sequence" : "SELECT key, value, docid, revs.sequence, revid"
            if options.prefetch { sql += ", json" }
            sql += lean ? " FROM \(table) WHERE 1" : " FROM \(table), revs, docs WHERE 1"
            var params: [SQLiteValue] = []
            var keyTexts: [[UInt8]] = []
            if let keys = options.keys {
                keyTexts = try keys.map(encodeKey)
                sql += " AND key IN (" + keys.map { _ in "?" }.joined(separator: ",") + ")"
                params += keyTexts.map { .text(String(decoding: $0, as: UTF8.self)) }
            }
            // One bound at a time: the min side uses >, >=; the max side <, <= (spec 7.4).
            func addBound(_ key: Any?, inclusive: Bool, docID: String?, op: String) throws {
                guard let key else { return }
                let text = String(decoding: try encodeKey(key), as: UTF8.self)
                sql += inclusive ? " AND key \(op)= ?" : " AND key \(op) ?"
                params.append(.text(text))
                if let docID, inclusive {
                    sql += " AND (key \(op) ? OR docid \(op)= ?)"
                    params += [.text(text), .text(docID)]
                }
            }
            try addBound(b.min, inclusive: b.inclusiveMin, docID: b.minDocID, op: ">")
            try addBound(b.max, inclusive: b.inclusiveMax, docID: b.maxDocID, op: "<")
            if lean {
                sql += options.descending ? " ORDER BY key DESC" : " ORDER BY key"
            } else {
                sql += " AND revs.sequence = \(table).sequence AND docs.doc_id = revs.doc_id"
                sql += options.descending ? " ORDER BY key DESC, docid DESC" : " ORDER BY key, docid"
            }
            // iOS applies limit/skip to the map rows, also when reducing (spec 7.5).
            if !usePostFilter {
                sql += " LIMIT ? OFFSET ?"
                params += [.integer(options.limit > UInt(Int64.max) ? -1 : Int64(options.limit)), .integer(Int64(options.skip))]
            }
            let stmt: SQLiteStatement
            do {
                // Repeated queries reuse their prepared statement (not `keys` ones: their SQL
                // varies with the number of keys).
                stmt = options.keys == nil ? try store.connection.cached(sql) : try store.connection.prepare(sql)
                try stmt.bind(params)
            } catch let e as SQLiteError {
                throw CBLError.dbError("View '\(view.name)' index is unreadable: \(e.message)")
            }
            defer { stmt.reset() }

            var rows: [CBLQueryRow] = []
            do {
                if reduce {
                    rows = try reduceRows(stmt: stmt, store: store, reduceBlock: reduceBlock, grouped: grouped, lean: lean)
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

    private func mapRow(_ stmt: SQLiteStatement) -> CBLQueryRow {
        let value = stmt.bytes(1).map { LazyJSONValue(text: $0) }
        return CBLQueryRow(database: database, key: LazyJSONValue(text: stmt.bytes(0) ?? []), value: value,
                           sourceDocumentID: stmt.string(2), sequence: stmt.int64(3), revisionID: stmt.string(4),
                           prefetchedBody: options.prefetch ? (stmt.bytes(5) ?? []) : nil)
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

    /// `lean`: the statement's columns are (key, value, sequence) instead of (key, value, docid, sequence, revid).
    private func reduceRows(stmt: SQLiteStatement, store: SQLiteStore, reduceBlock: ThrowingReduce?,
                            grouped: Bool, lean: Bool) throws -> [CBLQueryRow] {
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
            let keyText = stmt.bytes(0) ?? []
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
            if let bytes = stmt.bytes(1) {
                if bytes == [UInt8(ascii: "*")] {
                    value = lean ? starValue(sequence: stmt.int64(2), store: store)
                        : starValue(docID: stmt.string(2), revID: stmt.string(4), sequence: stmt.int64(3), store: store)
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
        guard let stmt = try? store.connection.cached(
            "SELECT docid, revid FROM revs, docs WHERE revs.sequence=? AND docs.doc_id=revs.doc_id") else { return NSNull() }
        defer { stmt.reset() }
        guard (try? stmt.bind(sequence, at: 1)) != nil, (try? stmt.step()) == true else { return NSNull() }
        return starValue(docID: stmt.string(0), revID: stmt.string(1), sequence: sequence, store: store)
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
        var sql = "SELECT revs.doc_id, docid, revid, sequence, deleted"
        if options.prefetch { sql += ", json" }
        sql += " FROM revs, docs WHERE docs.doc_id = revs.doc_id AND current=1"
        if mode != .includeDeleted { sql += " AND deleted=0" }
        var params: [SQLiteValue] = []
        let b = bounds
        if let min = b.min as? String {
            sql += b.inclusiveMin ? " AND docid >= ?" : " AND docid > ?"
            params.append(.text(min))
        }
        if let max = b.max as? String {
            sql += b.inclusiveMax ? " AND docid <= ?" : " AND docid < ?"
            params.append(.text(max))
        }
        sql += options.descending ? " ORDER BY docid DESC" : " ORDER BY docid"
        sql += ", deleted ASC, revid DESC"
        let stmt = try store.connection.prepare(sql)
        try stmt.bind(params)

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
            let numericID = stmt.int64(0)
            if current?.numericID != numericID {
                flush()
                if rows.count >= limit { break }
                current = (numericID, stmt.string(1) ?? "", stmt.string(2) ?? "", stmt.int64(3), stmt.bool(4),
                           options.prefetch ? stmt.bytes(5) : nil)
            }
            leaves.append(stmt.string(2) ?? "")
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
        var sql = "SELECT docid, revid, sequence, deleted"
        if options.prefetch { sql += ", json" }
        sql += " FROM revs, docs WHERE docs.doc_id = revs.doc_id AND current=1"
        var params: [SQLiteValue] = []
        let b = bounds
        if let min = (b.min as? Int).map(Int64.init) {
            sql += b.inclusiveMin ? " AND sequence >= ?" : " AND sequence > ?"
            params.append(.integer(min))
        }
        if let max = (b.max as? Int).map(Int64.init) {
            sql += b.inclusiveMax ? " AND sequence <= ?" : " AND sequence < ?"
            params.append(.integer(max))
        }
        sql += options.descending ? " ORDER BY sequence DESC" : " ORDER BY sequence"
        if options.postFilter == nil {
            sql += " LIMIT ? OFFSET ?"
            params += [.integer(options.limit > UInt(Int64.max) ? -1 : Int64(options.limit)), .integer(Int64(options.skip))]
        }
        let stmt = try store.connection.prepare(sql)
        try stmt.bind(params)
        var rows: [CBLQueryRow] = []
        try stmt.forEachRow { row in
            let docID = row.string(0) ?? ""
            var value: [String: Any] = ["rev": row.string(1) ?? ""]
            if row.bool(3) { value["deleted"] = true }
            rows.append(CBLQueryRow(database: database, key: LazyJSONValue(value: docID), value: LazyJSONValue(value: value),
                                    sourceDocumentID: docID, sequence: row.int64(2), revisionID: row.string(1),
                                    prefetchedBody: options.prefetch ? (row.bytes(4) ?? []) : nil))
        }
        return rows
    }
}
