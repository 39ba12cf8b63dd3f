import Foundation
import Synchronization
import XCTest
@testable import CouchbaseLiteSwift

/// The 2.x types that are `Sendable` here are safe to share (issue 22): mutable documents,
/// dictionaries and arrays lock their contents; a result set hands each row out once.
final class ThreadSafety2xTests: XCTestCase {
    /// Eight threads each set 200 keys and append 200 items: nothing is lost or torn.
    func testMutableDocumentEditedFromManyThreads() {
        let doc = MutableDocument(id: "shared")
        let list = MutableArrayObject()
        doc.setArray(list, forKey: "list")
        DispatchQueue.concurrentPerform(iterations: 8) { t in
            for i in 0..<200 {
                doc.setInt(i, forKey: "k\(t)_\(i)")
                list.addInt(t * 1000 + i)
                _ = doc.count
                _ = list.toArray()
            }
        }
        XCTAssertEqual(doc.count, 8 * 200 + 1)
        XCTAssertEqual(list.count, 8 * 200)
        XCTAssertEqual(Set(list.toArray().compactMap { $0 as? Int }).count, 8 * 200)
        XCTAssertEqual(doc.int(forKey: "k7_199"), 199)
    }

    /// Four threads drain one result set: every row is handed out exactly once.
    func testResultSetRowsAreHandedOutOnce() throws {
        let temp = FileManager.default.temporaryDirectory.appendingPathComponent("cblthreads-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: temp, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: temp) }
        let docs: [(String, [String: Any])] = (0..<500).map { (String(format: "d%03d", $0), ["n": $0]) }
        let db = try QueryTestSupport.makeDatabase(name: "threads", in: temp, docs: docs)
        defer { try? db.close() }
        let query = try db.createQuery("SELECT n FROM _ WHERE n >= $min")
        query.parameters = Parameters().setInt(0, forName: "min")
        let results = try query.execute()
        let seen = Mutex<[Int]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            while let row = results.next() {
                let n = row.int(at: 0)
                seen.withLock { $0.append(n) }
            }
        }
        let values = seen.withLock { $0 }
        XCTAssertEqual(values.count, 500)
        XCTAssertEqual(Set(values), Set(0..<500))
    }
}
