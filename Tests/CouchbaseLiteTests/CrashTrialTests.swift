import CBLTestSupport
@testable import CouchbaseLite
import CouchbaseLiteListener
import Foundation
import SQLiteKit
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// kill -9 at random points of five kinds of work (issue 21), each in a CBLCrashWriter child the test
/// SIGKILLs after a seeded random delay: `insert` (single saves and transactions), `index` (a view
/// index rebuilt, with or without writes), `pull` (from a real listener on 127.0.0.1), `compact`
/// (updates with new attachments, then compaction) and `upgrade` (the 1.x → 2.x converter).
/// After every kill: the database opens, `PRAGMA integrity_check` is ok, `cbl check` finds no
/// missing blob, and every ACKed revision is there with its body and attachments; the view
/// answers exactly the documents, the pull resumes to the server's exact revisions, and the
/// upgrade output is either absent or complete (a rerun completes it).
///
/// `CBL_CRASH_TRIALS` sets the number of trials over all modes (default 25, a few per mode, to
/// stay inside the default `swift test` time; `.ci/run` sets 50); `CBL_CRASH_SEED` replays a run.
final class CrashTrialTests: XCTestCase {
    static let modes = ["insert", "index", "pull", "compact", "upgrade"]

    static var totalTrials: Int {
        Int(ProcessInfo.processInfo.environment["CBL_CRASH_TRIALS"] ?? "") ?? 25
    }

    /// The share of `CBL_CRASH_TRIALS` a mode runs (spread evenly, at least one).
    static func trials(for mode: String) -> Int {
        let index = modes.firstIndex(of: mode)!
        return max(1, totalTrials / modes.count + (index < totalTrials % modes.count ? 1 : 0))
    }

    /// `CBL_CRASH_SEED`, or a fresh seed (printed with the results, so a failing run can be replayed).
    static let baseSeed: UInt64 = UInt64(ProcessInfo.processInfo.environment["CBL_CRASH_SEED"] ?? "")
        ?? UInt64.random(in: 1...UInt64(UInt32.max))

    static func seed(for mode: String) -> UInt64 {
        baseSeed &+ UInt64(modes.firstIndex(of: mode)! + 1) &* 0x9E37_79B9_7F4A_7C15
    }

    /// What a mode's trials saw.
    struct Tally {
        var trials = 0
        var acks = 0
        var killed = 0
        var finished = 0
        var lost = 0
        var integrityFailures = 0
        /// Mode-specific counts: where the kills landed, resumes, reruns.
        var notes: [String: Int] = [:]

        mutating func add(_ verdict: Verdict) {
            lost += verdict.lost
            integrityFailures += verdict.integrity
        }

        func summary(_ mode: String, seed: UInt64, elapsed: Duration) -> String {
            let extra = notes.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
            return "CrashTrialTests[\(mode)]: CBL_CRASH_SEED=\(seed), \(trials) trials (\(killed) killed, \(finished) finished first), "
                + "\(acks) ACKs, \(lost) lost, \(integrityFailures) integrity failures, \(String(format: "%.1f", Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)) s"
                + (extra.isEmpty ? "" : "; \(extra)")
        }
    }

    struct Verdict {
        var lost = 0
        var integrity = 0
    }

    var writer: URL!

    override func setUpWithError() throws {
        writer = try XCTUnwrap(CrashWriterLocator.find(),
                               "CBLCrashWriter executable not found; build it with `swift build --build-tests`")
    }

    // MARK: Running the child

    struct ChildRun {
        var lines: [String]
        var acks: [(String, String)]
        var killed: Bool
        var status: Int32
        var stderr: String
        var seconds: Double

        /// The first word of the last line printed before the end ("ACK", "INDEXED", …).
        var lastStep: String { lines.last.map { line in String(line.prefix { $0 != " " }) } ?? "(nothing)" }
    }

