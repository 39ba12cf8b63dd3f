import CBLTestSupport
import CouchbaseLite
import CouchbaseLiteListener
import Foundation
import XCTest

/// Replication through a fault-injecting proxy (dropped connections, 500/503 answers, stalls
/// past the timeout, answers and uploads cut mid-stream): nothing is lost or duplicated, and a
/// run that stopped part-way resumes from its checkpoint.
final class ReplicationFaultTests: ReplicationTestCase {
    var proxy: FaultProxy!

    override func tearDownWithError() throws {
        proxy?.stop()
        try super.tearDownWithError()
    }

    func proxiedURL(_ db: String) -> URL { URL(string: "\(proxy.url)/\(db)")! }

    override func fastTuning(_ tuning: ReplicationTuning) -> ReplicationTuning {
        var t = super.fastTuning(tuning)
        t.requestTimeout = .seconds(1)
        t.requestRetryDelays = [.milliseconds(20), .milliseconds(40), .milliseconds(80)]
        t.changesPageSize = 40
        t.revsPerBulkGet = 15
        return t
    }

    /// A seeded schedule: about one request in four misbehaves, in every way the proxy knows.
    static func randomFaults(seed: UInt64) -> @Sendable (Int, String, String) -> FaultProxy.Fault {
        { index, _, _ in
            var rng = SplitMix64(seed: seed &+ UInt64(index) &* 0x9E37_79B9)
            let roll = rng.next() % 100
            switch roll {
            case 0..<6: return .drop
            case 6..<11: return .status(503)
            case 11..<15: return .status(500)
            case 15..<18: return .stall(1.5)
            case 18..<22: return .cut(0.5)
            case 22..<25: return .cutUpload
            default: return .pass
            }
        }
    }

    /// Runs one-shot replications until one ends without error (bounded).
    func replicateUntilClean(_ make: () -> CBLReplication, attempts: Int = 12) -> [CBLReplication] {
        var runs: [CBLReplication] = []
        for _ in 0..<attempts {
            let r = make()
            runToCompletion(r, timeout: 60)
            runs.append(r)
            if r.lastError == nil { break }
        }
        return runs
    }

    func assertIdentical(_ a: CBLDatabase, _ b: CBLDatabase, ids: [String], file: StaticString = #filePath, line: UInt = #line) throws {
        XCTAssertEqual(a.documentCount, b.documentCount, file: file, line: line)
        for id in ids {
            let da = try XCTUnwrap(a.document(withID: id), file: file, line: line)
            let db = try XCTUnwrap(b.document(withID: id), file: file, line: line)
            XCTAssertEqual(da.currentRevisionID, db.currentRevisionID, id, file: file, line: line)
            XCTAssertEqual(Set(try da.getLeafRevisions().compactMap(\.revisionID)),
                           Set(try db.getLeafRevisions().compactMap(\.revisionID)), id, file: file, line: line)
            XCTAssertEqual(try da.getRevisionHistory().compactMap(\.revisionID),
                           try db.getRevisionHistory().compactMap(\.revisionID), id, file: file, line: line)
            for name in da.currentRevision?.attachmentNames ?? [] {
                XCTAssertEqual(da.currentRevision?.attachmentNamed(name)?.content,
                               db.currentRevision?.attachmentNamed(name)?.content, "\(id)/\(name)", file: file, line: line)
            }
        }
    }

    func makeSource(_ db: CBLDatabase, count: Int) throws -> [String] {
        var ids: [String] = []
        try db.inTransaction {
            for i in 0..<count {
                let id = String(format: "f%04d", i)
                ids.append(id)
                try db.document(withID: id)!.putProperties(["i": i, "text": String(repeating: "x", count: 200)])
            }
            return true
        }
        for i in stride(from: 0, to: count, by: 25) {
            try db.document(withID: ids[i])!.update { rev in
                rev.setAttachmentNamed("a.bin", withContentType: "application/octet-stream",
                                       content: Self.randomBytes(i % 50 == 0 ? 40_000 : 900, seed: UInt64(i)))
                return true
            }
        }
        for i in stride(from: 3, to: count, by: 30) { try db.document(withID: ids[i])!.delete() }
        return ids
    }

    func testPullThroughFaultsLosesAndDuplicatesNothing() throws {
        let server = try createDB("src")
        let ids = try makeSource(server, count: 240)
        proxy = try FaultProxy(upstreamPort: listener.port, decide: Self.randomFaults(seed: 11))
        let local = try clientManager.databaseNamed("local")
        let runs = replicateUntilClean { local.createPullReplication(proxiedURL("src")) }
        XCTAssertNil(runs.last?.lastError, "a run finished cleanly within \(runs.count) attempts")
        XCTAssertTrue(proxy.seen.contains { $0.fault != "pass" }, "faults were injected")
        try assertIdentical(server, local, ids: ids)
    }

