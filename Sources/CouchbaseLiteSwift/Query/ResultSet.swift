import Foundation

/// The rows of one query run (2.x `ResultSet`): a sequence of ``Result``.
public final class ResultSet: Sequence, IteratorProtocol, @unchecked Sendable {
    let rows: [Result]
    private var position = 0
    /// The result column names.
    public let columnNames: [String]

    init(rows: [Result], columnNames: [String]) {
        self.rows = rows
        self.columnNames = columnNames
    }

    /// The next row, or nil at the end.
    public func next() -> Result? {
        guard position < rows.count else { return nil }
        defer { position += 1 }
        return rows[position]
    }

    /// The rows not yet iterated.
    public func allResults() -> [Result] {
        let rest = Array(rows[position...])
        position = rows.count
        return rest
    }
}