    /// Runs the crash writer with `arguments`, SIGKILLs it after `killAfterMS` (unless it ended
    /// first) or, without one, waits up to `timeout` seconds for it to end.
    func runChild(_ arguments: [String], killAfterMS: Int?, timeout: TimeInterval = 180) throws -> ChildRun {
        let process = Process()
        process.executableURL = writer
        process.arguments = arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        let pipes = PipeCollector(stdout: out, stderr: err)
        let started = Date()
        try process.run()
        let deadline = started.addingTimeInterval(killAfterMS.map { Double($0) / 1000 } ?? timeout)
        while process.isRunning && Date() < deadline { usleep(500) }
        var killed = false
        if process.isRunning {
            killed = kill(process.processIdentifier, SIGKILL) == 0
            if killAfterMS == nil { XCTFail("\(arguments.prefix(2)) did not finish within \(timeout) s") }
        }
        process.waitUntilExit()
        let seconds = Date().timeIntervalSince(started)
        if !pipes.wait(seconds: 20) { XCTFail("pipe readers did not see EOF") }
        try? out.fileHandleForReading.close()
        try? err.fileHandleForReading.close()

        let text = String(decoding: pipes.stdout, as: UTF8.self)
        // Only complete lines count: a line cut by the kill was never fully written.
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        // (After a final newline the last element is empty; without one it is the cut line.)
        if !lines.isEmpty { lines.removeLast() }
        var acks: [(String, String)] = []
        for line in lines where line.hasPrefix("ACK ") {
            let parts = line.split(separator: " ")
            guard parts.count == 3 else { XCTFail("malformed ACK line '\(line)'"); continue }
            acks.append((String(parts[1]), String(parts[2])))
        }
        killed = killed && process.terminationReason == .uncaughtSignal
        return ChildRun(lines: lines, acks: acks, killed: killed, status: process.terminationStatus,
                        stderr: String(decoding: pipes.stderr, as: UTF8.self), seconds: seconds)
    }

    /// Runs a mode to its end (exit 0), failing the test otherwise.
    func runToEnd(_ arguments: [String]) throws -> ChildRun {
        let run = try runChild(arguments, killAfterMS: nil)
        XCTAssertFalse(run.killed)
        XCTAssertEqual(run.status, 0, "\(arguments.prefix(2)) failed: \(run.stderr)")
        return run
    }

    /// Adds a trial's ACKs to the newest ACKed revision of every document; a document is never
    /// ACKed at an older generation than before.
    func merge(_ acks: [(String, String)], into acked: inout [String: String], trial: Int) {
        for (docID, revID) in acks {
            if let previous = acked[docID] {
                XCTAssertGreaterThan(Self.generation(revID), Self.generation(previous),
                                     "trial \(trial): \(docID) ACKed \(revID) after \(previous)")
            }
            acked[docID] = revID
        }
    }

    static func generation(_ revID: String) -> Int { Int(revID.prefix { $0 != "-" }) ?? 0 }

    // MARK: Checks

