import ArgumentParser
import CJSONCollation
import Foundation
import JSONCore

/// The reduce functions `cbl query` can apply to a view's stored rows. An app's own reduce
/// function is a closure, not in the file (spec 7.1); these are CouchDB's built-ins.
enum BuiltinReduce: String, CaseIterable, ExpressibleByArgument {
    /// `_count`: the number of rows.
    case count
    /// `_sum`: the sum of numeric values (arrays of numbers are summed element by element).
    case sum
    /// `_stats`: `{"sum","count","min","max","sumsqr"}` of numeric values.
    case stats
}

/// One map row as the reduction sees it.
struct MapRow {
    var key: Any?
    var value: Any?
    var documentID: String?
}

/// Groups map rows (already in index order) and reduces each group, as 1.x does (spec 7.5).
struct ViewReduction {
    /// nil: grouping without a reduce function (each group's value is null, as in 1.x).
    var reducer: BuiltinReduce?
    /// Whether rows are grouped at all (else one row with key null).
    var grouped: Bool
    /// Group by the first N elements of array keys; 0 groups by whole keys (`--group`).
    var groupLevel: Int

    func run(_ rows: [MapRow]) throws -> [(key: Any?, value: Any?)] {
        var output: [(key: Any?, value: Any?)] = []
        var members: [MapRow] = []
        var firstKeyText: [UInt8]?

        func finishGroup() throws {
            guard let first = members.first else { return }
            var key: Any? = grouped ? first.key : nil
            if grouped, groupLevel > 0, let array = key as? [Any], array.count > groupLevel {
                key = Array(array.prefix(groupLevel))
            }
            output.append((key, try reducer.map { try reduce(members, with: $0) } ?? NSNull()))
            members.removeAll(keepingCapacity: true)
        }

        for row in rows {
            if grouped {
                // A row stays in the group while it collates equal to the group's first key,
                // compared on the first `groupLevel` array elements (spec 7.5, 6.5).
                let text = (try? JSON.data(row.key ?? NSNull(), sortedKeys: true)) ?? Array("null".utf8)
                if let current = firstKeyText, Self.collate(text, current, groupLevel) != 0 {
                    try finishGroup()
                    firstKeyText = nil
                }
                if firstKeyText == nil { firstKeyText = text }
            }
            members.append(row)
        }
        try finishGroup()
        return output
    }

    static func collate(_ a: [UInt8], _ b: [UInt8], _ arrayLimit: Int) -> Int32 {
        a.withUnsafeBytes { pa in
            b.withUnsafeBytes { pb in
                Int32(cbl_json_collate(CBLCollationUnicode, pa.baseAddress, pa.count, pb.baseAddress, pb.count,
                                       Int32(clamping: arrayLimit)))
            }
        }
    }

    // MARK: Built-in reducers

    private func reduce(_ rows: [MapRow], with reducer: BuiltinReduce) throws -> Any {
        switch reducer {
        case .count:
            return rows.count
        case .sum:
            if rows.contains(where: { $0.value is [Any] }) { return try sumArrays(rows) }
            var total = NumberAccumulator()
            for row in rows { total.add(try number(row, reducer)) }
            return total.value
        case .stats:
            var sum = NumberAccumulator(), sumsqr = NumberAccumulator()
            var minimum: Number?, maximum: Number?
            for row in rows {
                let n = try number(row, reducer)
                sum.add(n)
                sumsqr.add(n.squared)
                if minimum.map({ n.double < $0.double }) ?? true { minimum = n }
                if maximum.map({ n.double > $0.double }) ?? true { maximum = n }
            }
            return ["sum": sum.value, "count": rows.count, "min": minimum?.any ?? NSNull(),
                    "max": maximum?.any ?? NSNull(), "sumsqr": sumsqr.value]
        }
    }

    /// CouchDB's `_sum` over arrays: element-wise, shorter arrays count as zeros there.
    private func sumArrays(_ rows: [MapRow]) throws -> Any {
        var totals: [NumberAccumulator] = []
        for row in rows {
            let elements = row.value as? [Any] ?? [row.value as Any]
            for (i, element) in elements.enumerated() {
                guard let n = Number(element) else { throw notNumeric(row, .sum) }
                if i == totals.count { totals.append(NumberAccumulator()) }
                totals[i].add(n)
            }
        }
        return totals.map(\.value)
    }

    private func number(_ row: MapRow, _ reducer: BuiltinReduce) throws -> Number {
        guard let value = row.value, let n = Number(value) else { throw notNumeric(row, reducer) }
        return n
    }

    private func notNumeric(_ row: MapRow, _ reducer: BuiltinReduce) -> CommandFailure {
        CommandFailure("--reduce \(reducer.rawValue) needs numeric values, but the row with key \(jsonText(row.key)) "
                       + "(document \(row.documentID ?? "?")) has value \(jsonText(row.value))")
    }
}

/// A JSON number: integers stay integers while they fit.
enum Number {
    case int(Int)
    case double(Double)

    init?(_ value: Any) {
        switch value {
        case is Bool: return nil
        case let i as Int: self = .int(i)
        case let d as Double: self = .double(d)
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
