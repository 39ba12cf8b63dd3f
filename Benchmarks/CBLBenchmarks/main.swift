// CBLBenchmarks: the 1.x API against raw SQLite doing the same work on the same schema.
//
//   swift run -c release CBLBenchmarks            # 100k documents, 100k random reads
//   swift run -c release CBLBenchmarks --quick    # 10k / 10k, for CI smoke runs
//   options: --docs N  --reads N  --seed N  --keep (keep the temp directories)
//            --only docs|views|collation|upgrade|readers|readers2x|replication|query2x|js|encryption|query-vs-litecore|js-vs-couchdb
//                   (one group; comma-separated list allowed)
//            --plans (print EXPLAIN QUERY PLAN of the view and query2x statements)
//            --scale N (e.g. 1m: only the scale benchmark, see ScaleBenchmarks.swift)
//
// Groups (all by default; ratios are against a baseline measured in the same run):
//   docs:      bulk insert ≤ 1.5× raw, random reads ≤ 2× raw.
//   views:     full view index ≤ 2× raw inserts into an identical maps_N table (+ its two indexes);
//              re-index after changing 1% of the docs ≈ 1–2% of the full index (budget 2%), plus the
//              raw SQL delete+insert of the same index rows for comparison (info);
//              20-row key-range query ≤ 1.5× the same SQL (both: medians of 5 paired rounds);
//              grouped reduce vs a raw ORDER BY key scan (info).
//   collation: cbl_json_collate(JSON) on realistic keys ≤ 1.3× ICU ucol_strcollUTF8 on the same strings.
//   upgrade:   converting the API-written 1.x database to 2.x ≤ 3× a plain read of the same source rows.
//   readers:   latency (median, p99) of single-document reads while another thread inserts --docs documents
//              in one transaction: reads on the reader pool vs reads forced through the writer (info).
//   readers2x: 2.x point lookups (N1QL on an indexed name, document(withID:)) while another thread saves --docs
//              documents in one inBatch: on the reader connections vs forced through the writer; slowest < 5 ms.
//   replication: pulling 10k ~1 KB documents through our listener on loopback ≤ 3× the store's bulk
//              insert of the same documents; push, and 200 documents with 100 KB attachments (info).
//   query2x:   2.x N1QL on --docs names-like documents written by the 1.x API and converted, vs SQLite's
//              json_extract on a JSON copy: point lookup, range + ORDER BY + LIMIT 20, GROUP BY + count()
//              (indexed, ≤ 1.5×), the GROUP BY on an unindexed property and a scan with an unindexed WHERE
//              (≤ 2×); the GROUP BY's floor on LiteCore's schema and saveDocument in inBatch vs 1.x bulk insert (info).
//   js:        full index of a design document's JavaScript map over --docs documents ≤ 3× the same map as a
//              Swift closure (median of paired rounds), with docs/s of both.
//   encryption: a SQLCipher-encrypted database vs a plain one: bulk insert of --docs documents ≤ 1.5×,
//              full view index ≤ 1.5× (medians of paired rounds); opening with a password ≤ 100 ms.
//   query-vs-litecore: issue 20's seven N1QL questions through real LiteCore's C API (an external timing
//              program: LITECORE_BENCH=/path/to/it, skipped when unset) vs our 2.x API on a copy of LiteCore's
//              file and on our converted file; goal: geometric mean ≤ 1.0×, none above 1.5× (see
//              LiteCoreBenchmarks.swift).
//   --scale N: bulk insert, full view index, upgrade and pull of N documents (1m) cost per document ≤ 1.2×
//              what they cost at N/10 (at most 100k): median of paired rounds (--scale-rounds K, 5);
//              peak RSS of each reported.
//
// Every run uses fresh temporary directories.

import CCollation
import CouchbaseLite
import Foundation
import JSONCore
import SQLiteKit
import CBLTestSupport

// MARK: Options

struct Options {
    var docs = 100_000
    var reads = 100_000
    var seed: UInt64 = 42
    var keep = false
    var quick = false
    var plans = false
    /// Raw/API bulk-insert rounds; the verdict is the median of the rounds' API/raw ratios.
    var insertRounds = 9
    var groups: Set<BenchGroup> = Set(BenchGroup.allCases)
    /// `--scale N` (e.g. 1m): only the scale benchmark, at N and at N/10 (at most 100k) documents.
    var scale: Int?
    /// `--scale-rounds K`: large runs, each between two reference runs (0: the large size once, no verdict).
    var scaleRounds = 5

