// Scale benchmark (`--scale 1m`): the per-document cost of the 1.x bulk insert, full view index,
// 1.x → 2.x upgrade and pull replication at a large size against the same at a reference size
// (100k for 1m), in one run, with each operation's peak RSS. The budget: the large size costs at
// most 1.2× per document what the reference size costs, and memory stays bounded (no operation
// holds the whole database in memory).
//
// Documents are generated in chunks (the Corpus of the docs group, `chunkSize` at a time) so the
// benchmark itself never holds the whole data set either; generation is not timed.

import CouchbaseLite
import CouchbaseLiteListener
import CouchbaseLiteSwift
import CouchbaseLiteUpgrade
import Foundation
import SQLiteKit

/// Documents generated per chunk (the benchmark's own memory stays proportional to this).
let scaleChunkSize = 10_000

/// One operation measured at one size: elapsed time, documents, and the process's peak RSS during
/// it (VmHWM after resetting it to the current RSS at the start) with the RSS it started from.
struct ScaleMeasure {
    var time: Duration
    var docs: Int
    var startRSS: Double
    var peakRSS: Double
    var perDocMicros: Double { seconds(time) / Double(docs) * 1e6 }
}

/// Resets the kernel's peak-RSS mark (VmHWM) to the current RSS (Linux: `clear_refs` value 5).
func resetPeakRSS() {
    guard let handle = FileHandle(forWritingAtPath: "/proc/self/clear_refs") else { return }
    handle.write(Data("5".utf8))
    try? handle.close()
}

/// Runs `body` with the peak-RSS mark reset, returning its time and the memory it reached.
func measuringMemory(docs: Int, _ body: () throws -> Duration) rethrows -> ScaleMeasure {
    resetPeakRSS()
    let start = memoryUsage().current
    let time = try body()
    let peak = memoryUsage().peak
    return ScaleMeasure(time: time, docs: docs, startRSS: start, peakRSS: peak)
}

/// Generates the `count` documents 10k at a time and hands each chunk to `body`; the time spent
/// generating is added to `generation` (the callers subtract it).
func forEachScaleChunk(count: Int, seed: UInt64, generation: inout Duration, _ body: (Corpus) throws -> Void) rethrows {
    var offset = 0
    while offset < count {
        let n = min(scaleChunkSize, count - offset)
        let start = clock.now
        let corpus = Corpus(count: n, prefix: "doc", seed: seed &+ UInt64(offset), offset: offset)
        generation += clock.now - start
        try body(corpus)
        offset += n
    }
}

/// The API's bulk insert of `count` generated documents in one transaction; the time excludes
/// generating the chunks.
func scaleAPIInsert(db: CBLDatabase, count: Int, seed: UInt64) throws -> Duration {
    var generation = Duration.zero
    let total = try clock.measure {
        try inTransaction(db) {
            try forEachScaleChunk(count: count, seed: seed, generation: &generation) { corpus in
                for i in corpus.ids.indices { try db.document(withID: corpus.ids[i])!.putProperties(corpus.properties[i]) }
            }
        }
    }
    return total - generation
}

/// Raw SQLite's insert of the same rows (the docs group's baseline), one transaction.
func scaleRawInsert(path: String, count: Int, seed: UInt64) throws -> Duration {
    let c = try openRaw(path)
    defer { c.close() }
    let inserter = try RawDocumentInserter(c)
    var generation = Duration.zero
    let total = try clock.measure {
        try c.execute("BEGIN IMMEDIATE")
        try forEachScaleChunk(count: count, seed: seed, generation: &generation) { corpus in
            for i in corpus.ids.indices { try inserter.insert(corpus, i) }
        }
        try c.execute("COMMIT")
    }
    return total - generation
}

