// LiteCore comparison (`--only query-vs-litecore`): issue 20's seven N1QL questions timed through
// real LiteCore's C API (an external timing program, built outside this repository) and through
// our 2.x API, on the same documents, in paired rounds of one run.
//
// `LITECORE_BENCH=/path/to/program` enables the group (skipped otherwise). The program speaks:
//   create <dir/NAME.cblite2> <count>   LiteCore writes the documents below + value indexes name, age, city
//   query <dir/NAME.cblite2> <q> <runs> prints "rows R", "checksum C", "times_us t1 t2 …", "median_us M"
//   explain <dir/NAME.cblite2> [q]      c4query_explain
// `LITECORE_DB=/path/NAME.cblite2` uses an existing LiteCore file instead of creating one.
//
// Three sides per question: LiteCore on its own file, ours on a copy of that file, and ours on
// "our converted file" (the same documents written through the 1.x API, converted by the upgrader,
// the same three indexes created through our 2.x API). Each side runs the same N1QL `runs` times
// per round, reading every column of every row; a side's time is the median of its per-run times,
// a ratio the median over rounds of ours ÷ LiteCore in the same round.

import CouchbaseLite
import CouchbaseLiteSwift
import CouchbaseLiteUpgrade
import Foundation

// MARK: The documents (the timing program's generator, bit for bit)

/// `{type, name, age, city, tags[3], active, score}` for document `i`, from a splitmix64 mix of
/// `i*16 + field + 1`: the rule the LiteCore timing program writes with, so both files hold
/// identical documents (IDs `doc-000000`…).
enum LiteCorePeople {
    static let cities = [
        "Amsterdam", "Athens", "Austin", "Bangkok", "Barcelona", "Berlin", "Bogota", "Boston",
        "Brussels", "Cairo", "Chicago", "Denver", "Dublin", "Geneva", "Hanoi", "Helsinki",
        "Istanbul", "Jakarta", "Kyoto", "Lagos", "Lima", "Lisbon", "London", "Madrid",
        "Manila", "Miami", "Montreal", "Mumbai", "Nairobi", "Oslo", "Paris", "Prague",
        "Quito", "Rome", "Santiago", "Seoul", "Sydney", "Tokyo", "Vienna", "Zurich",
    ]

    static func mix(_ x: UInt64) -> UInt64 {
        var z = x
        z ^= z >> 30; z = z &* 0xBF58_476D_1CE4_E5B9
        z ^= z >> 27; z = z &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    static func r(_ i: Int, _ field: UInt64) -> UInt64 { mix(UInt64(i) &* 16 &+ field &+ 1) }

    static func id(_ i: Int) -> String { String(format: "doc-%06d", i) }

    static func properties(_ i: Int) -> [String: Any] {
        let base = r(i, 3) % 10, step = 1 + r(i, 4) % 3
        return [
            "type": "person",
            "name": "name\(i)",
            "age": Int(18 + r(i, 1) % 63),
            "city": cities[Int(r(i, 2) % 40)],
            "tags": (0..<3).map { "t\((base + UInt64($0) * step) % 10)" },
            "active": r(i, 5) % 2 == 0,
            "score": Int(r(i, 6) % 1001),
        ]
    }

    /// Question 1's `$x` for run `k` (the program's rule).
    static func parameter(run k: Int, count: Int) -> String { "name\((k * 7919 + 17) % count)" }
}

/// The seven questions of issue 20, in the program's numbering (1…7).
let liteCoreQuestions: [(label: String, n1ql: String)] = [
    ("name = $x (indexed)", "SELECT meta().id, age FROM _ WHERE name = $x"),
    ("age BETWEEN, ORDER BY, LIMIT 20", "SELECT name, age FROM _ WHERE age BETWEEN 30 AND 32 ORDER BY age, name LIMIT 20"),
    ("GROUP BY city (indexed)", "SELECT city, count(*) FROM _ GROUP BY city ORDER BY city"),
    ("count score > 500 (scan)", "SELECT count(*) FROM _ WHERE score > 500"),
    ("ANY tags SATISFIES", "SELECT count(*) FROM _ WHERE ANY x IN tags SATISFIES x = 't3' END"),
    ("LIKE 'name4242%' (indexed)", "SELECT name FROM _ WHERE name LIKE 'name4242%' ORDER BY name"),
    ("active, ORDER BY score LIMIT 10", "SELECT name, score FROM _ WHERE active = true ORDER BY score DESC LIMIT 10"),
]

// MARK: The two sides

/// One side's `runs` executions of a question: per-run times, rows of the last run, checksum.
struct LiteCoreSample {
    var times: [Double] = []  // µs
    var rows = 0
    var checksum: Int64 = 0
    var median: Double { times.isEmpty ? 0 : times.sorted()[times.count / 2] }
}

/// Runs the timing program and returns its standard output; throws on a non-zero exit.
func runLiteCoreProgram(_ program: String, _ arguments: [String]) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: program)
    process.arguments = arguments
    let out = Pipe()
    process.standardOutput = out
    try process.run()
    let data = out.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
        throw CBLError(500, "\(program) \(arguments.joined(separator: " ")) exited \(process.terminationStatus)")
    }
    return String(decoding: data, as: UTF8.self)
}

