import Foundation
import OpenCombine
import XCTest
@testable import CouchbaseLiteSwift

/// The change publishers (OpenCombine) and change streams (AsyncSequence): one event per
/// committed change, on the queue asked for, nothing after cancelling. Each publisher delivers on
/// a serial queue the test drains with `queue.sync {}` after a write: every event of that commit
/// has been delivered by then, so "no event" is checked exactly, without sleeping.
final class ChangePublisherTests: XCTestCase {
    private var directory: URL!
    private var db: Database!
    private var tasks: CouchbaseLiteSwift.Collection!
    private let key = DispatchSpecificKey<String>()
    private var queue: DispatchQueue!

    override func setUpWithError() throws {
        directory = try QueryTestSupport.temporaryDirectory()
        db = try CollectionTestSupport.open("publishers", in: directory)
        tasks = try db.createCollection(name: "tasks")
        queue = DispatchQueue(label: "ChangePublisherTests")
        queue.setSpecific(key: key, value: "publisher-queue")
    }

    override func tearDownWithError() throws {
        try? db?.close()
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }

    /// What a subscriber received, and whether each value arrived on the test's queue.
    final class Received<Value>: @unchecked Sendable {
        private let lock = NSLock()
        private var values: [Value] = []
        private var offQueue = 0
        func add(_ value: Value, onQueue: Bool) {
            lock.lock()
            values.append(value)
            if !onQueue { offQueue += 1 }
            lock.unlock()
        }
        var all: [Value] { lock.lock(); defer { lock.unlock() }; return values }
        var deliveredOffQueue: Int { lock.lock(); defer { lock.unlock() }; return offQueue }
    }

    private func onQueue() -> Bool { DispatchQueue.getSpecific(key: key) == "publisher-queue" }
    private func drain() { queue.sync {} }

    private func save(_ id: String, _ title: String, in collection: CouchbaseLiteSwift.Collection? = nil) throws {
        try (collection ?? tasks).save(document: MutableDocument(id: id).setString(title, forKey: "title"))
    }

    // MARK: Collection

    func testCollectionPublisherSendsOneEventPerCommitOnTheQueue() throws {
        let received = Received<[String]>()
        let cancellable = tasks.changePublisher(on: queue).sink { [self] change in
            XCTAssertEqual(change.collection, tasks)
            received.add(change.documentIDs, onQueue: onQueue())
        }
        try save("a", "one")
        drain()
        XCTAssertEqual(received.all, [["a"]])

        try db.inBatch {
            try save("b", "two")
            try save("c", "three")
            try save("a", "one again")
        }
        drain()
        XCTAssertEqual(received.all, [["a"], ["b", "c", "a"]], "a batch of three saves is one event")

        // Other collections' commits are not this collection's changes.
        try save("x", "elsewhere", in: try db.defaultCollection())
        drain()
        XCTAssertEqual(received.all.count, 2)

        try tasks.delete(document: try XCTUnwrap(tasks.document(id: "b")))
        try tasks.purge(id: "c")
        drain()
        XCTAssertEqual(received.all.suffix(2), [["b"], ["c"]])
        XCTAssertEqual(received.deliveredOffQueue, 0)

        cancellable.cancel()
        try save("d", "after cancel")
        drain()
        XCTAssertEqual(received.all.count, 4, "nothing after cancel")
    }

    func testConcurrentWritersGiveOneEventEach() throws {
        let received = Received<[String]>()
        let cancellable = tasks.changePublisher(on: queue).sink { [self] in received.add($0.documentIDs, onQueue: onQueue()) }
        let tasks = self.tasks!
        DispatchQueue.concurrentPerform(iterations: 20) { i in
            do { try tasks.save(document: MutableDocument(id: "w\(i)").setInt(i, forKey: "n")) } catch { XCTFail("\(error)") }
        }
        drain()
        XCTAssertEqual(received.all.count, 20)
        XCTAssertEqual(Set(received.all.flatMap { $0 }), Set((0..<20).map { "w\($0)" }))
        XCTAssertEqual(received.deliveredOffQueue, 0)
        cancellable.cancel()
    }

