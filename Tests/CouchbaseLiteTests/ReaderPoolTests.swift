@testable import CouchbaseLite
import Foundation
import XCTest

/// Reads never wait for the writer: they run on reader connections and see the last commit,
/// while a read on the thread inside a transaction sees that transaction's own writes.
final class ReaderPoolTests: XCTestCase {
    private var root: TempDirectory!
    private var manager: CBLManager!
    private var db: CBLDatabase!

    override func setUpWithError() throws {
        root = TempDirectory("cbl-readers")
        manager = try CBLManager(directory: root.path)
        db = try manager.databaseNamed("readers")
    }

    override func tearDownWithError() throws {
        manager?.close()
        manager = nil
        db = nil
        root = nil
    }

    /// Runs `body` on a new thread; the returned group is left when it ends.
    private func onThread(_ body: @escaping @Sendable () -> Void) -> DispatchGroup {
        let group = DispatchGroup()
        group.enter()
        Thread.detachNewThread {
            body()
            group.leave()
        }
        return group
    }

    private func defineValueView() -> CBLView {
        let view = db.viewNamed("byValue")
        view.setMapBlock({ doc, emit in
            if let v = doc["v"] { emit(v, nil) }
        }, version: "1")
        return view
    }

    // MARK: A read during a long transaction

    /// While a 50k-document transaction is open on another thread, reads through the API return
    /// (the writer waits inside its transaction until they have) and see the state before it.
    func testReadDuringLongTransactionReturnsBeforeCommitAndSeesThePreviousState() throws {
        let db = try XCTUnwrap(db)
        let stable = try XCTUnwrap(db.document(withID: "stable"))
        let firstRev = try stable.putProperties(["v": 1])
        for i in 0..<100 { try db.document(withID: "old-\(i)")!.putProperties(["v": 1000 + i]) }
        let view = defineValueView()
        XCTAssertEqual(try view.createQuery().run().count, 101)   // index up to date before the write
        let countBefore = db.documentCount, sequenceBefore = db.lastSequenceNumber

        let insideTransaction = DispatchSemaphore(value: 0)
        let readsDone = DispatchSemaphore(value: 0)
        let readsFinishedWhileWriterInside = LockedValue(false)
        let writeError = LockedValue<String?>(nil)
        let writer = onThread {
            let committed = db.inTransaction {
                do {
                    try db.document(withID: "stable")!.putProperties(["_rev": firstRev.revisionID!, "v": 2])
                    for i in 0..<25_000 { try db.document(withID: "new-\(i)")!.putProperties(["v": i]) }
                    insideTransaction.signal()
                    // Old behaviour: the reads wait for this transaction, so they cannot finish here.
                    readsFinishedWhileWriterInside.set(readsDone.wait(timeout: .now() + 20) == .success)
                    for i in 25_000..<50_000 { try db.document(withID: "new-\(i)")!.putProperties(["v": i]) }
                    return true
                } catch {
                    writeError.set("\(error)")
                    return false
                }
            }
            if !committed && writeError.get() == nil { writeError.set("transaction did not commit") }
        }

        XCTAssertEqual(insideTransaction.wait(timeout: .now() + 120), .success, "writer never got inside its transaction")
        // Every read below goes through the public or the protocol API, on this (non-writer) thread.
        let stableValue = stable.properties?["v"] as? Int
        let freshObjectValue = db.existingDocument(withID: "old-7")?.properties?["v"] as? Int
        let newDocument = db.existingDocument(withID: "new-0")
        let count = db.documentCount
        let sequence = db.lastSequenceNumber
        let allDocs = try db.createAllDocumentsQuery().run().count
        let viewRows = try view.createQuery().run().count
        let winner = try db.syncWinningRevision(docID: "stable")?.revID
        let changes = try db.syncChanges(since: sequenceBefore, limit: nil, descending: false, allLeaves: false,
                                          docIDs: nil, activeOnly: false, includeDocs: false)
        readsDone.signal()

        XCTAssertEqual(writer.wait(timeout: .now() + 300), .success, "writer did not finish")
        XCTAssertNil(writeError.get())
        XCTAssertTrue(readsFinishedWhileWriterInside.get(), "the reads waited for the writer's transaction to commit")
        XCTAssertEqual(stableValue, 1, "a read saw the open transaction's uncommitted write")
        XCTAssertEqual(freshObjectValue, 1007)
        XCTAssertNil(newDocument)
        XCTAssertEqual(count, countBefore)
        XCTAssertEqual(sequence, sequenceBefore)
        XCTAssertEqual(allDocs, 101)
        XCTAssertEqual(viewRows, 101)
        XCTAssertEqual(winner, firstRev.revisionID)
        XCTAssertEqual(changes.count, 0)

        // After the commit every thread sees it, through the same document object too.
        XCTAssertEqual(stable.properties?["v"] as? Int, 2)
        XCTAssertEqual(db.documentCount, countBefore + 50_000)
        XCTAssertEqual(db.existingDocument(withID: "new-49999")?.properties?["v"] as? Int, 49_999)
        XCTAssertEqual(try view.createQuery().run().count, 50_101)
    }

