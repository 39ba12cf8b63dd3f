import CBLTestSupport
import Foundation
import SQLiteKit
import XCTest
@testable import CouchbaseLite
@testable import CouchbaseLiteSwift
@testable import CouchbaseLiteUpgrade

/// `cbl upgrade --catch-up` (issue 35): a conversion brought up to date from the source's
/// sequences equals a fresh full conversion of the source as it is now.
final class CatchUpUpgradeTests: XCTestCase {
    private let attachment = Data("catch-up attachment bytes".utf8)

    /// A 1.x source with plain documents, an attachment and a conflict.
    private func makeSource(in scratch: Scratch) throws -> (CBLManager, CBLDatabase, URL) {
        let manager = try CBLManager(directory: scratch.path("v1").path)
        let db = try manager.databaseNamed("app")
        for i in 1...20 {
            try db.document(withID: "doc-\(i)")!.putProperties(["n": i, "name": "Doc \(i)"])
        }
        let rev = db.document(withID: "attached")!.newRevision()
        rev["title"] = "with attachment"
        rev.setAttachmentNamed("a.txt", withContentType: "text/plain", content: attachment)
        try rev.save()
        return (manager, db, scratch.path("v1/app.cblite2"))
    }

    /// Interleaved writes on the source after the first conversion: updates, new documents,
    /// deletions, a conflict made with saveAllowingConflict, one forced in new_edits=false
    /// style, a new attachment, then a compaction (old revisions' bodies gone).
    private func changeSource(_ db: CBLDatabase, round: Int) throws {
        for i in stride(from: round, through: 20, by: 4) {
            let doc = db.document(withID: "doc-\(i)")!
            guard let revID = doc.currentRevisionID, !doc.isDeleted else { continue }
            try doc.putProperties(["_rev": revID, "n": i * 100 + round, "round": round])
        }
        try db.document(withID: "new-\(round)")!.putProperties(["fresh": round])
        try db.document(withID: "doc-\(round + 10)")!.delete()
        let conflicted = db.document(withID: "doc-\(round + 1)")!
        let base = conflicted.currentRevision!
        try conflicted.putProperties(["_rev": base.revisionID!, "side": "main \(round)"])
        let branch = base.createRevision()
        branch["side"] = "branch \(round)"
        try branch.saveAllowingConflict()
        // A peer's revision inserted with its own history (new_edits=false): a second root, a conflict.
        try db.forceInsert(docID: "doc-\(round + 5)", history: ["2-ffff000\(round)", "1-eeee000\(round)"],
                           properties: ["peer": round])
        let rev = db.document(withID: "attached-\(round)")!.newRevision()
        rev.setAttachmentNamed("b.txt", withContentType: "text/plain", content: Data("round \(round)".utf8))
        try rev.save()
        // A purge: no tombstone, no new sequence; gone from the source as if never written.
        try db.document(withID: "doc-\(round + 16)")!.purgeDocument()
        try db.compact()
    }

    func testCatchUpAfterWritesDeletesConflictsAndCompactionEqualsAFullConversion() throws {
        let scratch = Scratch()
        let (manager, db, bundle) = try makeSource(in: scratch)
        let destination = scratch.path("out/app.cblite2")
        try DatabaseUpgrader(source: bundle, destination: destination).run()

        try changeSource(db, round: 1)
        var report = try CatchUpUpgrader(source: bundle, destination: destination).run()
        XCTAssertGreaterThan(report.toSequence, report.fromSequence)
        XCTAssertEqual(report.conversion.conflictsDropped.count, 2, report.summary)
        try changeSource(db, round: 2)
        try changeSource(db, round: 3)
        report = try CatchUpUpgrader(source: bundle, destination: destination).run()
        XCTAssertEqual(report.batches, 1)
        XCTAssertEqual(report.documentsPurged, 2, report.summary)
        // Nothing new: nothing done.
        let idle = try CatchUpUpgrader(source: bundle, destination: destination).run()
        XCTAssertEqual(idle.fromSequence, idle.toSequence)
        XCTAssertEqual(idle.batches, 0)
        XCTAssertEqual(idle.documentsPurged, 0)
        // Only a purge (the sequence does not move): still carried.
        try db.document(withID: "doc-20")!.purgeDocument()
        let purgeOnly = try CatchUpUpgrader(source: bundle, destination: destination).run()
        XCTAssertEqual(purgeOnly.fromSequence, purgeOnly.toSequence)
        XCTAssertEqual(purgeOnly.documentsPurged, 1, purgeOnly.summary)
        XCTAssertNil(try withDataFile(destination) { try $0.record(forDocumentID: "doc-20") })
        manager.close()

        let (fresh, _) = try upgrade(bundle, in: scratch, name: "fresh")
        try assertSameConversion(destination, fresh)
    }