    init(_ args: [String]) {
        var it = args.dropFirst().makeIterator()
        while let arg = it.next() {
            switch arg {
            case "--quick": quick = true; docs = 10_000; reads = 10_000; insertRounds = 1
            case "--insert-rounds": insertRounds = max(1, Int(it.next() ?? "") ?? insertRounds)
            case "--docs": docs = Int(it.next() ?? "") ?? docs
            case "--reads": reads = Int(it.next() ?? "") ?? reads
            case "--seed": seed = UInt64(it.next() ?? "") ?? seed
            case "--keep": keep = true
            case "--scale":
                guard let n = Self.count(it.next() ?? ""), n >= 10_000 else {
                    FileHandle.standardError.write(Data("--scale takes a document count of at least 10k (e.g. 1m, 200k, 500000)\n".utf8))
                    exit(2)
                }
                scale = n
            case "--scale-rounds": scaleRounds = max(0, Int(it.next() ?? "") ?? scaleRounds)
            case "--plans": plans = true
            case "--only":
                let names = (it.next() ?? "").split(separator: ",").map(String.init)
                let parsed = names.compactMap(BenchGroup.init(rawValue:))
                guard !parsed.isEmpty, parsed.count == names.count else {
                    FileHandle.standardError.write(Data("--only takes docs, views, collation, upgrade, readers, readers2x, replication, query2x, js, encryption, query-vs-litecore or js-vs-couchdb\n".utf8))
                    exit(2)
                }
                groups = Set(parsed)
            case "-h", "--help":
                print("usage: CBLBenchmarks [--quick] [--only docs|views|collation|upgrade|readers|readers2x|replication|query2x|js|encryption|query-vs-litecore|js-vs-couchdb] [--docs N] [--reads N] [--insert-rounds N] [--seed N] [--keep] [--plans] [--scale N] [--scale-rounds K]")
                exit(0)
            default:
                FileHandle.standardError.write(Data("unknown option \(arg)\n".utf8))
                exit(2)
            }
        }
        if scale != nil { groups = [] }   // the scale benchmark runs alone
    }

    /// A count written `1000`, `100k` or `1m`.
    static func count(_ text: String) -> Int? {
        let lower = text.lowercased()
        if lower.hasSuffix("k") { return Int(lower.dropLast()).map { $0 * 1_000 } }
        if lower.hasSuffix("m") { return Int(lower.dropLast()).map { $0 * 1_000_000 } }
        return Int(lower)
    }
}

enum BenchGroup: String, CaseIterable, Sendable {
    case docs, views, collation, upgrade, readers, readers2x, replication, query2x, js, encryption
    case queryVsLiteCore = "query-vs-litecore"
    case jsVsCouchDB = "js-vs-couchdb"
}


// MARK: Data set

/// One document's content: the Swift dictionary for the API and the stored bytes for raw SQLite.
struct Corpus {
    let ids: [String]
    let properties: [[String: Any]]
    let json: [[UInt8]]
    let revIDs: [String]
    let types: [String]

    static let cities = ["Springfield", "Shelbyville", "Ogdenville", "North Haverbrook", "Capital City"]
    static let statuses = ["new", "paid", "shipped", "returned"]

