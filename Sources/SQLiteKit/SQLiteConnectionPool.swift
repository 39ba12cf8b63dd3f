import CSQLite
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One writer connection and a few reader connections on one WAL database file (the shape of
/// GRDB's `DatabasePool`): writes are serialised on the writer, and each read checks out a reader
/// and runs in its own read transaction, so it sees the last committed state and never waits for
/// a write in progress on another thread.
///
/// Two reads are routed differently, so that they neither deadlock nor miss data:
/// - on the thread that holds the writer, a read runs on the writer (it must see that thread's
///   uncommitted writes, and it must not wait for a reader while holding the writer);
/// - a read nested in another read on the same thread reuses the outer read's connection and
///   snapshot (it must not wait for a second reader while holding one).
// @unchecked because its mutable state is only touched under `writerLock`/`condition`, and connections are handed to one thread at a time.
package final class SQLiteConnectionPool: @unchecked Sendable {
    /// The one connection that writes. Use it only inside ``write(_:)``. Replaced only by
    /// ``reconnect(_:)``, which holds the writer: no access needs the runtime's exclusivity check.
    @exclusivity(unchecked) package private(set) var writer: SQLiteConnection
    /// How many reader connections may be open at once.
    package let maximumReaderCount: Int
    private var openReader: () throws -> SQLiteConnection
    /// Serialises writes; recursive, because a write may call code that writes.
    private let writerLock = NSRecursiveLock()
    private let condition = NSCondition()

    /// The thread holding the writer (guarded by `condition`: readers look at it).
    @exclusivity(unchecked) private var writerOwner: UInt?
    /// How deep the holder's writes are nested (only touched by the `writerLock` holder).
    @exclusivity(unchecked) private var writerDepth = 0
    // Guarded by `condition`:
    private var idleReaders: [SQLiteConnection] = []
    /// Readers open, idle or in use.
    private var readerCount = 0
    /// The reader each thread is reading on, and how deeply its reads nest.
    private var activeReads: [UInt: (connection: SQLiteConnection, depth: Int)] = [:]
    private var isClosed = false
    /// True while ``reconnect(_:)`` swaps the connections: check-outs wait.
    private var isReconnecting = false

    /// - Parameters:
    ///   - writer: the open writer connection (in WAL mode, or read-only).
    ///   - maximumReaderCount: readers opened on demand, at most this many (at least 1).
    ///   - openReader: opens one more reader connection on the same file, configured as the
    ///     writer is (collations, functions); called outside any lock.
    package init(writer: SQLiteConnection, maximumReaderCount: Int,
                openReader: @escaping () throws -> SQLiteConnection) {
        self.writer = writer
        self.maximumReaderCount = max(1, maximumReaderCount)
        self.openReader = openReader
    }

    deinit { close() }

    /// True when the calling thread is inside ``write(_:)``.
    package var currentThreadIsWriter: Bool {
        let me = Self.currentThread()
        condition.lock(); defer { condition.unlock() }
        return writerOwner == me
    }

    /// Reader connections open right now (idle or in use).
    package var openReaderCount: Int {
        condition.lock(); defer { condition.unlock() }
        return readerCount
    }

    /// Runs `body` with the writer, after any write in progress on another thread.
    package func write<R>(_ body: (SQLiteConnection) throws -> R) rethrows -> R {
        writerLock.lock()
        if writerDepth > 0 {
            // Nested on the thread that owns the writer: `writerOwner` is already this thread and
            // `writerDepth` is only touched by the `writerLock` holder, so `condition` is not needed
            // (every save inside a bulk `inTransaction` comes here).
            writerDepth += 1
            defer {
                writerDepth -= 1
                writerLock.unlock()
            }
            return try body(writer)
        }
        let me = Self.currentThread()
        condition.lock()
        writerOwner = me
        writerDepth += 1
        condition.unlock()
        defer {
            condition.lock()
            writerDepth -= 1
            if writerDepth == 0 { writerOwner = nil }
            condition.unlock()
            writerLock.unlock()
        }
        return try body(writer)
    }

    /// Runs `body` on a reader inside a read transaction (one snapshot of the last commit), or on
    /// the writer when this thread holds it. Waits only while every reader is busy with another read.
    package func read<R>(_ body: (SQLiteConnection) throws -> R) throws -> R {
        let me = Self.currentThread()
        condition.lock()
        if writerOwner == me {
            condition.unlock()
            return try body(writer)
        }
        if let active = activeReads[me] {
            activeReads[me] = (active.connection, active.depth + 1)
            condition.unlock()
            defer {
                condition.lock()
                activeReads[me] = (active.connection, active.depth)
                condition.unlock()
            }
            return try body(active.connection)
        }
        let reader = try checkOut()   // unlocks `condition`
        condition.lock()
        activeReads[me] = (reader, 1)
        condition.unlock()
        defer { checkIn(reader, thread: me) }
        try reader.beginReadTransaction()
        let result: R
        do {
            result = try body(reader)
        } catch {
            reader.endReadTransaction()
            throw error
        }
        reader.endReadTransaction()
        return result
    }

    /// Takes an idle reader, opens a new one, or waits for one. Called with `condition` locked;
    /// returns (or throws) with it unlocked.
    private func checkOut() throws -> SQLiteConnection {
        while true {
            if isClosed {
                condition.unlock()
                throw Self.closedError
            }
            if isReconnecting {
                condition.wait()
                continue
            }
            if let reader = idleReaders.popLast() {
                condition.unlock()
                return reader
            }
            if readerCount < maximumReaderCount {
                readerCount += 1
                let openReader = self.openReader
                condition.unlock()
                do {
                    return try openReader()
                } catch {
                    condition.lock()
                    readerCount -= 1
                    condition.broadcast()
                    condition.unlock()
                    throw error
                }
            }
            condition.wait()
        }
    }

    private func checkIn(_ reader: SQLiteConnection, thread: UInt) {
        condition.lock()
        activeReads[thread] = nil
        let closeIt = isClosed
        if closeIt {
            readerCount -= 1
        } else {
            idleReaders.append(reader)
        }
        condition.broadcast()
        condition.unlock()
        if closeIt { reader.close() }
    }

    /// Closes the writer and every reader; a reader in use closes when its read ends. Reads
    /// started afterwards throw. Waits for a write in progress on another thread.
    package func close() {
        writerLock.lock()
        defer { writerLock.unlock() }
        condition.lock()
        isClosed = true
        let idle = idleReaders
        idleReaders.removeAll()
        readerCount -= idle.count
        condition.broadcast()
        condition.unlock()
        for reader in idle { reader.close() }
        writer.close()
    }

    /// Replaces every connection, for when the database file itself was replaced (a change of
    /// encryption key): waits until no other thread is reading, closes the idle readers, and runs
    /// `reopen`, which closes the old writer, does its work and returns the new writer and reader
    /// opener. Reads wait meanwhile. Call it inside ``write(_:)``, outside any read. When `reopen`
    /// throws, the pool is closed.
    package func reconnect(_ reopen: () throws -> (writer: SQLiteConnection, openReader: () throws -> SQLiteConnection)) throws {
        let me = Self.currentThread()
        condition.lock()
        guard writerOwner == me else {
            condition.unlock()
            throw SQLiteError(code: SQLITE_MISUSE, message: "cannot replace the connections outside a write")
        }
        if activeReads[me] != nil {
            condition.unlock()
            throw SQLiteError(code: SQLITE_MISUSE, message: "cannot replace the connections inside a read")
        }
        isReconnecting = true
        while idleReaders.count < readerCount, !isClosed { condition.wait() }
        let idle = idleReaders
        idleReaders.removeAll()
        readerCount -= idle.count
        condition.unlock()
        for reader in idle { reader.close() }
        do {
            let (newWriter, newOpenReader) = try reopen()
            condition.lock()
            writer = newWriter
            openReader = newOpenReader
            isReconnecting = false
            condition.broadcast()
            condition.unlock()
        } catch {
            condition.lock()
            isClosed = true
            isReconnecting = false
            condition.broadcast()
            condition.unlock()
            writer.close()
            throw error
        }
    }

    /// What a read on a closed pool throws.
    package static let closedError = SQLiteError(code: SQLITE_MISUSE, message: "connection pool is closed")

    @inline(__always)
    private static func currentThread() -> UInt {
        #if canImport(Glibc)
        return UInt(pthread_self())
        #else
        return UInt(bitPattern: pthread_self())
        #endif
    }
}

extension SQLiteConnection {
    /// Starts a read transaction: the snapshot is taken by its first read (WAL).
    func beginReadTransaction() throws {
        try cached(static: "BEGIN DEFERRED").run()
    }

    /// Ends a read transaction. A statement left mid-step would keep the snapshot open past the
    /// transaction (later reads on this connection would then see old data), so any is reset first.
    func endReadTransaction() {
        var stmt = api.pointee.next_stmt(handle, nil)
        while let s = stmt {
            if api.pointee.stmt_busy(s) != 0 { _ = api.pointee.reset(s) }
            stmt = api.pointee.next_stmt(handle, s)
        }
        guard isInTransaction else { return }
        if (try? cached(static: "COMMIT").run()) == nil {
            try? cached(static: "ROLLBACK").run()
        }
    }
}
