import CouchbaseLiteSwift
import Foundation
import CBLTestSupport

// The `readers2x` group (issue 20): 2.x point lookups while another thread saves --docs documents
// in one `inBatch`. One lookup is issued every `readInterval`; each one's latency is the time its
// call took. Measured twice, on fresh databases: with the reads on the reader connections, and
// forced through the writer (`readsWaitForWriter`: one connection and one lock, as before the
// reader pool). Budget: the slowest lookup on the readers under 5 ms.

/// What one mode measured.
struct LookupsDuringBatch {
    /// Each query lookup's latency, sorted.
    let queries: [Duration]
    /// Each `document(withID:)` latency, sorted.
    let documents: [Duration]
    /// From the batch's first save to its commit.
    let batch: Duration
    /// The five slowest lookups of either kind: when each began (from the batch's first save)
    /// and how long it took — whether the slow ones cluster at the commit or spread out.
    let slowest: [(at: Duration, took: Duration)]

    static func median(_ d: [Duration]) -> Duration { d.isEmpty ? .zero : d[d.count / 2] }
    static func p99(_ d: [Duration]) -> Duration { d.isEmpty ? .zero : d[min(d.count - 1, d.count * 99 / 100)] }
}

let readers2xPreloaded = 10_000
let readers2xLookupBudget = Duration.milliseconds(5)

/// The issue's document shape: `{type, name, age, city, tags[3], active, score}`.
func readers2xProperties(_ i: Int, prefix: String) -> [String: Any] {
    ["type": "person", "name": "\(prefix)\(i)", "age": i % 90, "city": "city\(i % 50)",
     "tags": ["t\(i % 7)", "t\(i % 11)", "t\(i % 13)"], "active": i % 3 == 0, "score": (i * 7919) % 1000]
}

/// Preloads `readers2xPreloaded` documents with an index on `name`, then, while another thread
/// saves `writes` documents in one `inBatch`, alternates a `SELECT meta().id … WHERE name = $x`
/// lookup and a `document(withID:)` of random preloaded documents.
func measureLookupsDuringBatch(dir: URL, writes: Int, forceWriter: Bool, seed: UInt64) throws -> LookupsDuringBatch {
    let db = try CouchbaseLiteSwift.Database(name: "readers2x", config: DatabaseConfiguration(directory: dir.path))
    defer { try? db.close() }
    try db.inBatch {
        for i in 0..<readers2xPreloaded {
            try db.saveDocument(MutableDocument(id: "pre-\(i)", data: readers2xProperties(i, prefix: "pre")))
        }
    }
    try db.createIndex(ValueIndexConfiguration(["name"]), name: "byName")
    let query = try db.createQuery("SELECT meta().id FROM _ WHERE name = $x")
    db.readsWaitForWriter = forceWriter

    final class Shared: @unchecked Sendable {
        let started = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        let lock = NSLock()
        var committed = false
        var batch: Duration = .zero
        var failure: String?
    }
    let shared = Shared()
    Thread.detachNewThread {
        var began = clock.now
        do {
            try db.inBatch {
                began = clock.now
                shared.started.signal()
                for i in 0..<writes {
                    try db.saveDocument(MutableDocument(id: "w-\(i)", data: readers2xProperties(i, prefix: "w")))
                }
            }
        } catch {
            shared.lock.withLock { shared.failure = "\(error)" }
        }
        let end = clock.now
        shared.lock.withLock {
            shared.committed = true
            shared.batch = end - began
        }
        shared.done.signal()
    }

    shared.started.wait()
    var rng = SplitMix64(seed: seed)
    var queries: [Duration] = [], documents: [Duration] = []
    var timeline: [(at: Duration, took: Duration)] = []
    let start = clock.now
    var k = 0
    while !shared.lock.withLock({ shared.committed }) {
        waitUntil(start + readInterval * k)
        let i = Int(rng.next() % UInt64(readers2xPreloaded))
        let began = clock.now
        if k % 2 == 0 {
            query.parameters = Parameters().setString("pre\(i)", forName: "x")
            let rows = try query.execute().allResults()
            let elapsed = clock.now - began
            guard rows.count == 1, rows[0].string(at: 0) == "pre-\(i)" else {
                throw CouchbaseLiteError(.unexpectedError, "lookup of pre\(i) during the batch returned \(rows.count) rows")
            }
            queries.append(elapsed)
            timeline.append((began - start, elapsed))
        } else {
            let name = db.document(withID: "pre-\(i)")?.string(forKey: "name")
            let elapsed = clock.now - began
            guard name == "pre\(i)" else {
                throw CouchbaseLiteError(.unexpectedError, "document(withID: pre-\(i)) during the batch failed")
            }
            documents.append(elapsed)
            timeline.append((began - start, elapsed))
        }
        k += 1
    }
    shared.done.wait()
    if let failure = shared.lock.withLock({ shared.failure }) { throw CouchbaseLiteError(.unexpectedError, failure) }
    guard db.count == UInt64(readers2xPreloaded + writes) else {
        throw CouchbaseLiteError(.unexpectedError, "the batch left \(db.count) documents")
    }
    return LookupsDuringBatch(queries: queries.sorted(), documents: documents.sorted(),
                              batch: shared.lock.withLock { shared.batch },
                              slowest: Array(timeline.sorted { $0.took > $1.took }.prefix(5)))
}

