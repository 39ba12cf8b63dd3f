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

func convertedRows(of bundle: URL, since sequence: UInt64 = 0) throws -> ConvertedRows {
    let c = try SQLiteConnection(path: bundle.appendingPathComponent("db.sqlite3").path, mode: .init(readOnly: true))
    defer { c.close() }
    var rows = ConvertedRows()
    let stmt = try c.prepare("SELECT key, flags, version, body FROM kv_default WHERE sequence > ? ORDER BY sequence")
    try stmt.bind(Int64(sequence), at: 1)
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

    let catchUp = try catchUpBenchmark(bundle: bundle, docs: docs, out: out)

    let rows = [
        BenchRow(name: "upgrade 1.x -> 2.x", base: readTime, api: convertTime, budget: 3.0, ops: docs),
    ] + catchUp.rows + [
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
    ] + catchUp.notes
    return (rows, notes)
}

/// Paired rounds of the catch-up benchmark.
let catchUpRounds = 5

/// `cbl upgrade --catch-up` after 1% of the documents changed through the 1.x API, against a full
/// conversion of the same (changed) source: medians of paired rounds, budget 5%. Two shapes of
/// change: 1% of the documents updated, spread evenly over the file (one in a hundred: every
/// changed row on its own page, the worst case for the destination's B-tree), and 1% new
/// documents. For the spread updates the write floor is measured in the same rounds: raw SQLite
/// replacing the same rows with the catch-up's own output (already converted) in one transaction
/// of the same WAL settings, committed and closed. Each round starts from a copy of the
/// conversion made before the changes (the copy is not timed).
@MainActor
func catchUpBenchmark(bundle: URL, docs: Int, out: URL) throws -> (rows: [BenchRow], notes: [String]) {
    let fm = FileManager.default
    let sourceDir = out.appendingPathComponent("catch-up-source", isDirectory: true)
    try? fm.removeItem(at: sourceDir)
    try fm.createDirectory(at: sourceDir, withIntermediateDirectories: true)
    defer { try? fm.removeItem(at: sourceDir) }
    let source = sourceDir.appendingPathComponent("api.cblite2", isDirectory: true)
    try fm.copyItem(at: bundle, to: source)
    let changed = max(1, docs / 100)

    // 1. 1% of the documents, spread over the file, updated through the 1.x API.
    let before = out.appendingPathComponent("catch-up-before.cblite2", isDirectory: true)
    try? fm.removeItem(at: before)
    defer { try? fm.removeItem(at: before) }
    try DatabaseUpgrader(source: source, destination: before).run()
    let updated = try changeSource(in: sourceDir) { db in
        let ids = try db.createAllDocumentsQuery().run().compactMap(\.documentID)
        let stride = max(1, ids.count / changed)
        var n = 0
        for i in Swift.stride(from: 0, to: ids.count, by: stride) where n < changed {
            guard let doc = db.document(withID: ids[i]), var properties = doc.properties else { continue }
            properties["catchUp"] = n
            try doc.putProperties(properties)
            n += 1
        }
        return n
    }
    let floorRows = try catchUpOutput(source: source, before: before, out: out)
    let spread = try measureCatchUp(source: source, before: before, out: out, expected: updated, floorRows: floorRows)

    // 2. 1% new documents.
    try? fm.removeItem(at: before)
    try DatabaseUpgrader(source: source, destination: before).run()
    let added = try changeSource(in: sourceDir) { db in
        for i in 0..<changed {
            try db.document(withID: "catch-up-new-\(i)")!.putProperties(
                ["type": "customer", "name": "New customer \(i)", "qty": i, "status": "new", "tags": ["new"]])
        }
        return changed
    }
    let newDocs = try measureCatchUp(source: source, before: before, out: out, expected: added, floorRows: nil)

    let rows = [
        BenchRow(name: "catch-up 1% spread vs full", base: spread.base, api: spread.api, budget: 0.05,
                 ops: updated, pairedRatio: spread.ratio, percent: true),
        BenchRow(name: "  its write floor (info)", base: spread.base, api: spread.floor, budget: nil,
                 ops: updated, pairedRatio: spread.floorRatio, percent: true),
        BenchRow(name: "catch-up 1% new vs full", base: newDocs.base, api: newDocs.api, budget: 0.05,
                 ops: added, pairedRatio: newDocs.ratio, percent: true),
    ]
    let notes = [
        String(format: "catch-up, %d of %d docs updated (one in %d, spread over the file): catch-up %.3f s vs full "
               + "conversion %.3f s, median ratio %.2f%%; raw SQLite writing the same %d converted rows (delete + "
               + "insert, one WAL transaction, commit, close) %.3f s = %.2f%% of the full conversion: the catch-up is "
               + "%.2fx its write floor (medians of %d rounds)",
               updated, docs, max(1, docs / changed), seconds(spread.api), seconds(spread.base), 100 * spread.ratio,
               floorRows.keys.count, seconds(spread.floor), 100 * spread.floorRatio, spread.overFloor, catchUpRounds),
        String(format: "catch-up, %d new docs on %d: catch-up %.3f s vs full conversion %.3f s, median ratio %.2f%%",
               added, docs, seconds(newDocs.api), seconds(newDocs.base), 100 * newDocs.ratio),
    ]
    return (rows, notes)
}