    // MARK: Reads inside a transaction

    /// Inside `inTransaction`, reads on the same thread see the transaction's uncommitted writes,
    /// while another thread meanwhile sees the last commit; a rollback takes them back for both.
    func testReadsInsideTransactionSeeItsUncommittedWrites() throws {
        let db = try XCTUnwrap(db)
        let kept = try db.document(withID: "kept")!.putProperties(["v": 1])
        let view = defineValueView()
        XCTAssertEqual(try view.createQuery().run().count, 1)

        var inside: [String: Any] = [:]
        let outside = LockedValue<[String: Any]>([:])
        for commit in [false, true] {
            let ok = db.inTransaction {
                _ = try? db.document(withID: "fresh")!.putProperties(["v": 2])
                _ = try? db.document(withID: "kept")!.putProperties(["_rev": kept.revisionID!, "v": 3])
                // No reference to "fresh" is kept: this read loads it again, from the writer.
                inside["fresh"] = db.existingDocument(withID: "fresh")?.properties?["v"]
                inside["kept"] = db.document(withID: "kept")?.properties?["v"]
                inside["count"] = db.documentCount
                inside["allDocs"] = (try? db.createAllDocumentsQuery().run()).map { Int($0.count) } ?? -1
                inside["view"] = (try? view.createQuery().run().allObjects.compactMap { $0.key as? Int }) ?? []
                inside["winner"] = (try? db.syncWinningRevision(docID: "fresh"))??.revID
                // Another thread, meanwhile: the last commit (and it does not wait for this transaction).
                let other = self.onThread {
                    let values: [String: Any] = [
                        "fresh": db.existingDocument(withID: "fresh") != nil,
                        "kept": db.document(withID: "kept")?.properties?["v"] as Any,
                        "count": db.documentCount,
                    ]
                    outside.set(values)
                }
                XCTAssertEqual(other.wait(timeout: .now() + 20), .success, "a reader waited for the transaction")
                return commit
            }
            XCTAssertEqual(ok, commit)
            XCTAssertEqual(inside["fresh"] as? Int, 2)
            XCTAssertEqual(inside["kept"] as? Int, 3)
            XCTAssertEqual(inside["count"] as? UInt, 2)
            XCTAssertEqual(inside["allDocs"] as? Int, 2)
            XCTAssertEqual(inside["view"] as? [Int], [2, 3])
            XCTAssertNotNil(inside["winner"] as? String)
            XCTAssertEqual(outside.get()["fresh"] as? Bool, false)
            XCTAssertEqual(outside.get()["kept"] as? Int, 1)
            XCTAssertEqual(outside.get()["count"] as? UInt, 1)
            if !commit {
                // Rolled back: nobody sees the writes, including the cached document objects.
                XCTAssertNil(db.existingDocument(withID: "fresh"))
                XCTAssertEqual(db.document(withID: "kept")?.properties?["v"] as? Int, 1)
                XCTAssertEqual(try view.createQuery().run().allObjects.compactMap { $0.key as? Int }, [1])
            }
        }
        XCTAssertEqual(db.existingDocument(withID: "fresh")?.properties?["v"] as? Int, 2)
        XCTAssertEqual(db.document(withID: "kept")?.properties?["v"] as? Int, 3)
        XCTAssertEqual(try view.createQuery().run().allObjects.compactMap { $0.key as? Int }, [2, 3])
    }