    /// `count` documents numbered from `offset` (IDs `prefix-i`; `--scale` makes them in chunks).
    init(count: Int, prefix: String, seed: UInt64, offset: Int = 0) {
        var rng = SplitMix64(seed: seed)
        var ids = [String](), props = [[String: Any]](), json = [[UInt8]](), revs = [String](), types = [String]()
        ids.reserveCapacity(count); props.reserveCapacity(count); json.reserveCapacity(count)
        revs.reserveCapacity(count); types.reserveCapacity(count)
        for i in offset..<(offset + count) {
            let type = i % 5 == 0 ? "customer" : "order"
            let p: [String: Any] = [
                "type": type,
                "name": "Customer \(i) \(Self.cities[i % Self.cities.count])",
                "qty": Int(rng.next() % 1000),
                "price": Double(rng.next() % 100_000) / 100.0,
                "paid": rng.next() % 2 == 0,
                "status": Self.statuses[Int(rng.next() % 4)],
                "tags": ["t\(i % 7)", "batch-\(i / 1000)", "x"],
                "address": ["street": "\(i % 977) Evergreen Terrace", "city": Self.cities[(i / 3) % Self.cities.count],
                            "zip": 10_000 + i % 89_999] as [String: Any],
            ]
            ids.append("\(prefix)-\(i)")
            props.append(p)
            let bytes = try! JSON.canonicalData(p)
            json.append(bytes)
            // A realistic 1.x rev ID: generation 1 + 32 hex digits (precomputed; not timed).
            var h = SplitMix64(seed: UInt64(i) &* 31 &+ seed)
            revs.append("1-" + String(format: "%016llx%016llx", h.next(), h.next()))
            types.append(type)
        }
        self.ids = ids; self.properties = props; self.json = json; self.revIDs = revs; self.types = types
    }

    var averageJSONSize: Double { Double(json.reduce(0) { $0 + $1.count }) / Double(max(json.count, 1)) }
}

// MARK: Helpers

func makeTempDir(_ label: String) -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("cblbench-\(label)-\(UUID().uuidString)")
    try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// An empty database with the store's schema, made by the library itself; returns its db.sqlite3.
func makeEmptyDatabaseFile(in dir: URL, name: String) throws -> String {
    let manager = try CBLManager(directory: dir.path)
    let db = try manager.databaseNamed(name)
    let path = db.directoryURL.appendingPathComponent("db.sqlite3").path
    try db.close()
    manager.close()
    return path
}

/// A raw connection configured like the store's (collations, WAL, synchronous=NORMAL, foreign keys).
func openRaw(_ path: String) throws -> SQLiteConnection {
    let c = try SQLiteConnection(path: path, mode: .init(readOnly: false, create: false))
    try c.createCollation("JSON", cbl_sqlite_collate_json)
    try c.createCollation("JSON_RAW", cbl_sqlite_collate_json_raw)
    try c.createCollation("JSON_ASCII", cbl_sqlite_collate_json_ascii)
    try c.createCollation("REVID", cbl_sqlite_collate_revid)
    try c.execute("PRAGMA foreign_keys = ON")
    try c.execute("PRAGMA journal_mode = WAL")
    try c.execute("PRAGMA synchronous = NORMAL")
    return c
}

let clock = ContinuousClock()

/// Writes back every dirty page before a timed round, so neither side pays for the disk
/// flush of the round before it (each round writes ~50 MB).
func settleDisk() {
    sync()
}

/// The middle value (the upper one of an even count).
func median<T: Comparable>(_ values: [T]) -> T {
    values.sorted()[values.count / 2]
}

func seconds(_ d: Duration) -> Double {
    let c = d.components
    return Double(c.seconds) + Double(c.attoseconds) / 1e18
}

// MARK: Workloads

/// The store's two INSERTs per document (the `docs` row, then its `revs` row), prepared once: what
/// the raw-SQLite baselines of the insert rows do per document.
struct RawDocumentInserter {
    let connection: SQLiteConnection
    let insertDoc: SQLiteStatement
    let insertRev: SQLiteStatement

    init(_ connection: SQLiteConnection) throws {
        self.connection = connection
        insertDoc = try connection.prepare("INSERT OR IGNORE INTO docs (docid) VALUES (?)")
        insertRev = try connection.prepare(
            "INSERT INTO revs (doc_id, revid, parent, current, deleted, no_attachments, json, doc_type) VALUES (?,?,NULL,1,0,1,?,?)")
    }

    func insert(_ corpus: Corpus, _ i: Int) throws {
        try insertDoc.bind(corpus.ids[i], at: 1)
        _ = try insertDoc.step()
        insertDoc.reset()
        try insertRev.bind(connection.lastInsertRowID, at: 1)
        try insertRev.bind(corpus.revIDs[i], at: 2)
        try insertRev.bindBlob(corpus.json[i], at: 3)
        try insertRev.bind(corpus.types[i], at: 4)
        _ = try insertRev.step()
        insertRev.reset()
    }
}