    /// The checks after every kill of a 1.x database: integrity, `cbl check`, and every ACKed
    /// revision (raw rows for all of them; through the API with body and attachments for this
    /// trial's, a sample of the others, or all of them when `everyDocument`).
    func verify(directory: URL, dbName: String, acked: [String: String], recent: [String], everyDocument: Bool,
                trial: Int, rng: inout SplitMix64) throws -> Verdict {
        var verdict = Verdict()
        let bundle = directory.appendingPathComponent("\(dbName).cblite2")
        let dbFile = bundle.appendingPathComponent("db.sqlite3").path
        guard FileManager.default.fileExists(atPath: dbFile) else {
            XCTAssertTrue(acked.isEmpty, "trial \(trial): \(acked.count) ACKs but no database file")
            verdict.lost = acked.count
            return verdict
        }
        do {
            let connection = try rawConnection(dbFile)
            defer { connection.close() }
            let integrity = try connection.integrityCheck()
            if integrity != "ok" {
                verdict.integrity += 1
                XCTFail("trial \(trial): integrity_check: \(integrity)")
            }
            var fkProblems = 0
            try connection.prepare("PRAGMA foreign_key_check").forEachRow { _ in fkProblems += 1 }
            if fkProblems > 0 {
                verdict.integrity += 1
                XCTFail("trial \(trial): foreign_key_check found \(fkProblems) problems")
            }
            guard try connection.tableExists("docs") else {
                XCTAssertTrue(acked.isEmpty, "trial \(trial): ACKs but no schema")
                verdict.lost = acked.count
                return verdict
            }
            var current: [String: [String]] = [:]
            try connection.prepare(
                "SELECT docid, revid FROM revs, docs WHERE revs.doc_id=docs.doc_id AND current=1 AND deleted=0"
            ).forEachRow { row in current[row.string(0) ?? "", default: []].append(row.string(1) ?? "") }
            for (docID, revID) in acked {
                let leaves = current[docID] ?? []
                let ok = leaves.count == 1 && (leaves[0] == revID || Self.generation(leaves[0]) > Self.generation(revID))
                if !ok {
                    verdict.lost += 1
                    if verdict.lost <= 5 { XCTFail("trial \(trial): ACKed \(docID) \(revID), found leaves \(leaves)") }
                }
            }
        }
        verdict.integrity += cblCheck(bundle, trial: trial)

        let manager = try CBLManager(directory: directory.path)
        defer { manager.close() }
        let db = try manager.existingDatabaseNamed(dbName)
        var toCheck = Set(recent)
        let all = Array(acked.keys)
        if everyDocument {
            toCheck = Set(all)
        } else if !all.isEmpty {
            for _ in 0..<min(40, all.count) { toCheck.insert(all[Int.random(in: 0..<all.count, using: &rng)]) }
        }
        for docID in toCheck {
            guard let ackedRev = acked[docID] else { continue }
            if let problem = Self.problem(with: db, docID: docID, ackedRev: ackedRev) {
                verdict.lost += 1
                if verdict.lost <= 5 { XCTFail("trial \(trial): \(problem)") }
            }
        }
        try db.close()
        return verdict
    }

    /// What is wrong with an ACKed document read through the API (nil: nothing).
    static func problem(with db: CBLDatabase, docID: String, ackedRev: String) -> String? {
        guard let doc = db.existingDocument(withID: docID), let rev = doc.currentRevision,
              let revID = rev.revisionID, let props = rev.properties else { return "cannot read ACKed \(docID)" }
        guard revID == ackedRev || generation(revID) > generation(ackedRev) else {
            return "\(docID) is at \(revID), ACKed \(ackedRev)"
        }
        guard let index = CrashShape.index(ofDocID: docID), props["i"] as? Int == index,
              (props["payload"] as? String)?.hasPrefix("\(index):") == true else { return "\(docID) has a bad body \(props)" }
        for attachment in rev.attachments ?? [] {
            guard let content = attachment.content else { return "attachment \(attachment.name) of \(docID) has no content" }
            guard UInt64(content.count) == attachment.length, CrashShape.isAttachment(content, of: index) else {
                return "attachment \(attachment.name) of \(docID) has wrong content (\(content.count) bytes)"
            }
        }
        return nil
    }

    /// `cbl check --json` (when the `cbl` tool was built): 1 if it finds damage (bad integrity or
    /// schema, missing blobs, size mismatches). Orphaned blobs are not damage: a kill between a
    /// blob's write and its revision's commit, or before compaction's clean-up, leaves them.
    func cblCheck(_ bundle: URL, trial: Int) -> Int {
        guard let output = try? BuiltExecutable.run("cbl", ["check", bundle.path, "--json"],
                                                     scratch: bundle.deletingLastPathComponent(), timeout: 60) else { return 0 }
        guard let report = try? JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [String: Any] else {
            XCTFail("trial \(trial): cbl check printed no report (exit \(output.status)): \(output.stdout) \(output.stderr)")
            return 1
        }
        let damaged = report["integrity"] as? String != "ok" || report["schemaOK"] as? Bool != true
            || (report["missingBlobs"] as? [Any])?.isEmpty != true
            || ((report["sizeMismatches"] as? [Any])?.isEmpty ?? true) != true
        if damaged { XCTFail("trial \(trial): cbl check: \(output.stdout)") }
        return damaged ? 1 : 0
    }

