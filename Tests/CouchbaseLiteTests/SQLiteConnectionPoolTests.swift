import Foundation
import SQLiteKit
import XCTest

/// The pool itself, on a plain WAL file: snapshot reads beside an open write transaction, and
/// the routing that keeps nested reads and reads inside a write from waiting or missing data.
final class SQLiteConnectionPoolTests: XCTestCase {
    private var directory: TempDirectory!
    private var pool: SQLiteConnectionPool!

    override func setUpWithError() throws {
        directory = TempDirectory("cbl-pool")
        let path = directory.url.appendingPathComponent("pool.sqlite3").path
        let writer = try SQLiteConnection(path: path)
        try writer.execute("PRAGMA journal_mode = WAL")
        try writer.execute("CREATE TABLE t (v INTEGER)")
        try writer.execute("INSERT INTO t VALUES (1)")
        pool = SQLiteConnectionPool(writer: writer, maximumReaderCount: 1) {
            let reader = try SQLiteConnection(path: path, mode: .init(readOnly: false, create: false))
            try reader.execute("PRAGMA query_only = 1")
            return reader
        }
    }

    override func tearDownWithError() throws {
        pool?.close()
        pool = nil
        directory = nil
    }

    private func sum(_ c: SQLiteConnection) throws -> Int64 { try Self.sum(c) }
    private static func sum(_ c: SQLiteConnection) throws -> Int64 { try c.scalarInt("SELECT sum(v) FROM t") ?? 0 }

    func testReadOnAnotherThreadSeesLastCommitWhileAWriteTransactionIsOpen() throws {
        let pool = try XCTUnwrap(pool)
        let insideWrite = DispatchSemaphore(value: 0), readDone = DispatchSemaphore(value: 0)
        let seen = LockedValue<Int64?>(nil)
        let readFinishedInside = LockedValue(false)
        let writer = DispatchGroup()
        writer.enter()
        Thread.detachNewThread {
            pool.write { c in
                try? c.transaction {
                    try c.execute("INSERT INTO t VALUES (10)")
                    // Inside the write, this thread reads the writer: its own uncommitted row.
                    XCTAssertEqual(try pool.read { try Self.sum($0) }, 11)
                    insideWrite.signal()
                    readFinishedInside.set(readDone.wait(timeout: .now() + 20) == .success)
                }
            }
            writer.leave()
        }
        XCTAssertEqual(insideWrite.wait(timeout: .now() + 20), .success)
        XCTAssertFalse(pool.currentThreadIsWriter)
        seen.set(try pool.read { try sum($0) })
        readDone.signal()
        XCTAssertEqual(writer.wait(timeout: .now() + 20), .success)
        XCTAssertTrue(readFinishedInside.get(), "the read waited for the write transaction")
        XCTAssertEqual(seen.get(), 1)
        XCTAssertEqual(try pool.read { try sum($0) }, 11)
    }

    func testNestedReadReusesItsConnectionAndSnapshot() throws {
        let pool = try XCTUnwrap(pool)
        // One reader only: a nested read that checked out a second one would wait forever.
        let result = try pool.read { outer -> (Int64, Int64, Bool) in
            let before = try sum(outer)
            // A commit made meanwhile (on another thread) is not seen inside the same read.
            let done = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                pool.write { try? $0.execute("INSERT INTO t VALUES (100)") }
                done.signal()
            }
            XCTAssertEqual(done.wait(timeout: .now() + 20), .success)
            return try pool.read { inner in (before, try sum(inner), inner === outer) }
        }
        XCTAssertEqual(result.0, 1)
        XCTAssertEqual(result.1, 1, "the nested read left the outer read's snapshot")
        XCTAssertTrue(result.2)
        XCTAssertEqual(try pool.read { try sum($0) }, 101)
        XCTAssertEqual(pool.openReaderCount, 1)
    }

    func testReadersAreQueryOnlyAndClosedWithThePool() throws {
        let pool = try XCTUnwrap(pool)
        XCTAssertThrowsError(try pool.read { try $0.execute("INSERT INTO t VALUES (5)") })
        XCTAssertEqual(pool.openReaderCount, 1)
        pool.close()
        XCTAssertEqual(pool.openReaderCount, 0)
        XCTAssertThrowsError(try pool.read { try sum($0) })
    }
}