/// LiteCore's side: one program run of `runs` executions of question `q` (1…7).
func liteCoreSample(program: String, bundle: URL, question q: Int, runs: Int) throws -> LiteCoreSample {
    let output = try runLiteCoreProgram(program, ["query", bundle.path, String(q), String(runs)])
    var sample = LiteCoreSample()
    for line in output.split(separator: "\n") {
        let fields = line.split(separator: " ")
        guard let key = fields.first else { continue }
        switch key {
        case "rows": sample.rows = Int(fields[1]) ?? -1
        case "checksum": sample.checksum = Int64(fields[1]) ?? -1
        case "times_us": sample.times = fields.dropFirst().compactMap { Double($0) }
        default: break
        }
    }
    guard sample.times.count == runs else { throw CBLError(500, "unexpected LiteCore output: \(output)") }
    return sample
}

/// Our side: one `Query` per question, compiled once; per run (parameters set, execute, every
/// column of every row read as an API value), timed like the program times its runs.
final class OurLiteCoreQuestions {
    let database: CouchbaseLiteSwift.Database
    let queries: [CouchbaseLiteSwift.Query]
    let count: Int

    init(bundle: URL) throws {
        let name = bundle.deletingPathExtension().lastPathComponent
        let db = try CouchbaseLiteSwift.Database(
            name: name, config: DatabaseConfiguration(directory: bundle.deletingLastPathComponent().path))
        database = db
        count = Int(db.count)
        queries = try liteCoreQuestions.map { try db.createQuery($0.n1ql) }
    }

    func sample(question q: Int, runs: Int) throws -> LiteCoreSample {
        let query = queries[q - 1]
        var sample = LiteCoreSample()
        sample.times.reserveCapacity(runs)
        for k in 0..<runs {
            let parameters = q == 1 ? Parameters().setString(LiteCorePeople.parameter(run: k, count: count), forName: "x") : nil
            let start = clock.now
            if let parameters { query.parameters = parameters }
            var rows = 0
            for row in try query.execute() {
                rows += 1
                for c in 0..<row.count { sample.checksum &+= Self.checksum(row.value(at: c)) }
            }
            sample.times.append(seconds(clock.now - start) * 1e6)
            sample.rows = rows
        }
        return sample
    }

    /// What the program adds per column: string length, integer value, boolean 0/1.
    static func checksum(_ value: Any?) -> Int64 {
        switch value {
        case let s as String: return Int64(s.utf8.count)
        case let b as Bool: return b ? 1 : 0
        case let i as Int: return Int64(i)
        case let i as Int64: return i
        case let d as Double: return Int64(d)
        default: return 0
        }
    }

    func close() throws { try database.close() }
}

// MARK: Files

/// Our converted file: the same documents through the 1.x API (one transaction), converted by
/// the upgrader, the three value indexes created through our 2.x API.
@MainActor
func buildConvertedPeople(count: Int) throws -> (bundle: URL, seconds: Double) {
    let legacyDir = fresh("lc-1x")
    let manager = try CBLManager(directory: legacyDir.path)
    let db = try manager.databaseNamed("people")
    let ids = (0..<count).map(LiteCorePeople.id)
    _ = try timedPutProperties(db, ids: ids, properties: (0..<count).map(LiteCorePeople.properties))
    try db.close()
    manager.close()
    let convertedDir = fresh("lc-converted")
    let bundle = convertedDir.appendingPathComponent("people.cblite2")
    let report = try DatabaseUpgrader(source: legacyDir.appendingPathComponent("people.cblite2"), destination: bundle).run()
    guard report.documentsConverted == count else {
        throw CBLError(500, "converted \(report.documentsConverted) of \(count) docs")
    }
    let converted = try CouchbaseLiteSwift.Database(name: "people", config: DatabaseConfiguration(directory: convertedDir.path))
    for property in ["name", "age", "city"] {
        try converted.createIndex(ValueIndexConfiguration([property]), name: property)
    }
    try converted.close()
    try? FileManager.default.removeItem(at: legacyDir)
    return (bundle, report.seconds)
}

