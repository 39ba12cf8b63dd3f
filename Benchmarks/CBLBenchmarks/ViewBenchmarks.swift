// View benchmarks (`--only views`): index build, incremental re-index, key-range queries and
// grouped reduce, each against raw SQLite doing the equivalent work on the same 1.x tables.

import CouchbaseLite
import Foundation
import JSONCore
import SQLiteKit
import CBLTestSupport

/// Counts map-block calls (the indexer runs the map function synchronously on the calling thread).
final class MapCallCounter: @unchecked Sendable {
    var calls = 0
}

/// One benchmark line: baseline vs API; `budget == nil` means informational (no verdict).
struct BenchRow {
    let name: String
    let base: Duration
    let api: Duration
    let budget: Double?
    let ops: Int
    /// The median of per-round API/base ratios, when the row pairs rounds adjacent in time.
    var pairedRatio: Double? = nil
    var ratio: Double { pairedRatio ?? seconds(api) / seconds(base) }
    /// Ratio shown as a percentage instead of "x" (used for re-index vs full index).
    var percent = false
}

/// The names view: one row per document, `emit(doc["name"], doc["qty"])`.
func defineNamesView(_ db: CBLDatabase, counter: MapCallCounter) -> CBLView {
    let view = db.viewNamed("bench_names")
    view.setMapBlock({ doc, emit in
        counter.calls += 1
        if let name = doc["name"] as? String { emit(name, doc["qty"]) }
    }, version: "1")
    return view
}

/// Paired rounds of the full index build and of the range queries (the verdicts are medians).
let viewRounds = 5

/// The groups view: `emit([group, i], qty)` with 1000 distinct groups, reduce = sum.
let groupCount = 1_000
func defineGroupsView(_ db: CBLDatabase) -> CBLView {
    let view = db.viewNamed("bench_groups")
    view.setMapBlock({ doc, emit in
        guard let id = doc["_id"] as? String, let dash = id.lastIndex(of: "-"),
              let i = Int(id[id.index(after: dash)...]) else { return }
        emit(["group \(i % groupCount)", i] as [Any], doc["qty"])
    }, reduce: { _, values, _ in
        CBLView.totalValues(values)
    }, version: "1")
    return view
}

/// The view's `maps_N` table name, read from the `views` table of a database file.
func mapsTable(rawPath: String, viewName: String) throws -> String {
    let c = try openRaw(rawPath)
    defer { c.close() }
    guard let id = try c.scalarInt("SELECT view_id FROM views WHERE name=?", [.text(viewName)]) else {
        throw CBLError(500, "view \(viewName) is not registered")
    }
    return "maps_\(id)"
}

/// The DDL SQLite stored for the table and its two indexes (exactly what the library executed).
func mapsDDL(rawPath: String, table: String) throws -> (table: String, indexes: [String]) {
    let c = try openRaw(rawPath)
    defer { c.close() }
    func sql(_ name: String) throws -> String {
        guard let text = try c.scalarString("SELECT sql FROM sqlite_master WHERE name=?", [.text(name)]) else {
            throw CBLError(500, "no \(name) in sqlite_master")
        }
        return text
    }
    // Index order as ViewIndexer runs them (Schema.createMapsIndexes): keys, then sequence.
    return (try sql(table), [try sql(table + "_keys"), try sql(table + "_sequence")])
}

/// Rows in the order the indexer inserted them (rowid order), copied out.
struct IndexRows {
    var sequences: [Int64] = []
    var keys: [[UInt8]] = []
    var values: [[UInt8]?] = []
}

func readIndexRows(rawPath: String, table: String) throws -> IndexRows {
    let c = try openRaw(rawPath)
    defer { c.close() }
    var out = IndexRows()
    try c.prepare("SELECT sequence, key, value FROM '\(table)' ORDER BY rowid").forEachRow { s in
        out.sequences.append(s.int64(0))
        out.keys.append(s.bytes(1) ?? [])
        out.values.append(s.isNull(2) ? nil : (s.bytes(2) ?? []))
    }
    return out
}