    func testACatchUpInterruptedMidWayIsCompletedByTheNextRun() throws {
        let scratch = Scratch()
        let (manager, db, bundle) = try makeSource(in: scratch)
        let destination = scratch.path("out/app.cblite2")
        try DatabaseUpgrader(source: bundle, destination: destination).run()
        try changeSource(db, round: 1)
        try changeSource(db, round: 2)
        manager.close()

        struct Killed: Error {}
        var interrupted = CatchUpUpgrader(source: bundle, destination: destination)
        interrupted.batchSize = 3
        // Dies inside the third batch's transaction, after its rows were written.
        interrupted.beforeCommit = { if $0 == 2 { throw Killed() } }
        XCTAssertThrowsError(try interrupted.run()) { XCTAssertTrue($0 is Killed) }
        let reached = try withDataFile(destination) { try XCTUnwrap(try SourceCheckpoint.load(from: $0)) }

        var rerun = CatchUpUpgrader(source: bundle, destination: destination)
        rerun.batchSize = 3
        let report = try rerun.run()
        XCTAssertEqual(report.fromSequence, reached.sequence, "continues from the last committed batch")
        XCTAssertGreaterThan(report.toSequence, reached.sequence)

        let (fresh, _) = try upgrade(bundle, in: scratch, name: "fresh")
        try assertSameConversion(destination, fresh)
    }

