// Upgrade benchmark (`--only upgrade`): converting the 1.x database the docs group wrote through the
// 1.x API into the 2.x format, against a plain read of the same source rows in the same run.

import CJSONCollation
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

func timedUpgrade(bundle: URL, into dir: URL) throws -> (Duration, UpgradeReport) {
    let destination = dir.appendingPathComponent("converted-\(UUID().uuidString).cblite2")
    var report = UpgradeReport()
    let elapsed = try clock.measure {
        report = try DatabaseUpgrader(source: bundle, destination: destination).run()
    }
    try? FileManager.default.removeItem(at: destination)
    return (elapsed, report)
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
    let rows = [BenchRow(name: "upgrade 1.x -> 2.x", base: readTime, api: convertTime, budget: 3.0, ops: docs)]
    let notes = [
        String(format: "upgrade: %d docs converted at %.0f docs/s (%.2f s); plain read of the same rows %.3f s; "
               + "source %.1f MiB -> 2.x file %.1f MiB, %d shared keys",
               report.documentsConverted, Double(docs) / seconds(convertTime), seconds(convertTime), seconds(readTime),
               Double(report.sourceBytes) / 1_048_576, Double(report.destinationBytes) / 1_048_576, report.sharedKeys),
    ]
    return (rows, notes)
}
