import CBLTestSupport
import CouchbaseLite
import CouchbaseLiteListener
import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// One-shot pushes that finish through the failures of a real CouchDB 3 cluster with a node
/// down (a `multipart/related` PUT with `new_edits=false` is never answered while
/// `_bulk_docs`, `_revs_diff` and `_local` work), through a peer killed with SIGKILL mid-upload
/// and restarted, and that give up with `lastError` once `retryTimeLimit` has passed when the
/// peer stays down. Every document arrives exactly once.
final class ReplicationClusterFaultTests: ReplicationTestCase {
    var proxy: FaultProxy?
    var peer: Process?

    override func tearDownWithError() throws {
        proxy?.stop()
        if let peer, peer.isRunning { _ = ServeProcess.stop(peer) }
        try super.tearDownWithError()
    }

    override func fastTuning(_ tuning: ReplicationTuning) -> ReplicationTuning {
        var t = super.fastTuning(tuning)
        t.requestTimeout = .seconds(2)
        t.requestRetryDelays = [.milliseconds(50), .milliseconds(100), .milliseconds(200)]
        t.offlineRetryDelay = .milliseconds(100)
        t.maxOfflineRetryDelay = .milliseconds(800)
        return t
    }

    static func docID(_ i: Int) -> String { String(format: "c%05d", i) }
    static func attachment(_ i: Int) -> Data { randomBytes(4096, seed: UInt64(i) + 1) }

    /// `count` documents, each a single generation-1 revision; every 100th carries a 4 KB
    /// attachment (above the 2 KB multipart threshold, so the push tries a multipart PUT).
    func makeDocuments(_ db: CBLDatabase, count: Int) throws {
        try db.inTransaction {
            for i in 0..<count {
                let rev = db.document(withID: Self.docID(i))!.newRevision()
                rev.setValue(i, ofProperty: "i")
                rev.setValue(String(repeating: "x", count: 100), ofProperty: "text")
                if i % 100 == 0 {
                    rev.setAttachmentNamed("a.bin", withContentType: "application/octet-stream", content: Self.attachment(i))
                }
                _ = try rev.save()
            }
            return true
        }
    }

    /// The statuses (and errors) a replication reported, in order, consecutive repeats folded.
    final class StatusLog: @unchecked Sendable {
        private let lock = NSLock()
        private var list: [CBLReplicationStatus] = []
        private var errors: [Int] = []
        private var messages: [String] = []
        private var task: Task<Void, Never>?

        init(_ replication: CBLReplication) {
            let stream = replication.changes()
            task = Task { [weak self] in
                for await change in stream { self?.note(change) }
            }
        }

        deinit { task?.cancel() }

        private func note(_ change: CBLReplicationChange) {
            lock.lock(); defer { lock.unlock() }
            if list.last != change.status { list.append(change.status) }
            if let code = change.lastError?.code, errors.last != code { errors.append(code) }
            if let message = change.lastError?.message, messages.last != message { messages.append(message) }
        }

        var statuses: [CBLReplicationStatus] { lock.lock(); defer { lock.unlock() }; return list }
        var errorCodes: [Int] { lock.lock(); defer { lock.unlock() }; return errors }
        var errorMessages: [String] { lock.lock(); defer { lock.unlock() }; return messages }
    }

    /// The target holds exactly `count` documents, each once: one `_changes` row per document,
    /// one generation-1 leaf each (no conflicts), no sequence spent on a second write, and the
    /// attachments' bytes.
    func assertArrivedOnce(port: UInt16, db: String, count: Int, file: StaticString = #filePath, line: UInt = #line) throws {
        let client = RawHTTPClient(port: port, timeout: 60)
        let changes = try client.send("GET", "/\(db)/_changes?style=all_docs")
        XCTAssertEqual(changes.status, 200, file: file, line: line)
        let results = changes.dict["results"] as? [[String: Any]] ?? []
        XCTAssertEqual(results.count, count, "_changes rows", file: file, line: line)
        var ids = Set<String>()
        var bad: [String] = []
        for row in results {
            let id = row["id"] as? String ?? ""
            ids.insert(id)
            let revs = (row["changes"] as? [[String: Any]] ?? []).compactMap { $0["rev"] as? String }
            if revs.count != 1 || revs.first?.hasPrefix("1-") != true { bad.append("\(id): \(revs)") }
        }
        XCTAssertEqual(ids.count, count, "distinct documents", file: file, line: line)
        XCTAssertEqual(ids, Set((0..<count).map(Self.docID)), file: file, line: line)
        XCTAssertEqual(bad, [], "documents with conflicts or later generations", file: file, line: line)
        let info = try client.send("GET", "/\(db)").dict
        XCTAssertEqual(info["doc_count"] as? Int, count, file: file, line: line)
        XCTAssertEqual(seqNumber(info["update_seq"]), count, "one sequence per document: none was written twice", file: file, line: line)
        for i in stride(from: 0, to: count, by: 100) {
            let answer = try client.send("GET", "/\(db)/\(Self.docID(i))/a.bin")
            XCTAssertEqual(answer.status, 200, Self.docID(i), file: file, line: line)
            XCTAssertEqual(Data(answer.body), Self.attachment(i), Self.docID(i), file: file, line: line)
        }
    }

