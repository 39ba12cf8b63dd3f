import Foundation
import SQLiteKit

/// A database file as `Database` uses it: one writer `DataFile` and, on other connections to
/// the same WAL file (`SQLiteConnectionPool`, as the 1.x `CBLDatabase` does), reader
/// `DataFile`s. A read runs in its own read transaction on a reader, so it sees the last commit
/// and never waits for a write in progress on another thread (LiteCore's `DataFile` likewise
/// reads on its own connection while a transaction is open); a read by the thread holding the
/// writer (inside `inBatch`, or a write's own reads) runs on the writer and sees its
/// uncommitted writes. Safe from any thread.
// @unchecked because the pool serialises connections (see `SQLiteConnectionPool`) and each `DataFile` is used by the thread holding its connection.
package final class DataFilePool: @unchecked Sendable {
    /// How many reader connections may be open at once (as 1.x's `CBLDatabase`).
    static let readerConnectionLimit = 3

    /// The writer; use it only inside ``write(_:)``.
    let writer: DataFile
    private let pool: SQLiteConnectionPool
    private let lock = NSLock()
    /// Guarded by `lock`.
    private var closed = false

    /// - Parameters:
    ///   - writer: the open writer file, its functions and collations registered.
    ///   - prepareReader: registers on a new reader what the writer has (SQL functions,
    ///     collations); called again when a commit changed the schema (a new index may use a
    ///     new collation).
    init(writer: DataFile, prepareReader: @escaping @Sendable (DataFile) throws -> Void) {
        self.writer = writer
        let registry = ReaderRegistry()
        let path = writer.connection.path
        pool = SQLiteConnectionPool(writer: writer.connection, maximumReaderCount: Self.readerConnectionLimit) {
            // Read-only: SQLite refuses any write on a reader, so a read can never take the
            // writer's place by mistake. An immutable writer (a read-only look at a checkpointed
            // file) has its URI in `path`, which the readers reuse.
            let connection = try SQLiteConnection(path: path, mode: .init(readOnly: true, create: false))
            do {
                let file = try DataFile(readerOn: connection, of: writer)
                try prepareReader(file)
                registry.add(file)
                return connection
            } catch {
                connection.close()
                throw error
            }
        }
        self.registry = registry
        self.prepareReader = prepareReader
    }

    private let registry: ReaderRegistry
    private let prepareReader: @Sendable (DataFile) throws -> Void

    /// True once ``close()`` began.
    var isClosed: Bool {
        lock.lock()
        defer { lock.unlock() }
        return closed
    }

    /// Reader connections open now (idle or in use); 0 once closed and every read ended.
    var openReaderCount: Int { pool.openReaderCount }

    /// Runs `body` with the writer, after any write in progress on another thread (reads on other
    /// threads go on). Throws `.notOpen` once closed.
    func write<R>(_ body: (DataFile) throws -> R) throws -> R {
        try pool.write { _ in
            // Checked while holding the writer: `close()` waits for it, so the file stays open
            // until `body` returns.
            if isClosed { throw Self.notOpen(writer) }
            return try body(writer)
        }
    }

    /// Runs `body` on a reader in a read transaction (the last committed state), or on the writer
    /// when this thread holds it. Throws `.notOpen` once closed.
    func read<R>(_ body: (DataFile) throws -> R) throws -> R {
        if isClosed { throw Self.notOpen(writer) }
        do {
            return try pool.read { connection in
                if connection === writer.connection { return try body(writer) }
                guard let file = registry.file(for: connection) else {
                    throw CouchbaseLiteError(.assertionFailed, "A reader connection has no DataFile")
                }
                if try file.refreshForRead() { try prepareReader(file) }
                return try body(file)
            }
        } catch let e as SQLiteError where e.message == SQLiteConnectionPool.closedError.message {
            throw Self.notOpen(writer)
        }
    }

    /// Closes the writer and every reader: waits for a write in progress on another thread; a
    /// reader in use closes when its read ends.
    func close() {
        lock.lock()
        closed = true
        lock.unlock()
        // Idle readers close first and the writer last: the last connection to a WAL file
        // checkpoints it and deletes the `-wal` (a read-only reader cannot).
        pool.close()
        writer.close()
        registry.removeAll()
    }

    private static func notOpen(_ file: DataFile) -> CouchbaseLiteError {
        let name = file.directory.deletingPathExtension().lastPathComponent
        return CouchbaseLiteError(.notOpen, "Database '\(name)' is closed")
    }
}

/// The reader `DataFile` of each reader connection (the pool hands out connections).
// @unchecked because `files` is only touched under `lock`.
private final class ReaderRegistry: @unchecked Sendable {
    private let lock = NSLock()
    private var files: [ObjectIdentifier: DataFile] = [:]

    func add(_ file: DataFile) {
        lock.lock()
        files[ObjectIdentifier(file.connection)] = file
        lock.unlock()
    }

    func file(for connection: SQLiteConnection) -> DataFile? {
        lock.lock()
        defer { lock.unlock() }
        return files[ObjectIdentifier(connection)]
    }

    func removeAll() {
        lock.lock()
        files = [:]
        lock.unlock()
    }
}
