import CCollation
@testable import CouchbaseLite
import Foundation
import SQLiteKit
import XCTest
#if canImport(Glibc)
import Glibc
import CBLTestSupport
#endif

/// kill -9 durability: a child process (CBLCrashWriter) writes documents and ACKs every commit on
/// stdout; we SIGKILL it after a random delay and check that the database is intact and that every
/// ACKed revision (or a later one of the same document) is there.
final class DurabilityTests: XCTestCase {
    static let trials = 60
    static let timeBudget: Duration = .seconds(90)

    func testKillNineDurability() throws {
        let writer = try XCTUnwrap(CrashWriterLocator.find(),
                                   "CBLCrashWriter executable not found; build it with `swift build --build-tests`")
        print("DurabilityTests: writer \(writer.path) (test bundle \(Bundle(for: Self.self).bundleURL.path))")
        let root = FileManager.default.temporaryDirectory
            .appendingPathComponent("cbl-durability-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        let dbName = "crashdb"
        let dbFile = root.appendingPathComponent("\(dbName).cblite2/db.sqlite3").path

        var rng = SplitMix64(seed: 0xC0FFEE)
        /// The newest ACKed revision of every document, over all trials.
        var acked: [String: String] = [:]
        var totalAcks = 0
        var trialsWithAcks = 0
        var killedMidRun = 0
        let clock = ContinuousClock()
        let start = clock.now
        var trial = 0

        while trial < Self.trials && clock.now - start < Self.timeBudget {
            let nextIndex = try Self.nextDocumentIndex(dbFile: dbFile)
            let delayMS = Int.random(in: 20...300, using: &rng)
            let run = try Self.runAndKill(writer: writer, arguments: [root.path, dbName, String(nextIndex), "1000000"],
                                          delayMS: delayMS)
            XCTAssertEqual(run.signal, SIGKILL,
                           "trial \(trial): writer was not killed by us (exit \(run.status)); stderr: \(run.stderr)")
            if run.signal == SIGKILL { killedMidRun += 1 }
            let acks = run.acks
            totalAcks += acks.count
            if !acks.isEmpty { trialsWithAcks += 1 }
            for (docID, revID) in acks {
                if let previous = acked[docID] {
                    XCTAssertGreaterThan(Self.generation(revID), Self.generation(previous),
                                         "trial \(trial): \(docID) ACKed \(revID) after \(previous)")
                }
                acked[docID] = revID
            }

            // Only check once a database with its schema exists (a very early kill may precede it).
            if try Self.hasSchema(dbFile: dbFile) {
                try Self.checkRawFile(dbFile: dbFile, acked: acked, trial: trial)
                try Self.checkThroughAPI(root: root, dbName: dbName, acked: acked,
                                         thisTrial: acks.map(\.0), trial: trial, rng: &rng)
            } else {
                XCTAssertTrue(acks.isEmpty, "trial \(trial): ACKs but no database file")
            }
            trial += 1
        }
        let elapsed = clock.now - start
        print("DurabilityTests: \(trial) trials in \(elapsed), \(totalAcks) ACKs "
              + "(\(trialsWithAcks) trials with ACKs), \(acked.count) documents ACKed")
        XCTAssertGreaterThanOrEqual(trial, 50, "too few trials within the time budget")
        XCTAssertGreaterThan(trialsWithAcks, trial / 2, "most trials should get writes in before the kill")
    }

    // MARK: Running the writer

    struct WriterRun {
        var acks: [(String, String)]
        var status: Int32
        var signal: Int32?
        var stderr: String
    }

    /// Launches the writer, collects its stdout, SIGKILLs it after `delayMS` and reaps it.
    static func runAndKill(writer: URL, arguments: [String], delayMS: Int) throws -> WriterRun {
        let process = Process()
        process.executableURL = writer
        process.arguments = arguments
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice

        let pipes = PipeCollector(stdout: out, stderr: err)

        try process.run()
        let pid = process.processIdentifier
        usleep(useconds_t(delayMS * 1000))
        kill(pid, SIGKILL)
        process.waitUntilExit()
        // The child is gone, so its end of the pipes is closed: the readers hit EOF.
        if !pipes.wait(seconds: 20) {
            XCTFail("pipe readers did not see EOF after the writer died")
        }
        try? out.fileHandleForReading.close()
        try? err.fileHandleForReading.close()

        let text = String(decoding: pipes.stdout, as: UTF8.self)
        var acks: [(String, String)] = []
        // Only complete lines count: a line cut by the kill was never fully written (and is not an ACK).
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        if !text.hasSuffix("\n") { lines.removeLast() }
        for line in lines where line.hasPrefix("ACK ") {
            let parts = line.split(separator: " ")
            guard parts.count == 3 else { XCTFail("malformed ACK line '\(line)'"); continue }
            acks.append((String(parts[1]), String(parts[2])))
        }
        let reason = process.terminationReason
        return WriterRun(acks: acks, status: process.terminationStatus,
                         signal: reason == .uncaughtSignal ? process.terminationStatus : nil,
                         stderr: String(decoding: pipes.stderr, as: UTF8.self))
    }

    // MARK: Checks

    static func generation(_ revID: String) -> Int {
        Int(revID.prefix { $0 != "-" }) ?? 0
    }

    /// Opens db.sqlite3 with a raw connection (collations registered, as SQLite needs them for `revs`).
    static func openRaw(_ path: String) throws -> SQLiteConnection {
        let connection = try SQLiteConnection(path: path, mode: .init(readOnly: false, create: false))
        try connection.createCollation("JSON", cbl_sqlite_collate_json)
        try connection.createCollation("JSON_RAW", cbl_sqlite_collate_json_raw)
        try connection.createCollation("JSON_ASCII", cbl_sqlite_collate_json_ascii)
        try connection.createCollation("REVID", cbl_sqlite_collate_revid)
        return connection
    }

    /// True once db.sqlite3 exists and its schema creation committed.
    static func hasSchema(dbFile: String) throws -> Bool {
        guard FileManager.default.fileExists(atPath: dbFile) else { return false }
        let connection = try openRaw(dbFile)
        defer { connection.close() }
        XCTAssertEqual(try connection.integrityCheck(), "ok", "integrity_check failed")
        return try connection.tableExists("docs")
    }

    /// The index the next writer starts at: one past the highest `doc-<i>` committed. The writer
    /// creates indices in order, so committed ones form a prefix.
    static func nextDocumentIndex(dbFile: String) throws -> Int {
        guard try hasSchema(dbFile: dbFile) else { return 0 }
        let connection = try openRaw(dbFile)
        defer { connection.close() }
        let stmt = try connection.prepare("SELECT docid FROM docs")
        var maxIndex = -1
        var count = 0
        try stmt.forEachRow { row in
            if let id = row.string(0), id.hasPrefix("doc-"), let i = Int(id.dropFirst(4)) {
                maxIndex = max(maxIndex, i)
                count += 1
            }
        }
        XCTAssertEqual(count, maxIndex + 1, "committed documents are not a prefix doc-0…doc-\(maxIndex)")
        return maxIndex + 1
    }

    /// integrity_check, foreign keys, and the current revision of every ACKed document.
    static func checkRawFile(dbFile: String, acked: [String: String], trial: Int) throws {
        let connection = try openRaw(dbFile)
        defer { connection.close() }
        XCTAssertEqual(try connection.integrityCheck(), "ok", "trial \(trial): integrity_check failed")
        let fkProblems = try connection.prepare("PRAGMA foreign_key_check")
        var fkCount = 0
        try fkProblems.forEachRow { _ in fkCount += 1 }
        XCTAssertEqual(fkCount, 0, "trial \(trial): foreign_key_check found \(fkCount) problems")

        var current: [String: [String]] = [:]
        let stmt = try connection.prepare(
            "SELECT docid, revid FROM revs, docs WHERE revs.doc_id=docs.doc_id AND current=1 AND deleted=0")
        try stmt.forEachRow { row in
            current[row.string(0) ?? "", default: []].append(row.string(1) ?? "")
        }
        var missing = 0, stale = 0
        for (docID, revID) in acked {
            guard let leaves = current[docID] else {
                missing += 1
                if missing <= 5 { XCTFail("trial \(trial): ACKed \(docID) \(revID) is missing") }
                continue
            }
            XCTAssertEqual(leaves.count, 1, "trial \(trial): \(docID) has \(leaves.count) leaves: \(leaves)")
            let leaf = leaves[0]
            let ok = leaf == revID || generation(leaf) > generation(revID)
            if !ok {
                stale += 1
                if stale <= 5 { XCTFail("trial \(trial): \(docID) is at \(leaf), but \(revID) was ACKed") }
            }
        }
        XCTAssertEqual(missing + stale, 0, "trial \(trial): \(missing) missing, \(stale) stale of \(acked.count) ACKed docs")
    }

    /// Reopens through the public API: the documents ACKed in this trial plus a sample of older ones
    /// must have the right revision, and attachments must be readable with the expected content.
    static func checkThroughAPI(root: URL, dbName: String, acked: [String: String], thisTrial: [String],
                                trial: Int, rng: inout SplitMix64) throws {
        let manager = try CBLManager(directory: root.path)
        defer { manager.close() }
        let db = try manager.existingDatabaseNamed(dbName)
        var toCheck = Set(thisTrial)
        let all = Array(acked.keys)
        if !all.isEmpty {
            for _ in 0..<min(30, all.count) { toCheck.insert(all[Int.random(in: 0..<all.count, using: &rng)]) }
        }
        for docID in toCheck {
            let ackedRev = acked[docID]!
            guard let doc = db.existingDocument(withID: docID), let rev = doc.currentRevision,
                  let revID = rev.revisionID, let props = rev.properties else {
                XCTFail("trial \(trial): API cannot read ACKed \(docID)")
                continue
            }
            XCTAssertTrue(revID == ackedRev || generation(revID) > generation(ackedRev),
                          "trial \(trial): API sees \(docID) at \(revID), ACKed \(ackedRev)")
            let index = Int(docID.dropFirst(4))!
            XCTAssertEqual(props["i"] as? Int, index, "trial \(trial): \(docID) has wrong i")
            XCTAssertEqual((props["payload"] as? String)?.hasPrefix("\(index):"), true,
                           "trial \(trial): \(docID) has a bad payload")
            for attachment in rev.attachments ?? [] {
                guard let content = attachment.content else {
                    XCTFail("trial \(trial): attachment \(attachment.name) of \(docID) has no content")
                    continue
                }
                XCTAssertEqual(UInt64(content.count), attachment.length,
                               "trial \(trial): attachment \(attachment.name) of \(docID) has the wrong length")
                let expected = content.indices.allSatisfy { k in
                    content[k] == UInt8(truncatingIfNeeded: index &* 31 &+ (k - content.startIndex) &* 7)
                }
                XCTAssertTrue(expected, "trial \(trial): attachment \(attachment.name) of \(docID) has wrong bytes")
            }
        }
        try db.close()
    }
}
