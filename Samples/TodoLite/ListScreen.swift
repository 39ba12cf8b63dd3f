import Foundation

/// Stands in for the app's list screen: a live query hands it new rows, it "redraws" (prints)
/// when what it shows changed, and the sample can wait, for a bounded time, until a change shows.
final class ListScreen: @unchecked Sendable {
    let title: String
    private let condition = NSCondition()
    private var shown: [TaskRow] = []
    private var redraws = 0

    init(title: String) {
        self.title = title
    }

    /// Called by the live query's change listener (on a background queue).
    func show(_ rows: [TaskRow]) {
        condition.lock()
        defer { condition.unlock() }
        guard rows != shown || redraws == 0 else { return }
        shown = rows
        redraws += 1
        print("live query: \(title): " + (rows.isEmpty ? "(empty)" : rows.map(\.line).joined(separator: ", ")))
        condition.broadcast()
    }

    /// Waits until the screen shows rows satisfying `condition` (at most `timeout` seconds).
    func waitUntil(_ what: String, timeout: TimeInterval = 10, _ satisfied: ([TaskRow]) -> Bool) throws {
        let deadline = Date().addingTimeInterval(timeout)
        condition.lock()
        defer { condition.unlock() }
        while redraws == 0 || !satisfied(shown) {
            guard condition.wait(until: deadline) else {
                throw SampleError("the live query did not show \(what) within \(Int(timeout)) s")
            }
        }
    }
}

/// A failure the sample reports (exit status 1).
struct SampleError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
