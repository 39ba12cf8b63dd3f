import JSONCore
import SQLiteKit

/// The fields of a ``CBLDatabase`` that only the thread holding its writer touches (inside
/// `SQLiteConnectionPool.write`: a write, a transaction, closing, re-keying), without the
/// database's lock: they are reachable only through ``WriterOwned/withState(_:)``. A field other
/// threads read belongs in ``GuardedState`` instead.
struct WriterState {
    /// The store on the writer connection, as the writer's holder sees it (a copy of
    /// `GuardedState.store`, read without the lock once per saved document); nil once closed.
    var store: SQLiteStore?
    /// The changes of the open transaction, as delivered after it commits.
    var pendingChanges = PendingChanges()
    /// Set when a non-atomic nested write failed half-way: the outermost transaction must roll back.
    var transactionPoisoned = false
    /// Numbers the outermost transactions (from 1): a document's uncommitted state names the one it belongs to.
    var transactionSerial: UInt64 = 0
    /// Reused to encode the body of a new document (see `insertNewDocument`), so a save
    /// allocates no JSON buffer.
    var bodyWriter = JSONWriter(capacity: 1024)

    init(store: SQLiteStore) {
        self.store = store
    }
}

/// The ``WriterState`` of a database, lent to the thread that holds the database's writer.
///
/// Holding the writer is what serialises access, so no lock is taken; debug builds check that the
/// caller holds it. ``withState(_:)`` does not nest: the state is lent `inout`, and a second
/// `withState` inside the first is an exclusivity violation the runtime stops. So a body touches
/// the fields and calls no code that could reach them (app code, a nested write).
// @unchecked because `state` is reached only through `withState`, by the thread holding `pool`'s writer.
final class WriterOwned: @unchecked Sendable {
    private let pool: SQLiteConnectionPool
    /// Keeps the runtime's exclusivity check (one per `withState`; its cost is measured at
    /// ``DatabaseLock``'s `state`), which is what stops a nested `withState`.
    private var state: WriterState

    init(_ state: WriterState, pool: SQLiteConnectionPool) {
        self.state = state
        self.pool = pool
    }

    /// Runs `body` with the writer's fields. The calling thread holds the writer.
    @inline(__always)
    func withState<R>(_ body: (inout WriterState) throws -> R) rethrows -> R {
        // Debug builds only: the check takes the pool's condition lock, and this runs a few times per saved document.
        assert(pool.currentThreadIsWriter, "a database's WriterState was touched by a thread not holding its writer")
        return try body(&state)
    }
}