/// Raw SQLite index build: in one transaction, an identical empty `maps_N` table gets the
/// precomputed rows, then its two indexes are created (as ViewIndexer.run does), then COMMIT.
func rawIndexBuild(path: String, table: String, ddl: (table: String, indexes: [String]), rows: IndexRows) throws -> Duration {
    let c = try openRaw(path)
    defer { c.close() }
    try c.execute("DROP TABLE IF EXISTS '\(table)'")
    try c.execute(ddl.table)
    let insert = try c.prepare("INSERT INTO '\(table)' (sequence, key, value) VALUES (?, ?, ?)")
    return try clock.measure {
        try c.execute("BEGIN IMMEDIATE")
        for i in rows.sequences.indices {
            try insert.bind(rows.sequences[i], at: 1)
            try insert.bindText(rows.keys[i], at: 2)
            if let v = rows.values[i] { try insert.bindText(v, at: 3) } else { try insert.bindNull(at: 3) }
            try insert.step()
            insert.reset()
        }
        for sql in ddl.indexes { try c.execute(sql) }
        try c.execute("COMMIT")
    }
}

/// Raw SQLite equivalent of an incremental re-index: in one transaction, delete the index rows of
/// the given rows' sequences and insert them again (same keys, same B-tree positions as the API's
/// delete-obsolete + insert-new work; sequences reused so the FK to revs holds in the raw file).
func rawReindex(path: String, table: String, rows: IndexRows, positions: [Int]) throws -> Duration {
    let c = try openRaw(path)
    defer { c.close() }
    let delete = try c.prepare("DELETE FROM '\(table)' WHERE sequence=?")
    let insert = try c.prepare("INSERT INTO '\(table)' (sequence, key, value) VALUES (?, ?, ?)")
    return try clock.measure {
        try c.execute("BEGIN IMMEDIATE")
        for i in positions {
            try delete.bind(rows.sequences[i], at: 1)
            try delete.step()
            delete.reset()
        }
        for i in positions {
            try insert.bind(rows.sequences[i], at: 1)
            try insert.bindText(rows.keys[i], at: 2)
            if let v = rows.values[i] { try insert.bindText(v, at: 3) } else { try insert.bindNull(at: 3) }
            try insert.step()
            insert.reset()
        }
        try c.execute("COMMIT")
    }
}

/// Raw SQLite range queries: the SQL QueryRunner generates (minus revid), one prepared statement.
func rawRangeQueries(path: String, table: String, ranges: [(start: [UInt8], end: [UInt8])], limit: Int) throws -> (Duration, Int) {
    let c = try openRaw(path)
    defer { c.close() }
    let q = try c.prepare(
        "SELECT key, value, docid, revs.sequence FROM '\(table)', revs, docs WHERE key >= ? AND key <= ? "
            + "AND revs.sequence='\(table)'.sequence AND docs.doc_id=revs.doc_id ORDER BY key, docid LIMIT \(limit)")
    var rowsRead = 0
    var check = 0
    let elapsed = try clock.measure {
        for r in ranges {
            try q.bindText(r.start, at: 1)
            try q.bindText(r.end, at: 2)
            while try q.step() {
                let key = q.bytes(0) ?? []
                let value = q.bytes(1) ?? []
                let docID = q.string(2) ?? ""
                check &+= key.count &+ value.count &+ docID.utf8.count &+ Int(q.int64(3))
                rowsRead += 1
            }
            q.reset()
        }
    }
    precondition(check != 0)
    return (elapsed, rowsRead)
}

/// API range queries: a new CBLQuery per range, `.never` update mode; reads every row's key and value.
func apiRangeQueries(view: CBLView, ranges: [(start: String, end: String)], limit: UInt) throws -> (Duration, Int, Int) {
    var rowsRead = 0
    var qtySum = 0
    let elapsed = try clock.measure {
        for r in ranges {
            let query = view.createQuery()
            query.indexUpdateMode = .never
            query.startKey = r.start
            query.endKey = r.end
            query.limit = limit
            for row in try query.run() {
                guard row.key is String else { throw CBLError(500, "row key is not a string") }
                qtySum &+= (row.value as? Int) ?? 0
                rowsRead += 1
            }
        }
    }
    return (elapsed, rowsRead, qtySum)
}

/// Raw full scan in key order, reading every row's key and value (grouped-reduce baseline).
func rawKeyOrderScan(path: String, table: String, runs: Int) throws -> (Duration, Int) {
    let c = try openRaw(path)
    defer { c.close() }
    let q = try c.prepare("SELECT key, value FROM '\(table)' ORDER BY key")
    var rowsRead = 0
    var check = 0
    let elapsed = try clock.measure {
        for _ in 0..<runs {
            while try q.step() {
                let key = q.bytes(0) ?? []
                let value = q.bytes(1) ?? []
                check &+= key.count &+ value.count
                rowsRead += 1
            }
            q.reset()
        }
    }
    precondition(check != 0)
    return (elapsed, rowsRead)
}

