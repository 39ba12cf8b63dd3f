// Scale benchmark (`--scale 1m`): the per-document cost of the 1.x bulk insert, full view index,
// 1.x → 2.x upgrade and pull replication at a large size against the same at a reference size
// (100k for 1m), in paired rounds (see `runScaleBenchmarks`), with each operation's peak RSS.
// The budget: the large size costs at most 1.2× per document what the reference size costs, and
// memory stays bounded (no operation holds the whole database in memory).
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

/// One operation measured at one size: elapsed time, the process's CPU time (every thread: the
/// pull's listener and replicator both), documents, and the process's peak RSS during it (VmHWM
/// after resetting it to the current RSS at the start) with the RSS it started from.
struct ScaleMeasure {
    var time: Duration
    var cpuSeconds: Double
    var docs: Int
    var startRSS: Double
    var peakRSS: Double
    var perDocMicros: Double { seconds(time) / Double(docs) * 1e6 }
    var cpuPerDocMicros: Double { cpuSeconds / Double(docs) * 1e6 }
}

/// User + system CPU time of the whole process so far, in seconds.
func processCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    func value(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
    return value(usage.ru_utime) + value(usage.ru_stime)
}

/// glibc's `malloc_trim` (not in Swift's Glibc module): returns free heap pages to the kernel.
@_silgen_name("malloc_trim") func glibcMallocTrim(_ pad: Int) -> Int32

/// Resets the kernel's peak-RSS mark (VmHWM) to the current RSS (Linux: `clear_refs` value 5).
func resetPeakRSS() {
    guard let handle = FileHandle(forWritingAtPath: "/proc/self/clear_refs") else { return }
    handle.write(Data("5".utf8))
    try? handle.close()
}

/// Time spent generating documents inside a measured operation (not counted).
struct ScaleGeneration {
    var wall = Duration.zero
    var cpuSeconds = 0.0
}

/// Runs `body` with the peak-RSS mark reset, returning its time (which `body` returns, without
/// generation) and CPU time (without the generation `body` reports) and the memory it reached.
func measuringMemory(docs: Int, _ body: (inout ScaleGeneration) throws -> Duration) rethrows -> ScaleMeasure {
    // Free heap pages go back to the kernel first, so the operation's peak is what it allocates
    // itself, not what an earlier operation left in the allocator for it to reuse.
    _ = glibcMallocTrim(0)
    resetPeakRSS()
    let start = memoryUsage().current
    let cpuStart = processCPUSeconds()
    var generation = ScaleGeneration()
    let time = try body(&generation)
    let cpu = processCPUSeconds() - cpuStart - generation.cpuSeconds
    let peak = memoryUsage().peak
    return ScaleMeasure(time: time, cpuSeconds: cpu, docs: docs, startRSS: start, peakRSS: peak)
}

/// Generates the `count` documents 10k at a time and hands each chunk to `body`; the time spent
/// generating is added to `generation` (the callers subtract it).
func forEachScaleChunk(count: Int, seed: UInt64, generation: inout ScaleGeneration, _ body: (Corpus) throws -> Void) rethrows {
    var offset = 0
    while offset < count {
        let n = min(scaleChunkSize, count - offset)
        let start = clock.now
        let cpuStart = processCPUSeconds()
        let corpus = Corpus(count: n, prefix: "doc", seed: seed &+ UInt64(offset), offset: offset)
        generation.wall += clock.now - start
        generation.cpuSeconds += processCPUSeconds() - cpuStart
        try body(corpus)
        offset += n
    }
}

/// The API's bulk insert of `count` generated documents in one transaction; the time excludes
/// generating the chunks.
func scaleAPIInsert(db: CBLDatabase, count: Int, seed: UInt64, generation: inout ScaleGeneration) throws -> Duration {
    let total = try clock.measure {
        try inTransaction(db) {
            try forEachScaleChunk(count: count, seed: seed, generation: &generation) { corpus in
                for i in corpus.ids.indices { try db.document(withID: corpus.ids[i])!.putProperties(corpus.properties[i]) }
            }
        }
    }
    return total - generation.wall
}

