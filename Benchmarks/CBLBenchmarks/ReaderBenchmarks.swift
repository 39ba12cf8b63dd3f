import CouchbaseLite
import Foundation
import CBLTestSupport

// The `readers` group: single-document reads issued while another thread holds a big write
// transaction open. Reads are issued on a fixed schedule (one every `readInterval`) and each
// one's latency counts from its scheduled time, so a read stuck behind the writer also delays the
// ones scheduled after it, as it would a client's queued requests. Measured twice, on fresh
// databases: with the reads on the reader pool, and forced through the writer (the behaviour
// before the pool, `readsWaitForWriter`).

/// What one mode measured.
struct ReadsDuringWrite {
    /// Latency of every read scheduled while the transaction was open, sorted.
    let latencies: [Duration]
    /// From the writer's first insert to its commit.
    let transaction: Duration

    var median: Duration { latencies[latencies.count / 2] }
    var p99: Duration { latencies[min(latencies.count - 1, latencies.count * 99 / 100)] }
    var max: Duration { latencies.last! }
}

let readInterval = Duration.milliseconds(1)
let preloadedDocuments = 10_000

/// Sleeps until shortly before `instant`, then spins: a sleep alone overshoots by tens of
/// microseconds, which would count as read latency.
func waitUntil(_ instant: ContinuousClock.Instant) {
    let early = instant - .microseconds(200)
    let now = clock.now
    if early > now { Thread.sleep(forTimeInterval: seconds(early - now)) }
    while clock.now < instant {}
}

/// Preloads `preloadedDocuments`, then reads random ones of them while inserting `writes`
/// documents in one transaction on another thread.
func measureReadsDuringWrite(dir: URL, writes: Corpus, forceWriter: Bool, seed: UInt64) throws -> ReadsDuringWrite {
    let manager = try CBLManager(directory: dir.path)
    defer { manager.close() }
    let db = try manager.databaseNamed("readers")
    let preIDs = (0..<preloadedDocuments).map { "pre-\($0)" }
    try db.inTransaction {
        for (i, id) in preIDs.enumerated() { try db.document(withID: id)!.putProperties(writes.properties[i % writes.properties.count]) }
        return true
    }
    db.readsWaitForWriter = forceWriter

    final class Shared: @unchecked Sendable {
        let started = DispatchSemaphore(value: 0)
        let lock = NSLock()
        var committedAt: ContinuousClock.Instant?
        var transaction: Duration = .zero
        var failure: String?
    }
    let shared = Shared()
    let writerDone = DispatchSemaphore(value: 0)
    nonisolated(unsafe) let corpus = writes
    Thread.detachNewThread {
        var began = clock.now
        let ok = db.inTransaction {
            began = clock.now
            shared.started.signal()
            do {
                for i in 0..<corpus.ids.count { try db.document(withID: corpus.ids[i])!.putProperties(corpus.properties[i]) }
                return true
            } catch {
                shared.lock.withLock { shared.failure = "\(error)" }
                return false
            }
        }
        let end = clock.now
        shared.lock.withLock {
            shared.committedAt = end
            shared.transaction = end - began
            if !ok && shared.failure == nil { shared.failure = "write transaction did not commit" }
        }
        writerDone.signal()
    }

    shared.started.wait()
    var rng = SplitMix64(seed: seed)
    var latencies: [Duration] = []
    let start = clock.now
    var k = 0
    while true {
        let scheduled = start + readInterval * k
        k += 1
        if let committed = shared.lock.withLock({ shared.committedAt }), scheduled > committed { break }
        waitUntil(scheduled)
        let id = preIDs[Int(rng.next() % UInt64(preIDs.count))]
        guard let props = db.existingDocument(withID: id)?.properties, props["qty"] != nil else {
            throw CBLError(500, "read of \(id) during the write failed")
        }
        latencies.append(clock.now - scheduled)
    }
    writerDone.wait()
    if let failure = shared.lock.withLock({ shared.failure }) { throw CBLError(500, failure) }
    guard db.documentCount == UInt(preloadedDocuments + writes.ids.count) else {
        throw CBLError(500, "the write transaction left \(db.documentCount) documents")
    }
    try db.close()
    return ReadsDuringWrite(latencies: latencies.sorted(), transaction: shared.lock.withLock { shared.transaction })
}