/// API grouped reduce (`groupLevel = 1`, `.never`), reading every output row's key and value.
func apiGroupedReduce(view: CBLView, runs: Int) throws -> (Duration, Int, Double) {
    var groups = 0
    var total = 0.0
    let elapsed = try clock.measure {
        for _ in 0..<runs {
            let query = view.createQuery()
            query.indexUpdateMode = .never
            query.groupLevel = 1
            for row in try query.run() {
                guard row.key is [Any] else { throw CBLError(500, "grouped row key is not an array") }
                total += (row.value as? Double) ?? Double((row.value as? Int) ?? 0)
                groups += 1
            }
        }
    }
    return (elapsed, groups, total)
}

/// Runs `base` and `api` alternately `rounds` times; returns the best time of each.
func bestOf(_ rounds: Int, _ base: () throws -> Duration, _ api: () throws -> Duration) rethrows -> (Duration, Duration) {
    var bestBase = Duration.seconds(Int64.max), bestAPI = Duration.seconds(Int64.max)
    for _ in 0..<rounds {
        bestBase = min(bestBase, try base())
        bestAPI = min(bestAPI, try api())
    }
    return (bestBase, bestAPI)
}

/// What ``pairedRounds(_:_:_:)`` measured: every round's times and API/base ratio.
struct PairedRounds {
    var baseTimes: [Duration] = []
    var apiTimes: [Duration] = []
    var ratios: [Double] = []

    var base: Duration { median(baseTimes) }
    var api: Duration { median(apiTimes) }
    /// The median of the rounds' ratios (what a row is judged on).
    var ratio: Double { median(ratios) }
    /// The best API round over the best base round (they may come from different speed phases).
    var bestRatio: Double { seconds(apiTimes.min()!) / seconds(baseTimes.min()!) }
}

/// Runs `base` and `api` in `rounds` pairs, alternating which goes first (so neither always
/// inherits the other's aftermath); a row's verdict is the median of the rounds' API/base ratios
/// (a round's two halves share one of this VM's speed phases).
func pairedRounds(_ rounds: Int, _ base: () throws -> Duration, _ api: () throws -> Duration) rethrows -> PairedRounds {
    var result = PairedRounds()
    for round in 0..<max(1, rounds) {
        let b: Duration, a: Duration
        if round % 2 == 0 {
            b = try base()
            a = try api()
        } else {
            a = try api()
            b = try base()
        }
        result.baseTimes.append(b)
        result.apiTimes.append(a)
        result.ratios.append(seconds(a) / seconds(b))
    }
    return result
}

/// Range bounds returning `width` rows each: consecutive keys of the sorted index.
func makeRanges(sortedKeys: [[UInt8]], count: Int, width: Int, seed: UInt64) -> [(start: [UInt8], end: [UInt8])] {
    var rng = SplitMix64(seed: seed)
    let span = sortedKeys.count - width + 1
    precondition(span > 0, "index too small for \(width)-row ranges")
    return (0..<count).map { _ in
        let i = Int(rng.next() % UInt64(span))
        return (sortedKeys[i], sortedKeys[i + width - 1])
    }
}

func sortedIndexKeys(rawPath: String, table: String) throws -> [[UInt8]] {
    let c = try openRaw(rawPath)
    defer { c.close() }
    var keys: [[UInt8]] = []
    try c.prepare("SELECT key FROM '\(table)' ORDER BY key").forEachRow { keys.append($0.bytes(0) ?? []) }
    return keys
}