    // MARK: (a) multipart uploads never answered

    func testPushThroughClusterThatNeverAnswersMultipartUploads() throws {
        let count = 20_000
        let local = try clientManager.databaseNamed("local")
        let madeAt = Date()
        try makeDocuments(local, count: count)
        let made = Date().timeIntervalSince(madeAt)
        _ = try createDB("dst")
        let proxy = try FaultProxy(upstreamPort: listener.port) { _, _, _ in .pass }
        proxy.neverAnswersMultipartPUTs = true
        self.proxy = proxy

        let push = local.createPushReplication(URL(string: "\(proxy.url)/dst")!)
        let log = StatusLog(push)
        let startedAt = Date()
        runToCompletion(push, timeout: 120)
        let elapsed = Date().timeIntervalSince(startedAt)
        print("ReplicationClusterFaultTests: pushed \(count) documents (\(count / 100) with attachments) through a proxy "
            + "that never answers multipart PUTs in \(String(format: "%.1f", elapsed)) s "
            + "(documents made in \(String(format: "%.1f", made)) s); statuses \(log.statuses); errors \(log.errorMessages.prefix(5))")

        XCTAssertNil(push.lastError)
        XCTAssertEqual(push.completedChangesCount, UInt32(count))
        XCTAssertEqual(push.changesCount, UInt32(count))
        let seen = proxy.seen
        XCTAssertEqual(seen.filter { $0.fault == "hang" }.count, 1,
                       "one multipart upload hung; the rest of the run sent its attachments inline")
        XCTAssertEqual(seen.filter { $0.method == "PUT" && $0.path.contains("new_edits=false") && $0.fault != "hang" }.count, 0)
        XCTAssertGreaterThanOrEqual(seen.filter { $0.path.hasSuffix("/_bulk_docs") }.count, count / 100)
        XCTAssertTrue(waitUntil(5) { log.statuses.last == .stopped })
        // The hung upload was not a failure to retry: the run never went offline.
        XCTAssertEqual(log.statuses, [.active, .stopped])
        try assertArrivedOnce(port: listener.port, db: "dst", count: count)
    }

    // MARK: (b) the peer killed mid-upload and restarted