    func testPushThroughFaultsLosesAndDuplicatesNothing() throws {
        let local = try clientManager.databaseNamed("local")
        let ids = try makeSource(local, count: 240)
        _ = try createDB("dst")
        proxy = try FaultProxy(upstreamPort: listener.port, decide: Self.randomFaults(seed: 23))
        let runs = replicateUntilClean { local.createPushReplication(proxiedURL("dst")) }
        XCTAssertNil(runs.last?.lastError, "a run finished cleanly within \(runs.count) attempts")
        XCTAssertTrue(proxy.seen.contains { $0.fault == "cutUpload" || $0.fault != "pass" })
        try assertIdentical(local, try manager.existingDatabaseNamed("dst"), ids: ids)
    }

    func testPullThatDiesPartWayResumesFromItsCheckpoint() throws {
        let server = try createDB("src")
        let ids = try makeSource(server, count: 200)
        // Serve the first pages, then the server "goes down" for good.
        let budget = 14
        proxy = try FaultProxy(upstreamPort: listener.port) { index, _, _ in index < budget ? .pass : .status(503) }
        let local = try clientManager.databaseNamed("local")
        let first = local.createPullReplication(proxiedURL("src"))
        first.retryTimeLimit = 0  // give up when a request's retries are spent, as 1.x did
        runToCompletion(first)
        XCTAssertEqual((first.lastError as NSError?)?.code, 503)
        let partial = Int(local.documentCount)
        XCTAssertGreaterThan(first.completedChangesCount, 0)

        proxy.setDecision { _, _, _ in .pass }
        let second = local.createPullReplication(proxiedURL("src"))
        runToCompletion(second)
        XCTAssertNil(second.lastError)
        try assertIdentical(server, local, ids: ids)
        // The second run started from the saved checkpoint: it read fewer changes than exist.
        XCTAssertLessThan(Int(second.changesCount), ids.count)
        XCTAssertGreaterThanOrEqual(Int(second.changesCount) + partial, Int(server.documentCount))
    }

    func testPeerWithoutMultipartGetsAttachmentsInline() throws {
        _ = try createDB("plain")
        // A peer that refuses multipart uploads (415), as some proxies and old servers do.
        proxy = try FaultProxy(upstreamPort: listener.port) { _, method, path in
            method == "PUT" && path.contains("new_edits=false") ? .status(415) : .pass
        }
        let local = try clientManager.databaseNamed("local")
        let photo = Self.randomBytes(50_000, seed: 5)
        try local.document(withID: "photo")!.update { rev in
            rev.setAttachmentNamed("p.jpg", withContentType: "image/jpeg", content: photo)
            return true
        }
        let push = local.createPushReplication(proxiedURL("plain"))
        runToCompletion(push)
        XCTAssertNil(push.lastError)
        XCTAssertTrue(proxy.seen.contains { $0.method == "PUT" && $0.fault == "status(415)" }, "multipart was tried first")
        XCTAssertEqual(try manager.existingDatabaseNamed("plain").existingDocument(withID: "photo")?
            .currentRevision?.attachmentNamed("p.jpg")?.content, photo)
    }

    func testContinuousPushGoesOfflineAndComesBack() throws {
        _ = try createDB("dst")
        let down = Counter()
        proxy = try FaultProxy(upstreamPort: listener.port) { _, _, _ in .pass }
        let local = try clientManager.databaseNamed("local")
        let push = local.createPushReplication(proxiedURL("dst"))
        push.continuous = true
        push.tuning = fastTuning(push.tuning)
        push.start()
        defer { push.stop() }
        XCTAssertTrue(waitUntil { push.status == .idle })
        proxy.setDecision { _, _, _ in down.increment(); return .drop }
        try local.document(withID: "while-down")!.putProperties(["n": 1])
        XCTAssertTrue(waitUntil { push.status == .offline }, "status is \(push.status)")
        XCTAssertNotNil(push.lastError)
        proxy.setDecision { _, _, _ in .pass }
        XCTAssertTrue(waitUntil(20) {
            (try? self.manager.existingDatabaseNamed("dst").existingDocument(withID: "while-down")) != nil
        })
        XCTAssertTrue(waitUntil { push.status == .idle })
        XCTAssertGreaterThan(down.value, 0)
    }
}