/// Every view benchmark. `apiDir` holds database "api" with `corpus` inserted through the API;
/// `rawPath` is a database file with the same documents inserted by raw SQL (same sequences).
@MainActor
func runViewBenchmarks(corpus: Corpus, apiDir: URL, rawPath: String, options: Options,
                       warmAPIDir: URL, warmRawPath: String) throws -> (rows: [BenchRow], notes: [String]) {
    var rows: [BenchRow] = []
    var notes: [String] = []
    let docCount = corpus.ids.count

    // Warm-up on the small warm-up databases: index, baseline build, range queries, grouped reduce.
    do {
        let manager = try CBLManager(directory: warmAPIDir.path)
        let db = try manager.existingDatabaseNamed("api")
        let counter = MapCallCounter()
        let view = defineNamesView(db, counter: counter)
        try view.updateIndex()
        let groupsView = defineGroupsView(db)
        try groupsView.updateIndex()
        let warmAPIPath = db.directoryURL.appendingPathComponent("db.sqlite3").path
        let table = try mapsTable(rawPath: warmAPIPath, viewName: "bench_names")
        let ddl = try mapsDDL(rawPath: warmAPIPath, table: table)
        _ = try rawIndexBuild(path: warmRawPath, table: table, ddl: ddl, rows: try readIndexRows(rawPath: warmAPIPath, table: table))
        let keys = try sortedIndexKeys(rawPath: warmAPIPath, table: table)
        let ranges = makeRanges(sortedKeys: keys, count: 200, width: 20, seed: options.seed &+ 10)
        _ = try rawRangeQueries(path: warmAPIPath, table: table, ranges: ranges, limit: 20)
        _ = try apiRangeQueries(view: view, ranges: ranges.map { (try! JSON.parse($0.start) as! String, try! JSON.parse($0.end) as! String) }, limit: 20)
        _ = try apiGroupedReduce(view: groupsView, runs: 1)
        try db.close()
        manager.close()
    }

    let manager = try CBLManager(directory: apiDir.path)
    defer { manager.close() }
    let db = try manager.existingDatabaseNamed("api")
    let apiPath = db.directoryURL.appendingPathComponent("db.sqlite3").path

    // 1. Full index build: paired rounds (the API rounds start from a deleted index), median ratio.
    let counter = MapCallCounter()
    let view = defineNamesView(db, counter: counter)
    func apiFullIndex() throws -> Duration {
        view.deleteIndex()
        counter.calls = 0
        settleDisk()
        let elapsed = try clock.measure { try view.updateIndex() }
        guard counter.calls == docCount, view.totalRows == UInt(docCount) else {
            throw CBLError(500, "full index mapped \(counter.calls) docs, \(view.totalRows) rows; expected \(docCount)")
        }
        return elapsed
    }
    _ = try apiFullIndex()   // makes the table whose DDL and rows the baseline copies
    let table = try mapsTable(rawPath: apiPath, viewName: "bench_names")
    let ddl = try mapsDDL(rawPath: apiPath, table: table)
    let indexRows = try readIndexRows(rawPath: apiPath, table: table)   // the exact texts, precomputed
    let indexRounds = options.quick ? 1 : viewRounds
    let index = try pairedRounds(indexRounds, {
        settleDisk()
        return try rawIndexBuild(path: rawPath, table: table, ddl: ddl, rows: indexRows)
    }, apiFullIndex)
    guard try mapsTable(rawPath: apiPath, viewName: "bench_names") == table else {
        throw CBLError(500, "the view's maps table changed between rounds")
    }
    rows.append(BenchRow(name: "view index (full)", base: index.base, api: index.api, budget: 2.0, ops: docCount,
                         pairedRatio: index.ratio))
    notes.append("view index: \(docCount) docs mapped, \(indexRows.keys.count) rows; baseline = same rows into \(table) "
                 + "(same DDL, FK to revs) + both CREATE INDEX, one transaction")

    // 2. Re-index after changing 1% of the documents (the updates are not timed).
    let changed = uniqueIndices(max(1, docCount / 100), below: docCount, seed: options.seed &+ 11)
    try bumpQuantities(db, ids: changed.map { corpus.ids[$0] })
    counter.calls = 0
    let reindexTime = try clock.measure { try view.updateIndex() }
    let reindexMapped = counter.calls
    guard view.totalRows == UInt(docCount) else {
        throw CBLError(500, "after re-index the view has \(view.totalRows) rows, expected \(docCount)")
    }
    rows.append(BenchRow(name: "re-index 1% (vs full)", base: index.api, api: reindexTime, budget: 0.02,
                         ops: changed.count, percent: true))
    // The same B-tree work in raw SQL (informational): what an incremental re-index cannot avoid.
    let positions = changed.sorted()   // corpus index i == row i of the rowid-ordered index rows
    let rawReindexTime = try rawReindex(path: rawPath, table: table, rows: indexRows, positions: positions)
    rows.append(BenchRow(name: "re-index 1% vs raw (info)", base: rawReindexTime, api: reindexTime, budget: nil, ops: changed.count))
    notes.append(String(format: "re-index after updating %d docs: %.4f s = %.2f%% of the full index; map block called %d times (expected %d)",
                        changed.count, seconds(reindexTime), seconds(reindexTime) / seconds(index.api) * 100,
                        reindexMapped, changed.count))

    // 2b. The same after changing 0.1% (other documents): an incremental update costs in
    // proportion to the documents changed, not to the database.
    let changedBefore = Set(changed)
    let changedFew = uniqueIndices(changed.count + max(1, docCount / 1000), below: docCount, seed: options.seed &+ 13)
        .filter { !changedBefore.contains($0) }.prefix(max(1, docCount / 1000))
    try bumpQuantities(db, ids: changedFew.map { corpus.ids[$0] })
    counter.calls = 0
    let reindexFewTime = try clock.measure { try view.updateIndex() }
    guard counter.calls == changedFew.count else {
        throw CBLError(500, "re-index of \(changedFew.count) docs mapped \(counter.calls)")
    }
    rows.append(BenchRow(name: "re-index 0.1% (info)", base: index.api, api: reindexFewTime, budget: nil,
                         ops: changedFew.count, percent: true))
    notes.append(String(format: "re-index after updating %d docs: %.4f s = %.2f%% of the full index (%.1f µs per changed doc; "
                        + "%.1f µs per doc at 1%%)", changedFew.count, seconds(reindexFewTime),
                        seconds(reindexFewTime) / seconds(index.api) * 100, seconds(reindexFewTime) / Double(changedFew.count) * 1e6,
                        seconds(reindexTime) / Double(changed.count) * 1e6))

    // 3. 20-row key-range queries on the index (API vs the same SQL on the same file).
    let sortedKeys = try sortedIndexKeys(rawPath: apiPath, table: table)
    let queryCount = options.quick ? 1_000 : 2_000
    let ranges = makeRanges(sortedKeys: sortedKeys, count: queryCount, width: 20, seed: options.seed &+ 12)
    let stringRanges = ranges.map { (start: try! JSON.parse($0.start) as! String, end: try! JSON.parse($0.end) as! String) }
    var rawRowsRead = 0, apiRowsRead = 0
    let query = try pairedRounds(options.quick ? 3 : viewRounds, {
        let (t, n) = try rawRangeQueries(path: apiPath, table: table, ranges: ranges, limit: 20)
        rawRowsRead = n
        return t
    }, {
        let (t, n, _) = try apiRangeQueries(view: view, ranges: stringRanges, limit: 20)
        apiRowsRead = n
        return t
    })
    guard rawRowsRead == queryCount * 20, apiRowsRead == queryCount * 20 else {
        throw CBLError(500, "range queries read \(rawRowsRead) raw / \(apiRowsRead) API rows, expected \(queryCount * 20)")
    }
    rows.append(BenchRow(name: "20-row range query", base: query.base, api: query.api, budget: 1.5, ops: queryCount,
                         pairedRatio: query.ratio))

    // 4. Grouped reduce over the whole index (groupLevel 1, 1000 groups).
    let groupsView = defineGroupsView(db)
    let groupsIndexTime = try clock.measure { try groupsView.updateIndex() }
    let groupsTable = try mapsTable(rawPath: apiPath, viewName: "bench_groups")
    var rawScanRows = 0, groupsOut = 0, total = 0.0
    let (rawScanTime, apiReduceTime) = try bestOf(3, {
        let (t, n) = try rawKeyOrderScan(path: apiPath, table: groupsTable, runs: 1)
        rawScanRows = n
        return t
    }, {
        let (t, g, sum) = try apiGroupedReduce(view: groupsView, runs: 1)
        groupsOut = g; total = sum
        return t
    })
    guard rawScanRows == docCount, groupsOut == min(groupCount, docCount) else {
        throw CBLError(500, "grouped reduce: \(rawScanRows) raw rows, \(groupsOut) groups")
    }
    precondition(total > 0)
    rows.append(BenchRow(name: "grouped reduce (info)", base: rawScanTime, api: apiReduceTime, budget: nil, ops: docCount))
    notes.append(String(format: "grouped reduce (groupLevel 1, %d groups over %d rows): API %.0f index rows/s "
                        + "(%.0f groups/s, %.1f ms per query); raw ORDER BY key scan %.0f rows/s; groups view indexed in %.3f s",
                        groupsOut, docCount, Double(docCount) / seconds(apiReduceTime), Double(groupsOut) / seconds(apiReduceTime),
                        seconds(apiReduceTime) * 1e3, Double(rawScanRows) / seconds(rawScanTime), seconds(groupsIndexTime)))
    if options.plans {
        notes += try viewQueryPlans(path: apiPath, namesTable: table, groupsTable: groupsTable)
    }
    try db.close()
    return (rows, notes)
}