    func testOneShotPushFinishesAfterThePeerIsKilledMidUploadAndRestarted() throws {
        let count = 3000
        let local = try clientManager.databaseNamed("local")
        try makeDocuments(local, count: count)
        let directory = clientDirectory.appendingPathComponent("peer")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let (first, url, _) = try ServeProcess.start(["--no-javascript"], directory: directory)
        peer = first
        let port = try XCTUnwrap(url.port.map { UInt16($0) })
        let pid = first.processIdentifier
        let bulkRequests = Tally()
        let killed = Counter()
        let proxy = try FaultProxy(upstreamPort: port) { _, _, path in
            // The sixth `_bulk_docs` body is half read when the peer dies.
            guard path.hasSuffix("/_bulk_docs"), bulkRequests.next() == 6 else { return .pass }
            return .killMidUpload {
                kill(pid, SIGKILL)
                killed.increment()
            }
        }
        self.proxy = proxy

        let push = local.createPushReplication(URL(string: "\(proxy.url)/dst")!)
        push.createTarget = true
        push.retryTimeLimit = 40
        push.tuning = fastTuning(push.tuning)
        let log = StatusLog(push)
        push.start()
        defer { push.stop() }
        XCTAssertTrue(waitUntil(30) { killed.value == 1 }, "the peer was killed")
        first.waitUntilExit()
        XCTAssertEqual(first.terminationReason, .uncaughtSignal)
        XCTAssertTrue(waitUntil(10) { push.status == .offline }, "offline while the peer is down (status \(push.status))")
        XCTAssertTrue(push.running)
        XCTAssertNotNil(push.lastError, "the failure being retried is reported")
        let completedWhileDown = push.completedChangesCount
        XCTAssertLessThan(completedWhileDown, UInt32(count), "killed mid-push")

        // The same port, the same files: the cluster node is back.
        XCTAssertTrue(waitUntil(10) { Self.portIsFree(port) }, "port \(port) free again")
        let (second, again, _) = try ServeProcess.start(["--no-javascript", "--port", "\(port)"], directory: directory)
        peer = second
        XCTAssertEqual(again.port, Int(port))
        XCTAssertTrue(waitUntil(60) { !push.running }, "the one-shot push finished once the peer was back")
        XCTAssertNil(push.lastError)
        XCTAssertEqual(push.completedChangesCount, UInt32(count))
        XCTAssertTrue(waitUntil(5) { log.statuses.last == .stopped })
        let statuses = log.statuses
        XCTAssertEqual(statuses.first, .active, "\(statuses)")
        XCTAssertTrue(statuses.contains(.offline), "\(statuses)")
        XCTAssertEqual(statuses.last, .stopped, "\(statuses)")
        if let offline = statuses.firstIndex(of: .offline) {
            XCTAssertTrue(statuses[offline...].contains(.active), "active again after the peer came back: \(statuses)")
        }
        try assertArrivedOnce(port: port, db: "dst", count: count)
    }

    // MARK: (c) a peer that stays down

    func testOneShotPushToAPeerThatStaysDownStopsAfterItsRetryTimeLimit() throws {
        let local = try clientManager.databaseNamed("local")
        try makeDocuments(local, count: 10)
        let port = try Self.unusedPort()
        let push = local.createPushReplication(URL(string: "http://127.0.0.1:\(port)/dst")!)
        push.retryTimeLimit = 2
        XCTAssertEqual(local.createPushReplication(URL(string: "http://127.0.0.1:\(port)/dst")!).retryTimeLimit, 600,
                       "ten minutes by default")
        let log = StatusLog(push)
        let startedAt = Date()
        runToCompletion(push, timeout: 30)
        let elapsed = Date().timeIntervalSince(startedAt)
        XCTAssertGreaterThanOrEqual(elapsed, 2, "kept retrying for the limit")
        XCTAssertLessThan(elapsed, 8, "stopped soon after the limit")
        let error = try XCTUnwrap(push.lastError as? CBLError)
        XCTAssertTrue([503, 504].contains(error.code), "\(error)")
        XCTAssertEqual(push.completedChangesCount, 0)
        XCTAssertTrue(waitUntil(5) { log.statuses.last == .stopped })
        XCTAssertEqual(log.statuses.first, .active, "\(log.statuses)")
        XCTAssertTrue(log.statuses.contains(.offline), "\(log.statuses)")
        XCTAssertEqual(log.statuses.last, .stopped, "\(log.statuses)")
        XCTAssertFalse(log.errorCodes.isEmpty, "the error was reported while retrying")
    }

    /// A counter whose increments hand out distinct values (the proxy decides concurrently).
    final class Tally: @unchecked Sendable {
        private let lock = NSLock()
        private var count = 0
        func next() -> Int { lock.lock(); defer { lock.unlock() }; count += 1; return count }
    }

    // MARK: Ports

    /// A loopback port nothing listens on (bound, read, released).
    static func unusedPort() throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        guard LoopbackSocket.bind(fd) else { throw HTTPClientError(description: "bind failed") }
        return LoopbackSocket.boundPort(fd)
    }

    /// True when a listening socket can be bound to the port again (as a server does, with
    /// `SO_REUSEADDR`).
    static func portIsFree(_ port: UInt16) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        LoopbackSocket.reuseAddress(fd)
        return LoopbackSocket.bind(fd, port: port)
    }
}