func runReaders2xBenchmarks(options: Options, fresh: (String) -> URL) throws -> ([BenchRow], [String]) {
    // Warm-up: both modes once on a small batch (code paths, page cache, allocator).
    let warm = min(5_000, options.docs)
    _ = try measureLookupsDuringBatch(dir: fresh("readers2x-warm-pool"), writes: warm, forceWriter: false, seed: options.seed)
    _ = try measureLookupsDuringBatch(dir: fresh("readers2x-warm-writer"), writes: warm, forceWriter: true, seed: options.seed)

    let writer = try measureLookupsDuringBatch(dir: fresh("readers2x-writer"), writes: options.docs, forceWriter: true,
                                               seed: options.seed &+ 21)
    let pool = try measureLookupsDuringBatch(dir: fresh("readers2x-pool"), writes: options.docs, forceWriter: false,
                                             seed: options.seed &+ 21)
    typealias L = LookupsDuringBatch
    let poolAll = (pool.queries + pool.documents).sorted()
    let slowest = poolAll.last ?? .zero
    func ms(_ d: Duration) -> String { fmt(seconds(d) * 1e3, 3) + " ms" }
    func line(_ label: String, _ r: LookupsDuringBatch) -> String {
        "\(label): \(r.queries.count) query lookups median \(ms(L.median(r.queries))), p99 \(ms(L.p99(r.queries))), "
            + "slowest \(ms(r.queries.last ?? .zero)); \(r.documents.count) document(withID:) median \(ms(L.median(r.documents))), "
            + "slowest \(ms(r.documents.last ?? .zero)); batch of \(options.docs) saves \(fmt(seconds(r.batch), 3)) s; "
            + "slowest five (began at → took): " + r.slowest.map { "\(ms($0.at)) → \(ms($0.took))" }.joined(separator: ", ")
    }
    let rows = [
        BenchRow(name: "2.x lookup in batch, med", base: L.median(writer.queries), api: L.median(pool.queries),
                 budget: nil, ops: 1),
        BenchRow(name: "2.x lookup in batch, max", base: writer.queries.last ?? .zero, api: pool.queries.last ?? .zero,
                 budget: nil, ops: 1),
        BenchRow(name: "2.x docID read in batch, max", base: writer.documents.last ?? .zero, api: pool.documents.last ?? .zero,
                 budget: nil, ops: 1),
        // Absolute budget as a ratio: base = 5 ms, API = the slowest lookup of either kind.
        BenchRow(name: "2.x slowest lookup / 5 ms", base: readers2xLookupBudget, api: slowest, budget: 1.0, ops: 1),
    ]
    let notes = [
        "readers2x: while another thread saves \(options.docs) documents {type,name,age,city,tags[3],active,score} in one "
            + "inBatch, one lookup every \(seconds(readInterval) * 1000) ms of a random one of \(readers2xPreloaded) preloaded "
            + "documents, alternating `SELECT meta().id FROM _ WHERE name = $x` (value index on name) and document(withID:); "
            + "latency = the call's duration. base = reads forced through the writer (one connection and lock, as before the "
            + "reader connections), API = reads on the reader connections.",
        line("reads through the writer (before)", writer),
        line("reads on the readers", pool),
        "readers2x budget: slowest lookup on the readers \(ms(slowest)) (< 5 ms: \(slowest < readers2xLookupBudget ? "OK" : "OVER"))",
    ]
    return (rows, notes)
}