    func finish(_ tally: Tally, mode: String, started: ContinuousClock.Instant) {
        print(tally.summary(mode, seed: Self.baseSeed, elapsed: ContinuousClock.now - started)
              + (BuiltExecutable.find("cbl") == nil ? " (cbl not built: no cbl check)" : " (with cbl check)"))
        XCTAssertEqual(tally.lost, 0, "acknowledged writes lost")
        XCTAssertEqual(tally.integrityFailures, 0, "integrity failures")
        XCTAssertEqual(tally.trials, Self.trials(for: mode))
    }

    // MARK: insert

    func testKillDuringInserts() throws {
        let started = ContinuousClock.now
        var rng = SplitMix64(seed: Self.seed(for: "insert"))
        let root = TempDirectory("cbl-crash-insert")
        let dbFile = root.url.appendingPathComponent("crashdb.cblite2/db.sqlite3").path
        var acked: [String: String] = [:]
        var tally = Tally()
        for trial in 0..<Self.trials(for: "insert") {
            let next = try DurabilityTests.nextDocumentIndex(dbFile: dbFile)
            let run = try runChild([root.path, "crashdb", String(next), "1000000"],
                                   killAfterMS: Int.random(in: 20...400, using: &rng))
            XCTAssertTrue(run.killed, "trial \(trial): the writer ended by itself: \(run.stderr)")
            tally.trials += 1
            tally.killed += run.killed ? 1 : 0
            tally.acks += run.acks.count
            merge(run.acks, into: &acked, trial: trial)
            tally.add(try verify(directory: root.url, dbName: "crashdb", acked: acked, recent: run.acks.map(\.0),
                                 everyDocument: false, trial: trial, rng: &rng))
        }
        tally.notes["documents"] = acked.count
        finish(tally, mode: "insert", started: started)
    }

    // MARK: index

    func testKillDuringViewIndexing() throws {
        let started = ContinuousClock.now
        var rng = SplitMix64(seed: Self.seed(for: "index"))
        let root = TempDirectory("cbl-crash-index")
        var acked: [String: String] = [:]
        merge(try runToEnd(["seed", root.path, "indexdb", "1200", String(rng.next() >> 1)]).acks, into: &acked, trial: -1)
        var tally = Tally()
        for trial in 0..<Self.trials(for: "index") {
            let insert = trial % 2 == 1
            let run = try runChild(["index", root.path, "indexdb", insert ? "1" : "0", String(rng.next() >> 1)],
                                   killAfterMS: Int.random(in: 40...900, using: &rng))
            XCTAssertTrue(run.killed, "trial \(trial): the indexer ended by itself: \(run.stderr)")
            tally.trials += 1
            tally.killed += run.killed ? 1 : 0
            tally.acks += run.acks.count
            tally.notes["killed after \(run.lastStep)", default: 0] += 1
            merge(run.acks, into: &acked, trial: trial)
            var verdict = try verify(directory: root.url, dbName: "indexdb", acked: acked, recent: run.acks.map(\.0),
                                     everyDocument: false, trial: trial, rng: &rng)
            verdict.integrity += try checkView(root.url, dbName: "indexdb", trial: trial)
            tally.add(verdict)
        }
        finish(tally, mode: "index", started: started)
    }

