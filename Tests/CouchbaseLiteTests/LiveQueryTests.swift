import Foundation
import XCTest
@testable import CouchbaseLite

/// An app class observing `rows` the 1.x way (minus `override`, which Linux forces).
private final class RowsObserver: NSObject, CBLKeyValueObserving, @unchecked Sendable {
    let lock = NSLock()
    var counts: [UInt] = []
    let onChange: (UInt) -> Void

    init(onChange: @escaping (UInt) -> Void) { self.onChange = onChange }

    func observeValue(forKeyPath keyPath: String?, of object: Any?, change: [NSKeyValueChangeKey: Any]?,
                      context: UnsafeMutableRawPointer?) {
        guard keyPath == "rows", let rows = change?[.newKey] as? CBLQueryEnumerator else { return }
        lock.lock(); counts.append(rows.count); lock.unlock()
        onChange(rows.count)
    }
}

final class LiveQueryTests: DatabaseTestCase {
    override var databaseName: String { "live" }

    func testLiveQueryUpdatesListenersAndKVOObservers() throws {
        try db.document(withID: "a")!.putProperties(["n": 1])
        let view = db.viewNamed("n")
        // `doc["n"]` is nil for documents without it: 1.x ignores emit(nil, …).
        view.setMapBlock({ doc, emit in emit(doc["n"] as Any, nil) }, version: "1")
        let live = view.createQuery().asLive()
        live.updateInterval = 0.05
        XCTAssertTrue(live.waitForRows())
        XCTAssertEqual(live.rows?.count, 1)

        let sawTwo = expectation(description: "listener saw 2 rows")
        let token = live.addChangeListener { rows in if rows.count == 2 { sawTwo.fulfill() } }
        let kvoSawTwo = expectation(description: "KVO observer saw 2 rows")
        let observer = RowsObserver { count in if count == 2 { kvoSawTwo.fulfill() } }
        live.addObserver(observer, forKeyPath: "rows", options: .new, context: nil)

        try db.document(withID: "b")!.putProperties(["n": 2])
        wait(for: [sawTwo, kvoSawTwo], timeout: 10)

        // A change that leaves the rows identical does not notify.
        let before = observer.lock.withLock { observer.counts.count }
        try db.putLocalDocument(["x": 1], withID: "irrelevant")
        try db.document(withID: "unrelated")!.putProperties(["other": true])   // not emitted: n missing → nil key
        Thread.sleep(forTimeInterval: 0.4)
        XCTAssertEqual(observer.lock.withLock { observer.counts.count }, before)

        live.removeObserver(observer, forKeyPath: "rows")
        live.removeChangeListener(token)
        live.stop()
    }

    func testAsyncSequenceOfResults() async throws {
        let database = db!
        try database.document(withID: "a")!.putProperties(["n": 1])
        let live = database.createAllDocumentsQuery().asLive()
        live.updateInterval = 0.02
        let stream = live.changes()
        var counts: [UInt] = []
        for await rows in stream {
            counts.append(rows.count)
            if counts.count == 1 { try database.document(withID: "b")!.putProperties(["n": 2]) }
            if rows.count == 2 { break }
        }
        live.stop()
        XCTAssertEqual(counts.first, 1)
        XCTAssertEqual(counts.last, 2)
    }

    func testConcurrentChangesAreDebouncedAndSafe() throws {
        let live = db.createAllDocumentsQuery().asLive()
        live.updateInterval = 0.1
        XCTAssertTrue(live.waitForRows())
        let final = expectation(description: "saw 200 rows")
        let token = live.addChangeListener { rows in if rows.count == 200 { final.fulfill() } }
        let database = db!
        DispatchQueue.concurrentPerform(iterations: 4) { worker in
            for i in 0..<50 {
                do {
                    try database.document(withID: "w\(worker)-\(i)")!.putProperties(["i": i])
                } catch {
                    XCTFail("save w\(worker)-\(i) failed: \(error)")
                }
            }
        }
        wait(for: [final], timeout: 15)
        live.removeChangeListener(token)
        live.stop()
    }
}
