// Upgrade benchmark (`--only upgrade`): converting the 1.x database the docs group wrote through the
// 1.x API into the 2.x format, against a plain read of the same source rows in the same run.

import CCollation
import CouchbaseLite
import CouchbaseLiteSwift
import CouchbaseLiteUpgrade
import Foundation
import SQLiteKit

/// Reads every revision row the converter reads (document ID, revision ID, JSON body), touching
/// the bytes, on the same kind of connection the converter uses (read-only, immutable).
func plainSourceRead(bundle: URL) throws -> (Duration, Int) {
    let path = SQLiteConnection.immutableURI(forPath: bundle.appendingPathComponent("db.sqlite3").path)
    let c = try SQLiteConnection(path: path, mode: .init(readOnly: true))
    try c.createCollation("REVID", cbl_sqlite_collate_revid)
    defer { c.close() }
    var bytes = 0
    let elapsed = try clock.measure {
        let stmt = try c.prepare("SELECT d.docid, r.revid, r.json FROM docs d JOIN revs r ON r.doc_id = d.doc_id")
        while try stmt.step() {
            for column in Int32(0)...2 {
                stmt.withBytes(column) { if let b = $0 { bytes &+= b.count &+ Int(b.last ?? 0) } }
            }
        }
    }
    return (elapsed, bytes)
}

/// Reads every document through the 1.x API (an all-docs query with prefetch, touching each
/// document's properties): what "reading the database" costs an app, for context.
func apiReadAll(managerDirectory: URL) throws -> (Duration, Int) {
    let manager = try CBLManager(directory: managerDirectory.path)
    defer { manager.close() }
    let db = try manager.existingDatabaseNamed("api")
    var keys = 0
    let elapsed = try clock.measure {
        let query = db.createAllDocumentsQuery()
        query.prefetch = true
        for row in try query.run() { keys &+= row.documentProperties?.count ?? 0 }
    }
    try db.close()
    return (elapsed, keys)
}

func timedUpgrade(bundle: URL, into dir: URL) throws -> (Duration, UpgradeReport) {
    let destination = dir.appendingPathComponent("converted-\(UUID().uuidString).cblite2")
    var report = UpgradeReport()
    settleDisk()
    let elapsed = try clock.measure {
        report = try DatabaseUpgrader(source: bundle, destination: destination).run()
    }
    try? FileManager.default.removeItem(at: destination)
    return (elapsed, report)
}

/// The converter's output rows (document ID, flags, revision ID, rev-tree body), read back from a
/// converted file so the write floor below inserts exactly the bytes the converter wrote.
struct ConvertedRows {
    var keys: [[UInt8]] = [], flags: [Int64] = [], versions: [[UInt8]] = [], bodies: [[UInt8]] = []
}

func convertedRows(of bundle: URL) throws -> ConvertedRows {
    let c = try SQLiteConnection(path: bundle.appendingPathComponent("db.sqlite3").path, mode: .init(readOnly: true))
    defer { c.close() }
    var rows = ConvertedRows()
    let stmt = try c.prepare("SELECT key, flags, version, body FROM kv_default ORDER BY sequence")
    while try stmt.step() {
        rows.keys.append(stmt.bytes(0) ?? [])
        rows.flags.append(stmt.int64(1))
        rows.versions.append(stmt.bytes(2) ?? [])
        rows.bodies.append(stmt.bytes(3) ?? [])
    }
    return rows
}

/// The floor under any converter: a new 2.x file (same bulk-load settings) receiving the
/// already-encoded rows through one prepared INSERT, committed and checkpointed. No reading, no
/// JSON, no Fleece, no rev trees.
func rawTwoXWrite(_ rows: ConvertedRows, into dir: URL) throws -> Duration {
    let destination = dir.appendingPathComponent("floor-\(UUID().uuidString).cblite2")
    defer { try? FileManager.default.removeItem(at: destination) }
    settleDisk()
    return try clock.measure {
        let file = try DataFile(creatingForBulkLoadAt: destination)
        for i in rows.keys.indices {
            try rows.keys[i].withUnsafeBytes { key in
                try rows.versions[i].withUnsafeBytes { version in
                    try rows.bodies[i].withUnsafeBytes { body in
                        _ = try file.insertRecord(docID: key, flags: DocumentFlags(rawValue: rows.flags[i]),
                                                  version: version, tree: body)
                    }
                }
            }
        }
        try file.finishBulkLoad()
        file.close()
    }
}

