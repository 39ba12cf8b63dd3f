import Foundation
import JSONCore

/// The built-in reduce functions CouchDB offers (`_count`, `_sum`, `_stats`, `_approx_count_distinct`). Tools reduce a
/// view's stored index with them (`cbl query --reduce`, `cbl compare`), since the app's own reduce
/// is a closure and not in the file; apps may use `block` as a view's reduce.
public enum CBLBuiltinReducer: String, CaseIterable, Sendable {
    /// The number of rows (re-reduce: the sum of the counts).
    case count = "_count"
    /// The sum of the numeric values; arrays of numbers are summed element by element.
    case sum = "_sum"
    /// `{"sum", "count", "min", "max", "sumsqr"}` of the numeric values (min/max null when empty).
    case stats = "_stats"
    /// The number of distinct keys (CouchDB estimates it with HyperLogLog; this count is exact).
    case approxCountDistinct = "_approx_count_distinct"

    /// The reducer named `name` (`count` or `_count`, …), or nil.
    public init?(named name: String) {
        self.init(rawValue: name.hasPrefix("_") ? name : "_" + name)
    }

    /// The reducer a design document's `reduce` source names: as CouchDB, a built-in is matched
    /// by its name's prefix (`"_sum"`, `"_sumorama"`, `"_count\n"`), nil when none matches.
    public init?(designDocumentSource source: String) {
        guard let match = Self.allCases.first(where: { source.hasPrefix($0.rawValue) }) else { return nil }
        self = match
    }

    /// Reduces `values` (or, when `rereduce`, earlier results of this reducer). `_sum` and
    /// `_stats` need numbers, as in CouchDB: anything else is a `badRequest` naming the key.
    public func reduce(keys: [Any], values: [Any], rereduce: Bool) throws -> Any {
        switch self {
        case .count:
            if !rereduce { return values.count }
            var total = NumberAccumulator()
            for v in values { if let n = Number(v) { total.add(n) } }
            return total.value
        case .sum:
            if values.contains(where: { $0 is [Any] }) { return try sumArrays(keys: keys, values: values) }
            var total = NumberAccumulator()
            for (i, v) in values.enumerated() { total.add(try number(v, key: rereduce ? nil : keys[safe: i])) }
            return total.value
        case .approxCountDistinct:
            // Partial results stay sets of key texts so that re-reducing them stays exact; the
            // query runner turns the final one into its count.
            var distinct = Set<String>()
            if rereduce {
                for v in values {
                    if let d = v as? DistinctKeys { distinct.formUnion(d.keys) }
                }
            } else {
                for key in keys { distinct.insert(Self.text(key)) }
            }
            return DistinctKeys(keys: distinct)
        case .stats:
            var sum = NumberAccumulator(), sumsqr = NumberAccumulator(), count = NumberAccumulator()
            var minimum: Number?, maximum: Number?
            func extend(_ lo: Number?, _ hi: Number?) {
                if let lo, minimum.map({ lo.double < $0.double }) ?? true { minimum = lo }
                if let hi, maximum.map({ hi.double > $0.double }) ?? true { maximum = hi }
            }
            for (i, v) in values.enumerated() {
                if rereduce, let s = v as? [String: Any] {
                    for (acc, field) in [(0, "sum"), (1, "sumsqr"), (2, "count")] {
                        guard let n = s[field].flatMap(Number.init) else { continue }
                        switch acc { case 0: sum.add(n); case 1: sumsqr.add(n); default: count.add(n) }
                    }
                    extend(s["min"].flatMap(Number.init), s["max"].flatMap(Number.init))
                } else {
                    let n = try number(v, key: keys[safe: i])
                    sum.add(n)
                    sumsqr.add(n.squared)
                    count.add(.int(1))
                    extend(n, n)
                }
            }
            return ["sum": sum.value, "count": count.value, "min": minimum?.any ?? NSNull(),
                    "max": maximum?.any ?? NSNull(), "sumsqr": sumsqr.value] as [String: Any]
        }
    }