/// Every operation at one size, each on the database the one before it made.
@MainActor
func runScaleSize(_ count: Int, options: Options) throws -> [String: ScaleMeasure] {
    var out: [String: ScaleMeasure] = [:]
    let seed = options.seed
    print("  scale \(count): inserting…")

    // Raw first (its file is only the baseline), then the API database every later step uses.
    let rawPath = try makeEmptyDatabaseFile(in: fresh("scale-raw"), name: "raw")
    settleDisk()
    out["raw insert"] = try measuringMemory(docs: count) { try scaleRawInsert(path: rawPath, count: count, seed: seed) }
    try? FileManager.default.removeItem(at: URL(fileURLWithPath: rawPath).deletingLastPathComponent().deletingLastPathComponent())

    let apiDir = fresh("scale-api")
    do {
        let manager = try CBLManager(directory: apiDir.path)
        defer { manager.close() }
        let db = try manager.databaseNamed("api")
        settleDisk()
        out["insert"] = try measuringMemory(docs: count) { try scaleAPIInsert(db: db, count: count, seed: seed) }
        guard db.documentCount == UInt(count) else { throw CBLError(500, "scale insert stored \(db.documentCount) docs") }

        print("  scale \(count): view index…")
        let counter = MapCallCounter()
        let view = defineNamesView(db, counter: counter)
        settleDisk()
        out["view index"] = try measuringMemory(docs: count) { try clock.measure { try view.updateIndex() } }
        guard counter.calls == count, view.totalRows == UInt(count) else {
            throw CBLError(500, "scale index mapped \(counter.calls) docs, \(view.totalRows) rows")
        }
        try db.close()
    }

    print("  scale \(count): upgrade…")
    let bundle = apiDir.appendingPathComponent("api.cblite2")
    let converted = fresh("scale-upgrade").appendingPathComponent("converted.cblite2")
    settleDisk()
    var report = UpgradeReport()
    out["upgrade"] = try measuringMemory(docs: count) {
        try clock.measure { report = try DatabaseUpgrader(source: bundle, destination: converted).run() }
    }
    guard report.documentsConverted == count else { throw CBLError(500, "scale upgrade converted \(report.documentsConverted) docs") }
    try? FileManager.default.removeItem(at: converted.deletingLastPathComponent())

    print("  scale \(count): pull…")
    do {
        let serverManager = try CBLManager(directory: apiDir.path)
        let clientManager = try CBLManager(directory: fresh("scale-pull").path)
        let listener = CBLListener(manager: serverManager, port: 0)
        listener.bindAddress = "127.0.0.1"
        try listener.start()
        defer {
            listener.stop()
            serverManager.close(); clientManager.close()
        }
        let pulled = try clientManager.databaseNamed("pulled")
        let pull = pulled.createPullReplication(URL(string: "http://127.0.0.1:\(listener.port)/api")!)
        settleDisk()
        out["pull"] = try measuringMemory(docs: count) { try timedReplication(pull) }
        guard pulled.documentCount == UInt(count) else { throw CBLError(500, "scale pull stored \(pulled.documentCount) docs") }
    }
    try? FileManager.default.removeItem(at: apiDir)
    return out
}

/// `--scale N`: the operations at N/10 (at most 100k) and at N; rows compare per-document costs.
@MainActor
func runScaleBenchmarks(options: Options, scale: Int) throws -> (rows: [BenchRow], notes: [String]) {
    let reference = min(100_000, max(1_000, scale / 10))
    // Warm-up: code paths and allocator on a small size (not reported).
    _ = try runScaleSize(2_000, options: options)
    let small = try runScaleSize(reference, options: options)
    let large = try runScaleSize(scale, options: options)
    var rows: [BenchRow] = []
    var notes: [String] = []
    for name in ["insert", "view index", "upgrade", "pull", "raw insert"] {
        guard let s = small[name], let l = large[name] else { continue }
        // base = the reference size's time scaled to the large size's documents (same per-doc cost).
        let scaledBase = s.time * (Double(l.docs) / Double(s.docs))
        let budget: Double? = name == "raw insert" ? nil : 1.2
        rows.append(BenchRow(name: "\(name) \(l.docs / 1000)k/\(s.docs / 1000)k" + (budget == nil ? " (info)" : ""),
                             base: scaledBase, api: l.time, budget: budget, ops: l.docs))
        notes.append(String(format: "scale %@: %.2f µs/doc at %d, %.2f µs/doc at %d (%.2fx); peak RSS %.0f MiB (from %.0f) at %d, "
                            + "%.0f MiB (from %.0f) at %d", name, s.perDocMicros, s.docs, l.perDocMicros, l.docs,
                            l.perDocMicros / s.perDocMicros, s.peakRSS, s.startRSS, s.docs, l.peakRSS, l.startRSS, l.docs))
    }
    if let insert = large["insert"], let raw = large["raw insert"] {
        notes.append(String(format: "scale: API bulk insert / raw SQLite at %d docs: %.2fx", insert.docs,
                            seconds(insert.time) / seconds(raw.time)))
    }
    notes.append("scale rows: base = the \(reference / 1000)k run's time × \(scale / reference) (its per-document cost at the "
                 + "large size), API = the \(scale / 1000)k run; peak RSS = VmHWM reset to the current RSS before each operation")
    return (rows, notes)
}