/// Raw SQLite's insert of the same rows (the docs group's baseline), one transaction.
func scaleRawInsert(path: String, count: Int, seed: UInt64, generation: inout ScaleGeneration) throws -> Duration {
    let c = try openRaw(path)
    defer { c.close() }
    let inserter = try RawDocumentInserter(c)
    let total = try clock.measure {
        try c.execute("BEGIN IMMEDIATE")
        try forEachScaleChunk(count: count, seed: seed, generation: &generation) { corpus in
            for i in corpus.ids.indices { try inserter.insert(corpus, i) }
        }
        try c.execute("COMMIT")
    }
    return total - generation.wall
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
    out["raw insert"] = try measuringMemory(docs: count) { try scaleRawInsert(path: rawPath, count: count, seed: seed, generation: &$0) }
    try? FileManager.default.removeItem(at: URL(fileURLWithPath: rawPath).deletingLastPathComponent().deletingLastPathComponent())

    let apiDir = fresh("scale-api")
    do {
        let manager = try CBLManager(directory: apiDir.path)
        defer { manager.close() }
        let db = try manager.databaseNamed("api")
        settleDisk()
        out["insert"] = try measuringMemory(docs: count) { try scaleAPIInsert(db: db, count: count, seed: seed, generation: &$0) }
        guard db.documentCount == UInt(count) else { throw CBLError(500, "scale insert stored \(db.documentCount) docs") }

        print("  scale \(count): view index…")
        let counter = MapCallCounter()
        let view = defineNamesView(db, counter: counter)
        settleDisk()
        out["view index"] = try measuringMemory(docs: count) { _ in try clock.measure { try view.updateIndex() } }
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
    out["upgrade"] = try measuringMemory(docs: count) { _ in
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
        out["pull"] = try measuringMemory(docs: count) { _ in try timedReplication(pull) }
        guard pulled.documentCount == UInt(count) else { throw CBLError(500, "scale pull stored \(pulled.documentCount) docs") }
    }
    try? FileManager.default.removeItem(at: apiDir)
    return out
}

/// The order the operations are reported in.
let scaleOperations = ["insert", "view index", "upgrade", "pull", "raw insert"]

/// Prints one size run's per-document costs and peak RSS, one operation a line.
func printScaleRun(_ label: String, _ run: [String: ScaleMeasure]) {
    for name in scaleOperations {
        guard let m = run[name] else { continue }
        print("    " + pad(label, 16, left: true) + pad(name, 11, left: true)
              + String(format: "%8.2f µs/doc (CPU %6.2f)  peak RSS %5.0f MiB (from %.0f)", m.perDocMicros, m.cpuPerDocMicros,
                       m.peakRSS, m.startRSS))
    }
}

/// `--scale N`: the operations at N/10 (at most 100k) and at N in paired rounds — reference,
/// large, reference, large, …, reference — each large run compared with the mean per-document
/// cost (CPU time) of the reference runs on either side of it (the machine's speed drifts over
/// minutes); each row's ratio is the median of those per-round ratios. `--scale-rounds 0` runs N once with
/// no reference and no verdict (for profiling one size).
@MainActor
func runScaleBenchmarks(options: Options, scale: Int) throws -> (rows: [BenchRow], notes: [String]) {
    let reference = min(100_000, max(1_000, scale / 10))
    let rounds = options.scaleRounds
    if rounds == 0 {
        let run = try runScaleSize(scale, options: options)
        printScaleRun("\(scale / 1000)k", run)
        return ([], ["scale: one run at \(scale / 1000)k (--scale-rounds 0: no reference, no verdict)"])
    }
    // Warm-up: code paths and allocator on a small size (not reported).
    _ = try runScaleSize(2_000, options: options)
    var references: [[String: ScaleMeasure]] = []
    var larges: [[String: ScaleMeasure]] = []
    func referenceRun() throws {
        let run = try runScaleSize(reference, options: options)
        printScaleRun("ref \(references.count + 1) \(reference / 1000)k", run)
        references.append(run)
    }
    try referenceRun()
    for round in 1...rounds {
        let run = try runScaleSize(scale, options: options)
        printScaleRun("large \(round) \(scale / 1000)k", run)
        larges.append(run)
        try referenceRun()
    }

    var rows: [BenchRow] = []
    var notes: [String] = []
    // Each row is judged on process CPU time per document: on this shared 2-core machine another
    // job can stretch a run's wall time by a third while its CPU time stays within a few percent.
    // Wall-time ratios are printed beside it; a wall ratio well above the CPU one means waiting
    // (I/O, or the machine busy), not work that grows.
    for name in scaleOperations {
        let refs = references.compactMap { $0[name] }
        let bigs = larges.compactMap { $0[name] }
        guard refs.count == rounds + 1, bigs.count == rounds else { continue }
        // Round i: large run i against the mean of the reference runs before and after it.
        func ratios(_ perDoc: KeyPath<ScaleMeasure, Double>) -> [Double] {
            bigs.indices.map { i in bigs[i][keyPath: perDoc] / ((refs[i][keyPath: perDoc] + refs[i + 1][keyPath: perDoc]) / 2) }
        }
        let cpuRatios = ratios(\.cpuPerDocMicros), wallRatios = ratios(\.perDocMicros)
        let refCPU = median(refs.map(\.cpuPerDocMicros)), bigCPU = median(bigs.map(\.cpuPerDocMicros))
        let budget: Double? = name == "raw insert" ? nil : 1.2
        var row = BenchRow(name: "\(name) \(scale / 1000)k/\(reference / 1000)k" + (budget == nil ? " (info)" : ""),
                           base: .nanoseconds(Int64(refCPU * 1000 * Double(scale))),
                           api: .nanoseconds(Int64(bigCPU * 1000 * Double(scale))), budget: budget, ops: scale)
        row.pairedRatio = median(cpuRatios)
        rows.append(row)
        func list(_ values: [Double]) -> String { values.map { String(format: "%.2f", $0) }.joined(separator: " ") }
        notes.append(String(format: "scale %@: CPU ratios %@; wall ratios %@ (median %.2f; µs/doc %.2f at %dk, %.2f at %dk); "
                            + "peak RSS %.0f MiB at %dk (+%.0f in the operation), %.0f MiB at %dk (+%.0f)", name,
                            list(cpuRatios), list(wallRatios), median(wallRatios),
                            median(refs.map(\.perDocMicros)), reference / 1000, median(bigs.map(\.perDocMicros)), scale / 1000,
                            refs.map(\.peakRSS).max() ?? 0, reference / 1000, refs.map { $0.peakRSS - $0.startRSS }.max() ?? 0,
                            bigs.map(\.peakRSS).max() ?? 0, scale / 1000, bigs.map { $0.peakRSS - $0.startRSS }.max() ?? 0))
    }
    if let raw = larges.compactMap({ $0["raw insert"] }).map(\.cpuPerDocMicros).sorted().first,
       let insert = larges.compactMap({ $0["insert"] }).map(\.cpuPerDocMicros).sorted().first {
        notes.append(String(format: "scale: API bulk insert / raw SQLite at %dk docs (best CPU µs/doc): %.2fx", scale / 1000, insert / raw))
    }
    notes.append("scale rows: \(rounds) rounds (reference, large, …, reference: \(rounds + 1) runs at \(reference / 1000)k, \(rounds) at "
                 + "\(scale / 1000)k); ratio = median over rounds of the large run's CPU µs/doc ÷ the mean of the reference runs "
                 + "around it; base/API columns = median CPU µs/doc × \(scale / 1000)k; peak RSS = max over runs of VmHWM, reset "
                 + "to the current RSS before each operation (+ = above the RSS the operation started from)")
    return (rows, notes)
}
