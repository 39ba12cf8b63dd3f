import Foundation
import XCTest
@testable import CouchbaseLiteSwift

/// Query, database and document change listeners: re-run after each committed write, called only
/// when something they watch changed, silent after removal. Each listener runs on a serial queue
/// the test drains with `queue.sync {}` after a write, so "not called" is checked exactly.
final class ChangeListenerTests: XCTestCase {
    private var directory: URL!
    private var db: Database!
    private let queue = DispatchQueue(label: "ChangeListenerTests")

    override func setUpWithError() throws {
        directory = try QueryTestSupport.temporaryDirectory()
        db = try Database(name: "live", config: DatabaseConfiguration(directory: directory.path))
        try save("t1", type: "task", title: "one")
        try save("n1", type: "note", title: "a note")
    }

    override func tearDownWithError() throws {
        try? db?.close()
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }

    private func save(_ id: String, type: String, title: String) throws {
        try db.saveDocument(MutableDocument(id: id).setString(type, forKey: "type").setString(title, forKey: "title"))
    }

    /// Collects what listeners report (they run on `queue`).
    final class Log: @unchecked Sendable {
        private let lock = NSLock()
        private var items: [[String]] = []
        func add(_ item: [String]) { lock.lock(); items.append(item); lock.unlock() }
        var all: [[String]] { lock.lock(); defer { lock.unlock() }; return items }
    }

    private func drain() { queue.sync {} }

    func testQueryListenerFiresOncePerChangingCommitOnly() throws {
        let query = try db.createQuery("SELECT title FROM _ WHERE type = 'task' ORDER BY title")
        let log = Log()
        let token = query.addChangeListener(withQueue: queue) { change in
            XCTAssertNil(change.error)
            log.add(change.results?.map { $0.string(at: 0) ?? "?" } ?? ["error"])
        }
        drain()
        XCTAssertEqual(log.all, [["one"]])                       // initial results

        try save("t2", type: "task", title: "two")
        drain()
        XCTAssertEqual(log.all.count, 2)
        XCTAssertEqual(log.all.last, ["one", "two"])

        try save("n2", type: "note", title: "unrelated")          // results unchanged: silent
        try db.purgeDocument(withID: "n1")
        drain()
        XCTAssertEqual(log.all.count, 2)

        try db.inBatch {                                          // one commit, one call
            try save("t3", type: "task", title: "three")
            try save("t4", type: "task", title: "four")
            try db.deleteDocument(try XCTUnwrap(db.document(withID: "t1")))
        }
        drain()
        XCTAssertEqual(log.all.count, 3)
        XCTAssertEqual(log.all.last, ["four", "three", "two"])

        struct Abort: Error {}
        XCTAssertThrowsError(try db.inBatch {                     // rolled back: nothing happened
            try save("t5", type: "task", title: "five")
            throw Abort()
        })
        drain()
        XCTAssertEqual(log.all.count, 3)

        query.removeChangeListener(withToken: token)
        try save("t6", type: "task", title: "six")
        drain()
        XCTAssertEqual(log.all.count, 3)
    }

    func testDatabaseAndDocumentListeners() throws {
        let dbLog = Log(), docLog = Log()
        let dbToken = db.addChangeListener(withQueue: queue) { dbLog.add($0.documentIDs) }
        let docToken = db.addDocumentChangeListener(withID: "t1", queue: queue) { docLog.add([$0.documentID]) }
        try save("x", type: "note", title: "x")
        try db.inBatch {
            try save("t1", type: "task", title: "edited")
            try save("y", type: "note", title: "y")
        }
        drain()
        XCTAssertEqual(dbLog.all, [["x"], ["t1", "y"]])
        XCTAssertEqual(docLog.all, [["t1"]])
        dbToken.remove()
        db.removeChangeListener(withToken: docToken)
        try save("t1", type: "task", title: "again")
        drain()
        XCTAssertEqual(dbLog.all.count, 2)
        XCTAssertEqual(docLog.all.count, 1)
    }

    func testChangesAsyncSequence() async throws {
        let query = try db.createQuery("SELECT count(*) FROM _ WHERE type = 'task'")
        let writer = db!
        var seen: [Int] = []
        for try await results in query.changes() {
            let n = results.allResults().first?.int(at: 0) ?? -1
            seen.append(n)
            if n == 1 {
                try writer.saveDocument(MutableDocument(id: "n9").setString("note", forKey: "type"))   // no change
                try writer.saveDocument(MutableDocument(id: "t9").setString("task", forKey: "type"))
            }
            if n == 2 { break }
        }
        XCTAssertEqual(seen, [1, 2])
    }

    func testConcurrentWritersEachChangeReportedOnce() throws {
        let log = Log()
        let token = db.addChangeListener(withQueue: queue) { log.add($0.documentIDs) }
        let database = db!
        DispatchQueue.concurrentPerform(iterations: 4) { w in
            for i in 0..<25 {
                if i % 5 == 0 {
                    try? database.inBatch {
                        try database.saveDocument(MutableDocument(id: "w\(w)-\(i)-a"))
                        try database.saveDocument(MutableDocument(id: "w\(w)-\(i)-b"))
                    }
                } else {
                    try? database.saveDocument(MutableDocument(id: "w\(w)-\(i)"))
                }
            }
        }
        drain()
        let ids = log.all.flatMap { $0 }
        XCTAssertEqual(ids.count, 4 * 30)
        XCTAssertEqual(Set(ids).count, ids.count)
        XCTAssertEqual(log.all.count, 4 * 25)          // one call per commit
        token.remove()
    }
}