    /// A validation block runs inside the save's transaction: its reads see earlier writes of the
    /// same `inTransaction`, not only the last commit.
    func testValidationReadsSeeTheTransactionsEarlierWrites() throws {
        let db = try XCTUnwrap(db)
        let seen = LockedValue<[String]>([])
        db.setValidationNamed("needsParentDoc") { revision, context in
            guard let parent = revision.properties?["parent"] as? String else { return }
            if db.existingDocument(withID: parent) == nil {
                context.reject(withMessage: "no parent \(parent)")
            } else {
                seen.mutate { $0.append(parent) }
            }
        }
        let ok = db.inTransaction { () -> Bool in
            do {
                try db.document(withID: "p")!.putProperties(["kind": "parent"])
                try db.document(withID: "c")!.putProperties(["parent": "p"])
                return true
            } catch {
                XCTFail("save failed: \(error)")
                return false
            }
        }
        XCTAssertTrue(ok)
        XCTAssertEqual(seen.get(), ["p"])
        XCTAssertThrowsError(try db.document(withID: "orphan")!.putProperties(["parent": "nobody"]))
    }

    // MARK: Stress

    /// Four reader threads and one writer: every read is consistent (a query sees one snapshot,
    /// values never go backwards on a thread) and nothing fails.
    func testConcurrentReadersAndWriterStayConsistent() throws {
        let db = try XCTUnwrap(db)
        let accounts = 10, total = 1000, transfers = 300
        try db.inTransaction {
            for a in 0..<accounts { try db.document(withID: "acct-\(a)")!.putProperties(["balance": total / accounts]) }
            try db.document(withID: "counter")!.putProperties(["n": 0])
            return true
        }
        let failures = LockedValue<[String]>([])
        let writerDone = LockedValue(false)
        let readsMade = LockedValue(0)

        let writer = onThread {
            var rng = SystemRandomNumberGenerator()
            for t in 1...transfers {
                let from = Int.random(in: 0..<accounts, using: &rng), to = Int.random(in: 0..<accounts, using: &rng)
                let ok = db.inTransaction {
                    do {
                        for (id, delta) in [(from, -1), (to, 1)] {
                            try db.document(withID: "acct-\(id)")!.update { rev in
                                rev["balance"] = (rev["balance"] as? Int ?? 0) + delta
                                return true
                            }
                        }
                        try db.document(withID: "counter")!.update { rev in
                            rev["n"] = t
                            return true
                        }
                        // Some filler, so transactions take a while.
                        for i in 0..<20 { try db.document(withID: "fill-\(t)-\(i)")!.putProperties(["t": t]) }
                        return true
                    } catch {
                        failures.mutate { $0.append("transfer \(t): \(error)") }
                        return false
                    }
                }
                if !ok { failures.mutate { $0.append("transfer \(t) did not commit") } }
            }
            writerDone.set(true)
        }

        let readerGroups = (0..<4).map { r in
            onThread {
                var lastCounter = -1
                var lastSequence: Int64 = -1
                var reads = 0
                let query = db.createAllDocumentsQuery()
                query.startKey = "acct-"
                query.endKey = "acct-\u{FFFF}"
                query.prefetch = true
                while !writerDone.get() || reads < 20 {
                    reads += 1
                    do {
                        // One query = one snapshot: the transfers always sum to the total.
                        let rows = try query.run().allObjects
                        let sum = rows.compactMap { $0.documentProperties?["balance"] as? Int }.reduce(0, +)
                        if rows.count != accounts || sum != total {
                            failures.mutate { $0.append("reader \(r): \(rows.count) accounts summing to \(sum)") }
                        }
                        // The shared document object, read on every thread: never goes backwards.
                        guard let n = db.document(withID: "counter")?.properties?["n"] as? Int else {
                            failures.mutate { $0.append("reader \(r): counter unreadable") }
                            continue
                        }
                        if n < lastCounter { failures.mutate { $0.append("reader \(r): counter went from \(lastCounter) to \(n)") } }
                        lastCounter = n
                        let sequence = db.lastSequenceNumber
                        if sequence < lastSequence { failures.mutate { $0.append("reader \(r): sequence went backwards") } }
                        lastSequence = sequence
                        let leaves = try db.syncLeaves(docID: "acct-\(reads % accounts)", withBodies: true)
                        if leaves.count != 1 || leaves[0].body == nil {
                            failures.mutate { $0.append("reader \(r): \(leaves.count) leaves") }
                        }
                        _ = try db.syncChanges(since: max(0, sequence - 50), limit: 20, descending: false, allLeaves: true,
                                               docIDs: nil, activeOnly: false, includeDocs: true)
                    } catch {
                        failures.mutate { $0.append("reader \(r): \(error)") }
                    }
                }
                readsMade.mutate { $0 += reads }
            }
        }

        XCTAssertEqual(writer.wait(timeout: .now() + 300), .success, "writer did not finish")
        for group in readerGroups { XCTAssertEqual(group.wait(timeout: .now() + 60), .success, "a reader did not finish") }
        XCTAssertEqual(failures.get(), [])
        XCTAssertGreaterThan(readsMade.get(), 80)
        XCTAssertEqual(db.document(withID: "counter")?.properties?["n"] as? Int, transfers)
        let balances = (0..<accounts).compactMap { db.document(withID: "acct-\($0)")?.properties?["balance"] as? Int }
        XCTAssertEqual(balances.reduce(0, +), total)
        XCTAssertEqual(db.documentCount, UInt(accounts + 1 + transfers * 20))
    }