/// Copies a LiteCore bundle (the whole `.cblite2` folder) so our API never writes to the original.
@MainActor
func copyLiteCoreBundle(_ source: URL) throws -> URL {
    let destination = fresh("lc-copy").appendingPathComponent(source.lastPathComponent)
    try FileManager.default.copyItem(at: source, to: destination)
    return destination
}

// MARK: The group

/// Geometric mean of positive ratios.
func geometricMean(_ values: [Double]) -> Double {
    values.isEmpty ? 0 : exp(values.map { log($0) }.reduce(0, +) / Double(values.count))
}

@MainActor
func runQueryVsLiteCoreBenchmarks(options: Options) throws -> (rows: [BenchRow], notes: [String]) {
    guard let program = ProcessInfo.processInfo.environment["LITECORE_BENCH"], !program.isEmpty else {
        print("  query-vs-litecore skipped: set LITECORE_BENCH=/path/to/the/LiteCore timing program")
        return ([], ["query-vs-litecore: skipped: set LITECORE_BENCH"])
    }
    var notes: [String] = []

    // 1. LiteCore's file (made now, or given), copied for our API; our converted file.
    let liteCoreBundle: URL
    if let given = ProcessInfo.processInfo.environment["LITECORE_DB"], !given.isEmpty {
        liteCoreBundle = URL(fileURLWithPath: given)
    } else {
        liteCoreBundle = fresh("lc-litecore").appendingPathComponent("people.cblite2")
        let created = try runLiteCoreProgram(program, ["create", liteCoreBundle.path, String(options.docs)])
        notes.append("query-vs-litecore: LiteCore " + created.trimmingCharacters(in: .whitespacesAndNewlines))
    }
    let ourCopy = try copyLiteCoreBundle(liteCoreBundle)
    let onLiteCoreFile = try OurLiteCoreQuestions(bundle: ourCopy)
    let docs = onLiteCoreFile.count
    let (convertedBundle, upgradeSeconds) = try buildConvertedPeople(count: docs)
    let onConverted = try OurLiteCoreQuestions(bundle: convertedBundle)
    defer { try? onLiteCoreFile.close(); try? onConverted.close() }
    notes.append(String(format: "query-vs-litecore: %d docs; LiteCore file %@; converted file from the 1.x API (upgrade %.2f s)",
                        docs, liteCoreBundle.path, upgradeSeconds))
    print("  query-vs-litecore: \(docs) docs, sample \(LiteCorePeople.properties(0))")

    if options.plans {
        let explained = try runLiteCoreProgram(program, ["explain", liteCoreBundle.path])
        notes.append("query-vs-litecore LiteCore explain:\n" + explained)
        for (i, q) in liteCoreQuestions.enumerated() {
            notes.append("query-vs-litecore ours (LiteCore file) \(i + 1) \(q.n1ql):\n" + (try onLiteCoreFile.queries[i].explain()))
        }
    }

    // 2. Paired rounds: per question, LiteCore, ours on its file and ours on the converted file back
    //    to back (order rotating per round), after one unrecorded warm-up round that checks results.
    let runs = options.quick ? [500, 200, 5, 5, 5, 5, 5] : [2_000, 500, 10, 10, 10, 10, 10]
    let rounds = options.quick ? 3 : 5
    var lcTimes = Array(repeating: [Double](), count: 7), ourTimes = lcTimes, convTimes = lcTimes
    var ourRatios = lcTimes, convRatios = lcTimes
    var rowCounts = Array(repeating: 0, count: 7)
    for round in -1..<rounds {
        for q in 1...7 {
            let n = round < 0 ? max(1, runs[q - 1] / 10) : runs[q - 1]
            var lc = LiteCoreSample(), ours = lc, conv = lc
            let sides: [() throws -> Void] = [
                { lc = try liteCoreSample(program: program, bundle: liteCoreBundle, question: q, runs: n) },
                { ours = try onLiteCoreFile.sample(question: q, runs: n) },
                { conv = try onConverted.sample(question: q, runs: n) },
            ]
            for s in 0..<3 { try sides[(s + max(round, 0)) % 3]() }
            guard lc.rows == ours.rows, lc.rows == conv.rows, lc.checksum == ours.checksum, lc.checksum == conv.checksum else {
                throw CBLError(500, "question \(q): LiteCore read \(lc.rows) rows (checksum \(lc.checksum)), ours "
                               + "\(ours.rows) (\(ours.checksum)) on its file, \(conv.rows) (\(conv.checksum)) on the converted file")
            }
            guard round >= 0 else { continue }
            rowCounts[q - 1] = lc.rows
            lcTimes[q - 1].append(lc.median); ourTimes[q - 1].append(ours.median); convTimes[q - 1].append(conv.median)
            ourRatios[q - 1].append(ours.median / lc.median); convRatios[q - 1].append(conv.median / lc.median)
        }
    }

    // 3. The table.
    print("")
    print("query-vs-litecore: µs per execution (median of runs, then of \(rounds) rounds); ratios = median of per-round ours/LiteCore")
    let header = pad("#", 2) + "  " + pad("question", 34, left: true) + pad("rows", 6) + pad("LiteCore µs", 13)
        + pad("ours µs (LC file)", 19) + pad("ratio", 9) + pad("ours µs (conv.)", 17) + pad("ratio", 9)
    print(header)
    print(String(repeating: "-", count: header.count))
    var rows: [BenchRow] = []
    var ours: [Double] = [], conv: [Double] = []
    for q in 0..<7 {
        let lcMedian = median(lcTimes[q]), ourRatio = median(ourRatios[q]), convRatio = median(convRatios[q])
        ours.append(ourRatio); conv.append(convRatio)
        print(pad(String(q + 1), 2) + "  " + pad(liteCoreQuestions[q].label, 34, left: true) + pad(String(rowCounts[q]), 6)
              + pad(fmt(lcMedian, 1), 13) + pad(fmt(median(ourTimes[q]), 1), 19) + pad(fmt(ourRatio, 2) + "x", 9)
              + pad(fmt(median(convTimes[q]), 1), 17) + pad(fmt(convRatio, 2) + "x", 9))
        let micro = { (t: Double) in Duration.nanoseconds(Int64(t * 1000)) * runs[q] }
        rows.append(BenchRow(name: "LC q\(q + 1), LiteCore's file", base: micro(lcMedian), api: micro(median(ourTimes[q])),
                             budget: 1.5, ops: runs[q], pairedRatio: ourRatio))
        rows.append(BenchRow(name: "LC q\(q + 1), converted file", base: micro(lcMedian), api: micro(median(convTimes[q])),
                             budget: 1.5, ops: runs[q], pairedRatio: convRatio))
        notes.append("query-vs-litecore q\(q + 1) \"\(liteCoreQuestions[q].n1ql)\": \(runs[q]) runs per side per round; "
                     + "ours/LiteCore per round (LiteCore's file): " + ourRatios[q].map { fmt($0, 2) }.joined(separator: " ")
                     + "; (converted): " + convRatios[q].map { fmt($0, 2) }.joined(separator: " "))
    }
    print(String(repeating: "-", count: header.count))
    print(pad("", 2) + "  " + pad("geometric mean", 34, left: true) + pad("", 6) + pad("", 13) + pad("", 19)
          + pad(fmt(geometricMean(ours), 2) + "x", 9) + pad("", 17) + pad(fmt(geometricMean(conv), 2) + "x", 9))
    print(pad("", 2) + "  " + pad("max", 34, left: true) + pad("", 6) + pad("", 13) + pad("", 19)
          + pad(fmt(ours.max() ?? 0, 2) + "x", 9) + pad("", 17) + pad(fmt(conv.max() ?? 0, 2) + "x", 9))
    print("goal (issue 20): geometric mean <= 1.0x and none above 1.5x on both files")
    notes.append(String(format: "query-vs-litecore: geometric mean ours/LiteCore %.2fx on LiteCore's file, %.2fx on the converted "
                        + "file; max %.2fx / %.2fx (goal: <= 1.0x, none above 1.5x)",
                        geometricMean(ours), geometricMean(conv), ours.max() ?? 0, conv.max() ?? 0))
    return (rows, notes)
}