/// Saves a new revision of each document with `qty` + 1, in one transaction (not timed).
func bumpQuantities(_ db: CBLDatabase, ids: [String]) throws {
    let ok = try db.inTransaction {
        for id in ids {
            let doc = db.document(withID: id)!
            var props = doc.properties!
            props["qty"] = ((props["qty"] as? Int) ?? 0) + 1
            try doc.putProperties(props)
        }
        return true
    }
    guard ok else { throw CBLError(500, "update transaction did not commit") }
}

/// `EXPLAIN QUERY PLAN` of `sql` on a database file (for `--plans`): one line per plan step.
func queryPlan(path: String, sql: String, bindings: [SQLiteValue]) throws -> [String] {
    let c = try openRaw(path)
    defer { c.close() }
    let stmt = try c.prepare("EXPLAIN QUERY PLAN " + sql)
    try stmt.bind(bindings)
    var lines: [String] = []
    try stmt.forEachRow { lines.append(String(repeating: "  ", count: Int($0.int64(1)) == 0 ? 0 : 1) + ($0.string(3) ?? "")) }
    return lines
}

/// The plans of the statements the view benchmarks exercise, as the library and the baselines write them.
func viewQueryPlans(path: String, namesTable: String, groupsTable: String) throws -> [String] {
    let t = "'\(namesTable)'"
    let statements: [(String, String, [SQLiteValue])] = [
        ("ViewIndexer scan (first index)",
         "SELECT revs.doc_id, sequence, docid, revid, json, deleted, doc_type FROM revs, docs WHERE current!=0 AND deleted=0"
            + " AND revs.doc_id=docs.doc_id ORDER BY revs.doc_id, revid DESC", []),
        ("ViewIndexer scan (incremental)",
         "SELECT revs.doc_id, sequence, docid, revid, json, deleted, doc_type FROM revs, docs WHERE current!=0 AND sequence>?"
            + " AND revs.doc_id=docs.doc_id ORDER BY +revs.doc_id, deleted, revid DESC", [.integer(100)]),
        ("ViewIndexer obsolete-row DELETE",
         "DELETE FROM \(t) WHERE sequence IN (SELECT parent FROM revs WHERE sequence>? AND +parent>0 AND +parent<=?)",
         [.integer(100), .integer(100)]),
        ("range query (API SQL)",
         "SELECT key, value, docid, revs.sequence, revid FROM \(t), revs, docs WHERE 1 AND key >= ? AND key <= ?"
            + " AND revs.sequence = \(t).sequence AND docs.doc_id = revs.doc_id ORDER BY key, docid LIMIT ? OFFSET ?",
         [.text("\"a\""), .text("\"b\""), .integer(20), .integer(0)]),
        ("range query (baseline SQL)",
         "SELECT key, value, docid, revs.sequence FROM \(t), revs, docs WHERE key >= ? AND key <= ?"
            + " AND revs.sequence=\(t).sequence AND docs.doc_id=revs.doc_id ORDER BY key, docid LIMIT 20",
         [.text("\"a\""), .text("\"b\"")]),
        ("grouped reduce (API SQL)",
         "SELECT key, value, docid, revs.sequence, revid FROM '\(groupsTable)', revs, docs WHERE 1"
            + " AND revs.sequence = '\(groupsTable)'.sequence AND docs.doc_id = revs.doc_id ORDER BY key, docid LIMIT ? OFFSET ?",
         [.integer(-1), .integer(0)]),
    ]
    var out: [String] = []
    for (label, sql, bindings) in statements {
        out.append("plan of \(label):")
        out += try queryPlan(path: path, sql: sql, bindings: bindings).map { "    " + $0 }
    }
    return out
}
