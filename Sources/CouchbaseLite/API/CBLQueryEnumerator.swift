import Foundation

/// The result of running a query: an ordered, re-iterable list of rows.
// @unchecked because `position` is only touched under `lock`; the rows are immutable.
public final class CBLQueryEnumerator: NSObject, Sequence, @unchecked Sendable {
    private let rows: [CBLQueryRow]
    private let lock = NSLock()
    private var position = 0
    /// The database the rows came from.
    public let database: CBLDatabase
    /// The database sequence the index was at when the query ran.
    public let sequenceNumber: Int64
    private let indexedSequence: Int64
    /// CouchDB's `offset`: the index rows before the first row returned (skipped ones included);
    /// set for map queries that asked for it (``CBLQuery/countsOffset``), nil otherwise.
    public let offset: Int?

    init(database: CBLDatabase, rows: [CBLQueryRow], sequenceNumber: Int64, offset: Int? = nil) {
        self.database = database
        self.rows = rows
        self.sequenceNumber = sequenceNumber
        self.indexedSequence = sequenceNumber
        self.offset = offset
    }

    /// The number of rows.
    public var count: UInt { UInt(rows.count) }

    /// True if the database has changed since the query ran (the result may be out of date).
    public var stale: Bool { database.lastSequenceNumber > sequenceNumber }

    /// The next row, or nil at the end.
    public func nextRow() -> CBLQueryRow? {
        lock.lock(); defer { lock.unlock() }
        guard position < rows.count else { return nil }
        defer { position += 1 }
        return rows[position]
    }

    /// NSEnumerator-style spelling of ``nextRow()``.
    public func nextObject() -> Any? { nextRow() }

    /// The row at an index.
    public func row(at index: UInt) -> CBLQueryRow {
        rows[Int(index)]
    }

    /// Deprecated 1.x spelling of ``row(at:)``.
    public func rowAtIndex(_ index: UInt) -> CBLQueryRow { row(at: index) }

    /// Rewinds ``nextRow()`` to the first row.
    public func reset() {
        lock.lock(); defer { lock.unlock() }
        position = 0
    }

    /// All rows.
    public var allObjects: [CBLQueryRow] { rows }

    public func makeIterator() -> IndexingIterator<[CBLQueryRow]> { rows.makeIterator() }

    /// Two results are equal when their rows are (a LiveQuery notifies only when this changes).
    public override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? CBLQueryEnumerator else { return false }
        return other.rows.count == rows.count && zip(rows, other.rows).allSatisfy { $0.isEqual($1) }
    }

    public override var hash: Int { rows.count }
}
