import Foundation
import Synchronization

/// 2.x's date rule, in one place: a `Date` is stored as an ISO-8601 string in UTC with
/// milliseconds (`2017-01-01T00:00:00.000Z`), and a string reads as a date with or without the
/// fraction. The formatters are made once (making one costs far more than using it) and used
/// under a mutex, since Foundation does not promise they are thread-safe on Linux.
enum ISO8601 {
    private struct Formatters {
        let withFraction: ISO8601DateFormatter
        let plain: ISO8601DateFormatter

        init() {
            withFraction = ISO8601DateFormatter()
            withFraction.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            withFraction.timeZone = TimeZone(identifier: "UTC")
            plain = ISO8601DateFormatter()
            plain.formatOptions = [.withInternetDateTime]
        }
    }

    private static let formatters = Mutex(Formatters())

    /// `date` as 2.x writes it (UTC, milliseconds).
    static func string(from date: Date) -> String {
        formatters.withLock { $0.withFraction.string(from: date) }
    }

    /// The date an ISO-8601 string names (with or without fractional seconds), or nil.
    static func parse(_ s: String) -> Date? {
        formatters.withLock { $0.withFraction.date(from: s) ?? $0.plain.date(from: s) }
    }
}