    /// The reducer as a view's reduce block; a value it cannot reduce makes the result null.
    public var block: CBLReduceBlock {
        { keys, values, rereduce in (try? reduce(keys: keys, values: values, rereduce: rereduce)) ?? NSNull() }
    }

    /// The reducer as a view's reduce block whose failures make the query fail with their error
    /// (what a design document's `"reduce": "_sum"` gets, as CouchDB answers such a query).
    var failingBlock: CBLReduceBlock {
        { keys, values, rereduce in
            do { return try reduce(keys: keys, values: values, rereduce: rereduce) } catch {
                return CBLReduceFailure(error: error as? CBLError ?? CBLError(500, "\(error)"))
            }
        }
    }

    /// CouchDB's `_sum` over arrays: element-wise, shorter arrays count as zeros there.
    private func sumArrays(keys: [Any], values: [Any]) throws -> Any {
        var totals: [NumberAccumulator] = []
        for (i, v) in values.enumerated() {
            let elements = v as? [Any] ?? [v]
            for (j, element) in elements.enumerated() {
                let n = try number(element, key: keys[safe: i])
                if j == totals.count { totals.append(NumberAccumulator()) }
                totals[j].add(n)
            }
        }
        return totals.map(\.value)
    }

    private func number(_ value: Any, key: Any?) throws -> Number {
        guard let n = Number(value) else {
            let where_ = key.map { " (the row with key \(Self.text($0)))" } ?? ""
            throw CBLError.badRequest("\(rawValue) needs numeric values, but got \(Self.text(value))\(where_)")
        }
        return n
    }

    static func text(_ v: Any) -> String {
        (try? JSON.string(v, sortedKeys: true)) ?? String(describing: v)
    }
}

/// The partial result of `_approx_count_distinct`: the distinct keys' JSON texts.
struct DistinctKeys {
    var keys: Set<String>
    var count: Int { keys.count }
}

/// What a reduce block returns when its function failed: the query throws `error`.
public struct CBLReduceFailure: Sendable {
    /// Why the reduce failed (a ``CBLError``, or a ``CBLDesignFunctionError`` for a function that
    /// was stopped or whose output overflowed).
    public let error: any Error & Sendable

    /// A failure carrying `error`.
    public init(error: any Error & Sendable) { self.error = error }
}

private extension Array {
    subscript(safe i: Int) -> Element? { indices.contains(i) ? self[i] : nil }
}

/// A JSON number: integers stay integers while they fit.
enum Number {
    case int(Int)
    case double(Double)

    init?(_ value: Any) {
        switch value {
        case is Bool: return nil
        case let i as Int: self = .int(i)
        case let i as Int64: self = .int(Int(i))
        case let d as Double: self = .double(d)
        case let n as NSNumber: self = .double(n.doubleValue)
        default: return nil
        }
    }

    var double: Double {
        switch self {
        case .int(let i): return Double(i)
        case .double(let d): return d
        }
    }

    var any: Any {
        switch self {
        case .int(let i): return i
        case .double(let d): return d
        }
    }

    var squared: Number {
        if case .int(let i) = self {
            let (product, overflow) = i.multipliedReportingOverflow(by: i)
            if !overflow { return .int(product) }
        }
        return .double(double * double)
    }
}

/// A running sum that stays an integer until a fraction or an overflow makes it a double.
struct NumberAccumulator {
    private var integer = 0
    private var real: Double?

    mutating func add(_ n: Number) {
        switch (n, real) {
        case (.int(let i), nil):
            let (sum, overflow) = integer.addingReportingOverflow(i)
            if overflow { real = Double(integer) + Double(i) } else { integer = sum }
        default:
            real = (real ?? Double(integer)) + n.double
        }
    }

    var value: Any { real.map { $0 as Any } ?? integer }
}