    func testEachSubscriptionHasItsOwnListener() throws {
        let publisher = tasks.changePublisher(on: queue)
        XCTAssertEqual(db.observers.count, 0, "nothing is registered before subscribing")
        let first = Received<[String]>()
        let second = Received<[String]>()
        let c1 = publisher.sink { first.add($0.documentIDs, onQueue: true) }
        let c2 = publisher.sink { second.add($0.documentIDs, onQueue: true) }
        XCTAssertEqual(db.observers.count, 2)
        try save("a", "one")
        drain()
        c1.cancel()
        XCTAssertEqual(db.observers.count, 1, "cancelling removes the listener")
        try save("b", "two")
        drain()
        XCTAssertEqual(first.all, [["a"]])
        XCTAssertEqual(second.all, [["a"], ["b"]])
        c2.cancel()
        XCTAssertEqual(db.observers.count, 0)
    }

    func testDemandIsHonouredAndWaitingEventsComeInOrderOnTheQueue() throws {
        final class OneAtATime: Subscriber, @unchecked Sendable {
            typealias Input = CollectionChange
            typealias Failure = Never
            private let lock = NSLock()
            private var subscription: (any Subscription)?
            private var ids: [[String]] = []
            private var offQueue = 0
            let check: () -> Bool
            init(check: @escaping () -> Bool) { self.check = check }
            func receive(subscription: any Subscription) {
                lock.lock(); self.subscription = subscription; lock.unlock()
                subscription.request(.max(1))
            }
            func receive(_ input: CollectionChange) -> Subscribers.Demand {
                lock.lock(); ids.append(input.documentIDs); if !check() { offQueue += 1 }; lock.unlock()
                return .none
            }
            func receive(completion: Subscribers.Completion<Never>) {}
            func more() { lock.lock(); let s = subscription; lock.unlock(); s?.request(.max(1)) }
            func cancel() { lock.lock(); let s = subscription; lock.unlock(); s?.cancel() }
            var received: [[String]] { lock.lock(); defer { lock.unlock() }; return ids }
            var deliveredOffQueue: Int { lock.lock(); defer { lock.unlock() }; return offQueue }
        }
        let subscriber = OneAtATime { [self] in onQueue() }
        tasks.changePublisher(on: queue).subscribe(subscriber)
        try save("a", "1")
        try save("b", "2")
        try save("c", "3")
        drain()
        XCTAssertEqual(subscriber.received, [["a"]], "demand of one: one event")
        subscriber.more()
        drain()
        XCTAssertEqual(subscriber.received, [["a"], ["b"]], "the waiting events come in order")
        subscriber.more()
        drain()
        XCTAssertEqual(subscriber.received, [["a"], ["b"], ["c"]])
        subscriber.more()
        drain()
        XCTAssertEqual(subscriber.received.count, 3)
        XCTAssertEqual(subscriber.deliveredOffQueue, 0)
        subscriber.cancel()
        XCTAssertEqual(db.observers.count, 0)
    }

    // MARK: Document

    func testDocumentPublisherSendsOnlyThatDocumentsCommits() throws {
        let received = Received<String>()
        let cancellable = tasks.documentChangePublisher(for: "a", on: queue).sink { [self] change in
            XCTAssertEqual(change.collection, tasks)
            received.add(change.documentID, onQueue: onQueue())
        }
        try save("a", "one")
        try save("b", "other")
        try db.inBatch {
            try save("a", "two")
            try save("a", "three")
        }
        drain()
        XCTAssertEqual(received.all, ["a", "a"], "one event per commit that touched it")
        try tasks.delete(document: try XCTUnwrap(tasks.document(id: "a")))
        drain()
        XCTAssertEqual(received.all.count, 3)
        XCTAssertEqual(received.deliveredOffQueue, 0)
        cancellable.cancel()
        try save("a", "back")
        drain()
        XCTAssertEqual(received.all.count, 3)
    }