    // MARK: Lifecycle

    /// The file descriptors open on a database file, from /proc/self/fd.
    private func openDescriptors(on path: String) -> Int {
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return fds.filter { (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\($0)")) == path }.count
    }

    /// Concurrent reads open several reader connections; `close()` closes all of them (and later reads fail cleanly).
    func testCloseClosesEveryReaderConnection() throws {
        let db = try XCTUnwrap(db)
        for i in 0..<50 { try db.document(withID: "d\(i)")!.putProperties(["i": i]) }
        let path = db.directoryURL.appendingPathComponent("db.sqlite3").resolvingSymlinksInPath().path
        let gate = DispatchSemaphore(value: 0)
        let inside = DispatchSemaphore(value: 0)
        // Three threads each hold a read open at once, so three readers must exist.
        let groups = (0..<3).map { t in
            onThread {
                let query = db.createAllDocumentsQuery()
                query.postFilter = NSPredicate { _, _ in
                    inside.signal()
                    gate.wait()
                    return true
                }
                query.limit = 1
                _ = try? query.run()
                _ = t
            }
        }
        for _ in 0..<3 { XCTAssertEqual(inside.wait(timeout: .now() + 20), .success) }
        XCTAssertGreaterThanOrEqual(openDescriptors(on: path), 4, "writer + 3 readers")
        for _ in 0..<(50 * 3) { gate.signal() }
        for group in groups { XCTAssertEqual(group.wait(timeout: .now() + 20), .success) }

        try db.close()
        XCTAssertEqual(openDescriptors(on: path), 0, "a connection is still open after close()")
        XCTAssertEqual(db.documentCount, 0)
        XCTAssertThrowsError(try db.syncWinningRevision(docID: "d1")) { error in
            XCTAssertEqual((error as? CBLError)?.code, 404)
        }
    }

    /// A read-only database reads on its readers too, from several threads.
    func testReadOnlyDatabaseReadsFromSeveralThreads() throws {
        for i in 0..<20 { try db.document(withID: "d\(i)")!.putProperties(["i": i]) }
        try db.close()
        manager.close()
        var options = CBLManagerOptions(readOnly: true, fileProtection: [])
        let readOnly = try CBLManager(directory: root.path, options: &options)
        defer { readOnly.close() }
        let db = try readOnly.existingDatabaseNamed("readers")
        let failures = LockedValue<[String]>([])
        let groups = (0..<3).map { t in
            onThread {
                for i in 0..<20 where db.existingDocument(withID: "d\(i)")?.properties?["i"] as? Int != i {
                    failures.mutate { $0.append("thread \(t): d\(i)") }
                }
            }
        }
        for group in groups { XCTAssertEqual(group.wait(timeout: .now() + 20), .success) }
        XCTAssertEqual(failures.get(), [])
        XCTAssertThrowsError(try db.document(withID: "x")!.putProperties(["no": true]))
    }
}

/// A value shared between test threads.
final class LockedValue<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: T
    init(_ value: T) { self.value = value }
    func get() -> T { lock.lock(); defer { lock.unlock() }; return value }
    func set(_ newValue: T) { lock.lock(); value = newValue; lock.unlock() }
    func mutate(_ body: (inout T) -> Void) { lock.lock(); body(&value); lock.unlock() }
}
