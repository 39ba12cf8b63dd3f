import Foundation
import XCTest
@testable import CouchbaseLite

final class HandOffQueueTests: XCTestCase {
    func testItemsArriveInOrderAndFinishEndsTheConsumer() {
        let queue = HandOffQueue<Int>(capacity: 2)
        let received = Locked<[Int]>([])
        let done = DispatchSemaphore(value: 0)
        Thread {
            while let item = queue.pop() { received.withLock { $0.append(item) } }
            done.signal()
        }.start()
        for i in 0..<100 { XCTAssertTrue(queue.push(i)) }   // blocks whenever 2 are waiting
        queue.finish()
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(received.withLock { $0 }, Array(0..<100))
        XCTAssertNil(queue.pop(), "finished and drained")
    }

    func testTryPopNeverBlocks() {
        let queue = HandOffQueue<String>(capacity: .max)
        XCTAssertNil(queue.tryPop())
        queue.push("a")
        queue.push("b")
        XCTAssertEqual(queue.tryPop(), "a")
        XCTAssertEqual(queue.tryPop(), "b")
        XCTAssertNil(queue.tryPop())
    }

    func testCancelReleasesABlockedProducerAndDropsItems() {
        let queue = HandOffQueue<Int>(capacity: 1)
        XCTAssertTrue(queue.push(1))
        let pushed = Locked<Bool?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread {
            let ok = queue.push(2)   // the queue is full: waits until cancelled
            pushed.withLock { $0 = ok }
            done.signal()
        }.start()
        XCTAssertEqual(done.wait(timeout: .now() + 0.2), .timedOut, "a full queue blocks the producer")
        queue.cancel()
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(pushed.withLock { $0 }, false)
        XCTAssertNil(queue.pop(), "cancelled: pending items are dropped")
        XCTAssertFalse(queue.push(3))
    }
}