/// Opens the 1.x source in `directory`, runs `change` in one transaction, closes it.
@MainActor
private func changeSource(in directory: URL, _ change: (CBLDatabase) throws -> Int) throws -> Int {
    let manager = try CBLManager(directory: directory.path)
    defer { manager.close() }
    let db = try manager.existingDatabaseNamed("api")
    var count = 0
    _ = try db.inTransaction {
        count = try change(db)
        return true
    }
    try db.close()
    return count
}

/// The rows a catch-up of `source` writes into a copy of `before` (keys, flags, versions, trees).
private func catchUpOutput(source: URL, before: URL, out: URL) throws -> ConvertedRows {
    let copy = out.appendingPathComponent("catch-up-output.cblite2", isDirectory: true)
    try? FileManager.default.removeItem(at: copy)
    try FileManager.default.copyItem(at: before, to: copy)
    defer { try? FileManager.default.removeItem(at: copy) }
    let lastBefore = try DataFile(directory: before, create: false, readOnly: true)
    let since = try lastBefore.lastSequence()
    lastBefore.close()
    try CatchUpUpgrader(source: source, destination: copy).run()
    let all = try convertedRows(of: copy, since: since)
    return all
}

/// Medians of paired rounds: full conversion, catch-up and (with `floorRows`) the raw write floor,
/// in rotating order.
@MainActor
private func measureCatchUp(source: URL, before: URL, out: URL, expected: Int,
                           floorRows: ConvertedRows?) throws -> CatchUpRounds {
    let fm = FileManager.default
    func onCopy(_ body: (URL) throws -> Void) throws -> Duration {
        let destination = out.appendingPathComponent("catch-up-\(UUID().uuidString).cblite2", isDirectory: true)
        try fm.copyItem(at: before, to: destination)
        defer { try? fm.removeItem(at: destination) }
        settleDisk()
        return try clock.measure { try body(destination) }
    }
    var result = CatchUpRounds()
    var report = CatchUpReport()
    for round in 0..<catchUpRounds {
        var arms: [() throws -> Void] = [
            { result.baseTimes.append(try timedUpgrade(bundle: source, into: out).0) },
            { result.apiTimes.append(try onCopy { report = try CatchUpUpgrader(source: source, destination: $0).run() }) },
        ]
        if let floorRows {
            arms.append { result.floorTimes.append(try onCopy { try rawCatchUpWrite(floorRows, into: $0) }) }
        }
        for i in 0..<arms.count { try arms[(i + round) % arms.count]() }
        precondition(report.conversion.documentsConverted == expected,
                     "catch-up converted \(report.conversion.documentsConverted) of \(expected) changed docs")
        result.ratios.append(seconds(result.apiTimes[round]) / seconds(result.baseTimes[round]))
        if floorRows != nil {
            result.floorRatios.append(seconds(result.floorTimes[round]) / seconds(result.baseTimes[round]))
            result.overFloorRatios.append(seconds(result.apiTimes[round]) / seconds(result.floorTimes[round]))
        }
    }
    return result
}

private struct CatchUpRounds {
    var baseTimes: [Duration] = [], apiTimes: [Duration] = [], floorTimes: [Duration] = []
    var ratios: [Double] = [], floorRatios: [Double] = [], overFloorRatios: [Double] = []
    var base: Duration { median(baseTimes) }
    var api: Duration { median(apiTimes) }
    var floor: Duration { floorTimes.isEmpty ? .zero : median(floorTimes) }
    var ratio: Double { median(ratios) }
    var floorRatio: Double { floorRatios.isEmpty ? 0 : median(floorRatios) }
    var overFloor: Double { overFloorRatios.isEmpty ? 0 : median(overFloorRatios) }
}

/// The floor under a catch-up's writes: the destination opened as the catch-up opens it (WAL,
/// `synchronous=NORMAL`, LiteCore's connection settings), each row deleted and inserted again with
/// its converted bytes and a new sequence, `kvmeta.lastSeq` set, one commit, close (checkpoint).
/// No source, no conversion.
func rawCatchUpWrite(_ rows: ConvertedRows, into bundle: URL) throws {
    let c = try SQLiteConnection(path: bundle.appendingPathComponent("db.sqlite3").path, mode: .init(readOnly: false))
    defer { c.close() }
    try c.execute("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA cache_size=-10240; PRAGMA mmap_size=52428800")
    let last = try c.scalarInt("SELECT lastSeq FROM kvmeta WHERE name='default'") ?? 0
    try c.transaction {
        let delete = try c.prepare("DELETE FROM kv_default WHERE key=?")
        let insert = try c.prepare("INSERT INTO kv_default (key, sequence, flags, version, body) VALUES (?, ?, ?, ?, ?)")
        for i in rows.keys.indices {
            try rows.keys[i].withUnsafeBytes { key in
                try delete.bindTextNoCopy(key, at: 1)
                _ = try delete.step()
                delete.reset()
                try insert.bindTextNoCopy(key, at: 1)
                try insert.bind(last + Int64(i) + 1, at: 2)
                try insert.bind(rows.flags[i], at: 3)
                try rows.versions[i].withUnsafeBytes { try insert.bindBlobNoCopy($0, at: 4) }
                try rows.bodies[i].withUnsafeBytes { try insert.bindBlobNoCopy($0, at: 5) }
                _ = try insert.step()
                insert.reset()
            }
        }
        try c.run("UPDATE kvmeta SET lastSeq=? WHERE name='default'", [.integer(last + Int64(rows.keys.count))])
    }
}