    /// Queries the view (updating its index from what the killed process left) and compares
    /// every row with the documents: 1 if they differ.
    func checkView(_ directory: URL, dbName: String, trial: Int) throws -> Int {
        let manager = try CBLManager(directory: directory.path)
        defer { manager.close() }
        let db = try manager.existingDatabaseNamed(dbName)
        defer { try? db.close() }
        let view = db.viewNamed(CrashShape.viewName)
        _ = view.setMapBlock({ doc, emit in CrashShape.map(doc, emit) }, version: CrashShape.viewVersion)
        var rows: [String: [Int]] = [:]
        for row in try view.createQuery().run().allObjects {
            rows[row.documentID ?? "?", default: []].append(contentsOf: [row.key as? Int ?? -1, row.value as? Int ?? -1])
        }
        var expected: [String: [Int]] = [:]
        for row in try db.createAllDocumentsQuery().run().allObjects {
            guard let id = row.documentID, let props = db.existingDocument(withID: id)?.properties,
                  let i = props["i"] as? Int else { continue }
            expected[id] = [i, props["updates"] as? Int ?? 0]
        }
        guard rows != expected else { return 0 }
        let wrong = Set(rows.keys).union(expected.keys).filter { rows[$0] != expected[$0] }.sorted()
        XCTFail("trial \(trial): the view has \(rows.count) documents' rows, the database \(expected.count) documents; "
                + "\(wrong.count) differ, e.g. " + wrong.prefix(5).map { "\($0): \(rows[$0] ?? []) vs \(expected[$0] ?? [])" }
                    .joined(separator: ", "))
        return 1
    }

    // MARK: compact

    func testKillDuringCompaction() throws {
        let started = ContinuousClock.now
        var rng = SplitMix64(seed: Self.seed(for: "compact"))
        let root = TempDirectory("cbl-crash-compact")
        var acked: [String: String] = [:]
        merge(try runToEnd(["seed", root.path, "compactdb", "800", String(rng.next() >> 1)]).acks, into: &acked, trial: -1)
        var tally = Tally()
        for trial in 0..<Self.trials(for: "compact") {
            let run = try runChild(["compact", root.path, "compactdb", String(rng.next() >> 1)],
                                   killAfterMS: Int.random(in: 40...1200, using: &rng))
            XCTAssertTrue(run.killed, "trial \(trial): the compactor ended by itself: \(run.stderr)")
            tally.trials += 1
            tally.killed += run.killed ? 1 : 0
            tally.acks += run.acks.count
            tally.notes["killed after \(run.lastStep)", default: 0] += 1
            tally.notes["compactions completed", default: 0] += run.lines.filter { $0 == "COMPACTED" }.count
            merge(run.acks, into: &acked, trial: trial)
            tally.add(try verify(directory: root.url, dbName: "compactdb", acked: acked, recent: run.acks.map(\.0),
                                 everyDocument: true, trial: trial, rng: &rng))
        }
        finish(tally, mode: "compact", started: started)
    }

    // MARK: pull