/// Raw SQLite: one transaction, the store's two INSERTs per document, precomputed bytes.
func rawInsert(path: String, corpus: Corpus) throws -> Duration {
    let c = try openRaw(path)
    defer { c.close() }
    let inserter = try RawDocumentInserter(c)
    return try clock.measure {
        try c.execute("BEGIN IMMEDIATE")
        for i in 0..<corpus.ids.count { try inserter.insert(corpus, i) }
        try c.execute("COMMIT")
    }
}

/// The API: one `inTransaction`, `document(withID:)!.putProperties` per document.
func apiInsert(dir: URL, name: String, corpus: Corpus) throws -> Duration {
    let manager = try CBLManager(directory: dir.path)
    defer { manager.close() }
    let db = try manager.databaseNamed(name)
    let elapsed = try timedPutProperties(db, ids: corpus.ids, properties: corpus.properties)
    let count = db.documentCount
    guard count == UInt(corpus.ids.count) else { throw CBLError(500, "API inserted \(count) docs, expected \(corpus.ids.count)") }
    try db.close()
    return elapsed
}

/// `n` distinct indices in random order (every read is a first read of that document).
func uniqueIndices(_ n: Int, below bound: Int, seed: UInt64) -> [Int] {
    var rng = SplitMix64(seed: seed)
    var all = Array(0..<bound)
    all.shuffle(using: &rng)
    return Array(all.prefix(min(n, bound)))
}

/// Resident set size now and at its peak, from /proc/self/status (MiB).
func memoryUsage() -> (current: Double, peak: Double) {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return (0, 0) }
    func value(_ key: String) -> Double {
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(key) }) else { return 0 }
        return Double(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "0").map { $0 / 1024 } ?? 0
    }
    return (value("VmRSS:"), value("VmHWM:"))
}

func randomIndices(_ n: Int, below bound: Int, seed: UInt64) -> [Int] {
    var rng = SplitMix64(seed: seed)
    return (0..<n).map { _ in Int(rng.next() % UInt64(bound)) }
}

/// Raw SQLite random reads: the current revision's ID and body, copied out.
func rawReads(path: String, ids: [String], order: [Int]) throws -> (Duration, Int) {
    let c = try openRaw(path)
    defer { c.close() }
    let select = try c.prepare(
        "SELECT revid, json FROM revs, docs WHERE docs.docid=? AND revs.doc_id=docs.doc_id AND current=1 AND deleted=0 ORDER BY revid DESC LIMIT 1")
    var total = 0
    let elapsed = try clock.measure {
        for i in order {
            try select.bind(ids[i], at: 1)
            guard try select.step() else { throw CBLError(404, "raw read missed \(ids[i])") }
            let revID = select.string(0)!
            let bytes: [UInt8] = select.bytes(1)!
            total &+= bytes.count &+ revID.utf8.count
            select.reset()
        }
    }
    return (elapsed, total)
}

/// API random reads: `existingDocument(withID:)!.properties!`, keeping no references.
func apiReads(dir: URL, name: String, ids: [String], order: [Int]) throws -> (Duration, Int) {
    let manager = try CBLManager(directory: dir.path)
    defer { manager.close() }
    let db = try manager.existingDatabaseNamed(name)
    var total = 0
    let elapsed = clock.measure {
        for i in order {
            let props = db.existingDocument(withID: ids[i])!.properties!
            total &+= props.count
        }
    }
    try db.close()
    return (elapsed, total)
}

// MARK: Machine info

func machineInfo() -> [String] {
    var lines = ["nproc: \(ProcessInfo.processInfo.activeProcessorCount) (\(ProcessInfo.processInfo.processorCount) configured)"]
    if let cpu = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8),
       let model = cpu.split(separator: "\n").first(where: { $0.hasPrefix("model name") }) {
        lines.append("cpu: " + (model.split(separator: ":", maxSplits: 1).last.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""))
    }
    lines.append(String(format: "memory: %.1f GiB", Double(ProcessInfo.processInfo.physicalMemory) / 1_073_741_824))
    lines.append("os: \(ProcessInfo.processInfo.operatingSystemVersionString)")
    lines.append("library: Couchbase Lite \(CBLVersion())")
    lines.append("temp dir: \(FileManager.default.temporaryDirectory.path)")
    #if DEBUG
    lines.append("WARNING: debug build; run with -c release for meaningful numbers")
    #endif
    return lines
}

