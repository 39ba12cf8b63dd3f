import Foundation
import XCTest
@testable import CouchbaseLiteSwift

/// Reads and queries on the reader connections (issue 20): they go on while another thread's
/// `inBatch` is open, see the last commit (and nothing uncommitted), while the batch's own reads
/// see its writes; closing the database closes every connection.
final class ReaderConnectionTests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("cblrp-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }

    private func openDatabase(_ name: String = "readers") throws -> Database {
        try Database(name: name, config: DatabaseConfiguration(directory: directory.path))
    }

    /// `count` documents `d<i>` with `name = n<i>`, and an index on `name`.
    private static func preload(_ db: Database, count: Int) throws {
        try db.inBatch {
            for i in 0..<count {
                try db.saveDocument(MutableDocument(id: "d\(i)").setString("n\(i)", forKey: "name").setInt(i, forKey: "n"))
            }
        }
        try db.createIndex(ValueIndexConfiguration(["name"]), name: "byName")
    }

    private static func ids(_ db: Database, name: String) throws -> [String] {
        let query = try db.createQuery("SELECT meta().id AS id FROM _ WHERE name = $x ORDER BY meta().id")
        query.parameters = Parameters().setString(name, forName: "x")
        return try query.execute().map { $0.string(forKey: "id") ?? "?" }
    }

    /// Holds an `inBatch` open on another thread (after saving `d-new`) until `release()`.
    private final class OpenBatch: @unchecked Sendable {
        let started = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let finished = DispatchSemaphore(value: 0)
        private let lock = NSLock()
        private var _ended = false
        private var _error: Error?
        var ended: Bool { lock.withLock { _ended } }
        var error: Error? { lock.withLock { _error } }

        init(_ db: Database) {
            Thread.detachNewThread { [self] in
                do {
                    try db.inBatch {
                        try db.saveDocument(MutableDocument(id: "d-new").setString("fresh", forKey: "name")
                            .setString("a key no document had", forKey: "brandNewKey"))
                        started.signal()
                        // Bounded: a test that fails to release still ends.
                        _ = release.wait(timeout: .now() + 20)
                    }
                } catch {
                    lock.withLock { _error = error }
                    started.signal()
                }
                lock.withLock { _ended = true }
                finished.signal()
            }
        }

        /// Lets the batch commit and waits for it (once; later calls return at once).
        func end() {
            guard !ended else { return }
            release.signal()
            _ = finished.wait(timeout: .now() + 20)
        }
    }

    /// Runs `body` on another thread and waits at most `seconds` for it.
    private func completes<R: Sendable>(within seconds: Double, _ body: @escaping @Sendable () throws -> R) -> Swift.Result<R, Error>? {
        let box = ResultBox<R>()
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            box.result = Swift.Result { try body() }
            done.signal()
        }
        guard done.wait(timeout: .now() + seconds) == .success else { return nil }
        return box.result
    }

    func testQueriesAndReadsCompleteWhileAnotherThreadsBatchIsOpen() throws {
        let db = try openDatabase()
        defer { try? db.close() }
        try Self.preload(db, count: 200)
        let batch = OpenBatch(db)
        defer { batch.end() }
        XCTAssertEqual(batch.started.wait(timeout: .now() + 10), .success, "the batch started")
        XCTAssertNil(batch.error)

        let began = Date()
        let outcome = completes(within: 5) { () -> ([String], [String], UInt64, Bool, String?) in
            (try Self.ids(db, name: "n42"), try Self.ids(db, name: "fresh"), db.count,
             db.document(withID: "d-new") == nil, db.document(withID: "d7")?.string(forKey: "name"))
        }
        let elapsed = Date().timeIntervalSince(began)
        guard let outcome else {
            return XCTFail("the reads waited for the open batch (more than 5 s)")
        }
        XCTAssertFalse(batch.ended, "the reads finished while the batch was still open")
        let (n42, fresh, count, newIsAbsent, d7) = try outcome.get()
        XCTAssertEqual(n42, ["d42"])
        XCTAssertEqual(fresh, [], "the batch's uncommitted document is not visible to other threads")
        XCTAssertEqual(count, 200)
        XCTAssertTrue(newIsAbsent)
        XCTAssertEqual(d7, "n7")
        XCTAssertLessThan(elapsed, 5)

        // Committed: readers see it at once.
        batch.end()
        XCTAssertNil(batch.error)
        XCTAssertEqual(try Self.ids(db, name: "fresh"), ["d-new"])
        XCTAssertEqual(db.count, 201)
        XCTAssertEqual(db.document(withID: "d-new")?.string(forKey: "brandNewKey"), "a key no document had")
    }

    func testABatchSeesItsOwnUncommittedWrites() throws {
        let db = try openDatabase()
        defer { try? db.close() }
        try Self.preload(db, count: 10)
        var inside: ([String], UInt64, String?)?
        var otherThread: ([String], UInt64, Bool)??
        try db.inBatch {
            try db.saveDocument(MutableDocument(id: "d-new").setString("fresh", forKey: "name")
                .setString("v", forKey: "brandNewKey"))
            inside = (try Self.ids(db, name: "fresh"), db.count, db.document(withID: "d-new")?.string(forKey: "brandNewKey"))
            // Another thread meanwhile sees only the last commit.
            let other = completes(within: 5) { (try Self.ids(db, name: "fresh"), db.count, db.document(withID: "d-new") == nil) }
            otherThread = other.map { try? $0.get() }
        }
        XCTAssertEqual(inside?.0, ["d-new"])
        XCTAssertEqual(inside?.1, 11)
        XCTAssertEqual(inside?.2, "v")
        let seen = try XCTUnwrap(otherThread, "another thread's reads waited for the batch")
        XCTAssertEqual(seen?.0, [])
        XCTAssertEqual(seen?.1, 10)
        XCTAssertEqual(seen?.2, true)
        XCTAssertEqual(try Self.ids(db, name: "fresh"), ["d-new"], "visible to all once committed")
    }

    func testARolledBackBatchLeavesNothingForReaders() throws {
        let db = try openDatabase()
        defer { try? db.close() }
        try Self.preload(db, count: 3)
        struct Abort: Error {}
        XCTAssertThrowsError(try db.inBatch {
            try db.saveDocument(MutableDocument(id: "gone").setString("fresh", forKey: "name").setInt(1, forKey: "rolledBackKey"))
            throw Abort()
        })
        XCTAssertNil(db.document(withID: "gone"))
        XCTAssertEqual(try Self.ids(db, name: "fresh"), [])
        // The key the rolled-back body added is stored with the next write; readers decode it.
        try db.saveDocument(MutableDocument(id: "kept").setInt(2, forKey: "rolledBackKey"))
        XCTAssertEqual(db.document(withID: "kept")?.int(forKey: "rolledBackKey"), 2)
        let rows = try db.createQuery("SELECT rolledBackKey FROM _ WHERE rolledBackKey IS VALUED").execute()
            .map { $0.int(forKey: "rolledBackKey") }
        XCTAssertEqual(rows, [2])
    }

    /// A reader opened before a write follows the shared keys, collections and indexes it adds.
    func testAReaderOpenedEarlierSeesNewKeysCollectionsAndIndexes() throws {
        let db = try openDatabase()
        defer { try? db.close() }
        try Self.preload(db, count: 5)
        XCTAssertEqual(try Self.ids(db, name: "n1"), ["d1"])   // opens a reader
        XCTAssertGreaterThanOrEqual(db.openReaderConnectionCount, 1)
        for i in 0..<40 {
            try db.saveDocument(MutableDocument(id: "k\(i)").setString("v\(i)", forKey: "key\(i)"))
        }
        XCTAssertEqual(db.document(withID: "k39")?.string(forKey: "key39"), "v39")
        XCTAssertEqual(try db.createQuery("SELECT key17 FROM _ WHERE key17 IS VALUED").execute().map { $0.string(forKey: "key17") },
                       ["v17"])
        let tasks = try db.createCollection(name: "tasks")
        XCTAssertNotNil(try db.collection(name: "tasks"))
        try tasks.save(document: MutableDocument(id: "t1").setString("Élan", forKey: "title"))
        try tasks.createIndex(withName: "byTitle", config: ValueIndexConfiguration(["lower(title)"]))
        XCTAssertEqual(try tasks.indexes(), ["byTitle"])
        XCTAssertEqual(tasks.count, 1)
        let titles = try db.createQuery("SELECT title FROM tasks WHERE lower(title) = 'élan'").execute()
            .map { $0.string(forKey: "title") }
        XCTAssertEqual(titles, ["Élan"])
    }

    func testLiveQueryFiresForACommitFromAnotherThreadsBatch() throws {
        let db = try openDatabase()
        defer { try? db.close() }
        try Self.preload(db, count: 5)
        let query = try db.createQuery("SELECT meta().id AS id FROM _ WHERE name = 'fresh'")
        final class Seen: @unchecked Sendable {
            let lock = NSLock()
            var changes: [[String]] = []
        }
        let seen = Seen()
        let first = expectation(description: "the live query reports its first rows")
        let fired = expectation(description: "the live query reports the committed document")
        let token = query.addChangeListener { change in
            let ids = change.results?.map { $0.string(forKey: "id") ?? "?" } ?? []
            let count = seen.lock.withLock { seen.changes.append(ids); return seen.changes.count }
            if count == 1 { first.fulfill() }
            if count == 2 { fired.fulfill() }
        }
        defer { token.remove() }
        // The first run is asynchronous: it must come before the batch, or it would already see
        // the document and the commit would change nothing to report.
        wait(for: [first], timeout: 10)
        let batch = OpenBatch(db)
        XCTAssertEqual(batch.started.wait(timeout: .now() + 10), .success)
        batch.end()
        wait(for: [fired], timeout: 10)
        XCTAssertEqual(seen.lock.withLock { seen.changes }, [[], ["d-new"]])
    }

    func testClosingClosesEveryConnection() throws {
        let db = try openDatabase()
        try Self.preload(db, count: 50)
        // Several threads reading at once open several readers.
        let group = DispatchGroup()
        for t in 0..<4 {
            group.enter()
            Thread.detachNewThread {
                for i in 0..<200 { _ = try? Self.ids(db, name: "n\((i + t) % 50)") }
                group.leave()
            }
        }
        XCTAssertEqual(group.wait(timeout: .now() + 30), .success)
        XCTAssertGreaterThanOrEqual(db.openReaderConnectionCount, 1)
        let walPath = directory.appendingPathComponent("readers.cblite2/db.sqlite3-wal").path
        XCTAssertTrue(FileManager.default.fileExists(atPath: walPath), "WAL mode while open")

        try db.close()
        XCTAssertEqual(db.openReaderConnectionCount, 0)
        // SQLite removes the WAL when the last connection to the file closes.
        XCTAssertFalse(FileManager.default.fileExists(atPath: walPath), "every connection closed")
        XCTAssertNil(db.document(withID: "d1"))
        XCTAssertThrowsError(try db.createQuery("SELECT meta().id FROM _")) { error in
            XCTAssertEqual((error as? CouchbaseLiteError)?.code, .notOpen)
        }
        XCTAssertThrowsError(try db.saveDocument(MutableDocument(id: "late"))) { error in
            XCTAssertEqual((error as? CouchbaseLiteError)?.code, .notOpen)
        }
    }

    /// A query run by many threads at once, while another thread writes, gives each its rows.
    func testConcurrentQueriesDuringWrites() throws {
        let db = try openDatabase()
        defer { try? db.close() }
        try Self.preload(db, count: 100)
        let writerDone = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            for i in 0..<300 { try? db.saveDocument(MutableDocument(id: "w\(i)").setString("w", forKey: "name")) }
            writerDone.signal()
        }
        let failures = NSLock()
        nonisolated(unsafe) var wrong = 0
        DispatchQueue.concurrentPerform(iterations: 4) { t in
            for i in 0..<100 {
                let name = "n\((i * 7 + t) % 100)"
                let got = (try? Self.ids(db, name: name)) ?? []
                if got != ["d" + name.dropFirst()] { failures.withLock { wrong += 1 } }
            }
        }
        XCTAssertEqual(wrong, 0)
        XCTAssertEqual(writerDone.wait(timeout: .now() + 30), .success)
        XCTAssertEqual(try Self.ids(db, name: "w").count, 300)
    }
}

/// Where a thread leaves its result for the test to pick up after a bounded wait.
private final class ResultBox<R>: @unchecked Sendable {
    var result: Swift.Result<R, Error>?
}
