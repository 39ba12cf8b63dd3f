import CBLTestSupport
import CouchbaseLiteSwift
import CouchbaseLiteUpgrade
import Foundation
import XCTest

/// kill -9 during the 1.x → 2.x upgrade: the destination is either absent or a complete, valid
/// 2.x database (never a half-written one in its place), and a rerun after the kill completes it.
extension CrashTrialTests {
    func testKillDuringUpgrade() throws {
        let started = ContinuousClock.now
        var rng = SplitMix64(seed: Self.seed(for: "upgrade"))
        let root = TempDirectory("cbl-crash-upgrade")
        var expected: [String: String] = [:]
        merge(try runToEnd(["seed", root.path, "legacy", "600", String(rng.next() >> 1)]).acks, into: &expected, trial: -1)
        let source = root.url.appendingPathComponent("legacy.cblite2")
        let out = root.url.appendingPathComponent("out", isDirectory: true)
        var tally = Tally()

        // Two uninterrupted runs: how long a whole one takes (the faster, as the first reads a cold source).
        var fullMS = Int.max
        for name in ["calibration1", "calibration2"] {
            let calibration = try runToEnd(["upgrade", source.path, out.appendingPathComponent("\(name).cblite2").path])
            tally.integrityFailures += checkUpgraded(out, name: name, expected: expected, trial: -1)
            fullMS = min(fullMS, Int(calibration.seconds * 1000))
        }
        for trial in 0..<Self.trials(for: "upgrade") {
            let name = "t\(trial)"
            let destination = out.appendingPathComponent("\(name).cblite2")
            let run = try runChild(["upgrade", source.path, destination.path],
                                   killAfterMS: Int.random(in: 0...(fullMS * 11 / 10), using: &rng))
            tally.trials += 1
            tally.killed += run.killed ? 1 : 0
            tally.finished += run.killed ? 0 : 1
            XCTAssertTrue(run.killed || run.status == 0, "trial \(trial): the upgrade failed: \(run.stderr)")
            if run.killed { tally.notes["killed after \(run.lastStep)", default: 0] += 1 }
            if FileManager.default.fileExists(atPath: destination.path) {
                // Present after the kill: it must be the whole database.
                tally.notes["complete at the kill", default: 0] += 1
            } else {
                tally.notes["absent at the kill, rerun", default: 0] += 1
                do {
                    try DatabaseUpgrader(source: source, destination: destination).run()
                } catch {
                    XCTFail("trial \(trial): the rerun after the kill failed: \(error)")
                    tally.integrityFailures += 1
                    continue
                }
            }
            tally.integrityFailures += checkUpgraded(out, name: name, expected: expected, trial: trial)
            // The killed run's work directory stays behind, hidden, beside the destination.
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: out.path)
                .filter { $0.hasPrefix(".\(name).cblite2.upgrading-") }
            tally.notes["work directories left by kills", default: 0] += leftovers.count
            for item in leftovers + ["\(name).cblite2"] { try? FileManager.default.removeItem(at: out.appendingPathComponent(item)) }
        }
        finish(tally, mode: "upgrade", started: started)
    }

    /// Opens `<out>/<name>.cblite2` through the 2.x API and compares it with the 1.x source's
    /// documents (revision, body, attachment bytes), then runs `cbl check`: 1 if anything differs.
    func checkUpgraded(_ out: URL, name: String, expected: [String: String], trial: Int) -> Int {
        let bundle = out.appendingPathComponent("\(name).cblite2")
        do {
            let db = try Database(name: name, config: DatabaseConfiguration(directory: out.path))
            defer { try? db.close() }
            var wrong: [String] = []
            if Int(db.count) != expected.count { wrong.append("\(db.count) documents, expected \(expected.count)") }
            for (docID, revID) in expected {
                guard let doc = db.document(withID: docID) else { wrong.append("\(docID) missing"); continue }
                let index = CrashShape.index(ofDocID: docID) ?? -1
                if doc.revisionID != revID { wrong.append("\(docID) at \(doc.revisionID ?? "nil"), source \(revID)") }
                if doc.int(forKey: "i") != index || doc.string(forKey: "payload")?.hasPrefix("\(index):") != true {
                    wrong.append("\(docID) has a bad body")
                }
                if let attachments = doc.dictionary(forKey: "_attachments") {
                    for key in attachments.keys {
                        guard let content = attachments.blob(forKey: key)?.content,
                              CrashShape.isAttachment(content, of: index) else {
                            wrong.append("\(docID)/\(key) has wrong content")
                            continue
                        }
                    }
                }
            }
            if !wrong.isEmpty {
                XCTFail("trial \(trial): the upgraded \(name) differs from the source: \(wrong.count) problems, e.g. \(wrong.prefix(5))")
                return 1
            }
        } catch {
            XCTFail("trial \(trial): cannot open the upgraded \(name): \(error)")
            return 1
        }
        return cblCheck(bundle, trial: trial)
    }
}
