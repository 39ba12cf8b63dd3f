import Foundation

/// The built-in reduce functions CouchDB offers (`_count`, `_sum`, `_stats`), as
/// `CBLReduceBlock`s: `view.setMapBlock(map, reduce: CBLBuiltinReducer.count.block, version: "1")`.
public enum CBLBuiltinReducer: String, CaseIterable, Sendable {
    /// The number of rows (re-reduce: the sum of the counts).
    case count = "_count"
    /// The sum of the numeric values (non-numbers count as 0).
    case sum = "_sum"
    /// `{"sum", "count", "min", "max", "sumsqr"}` of the numeric values.
    case stats = "_stats"

    /// The reducer named `name` (`count` or `_count`, …), or nil.
    public init?(named name: String) {
        self.init(rawValue: name.hasPrefix("_") ? name : "_" + name)
    }

    /// The reduce function.
    public var block: CBLReduceBlock {
        switch self {
        case .count:
            return { _, values, rereduce in
                rereduce ? Self.number(values.reduce(0.0) { $0 + (Self.double($1) ?? 0) }) : values.count
            }
        case .sum:
            return { _, values, _ in Self.number(values.reduce(0.0) { $0 + (Self.double($1) ?? 0) }) }
        case .stats:
            return { _, values, rereduce in
                var sum = 0.0, count = 0.0, sumsqr = 0.0
                var lo = Double.infinity, hi = -Double.infinity
                for v in values {
                    if rereduce, let s = v as? [String: Any] {
                        sum += Self.double(s["sum"]) ?? 0
                        count += Self.double(s["count"]) ?? 0
                        sumsqr += Self.double(s["sumsqr"]) ?? 0
                        lo = min(lo, Self.double(s["min"]) ?? lo)
                        hi = max(hi, Self.double(s["max"]) ?? hi)
                    } else if let d = Self.double(v) {
                        sum += d; count += 1; sumsqr += d * d
                        lo = min(lo, d); hi = max(hi, d)
                    }
                }
                return ["sum": Self.number(sum), "count": Self.number(count), "min": count > 0 ? Self.number(lo) : 0,
                        "max": count > 0 ? Self.number(hi) : 0, "sumsqr": Self.number(sumsqr)] as [String: Any]
            }
        }
    }

    static func double(_ v: Any?) -> Double? {
        switch v {
        case let b as Bool: return b ? 1 : 0
        case let i as Int: return Double(i)
        case let i as Int64: return Double(i)
        case let d as Double: return d
        case let n as NSNumber: return n.doubleValue
        default: return nil
        }
    }

    /// Whole numbers as `Int`, so `3` prints as 3, not 3.0.
    static func number(_ d: Double) -> Any {
        d == d.rounded() && abs(d) < 9.0e15 ? Int(d) : d
    }
}