/// A pulling process killed with SIGKILL part-way loses nothing: the next pull resumes from the
/// last saved checkpoint and ends with exactly the server's revisions.
final class ReplicationKillTests: ReplicationTestCase {
    func testPullKilledWithSIGKILLResumesWithoutLoss() throws {
        let writer = try XCTUnwrap(CrashWriterLocator.find(), "CBLCrashWriter not built (swift build --build-tests)")
        let server = try createDB("big")
        let total = 1500
        try server.inTransaction {
            for i in 0..<total {
                try server.document(withID: String(format: "k%05d", i))!.putProperties(["i": i, "pad": String(repeating: "p", count: 300)])
            }
            return true
        }
        let process = Process()
        process.executableURL = writer
        process.arguments = ["pull", clientDirectory.path, "victim", "http://127.0.0.1:\(listener.port)/big", "50"]
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        // Kill it once it has stored some pages but not all.
        var seen = 0
        var buffer = ""
        let deadline = Date().addingTimeInterval(60)
        let handle = out.fileHandleForReading
        while Date() < deadline && seen < 300 {
            let chunk = handle.availableData
            if chunk.isEmpty { break }
            buffer += String(decoding: chunk, as: UTF8.self)
            for line in buffer.split(separator: "\n") where line.hasPrefix("HAVE ") {
                seen = max(seen, Int(line.dropFirst(5)) ?? 0)
            }
            if let last = buffer.lastIndex(of: "\n") { buffer = String(buffer[buffer.index(after: last)...]) }
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        XCTAssertEqual(process.terminationReason, .uncaughtSignal)
        XCTAssertGreaterThan(seen, 0)
        XCTAssertLessThan(seen, total, "killed before the end")

        let local = try clientManager.databaseNamed("victim")
        let survived = Int(local.documentCount)
        XCTAssertGreaterThanOrEqual(survived, seen, "every committed batch survived the kill")
        let resume = local.createPullReplication(remoteURL("big"))
        var tuning = resume.tuning
        tuning.changesPageSize = 50
        tuning.checkpointInterval = .zero
        resume.tuning = tuning
        runToCompletion(resume, timeout: 60)
        XCTAssertNil(resume.lastError)
        XCTAssertEqual(Int(local.documentCount), total)
        XCTAssertLessThan(Int(resume.changesCount), total, "resumed from a checkpoint, not from the start")
        for i in stride(from: 0, to: total, by: 97) {
            let id = String(format: "k%05d", i)
            XCTAssertEqual(local.existingDocument(withID: id)?.currentRevisionID, server.existingDocument(withID: id)?.currentRevisionID)
            XCTAssertEqual(try local.existingDocument(withID: id)?.getLeafRevisions().count, 1)
        }
    }
}

/// A 100 MB attachment goes through a pull and a push without being held in memory: the
/// replicating process's peak resident size stays well below the attachment's size.
final class ReplicationLargeAttachmentTests: ReplicationTestCase {
    func runWriter(_ mode: String, _ directory: URL, _ db: String, _ url: String) throws -> (Int32, Int) {
        let writer = try XCTUnwrap(CrashWriterLocator.find(), "CBLCrashWriter not built (swift build --build-tests)")
        let run = try runChildProcess(writer, [mode, directory.path, db, url, "10"], timeout: 120, includeStandardError: false)
        XCTAssertFalse(run.timedOut, "\(mode) did not finish")
        let text = run.output
        let peak = text.split(separator: "\n").last { $0.hasPrefix("DONE ") }.flatMap { Int($0.dropFirst(5)) } ?? -1
        return (run.status, peak)
    }

    func testHundredMegabyteAttachmentIsStreamedBothWays() throws {
        let size = 100 << 20
        // The listener collects request bodies (up to 64 MB by default); this one must accept the push.
        listener.maxBodySize = 256 << 20
        let server = try createDB("big")
        let content = Self.randomBytes(size, seed: 99)
        let doc = server.document(withID: "movie")!
        try doc.update { rev in
            rev["title"] = "big"
            rev.setAttachmentNamed("movie.bin", withContentType: "application/octet-stream", content: content)
            return true
        }
        let digest = server.existingDocument(withID: "movie")?.currentRevision?.attachmentNamed("movie.bin")?.metadata["digest"] as? String
        // The same replication of a small document gives the process's own baseline.
        let small = try createDB("small")
        try small.document(withID: "tiny")!.update { rev in
            rev.setAttachmentNamed("tiny.bin", withContentType: "application/octet-stream", content: Self.randomBytes(4096, seed: 1))
            return true
        }
        let (baseStatus, baseline) = try runWriter("pull", clientDirectory, "baseline", remoteURL("small").absoluteString)
        XCTAssertEqual(baseStatus, 0)
        let budget = baseline + (size >> 10) / 4

        let (pullStatus, pullPeak) = try runWriter("pull", clientDirectory, "copy", remoteURL("big").absoluteString)
        XCTAssertEqual(pullStatus, 0)
        XCTAssertGreaterThan(pullPeak, 0)
        XCTAssertLessThan(pullPeak, budget, "peak RSS \(pullPeak) KiB while pulling a \(size >> 20) MB attachment")
        let copy = try clientManager.existingDatabaseNamed("copy")
        let pulled = copy.existingDocument(withID: "movie")?.currentRevision?.attachmentNamed("movie.bin")
        XCTAssertEqual(pulled?.metadata["digest"] as? String, digest)
        XCTAssertEqual(pulled?.length, UInt64(size))
        try copy.close()

        let (pushStatus, pushPeak) = try runWriter("push", clientDirectory, "copy", remoteURL("big-copy").absoluteString)
        XCTAssertEqual(pushStatus, 0)
        XCTAssertLessThan(pushPeak, budget, "peak RSS \(pushPeak) KiB while pushing a \(size >> 20) MB attachment")
        let pushed = try manager.existingDatabaseNamed("big-copy").existingDocument(withID: "movie")?
            .currentRevision?.attachmentNamed("movie.bin")
        XCTAssertEqual(pushed?.metadata["digest"] as? String, digest)
        print("ReplicationLargeAttachmentTests: peak RSS pull \(pullPeak) KiB, push \(pushPeak) KiB for a \(size >> 20) MiB attachment (baseline \(baseline) KiB)")
    }
}