    // MARK: Query

    func testQueryPublisherSendsResultsThenEachChange() throws {
        try save("a", "one")
        let query = try db.createQuery("SELECT meta().id AS id, title FROM tasks ORDER BY title")
        let received = Received<[String]>()
        let cancellable = query.changePublisher(on: queue).sink { [self] change in
            XCTAssertNil(change.error)
            received.add(change.results?.map { $0.string(forKey: "title") ?? "?" } ?? [], onQueue: onQueue())
        }
        drain()
        XCTAssertEqual(received.all, [["one"]], "the current results first")
        try db.inBatch {
            try save("b", "two")
            try save("c", "three")
        }
        drain()
        XCTAssertEqual(received.all.last, ["one", "three", "two"])
        XCTAssertEqual(received.all.count, 2)
        try save("x", "not a task", in: try db.defaultCollection())
        drain()
        XCTAssertEqual(received.all.count, 2, "a commit that cannot change the results sends nothing")
        XCTAssertEqual(received.deliveredOffQueue, 0)

        cancellable.cancel()
        try save("d", "four")
        drain()
        XCTAssertEqual(received.all.count, 2)
        XCTAssertEqual(db.observers.count, 0)
    }

    func testPublishIsChangePublisherAndDefaultQueueWorks() throws {
        try save("a", "one")
        let query = try db.createQuery("SELECT title FROM tasks")
        let first = expectation(description: "initial results")
        let received = Received<Int>()
        let cancellable = query.publish().sink { change in
            received.add(change.results?.allResults().count ?? -1, onQueue: true)
            if received.all.count == 1 { first.fulfill() }
        }
        wait(for: [first], timeout: 5)
        XCTAssertEqual(received.all, [1])
        cancellable.cancel()
    }

    func testPublisherValuesAsAsyncSequenceKeepEveryEvent() async throws {
        // OpenCombine's `values` subscribes when the iterator is made and asks for one value per
        // `next()`: the events of commits made in between wait for it, none is dropped.
        var iterator = tasks.changePublisher(on: queue).values.makeAsyncIterator()
        try save("a", "1")
        try save("b", "2")
        try save("c", "3")
        var seen: [[String]] = []
        for _ in 0..<3 { seen.append(await iterator.next()?.documentIDs ?? []) }
        XCTAssertEqual(seen, [["a"], ["b"], ["c"]])
    }

    // MARK: Async streams

    func testCollectionChangesStream() async throws {
        let stream = tasks.changes()            // listening from here
        try save("a", "one")
        try db.inBatch {
            try save("b", "two")
            try save("c", "three")
        }
        var iterator = stream.makeAsyncIterator()
        let first = await iterator.next()
        let second = await iterator.next()
        XCTAssertEqual(first?.documentIDs, ["a"])
        XCTAssertEqual(second?.documentIDs, ["b", "c"])
    }

    func testDocumentChangesStreamAndCancellation() async throws {
        let stream = tasks.documentChanges(for: "a")
        try save("b", "other")
        try save("a", "one")
        var iterator = stream.makeAsyncIterator()
        let change = await iterator.next()
        XCTAssertEqual(change?.documentID, "a")

        let db = self.db!
        let tasks = self.tasks!
        let before = db.observers.count
        let reader = Task { for await _ in tasks.changes() {} }
        try await waitFor { db.observers.count == before + 1 }
        reader.cancel()
        try await waitFor { db.observers.count == before }
    }

    // MARK: Helpers

    /// Polls `condition` on the main task with yields, for at most 5 seconds.
    private func waitFor(_ condition: @escaping @Sendable () -> Bool) async throws {
        let deadline = Date().addingTimeInterval(5)
        while !condition() {
            guard Date() < deadline else { return XCTFail("condition not met within 5 s") }
            await Task.yield()
        }
    }
}