    /// A real `kill -9` of `cbl upgrade --catch-up` between and inside its transactions: the
    /// destination stays a sound database at a recorded source sequence, and the next run
    /// completes it to what a full conversion gives.
    func testCatchUpKilledWithSIGKILLIsCompletedByTheNextRun() throws {
        let (cbl, scratch, manager, db, bundle) = try sourceConvertedByTheCLI()
        let out = scratch.path("out"), destination = scratch.path("out/app.cblite2")
        let converted = try withDataFile(destination, readOnly: true) { try XCTUnwrap(try SourceCheckpoint.load(from: $0)) }
        // 3,000 changed documents: 300 transactions of 10.
        _ = try db.inTransaction {
            for i in 0..<3000 { try db.document(withID: "bulk-\(i)")!.putProperties(["i": i, "text": String(repeating: "x", count: i % 200)]) }
            return true
        }
        let last = db.lastSequenceNumber
        manager.close()

        let process = Process()
        process.executableURL = cbl
        process.arguments = ["upgrade", bundle.path, out.path, "--catch-up", "--batch-size", "10"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Killed as soon as a first batch is committed, with hundreds still to go.
        let deadline = Date().addingTimeInterval(30)
        var seen = converted.sequence
        while seen == converted.sequence, process.isRunning, Date() < deadline {
            usleep(2_000)
            seen = (try? withDataFile(destination, readOnly: true) { try SourceCheckpoint.load(from: $0)?.sequence }) ?? seen
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        XCTAssertEqual(process.terminationReason, .uncaughtSignal)

        let killedAt = try withDataFile(destination, readOnly: true) { try XCTUnwrap(try SourceCheckpoint.load(from: $0)) }
        XCTAssertGreaterThan(killedAt.sequence, converted.sequence, "at least one transaction landed")
        XCTAssertLessThan(killedAt.sequence, last, "killed before the end")
        let findings = try DataFileAudit.run(bundle: destination)
        XCTAssertTrue(findings.integrityOK, "\(findings.integrity)")

        let rerun = try runToEnd(["upgrade", bundle.path, out.path, "--catch-up", "--batch-size", "500"])
        XCTAssertEqual(rerun.status, 0, rerun.output)
        XCTAssertTrue(rerun.output.contains("from source sequence \(killedAt.sequence) to \(last)"), rerun.output)
        let (fresh, _) = try upgrade(bundle, in: scratch, name: "fresh")
        try assertSameConversion(destination, fresh)
    }

    /// A source an app holds open (its recent writes in the `-wal`, the `-shm` beside it) is read
    /// in place, as of one moment: no copy is made, writes made meanwhile are not seen, and the
    /// reader leaves the files as the app wrote them.
    func testALiveSourceIsReadInPlaceAsOfOneSnapshot() throws {
        let scratch = Scratch()
        let (manager, db, bundle) = try makeSource(in: scratch)
        let file = bundle.appendingPathComponent("db.sqlite3").path
        XCTAssertTrue(SQLiteConnection.hasPendingJournal(path: file), "the open 1.x database has a WAL")
        XCTAssertTrue(LegacySource.isReadableInPlace(file))
        let before = try checksums(bundle)
        let work = scratch.path("work")
        let legacy = try LegacySource(bundle: bundle, workDirectory: work, readingLiveInPlace: true)
        try legacy.beginSnapshot()
        let seen = try legacy.lastSequence()
        XCTAssertEqual(seen, Int64(db.lastSequenceNumber))
        XCTAssertFalse(FileManager.default.fileExists(atPath: work.appendingPathComponent("source-copy").path), "no copy made")
        XCTAssertEqual(try legacy.changedDocuments(since: 0, upTo: seen).count, 21)
        legacy.close()
        XCTAssertEqual(try checksums(bundle).filter { !$0.key.hasSuffix("-shm") }, before.filter { !$0.key.hasSuffix("-shm") },
                       "the reader wrote nothing but the shared index")

        let snapshot = try LegacySource(bundle: bundle, workDirectory: work, readingLiveInPlace: true)
        try snapshot.beginSnapshot()
        let atStart = try snapshot.lastSequence()
        try db.document(withID: "written-meanwhile")!.putProperties(["late": true])
        XCTAssertEqual(try snapshot.lastSequence(), atStart, "the app's later write is not in the snapshot")
        XCTAssertEqual(try snapshot.changedDocuments(since: 0, upTo: Int64.max).count, 21)
        snapshot.close()
        XCTAssertEqual(try db.document(withID: "written-meanwhile")?.properties?["late"] as? Bool, true)
        manager.close()
    }

    func testCatchingUpFromADifferentSourceIsRefused() throws {
        let scratch = Scratch()
        let (manager, _, bundle) = try makeSource(in: scratch)
        let other = try manager.databaseNamed("other")
        try other.document(withID: "x")!.putProperties(["x": 1])
        manager.close()
        let destination = scratch.path("out/app.cblite2")
        try DatabaseUpgrader(source: bundle, destination: destination).run()
        let before = try checksums(destination)
        XCTAssertThrowsError(try CatchUpUpgrader(source: scratch.path("v1/other.cblite2"), destination: destination).run()) {
            let message = ($0 as? CouchbaseLiteError)?.message ?? "\($0)"
            XCTAssertTrue(message.contains("is not the database app.cblite2 was converted from"), message)
        }
        XCTAssertEqual(try checksums(destination), before, "destination untouched")
        XCTAssertThrowsError(try CatchUpUpgrader(source: bundle, destination: scratch.path("out/none.cblite2")).run())
    }

    /// With `includeLocalDocuments`, `_local` documents (no sequences in 1.x) are brought up to
    /// date too: changed, new and deleted ones end as a full conversion copies them.
    func testLocalDocumentsAreCaughtUpWhenIncluded() throws {
        let scratch = Scratch()
        let (manager, db, bundle) = try makeSource(in: scratch)
        try db.putLocalDocument(["checkpoint": 1], withID: "replication-a")
        try db.putLocalDocument(["checkpoint": 7], withID: "replication-b")
        var options = UpgradeOptions()
        options.includeLocalDocuments = true
        let destination = scratch.path("out/app.cblite2")
        try DatabaseUpgrader(source: bundle, destination: destination, options: options).run()

        try db.putLocalDocument(["checkpoint": 2], withID: "replication-a")
        try db.deleteLocalDocument(withID: "replication-b")
        try db.putLocalDocument(["checkpoint": 1], withID: "replication-c")
        let report = try CatchUpUpgrader(source: bundle, destination: destination, options: options).run()
        XCTAssertEqual(report.localDocumentsChanged, 3, report.summary)
        let idle = try CatchUpUpgrader(source: bundle, destination: destination, options: options).run()
        XCTAssertEqual(idle.localDocumentsChanged, 0, "unchanged local documents are not written again")
        manager.close()

        let fresh = scratch.path("fresh/app.cblite2")
        try DatabaseUpgrader(source: bundle, destination: fresh, options: options).run()
        func locals(_ bundle: URL) throws -> [String] {
            try withDataFile(bundle) { file in
                try file.rawRecords(store: LocalDocuments.keyStore).map { record in
                    "\(record.key) \(String(decoding: record.version, as: UTF8.self)) \(try file.properties(ofBody: record.body))"
                }
            }
        }
        XCTAssertEqual(try locals(destination), try locals(fresh))
        XCTAssertEqual(try locals(destination).count, 2)
    }

    /// A destination a 2.x app has written to since the conversion is refused (catching up would
    /// overwrite its edits), and left as it is.
    func testADestinationWrittenByA2xAppIsRefused() throws {
        let scratch = Scratch()
        let (manager, db, bundle) = try makeSource(in: scratch)
        let destination = scratch.path("out/app.cblite2")
        try DatabaseUpgrader(source: bundle, destination: destination).run()
        try changeSource(db, round: 1)
        manager.close()
        try CatchUpUpgrader(source: bundle, destination: destination).run()

        let app = try openConverted(destination)
        let edited = try XCTUnwrap(app.document(withID: "doc-1")).toMutable()
        edited.setString("edited in 2.x", forKey: "name")
        try app.saveDocument(edited)
        try app.close()
        let before = try checksums(destination)
        XCTAssertThrowsError(try CatchUpUpgrader(source: bundle, destination: destination).run()) {
            let message = ($0 as? CouchbaseLiteError)?.message ?? "\($0)"
            XCTAssertTrue(message.contains("was written since it was converted"), message)
        }
        XCTAssertEqual(try checksums(destination), before, "destination untouched")
    }

    /// `cbl upgrade --catch-up --follow`: converts while the 1.x app writes, stops cleanly on
    /// SIGTERM; a destination from another source is refused with exit status 2 and the reason.
    func testFollowCatchesUpUntilSIGTERMAndRefusesAnotherSource() throws {
        let (cbl, scratch, manager, db, bundle) = try sourceConvertedByTheCLI()
        let out = scratch.path("out"), destination = scratch.path("out/app.cblite2")

        let process = Process()
        process.executableURL = cbl
        process.arguments = ["upgrade", bundle.path, out.path, "--catch-up", "--follow", "--interval", "0.1"]
        let output = OutputBuffer()
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        pipe.fileHandleForReading.readabilityHandler = { output.append($0.availableData) }
        try process.run()
        try changeSource(db, round: 1)
        let deadline = Date().addingTimeInterval(10)
        while !output.text.contains("Caught up"), Date() < deadline { usleep(50_000) }
        XCTAssertTrue(output.text.contains("Caught up"), output.text)
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        pipe.fileHandleForReading.readabilityHandler = nil
        XCTAssertEqual(process.terminationReason, .exit)
        XCTAssertEqual(process.terminationStatus, 0, output.text)
        XCTAssertTrue(output.text.contains("Stopped."), output.text)
        manager.close()
        let (fresh, _) = try upgrade(bundle, in: scratch, name: "fresh")
        try assertSameConversion(destination, fresh)

        let other = try CBLManager(directory: scratch.path("v1b").path)
        try other.databaseNamed("app").document(withID: "x")!.putProperties(["x": 1])
        other.close()
        let refused = try runToEnd(["upgrade", scratch.path("v1b/app.cblite2").path, out.path, "--catch-up"])
        XCTAssertEqual(refused.status, 2, refused.output)
        XCTAssertTrue(refused.output.contains("is not the database app.cblite2 was converted from"), refused.output)
    }

    // MARK: Helpers

    /// The built `cbl` (or a skip), and ``makeSource(in:)``'s database converted by `cbl upgrade`
    /// into `out/app.cblite2` of the scratch directory.
    private func sourceConvertedByTheCLI() throws -> (URL, Scratch, CBLManager, CBLDatabase, URL) {
        guard let cbl = BuiltExecutable.find("cbl") else { throw XCTSkip("cbl executable not found; build with `swift build --build-tests`") }
        let scratch = Scratch()
        let (manager, db, bundle) = try makeSource(in: scratch)
        let converted = try runToEnd(["upgrade", bundle.path, scratch.path("out").path])
        XCTAssertEqual(converted.status, 0, converted.output)
        return (cbl, scratch, manager, db, bundle)
    }

    private func runToEnd(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let r = try runCBL(arguments, in: Scratch())   // for its output files only
        return (r.status, r.stdout + r.stderr)
    }

    private func withDataFile<R>(_ bundle: URL, readOnly: Bool = false, _ body: (DataFile) throws -> R) throws -> R {
        let file = try DataFile(directory: bundle, create: false, readOnly: readOnly)
        defer { file.close() }
        return try body(file)
    }

    /// The same documents, flags, winners and histories, bodies and blobs, and both pass the audit
    /// (`cbl check`: integrity and every named blob present).
    private func assertSameConversion(_ caughtUp: URL, _ fresh: URL, file: StaticString = #filePath, line: UInt = #line) throws {
        func records(_ bundle: URL) throws -> [String: (DocumentRecord, [String: Any])] {
            try withDataFile(bundle) { f in
                var out: [String: (DocumentRecord, [String: Any])] = [:]
                try f.forEachRecord(includeDeleted: true) { out[$0.docID] = ($0, try f.properties(ofBody: $0.body ?? [])) }
                return out
            }
        }
        let a = try records(caughtUp), b = try records(fresh)
        XCTAssertEqual(a.keys.sorted(), b.keys.sorted(), file: file, line: line)
        for (id, (x, xProps)) in a {
            guard let (y, yProps) = b[id] else { continue }
            XCTAssertEqual(x.flags, y.flags, id, file: file, line: line)
            XCTAssertEqual(x.revisionID, y.revisionID, id, file: file, line: line)
            XCTAssertEqual(x.tree.currentHistory, y.tree.currentHistory, id, file: file, line: line)
            XCTAssertEqual(x.tree.revisions.count, y.tree.revisions.count, id, file: file, line: line)
            XCTAssertEqual(x.expiration, y.expiration, id, file: file, line: line)
            XCTAssertJSONEqual(xProps, yProps, id, file: file, line: line)
        }
        let lastSeq = try withDataFile(caughtUp) { try $0.lastSequence() }
        XCTAssertEqual(lastSeq, a.values.map(\.0.sequence).max(), "kvmeta.lastSeq", file: file, line: line)
        for bundle in [caughtUp, fresh] {
            let findings = try DataFileAudit.run(bundle: bundle)
            XCTAssertTrue(findings.integrityOK, "\(findings.integrity)", file: file, line: line)
            XCTAssertEqual(findings.missing.count, 0, file: file, line: line)
        }
        let source = try withDataFile(fresh) { try SourceCheckpoint.load(from: $0) }
        let reached = try withDataFile(caughtUp) { try SourceCheckpoint.load(from: $0) }
        XCTAssertEqual(source?.publicUUID, reached?.publicUUID, file: file, line: line)
        XCTAssertEqual(source?.sequence, reached?.sequence, "both record the source's last sequence", file: file, line: line)
        XCTAssertEqual(reached?.destinationSequence, try withDataFile(caughtUp) { try $0.lastSequence() },
                       "the destination's own sequence as catch-up left it", file: file, line: line)
        XCTAssertNil(try withDataFile(fresh) { try $0.info(SourceCheckpoint.sequenceKey) },
                     "a full conversion's file stays as LiteCore writes it", file: file, line: line)
        let db = try openConverted(caughtUp)
        XCTAssertEqual(db.document(withID: "attached")?.dictionary(forKey: "_attachments")?.blob(forKey: "a.txt")?.content,
                       attachment, file: file, line: line)
        try db.close()
    }
}

/// A child's output, appended from the pipe's handler thread.
private final class OutputBuffer: @unchecked Sendable {
    private let lock = NSLock()
    private var data = Data()

    func append(_ more: Data) {
        lock.lock(); defer { lock.unlock() }
        data.append(more)
    }

    var text: String {
        lock.lock(); defer { lock.unlock() }
        return String(decoding: data, as: UTF8.self)
    }
}