    func testKillDuringPull() throws {
        let started = ContinuousClock.now
        var rng = SplitMix64(seed: Self.seed(for: "pull"))
        let serverRoot = TempDirectory("cbl-crash-server")
        let clientRoot = TempDirectory("cbl-crash-client")
        var expected: [String: String] = [:]
        merge(try runToEnd(["seed", serverRoot.path, "src", "600", String(rng.next() >> 1)]).acks, into: &expected, trial: -1)
        let serverManager = try CBLManager(directory: serverRoot.path)
        defer { serverManager.close() }
        let listener = CBLListener(manager: serverManager, port: 0)
        listener.bindAddress = "127.0.0.1"
        try listener.start()
        defer { listener.stop() }
        let url = URL(string: "http://127.0.0.1:\(listener.port)/src")!

        // One uninterrupted pull: how long a whole one takes (the kills fall within it).
        let calibration = try runToEnd(["pullack", clientRoot.path, "calibration", url.absoluteString, "50"])
        var tally = Tally()
        let baseline = try checkPulled(clientRoot.url, dbName: "calibration", expected: expected, url: url, resume: false,
                                       trial: -1, tally: &tally)
        tally.add(baseline)
        let fullMS = Int(calibration.seconds * 1000)
        for trial in 0..<Self.trials(for: "pull") {
            let name = "pull\(trial)"
            let run = try runChild(["pullack", clientRoot.path, name, url.absoluteString, "50"],
                                   killAfterMS: Int.random(in: (fullMS / 20)...(fullMS * 11 / 10), using: &rng))
            tally.trials += 1
            tally.killed += run.killed ? 1 : 0
            tally.finished += run.killed ? 0 : 1
            XCTAssertTrue(run.killed || run.status == 0, "trial \(trial): the pull failed: \(run.stderr)")
            tally.acks += run.acks.count
            var acked: [String: String] = [:]
            merge(run.acks, into: &acked, trial: trial)
            var verdict = try verify(directory: clientRoot.url, dbName: name, acked: acked, recent: [],
                                     everyDocument: false, trial: trial, rng: &rng)
            let resumed = try checkPulled(clientRoot.url, dbName: name, expected: expected, url: url,
                                          resume: true, trial: trial, tally: &tally)
            verdict.integrity += resumed.integrity
            verdict.lost += resumed.lost
            tally.add(verdict)
        }
        finish(tally, mode: "pull", started: started)
    }

    /// Resumes (`resume`) the pull into `dbName` in this process, then compares it with the
    /// server: the same documents at the same revisions, one leaf each, no revision stored twice.
    /// Deletes the database afterwards.
    func checkPulled(_ directory: URL, dbName: String, expected: [String: String], url: URL, resume: Bool,
                     trial: Int, tally: inout Tally) throws -> Verdict {
        var verdict = Verdict()
        let manager = try CBLManager(directory: directory.path)
        defer { manager.close() }
        let db = try manager.databaseNamed(dbName)
        if resume {
            let before = Int(db.documentCount)
            let pull = db.createPullReplication(url)
            var tuning = pull.tuning
            tuning.changesPageSize = 50
            tuning.checkpointInterval = .zero
            pull.tuning = tuning
            pull.start()
            let deadline = Date().addingTimeInterval(90)
            while pull.running && Date() < deadline { usleep(5_000) }
            XCTAssertFalse(pull.running, "trial \(trial): the resumed pull did not finish")
            XCTAssertNil(pull.lastError, "trial \(trial): the resumed pull failed")
            if before > 0 && Int(pull.changesCount) < expected.count { tally.notes["resumed from a checkpoint", default: 0] += 1 }
        }
        var wrong = 0
        for (docID, revID) in expected {
            let doc = db.existingDocument(withID: docID)
            let leaves = (try? doc?.getLeafRevisions().count) ?? 0
            if doc?.currentRevisionID != revID || leaves != 1 {
                wrong += 1
                if wrong <= 5 { XCTFail("trial \(trial): pulled \(docID) at \(doc?.currentRevisionID ?? "nothing") with \(leaves) leaves, server has \(revID)") }
            }
        }
        if Int(db.documentCount) != expected.count {
            wrong += 1
            XCTFail("trial \(trial): \(db.documentCount) documents pulled, the server has \(expected.count)")
        }
        verdict.lost += wrong
        let dbFile = directory.appendingPathComponent("\(dbName).cblite2/db.sqlite3").path
        let connection = try rawConnection(dbFile)
        var duplicates = 0
        try connection.prepare("SELECT doc_id, revid FROM revs GROUP BY doc_id, revid HAVING COUNT(*) > 1").forEachRow { _ in duplicates += 1 }
        connection.close()
        if duplicates > 0 {
            verdict.integrity += 1
            XCTFail("trial \(trial): \(duplicates) revisions stored twice")
        }
        try db.deleteDatabase()
        return verdict
    }
}