// MARK: Main

let options = Options(CommandLine.arguments)
let groupList = BenchGroup.allCases.filter { options.groups.contains($0) }.map(\.rawValue).joined(separator: ", ")
print("CBLBenchmarks — \(options.quick ? "quick" : "full") run: \(options.docs) docs, \(options.reads) random reads, seed \(options.seed); groups: \(groupList)")
for line in machineInfo() { print("  " + line) }

var tempDirs: [URL] = []
@MainActor func fresh(_ label: String) -> URL {
    let dir = makeTempDir(label)
    tempDirs.append(dir)
    return dir
}

func pad(_ text: String, _ width: Int, left: Bool = false) -> String {
    let fill = String(repeating: " ", count: max(0, width - text.count))
    return left ? text + fill : fill + text
}
func fmt(_ value: Double, _ decimals: Int) -> String { String(format: "%.\(decimals)f", value) }
func fmtMicros(_ value: Double) -> String { fmt(value, value < 1 ? 3 : 2) }

do {
    var rows: [BenchRow] = []
    var notes: [String] = []

    if let scale = options.scale {
        let (scaleRows, scaleNotes) = try runScaleBenchmarks(options: options, scale: scale)
        rows += scaleRows
        notes += scaleNotes
    } else if options.groups.contains(.docs) || options.groups.contains(.views) || options.groups.contains(.upgrade) {
        let corpus = Corpus(count: options.docs, prefix: "doc", seed: options.seed)
        print(String(format: "  corpus: %d docs, average stored JSON %.0f bytes", corpus.ids.count, corpus.averageJSONSize))
        print("  sample: \(String(decoding: corpus.json[0], as: UTF8.self))")

        // Warm-up: both paths once on a small corpus in their own directories (code paths, page cache, allocator).
        let warm = Corpus(count: min(2_000, options.docs), prefix: "warm", seed: options.seed &+ 1)
        let warmRawPath = try makeEmptyDatabaseFile(in: fresh("warm-raw"), name: "raw")
        _ = try rawInsert(path: warmRawPath, corpus: warm)
        let warmAPIDir = fresh("warm-api")
        _ = try apiInsert(dir: warmAPIDir, name: "api", corpus: warm)
        let warmOrder = randomIndices(warm.ids.count, below: warm.ids.count, seed: options.seed &+ 2)
        _ = try rawReads(path: warmRawPath, ids: warm.ids, order: warmOrder)
        _ = try apiReads(dir: warmAPIDir, name: "api", ids: warm.ids, order: warmOrder)

        // Bulk insert (also the data set of the view benchmarks: the same sequences in both files).
        // `--insert-rounds` (9) alternating raw/API rounds, each into fresh files (1 with --quick,
        // or when only the data set is needed). The verdict uses the median of each round's API/raw
        // ratio: this VM's speed drifts by ±30% over seconds, so the best raw round and the best
        // API round can come from different speed phases, while a round's two halves share one.
        var rawPath = "", apiDir = URL(fileURLWithPath: "/")
        let insertRounds = options.groups.contains(.docs) ? options.insertRounds : 1
        let insert = try pairedRounds(insertRounds, {
            // Each round inserts into a fresh file; the last one stays for the benchmarks below.
            if !rawPath.isEmpty { try? FileManager.default.removeItem(at: URL(fileURLWithPath: rawPath).deletingLastPathComponent()) }
            rawPath = try makeEmptyDatabaseFile(in: fresh("raw"), name: "raw")
            settleDisk()
            return try rawInsert(path: rawPath, corpus: corpus)
        }, {
            if apiDir.path != "/" { try? FileManager.default.removeItem(at: apiDir) }
            apiDir = fresh("api")
            settleDisk()
            return try apiInsert(dir: apiDir, name: "api", corpus: corpus)
        })
        if insert.ratios.count > 1 {
            notes.append("bulk insert, API/raw of each round: " + insert.ratios.map { fmt($0, 2) }.joined(separator: " ")
                + "; median " + fmt(insert.ratio, 2) + "; best API / best raw " + fmt(insert.bestRatio, 2))
        }

        if options.groups.contains(.docs) {
            // Random reads, each on a freshly opened database (no documents cached in memory at the start).
            // Best of 3 alternating rounds each.
            let order = randomIndices(options.reads, below: corpus.ids.count, seed: options.seed &+ 3)
            var rawBytes = 0, apiKeys = 0
            var before = memoryUsage(), after = before
            let (rawReadTime, apiReadTime) = try bestOf(3, {
                let (t, b) = try rawReads(path: rawPath, ids: corpus.ids, order: order)
                rawBytes = b
                return t
            }, {
                before = memoryUsage()
                let (t, k) = try apiReads(dir: apiDir, name: "api", ids: corpus.ids, order: order)
                after = memoryUsage()
                apiKeys = k
                return t
            })
            precondition(rawBytes > 0 && apiKeys == options.reads * 10, "reads returned unexpected data")
            // The same with every document read exactly once, so nothing can come from a cache.
            let once = uniqueIndices(options.reads, below: corpus.ids.count, seed: options.seed &+ 4)
            let (rawOnceTime, apiOnceTime) = try bestOf(3, {
                try rawReads(path: rawPath, ids: corpus.ids, order: once).0
            }, {
                try apiReads(dir: apiDir, name: "api", ids: corpus.ids, order: once).0
            })

            rows += [
                BenchRow(name: "bulk insert (1 txn)", base: insert.base, api: insert.api,
                         budget: 1.3, ops: options.docs, pairedRatio: insert.ratio),
                BenchRow(name: "random reads", base: rawReadTime, api: apiReadTime, budget: 2.0, ops: options.reads),
                BenchRow(name: "reads, each doc once", base: rawOnceTime, api: apiOnceTime, budget: 2.0, ops: once.count),
            ]
            notes.append(String(format: "RSS around the API random reads: %.0f MiB -> %.0f MiB (peak so far %.0f MiB)",
                                before.current, after.current, after.peak))
        }

        if options.groups.contains(.upgrade) {
            let (upgradeRows, upgradeNotes) = try runUpgradeBenchmarks(apiDir: apiDir, docs: options.docs, warmAPIDir: warmAPIDir)
            rows += upgradeRows
            notes += upgradeNotes
        }

        if options.groups.contains(.views) {
            let (viewRows, viewNotes) = try runViewBenchmarks(
                corpus: corpus, apiDir: apiDir, rawPath: rawPath, options: options,
                warmAPIDir: warmAPIDir, warmRawPath: warmRawPath)
            rows += viewRows
            notes += viewNotes
        }
    }

    if options.groups.contains(.readers) {
        let (readerRows, readerNotes) = try runReaderBenchmarks(options: options, fresh: { fresh($0) })
        rows += readerRows
        notes += readerNotes
    }

    if options.groups.contains(.readers2x) {
        let (readerRows, readerNotes) = try runReaders2xBenchmarks(options: options, fresh: { fresh($0) })
        rows += readerRows
        notes += readerNotes
    }

    if options.groups.contains(.replication) {
        let (replicationRows, replicationNotes) = try runReplicationBenchmarks(options: options)
        rows += replicationRows
        notes += replicationNotes
    }

    if options.groups.contains(.query2x) {
        let (queryRows, queryNotes) = try runQuery2xBenchmarks(options: options)
        rows += queryRows
        notes += queryNotes
    }

    if options.groups.contains(.queryVsLiteCore) {
        let (liteCoreRows, liteCoreNotes) = try runQueryVsLiteCoreBenchmarks(options: options)
        rows += liteCoreRows
        notes += liteCoreNotes
    }

    if options.groups.contains(.js) {
        let (jsRows, jsNotes) = try runJavaScriptBenchmarks(options: options, fresh: { fresh($0) })
        rows += jsRows
        notes += jsNotes
    }

    if options.groups.contains(.jsVsCouchDB) {
        let (couchRows, couchNotes) = try runCouchDBViewBenchmarks(options: options, fresh: { fresh($0) })
        rows += couchRows
        notes += couchNotes
    }

    if options.groups.contains(.encryption) {
        let (encryptionRows, encryptionNotes) = try runEncryptionBenchmarks(options: options, fresh: { fresh($0) })
        rows += encryptionRows
        notes += encryptionNotes
    }

    if options.groups.contains(.collation) {
        let (collationRows, collationNotes) = runCollationBenchmarks(options: options)
        rows += collationRows
        notes += collationNotes
    }

    print("")
    let header = pad("benchmark", 26, left: true) + pad("base (s)", 10) + pad("API (s)", 10)
        + pad("base µs/op", 12) + pad("API µs/op", 11) + pad("ratio", 9) + pad("budget", 8) + "  verdict"
    print(header)
    print(String(repeating: "-", count: header.count))
    var allWithinBudget = true
    for row in rows {
        let ok = row.budget.map { row.ratio <= $0 }
        allWithinBudget = allWithinBudget && ok != false
        let ratio = row.percent ? fmt(row.ratio * 100, 2) + "%" : fmt(row.ratio, 2) + "x"
        let budget = row.budget.map { row.percent ? fmt($0 * 100, 0) + "%" : fmt($0, 1) + "x" } ?? "-"
        print(pad(row.name, 26, left: true) + pad(fmt(seconds(row.base), 3), 10) + pad(fmt(seconds(row.api), 3), 10)
              + pad(fmtMicros(seconds(row.base) / Double(row.ops) * 1e6), 12)
              + pad(fmtMicros(seconds(row.api) / Double(row.ops) * 1e6), 11)
              + pad(ratio, 9) + pad(budget, 8) + "  " + (ok.map { $0 ? "OK" : "OVER" } ?? "info"))
    }
    print("")
    if options.scale == nil {
        print("base = raw SQLite on the same schema (docs, views), ICU directly (collation); for \"re-index 1%\"")
        print("base = the full index time and the ratio is a percentage; µs/op is per document, query, row or comparison.")
        print("Bulk insert: medians of \(options.insertRounds) alternating rounds, ratio = median of each round's API/raw; full index builds and range queries: medians of \(viewRounds) paired rounds (ratio = median of the rounds' ratios); reads, grouped reduce, collation and the upgrade the best of 3; re-index rows are single runs.")
        print("\"re-index 1% vs raw\" compares our incremental update with raw SQLite doing the same row deletes and")
        print("inserts: it shows the update touches only the changed documents (no scan of the database).")
        if options.groups.contains(.query2x) {
            print("query2x: base = SQLite json_extract on docs(id, json) with expression indexes (same cache/mmap settings);")
            print("ratios = median of paired rounds (\(options.quick ? 3 : 7) query rounds, \(options.quick ? 1 : 3) save rounds); µs/op per execution.")
        }
    }
    for note in notes { print("  " + note) }
    print("")
    print(allWithinBudget ? "All ratios within budget." : "Some ratios are OVER budget.")
} catch {
    FileHandle.standardError.write(Data("benchmark failed: \(error)\n".utf8))
    if !options.keep { for dir in tempDirs { try? FileManager.default.removeItem(at: dir) } }
    exit(1)
}

if options.keep {
    print("kept: " + tempDirs.map(\.path).joined(separator: " "))
} else {
    for dir in tempDirs { try? FileManager.default.removeItem(at: dir) }
}

/// The 1.x API's bulk path, timed: one `inTransaction`, `document(withID:)!.putProperties` per
/// document; throws what a save threw, or when the transaction did not commit.
/// Runs `body` in one 1.x transaction; its error (or a transaction that did not commit) is thrown.
func inTransaction(_ db: CBLDatabase, _ body: () throws -> Void) throws {
    var failure: Error?
    let ok = db.inTransaction {
        do {
            try body()
            return true
        } catch {
            failure = error
            return false
        }
    }
    if let failure { throw failure }
    if !ok { throw CBLError(500, "transaction did not commit") }
}

func timedPutProperties(_ db: CBLDatabase, ids: [String], properties: [[String: Any]]) throws -> Duration {
    try clock.measure {
        try inTransaction(db) {
            for i in ids.indices {
                try db.document(withID: ids[i])!.putProperties(properties[i])
            }
        }
    }
}