/// Random single-document reads with no write going on, on the reader pool or through the
/// writer: what checking out a reader and its read transaction cost per read.
func measureUncontendedReads(dir: URL, corpus: Corpus, reads: Int, seed: UInt64) throws -> (pool: Duration, writer: Duration) {
    let manager = try CBLManager(directory: dir.path)
    defer { manager.close() }
    let db = try manager.databaseNamed("uncontended")
    try db.inTransaction {
        for i in 0..<corpus.ids.count { try db.document(withID: corpus.ids[i])!.putProperties(corpus.properties[i]) }
        return true
    }
    let order = randomIndices(reads, below: corpus.ids.count, seed: seed)
    func run(forceWriter: Bool) throws -> Duration {
        db.readsWaitForWriter = forceWriter
        var keys = 0
        let elapsed = clock.measure {
            for i in order { keys &+= db.existingDocument(withID: corpus.ids[i])?.properties?.count ?? 0 }
        }
        guard keys == reads * 10 else { throw CBLError(500, "uncontended reads returned unexpected data") }
        return elapsed
    }
    let (writer, pool) = try bestOf(3, { try run(forceWriter: true) }, { try run(forceWriter: false) })
    try db.close()
    return (pool, writer)
}

func runReaderBenchmarks(options: Options, fresh: (String) -> URL) throws -> ([BenchRow], [String]) {
    let writes = Corpus(count: options.docs, prefix: "write", seed: options.seed &+ 11)
    // Warm-up: both modes once on a small write (code paths, page cache, allocator).
    let warm = Corpus(count: min(5_000, options.docs), prefix: "warm", seed: options.seed &+ 12)
    _ = try measureReadsDuringWrite(dir: fresh("readers-warm-pool"), writes: warm, forceWriter: false, seed: options.seed)
    _ = try measureReadsDuringWrite(dir: fresh("readers-warm-writer"), writes: warm, forceWriter: true, seed: options.seed)

    let throughWriter = try measureReadsDuringWrite(dir: fresh("readers-writer"), writes: writes, forceWriter: true,
                                                    seed: options.seed &+ 13)
    let pool = try measureReadsDuringWrite(dir: fresh("readers-pool"), writes: writes, forceWriter: false,
                                           seed: options.seed &+ 13)
    let uncontended = try measureUncontendedReads(dir: fresh("readers-uncontended"), corpus: writes,
                                                  reads: options.reads, seed: options.seed &+ 14)
    func micros(_ d: Duration) -> String { fmt(seconds(d) * 1e6, 0) + " µs" }
    func line(_ label: String, _ r: ReadsDuringWrite) -> String {
        "\(label): \(r.latencies.count) reads, median \(micros(r.median)), p99 \(micros(r.p99)), max \(micros(r.max)); "
            + "write transaction \(fmt(seconds(r.transaction), 3)) s"
    }
    let rows = [
        BenchRow(name: "read during write, median", base: throughWriter.median, api: pool.median, budget: nil, ops: 1,
                 percent: true),
        BenchRow(name: "read during write, p99", base: throughWriter.p99, api: pool.p99, budget: nil, ops: 1,
                 percent: true),
        BenchRow(name: "uncontended reads", base: uncontended.writer, api: uncontended.pool, budget: nil, ops: options.reads),
    ]
    let notes = [
        "readers: single-document reads (existingDocument(withID:).properties of \(preloadedDocuments) preloaded docs), "
            + "one scheduled every \(seconds(readInterval) * 1000) ms while another thread inserts \(writes.ids.count) documents "
            + "in one transaction; latency from each read's scheduled time. In the \"read during write\" rows, "
            + "base = reads forced through the writer (before the pool), API = reads on the reader pool.",
        line("reads through the writer", throughWriter),
        line("reads on the reader pool", pool),
        "uncontended reads: \(options.reads) random existingDocument(withID:).properties with no write going on "
            + "(best of 3); base = through the writer, API = on the reader pool (a reader check-out and a read transaction per read).",
    ]
    return (rows, notes)
}