@MainActor
func runUpgradeBenchmarks(apiDir: URL, docs: Int, warmAPIDir: URL) throws -> (rows: [BenchRow], notes: [String]) {
    let bundle = apiDir.appendingPathComponent("api.cblite2")
    let out = fresh("upgrade")
    // Warm-up on the small database (code paths, allocator), then best of 3 alternating rounds.
    _ = try plainSourceRead(bundle: warmAPIDir.appendingPathComponent("api.cblite2"))
    _ = try timedUpgrade(bundle: warmAPIDir.appendingPathComponent("api.cblite2"), into: out)
    var report = UpgradeReport()
    var readBytes = 0
    let (readTime, convertTime) = try bestOf(3, {
        let (t, b) = try plainSourceRead(bundle: bundle)
        readBytes = b
        return t
    }, {
        let (t, r) = try timedUpgrade(bundle: bundle, into: out)
        report = r
        return t
    })
    precondition(report.documentsConverted == docs && readBytes > 0, "upgrade converted \(report.documentsConverted) of \(docs) docs")

    // What writing the converter's exact output costs by itself, against the same plain read.
    let kept = out.appendingPathComponent("kept.cblite2")
    _ = try DatabaseUpgrader(source: bundle, destination: kept).run()
    let converted = try convertedRows(of: kept)
    try? FileManager.default.removeItem(at: kept)
    var floorTime = Duration.seconds(Int64.max)
    for _ in 0..<3 { floorTime = min(floorTime, try rawTwoXWrite(converted, into: out)) }

    var apiReadTime = Duration.seconds(Int64.max), apiKeys = 0
    for _ in 0..<3 {
        let (t, k) = try apiReadAll(managerDirectory: apiDir)
        apiReadTime = min(apiReadTime, t)
        apiKeys = k
    }
    precondition(apiKeys >= docs, "the 1.x read-all saw \(apiKeys) keys")

    let (catchUpRow, catchUpNote) = try catchUpBenchmark(bundle: bundle, docs: docs, out: out)

    let rows = [
        BenchRow(name: "upgrade 1.x -> 2.x", base: readTime, api: convertTime, budget: 3.0, ops: docs),
        catchUpRow,
        BenchRow(name: "raw 2.x write (info)", base: readTime, api: floorTime, budget: nil, ops: docs),
        BenchRow(name: "vs 1.x read-all (info)", base: apiReadTime, api: convertTime, budget: nil, ops: docs),
    ]
    let notes = [
        String(format: "upgrade: %d docs converted at %.0f docs/s (%.2f s); plain read of the same rows %.3f s; "
               + "source %.1f MiB -> 2.x file %.1f MiB, %d shared keys",
               report.documentsConverted, Double(docs) / seconds(convertTime), seconds(convertTime), seconds(readTime),
               Double(report.sourceBytes) / 1_048_576, Double(report.destinationBytes) / 1_048_576, report.sharedKeys),
        String(format: "raw 2.x write: the converter's %d output rows (already encoded) inserted into a new 2.x file with "
               + "one prepared INSERT, committed and checkpointed: %.3f s = %.1fx the plain read, %.0f%% of the conversion",
               converted.keys.count, seconds(floorTime), seconds(floorTime) / seconds(readTime),
               100 * seconds(floorTime) / seconds(convertTime)),
        String(format: "1.x read-all: every document's properties through an all-docs query (prefetch) %.3f s; "
               + "the conversion takes %.2fx that", seconds(apiReadTime), seconds(convertTime) / seconds(apiReadTime)),
        catchUpNote,
    ]
    return (rows, notes)
}

/// Paired rounds of the catch-up benchmark.
let catchUpRounds = 5

/// `cbl upgrade --catch-up` after 1% of the documents changed through the 1.x API, against a full
/// conversion of the same (changed) source: medians of paired rounds, budget 5%. Each catch-up
/// round starts from a copy of the conversion made before the changes (the copy is not timed).
@MainActor
func catchUpBenchmark(bundle: URL, docs: Int, out: URL) throws -> (BenchRow, String) {
    let fm = FileManager.default
    let sourceDir = out.appendingPathComponent("catch-up-source", isDirectory: true)
    try? fm.removeItem(at: sourceDir)
    try fm.createDirectory(at: sourceDir, withIntermediateDirectories: true)
    let source = sourceDir.appendingPathComponent("api.cblite2", isDirectory: true)
    try fm.copyItem(at: bundle, to: source)
    let before = out.appendingPathComponent("catch-up-before.cblite2", isDirectory: true)
    try? fm.removeItem(at: before)
    try DatabaseUpgrader(source: source, destination: before).run()

    // 1% of the documents, spread over the file, updated through the 1.x API.
    let changed = max(1, docs / 100)
    let stride = max(1, docs / changed)
    let manager = try CBLManager(directory: sourceDir.path)
    let db = try manager.existingDatabaseNamed("api")
    let ids = try db.createAllDocumentsQuery().run().compactMap(\.documentID)
    var updated = 0
    _ = try db.inTransaction {
        for i in Swift.stride(from: 0, to: ids.count, by: stride) where updated < changed {
            guard let doc = db.document(withID: ids[i]), var properties = doc.properties else { continue }
            properties["catchUp"] = updated
            try doc.putProperties(properties)
            updated += 1
        }
        return true
    }
    try db.close()
    manager.close()

    var report = CatchUpReport()
    let paired = try pairedRounds(catchUpRounds, {
        try timedUpgrade(bundle: source, into: out).0
    }, {
        let destination = out.appendingPathComponent("catch-up-\(UUID().uuidString).cblite2", isDirectory: true)
        try fm.copyItem(at: before, to: destination)
        defer { try? fm.removeItem(at: destination) }
        settleDisk()
        return try clock.measure {
            report = try CatchUpUpgrader(source: source, destination: destination).run()
        }
    })
    precondition(report.conversion.documentsConverted == updated, "catch-up converted \(report.conversion.documentsConverted) of \(updated) changed docs")
    try? fm.removeItem(at: before)
    try? fm.removeItem(at: sourceDir)
    let row = BenchRow(name: "catch-up 1% vs full upgrade", base: paired.base, api: paired.api, budget: 0.05,
                       ops: updated, pairedRatio: paired.ratio, percent: true)
    let note = String(format: "catch-up: %d of %d docs changed; catch-up %.3f s vs full conversion %.3f s "
                      + "(medians of %d paired rounds; median ratio %.2f%%, best/best %.2f%%)",
                      updated, docs, seconds(paired.api), seconds(paired.base), catchUpRounds,
                      100 * paired.ratio, 100 * paired.bestRatio)
    return (row, note)
}
