import Foundation
import Synchronization

/// The rows of one query run (2.x `ResultSet`): a sequence of ``Result``. Thread-safe: the
/// iteration position is behind a mutex, so two threads calling `next()` each get distinct rows.
public final class ResultSet: Sequence, IteratorProtocol, Sendable {
    let rows: [Result]
    private let position = Mutex(0)
    /// The result column names.
    public let columnNames: [String]

    init(rows: [Result], columnNames: [String]) {
        self.rows = rows
        self.columnNames = columnNames
    }

    /// The next row, or nil at the end.
    public func next() -> Result? {
        let index: Int? = position.withLock { position in
            guard position < rows.count else { return nil }
            defer { position += 1 }
            return position
        }
        return index.map { rows[$0] }
    }

    /// The rows not yet iterated.
    public func allResults() -> [Result] {
        let start = position.withLock { position in
            defer { position = rows.count }
            return position
        }
        return Array(rows[start...])
    }
}
