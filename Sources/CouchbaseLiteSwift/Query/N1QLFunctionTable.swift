import Fleece
import Foundation

/// The implementations of the N1QL scalar functions (spec 9.1's list) the query engine runs in
/// Swift, registered as SQL functions `n1ql_<name>`; their argument counts, SQL writers and
/// aggregates are rows of ``N1QLFunctions``. MISSING in gives MISSING out and a wrong type gives
/// null, as in LiteCore's `QueryFunctions.cc`.
enum N1QLFunctionTable {
    /// One implementation; its argument counts are checked (by the parser and the translator)
    /// against its row in ``N1QLFunctions`` before it is ever called.
    struct Function: Sendable {
        let body: @Sendable ([QueryValue]) -> QueryValue
    }

    private static func numeric(_ f: @escaping @Sendable (Double) -> Double) -> Function {
        Function { a in
            if a[0].isMissing { return .missing }
            guard let x = a[0].number else { return .null }
            return number(f(x))
        }
    }

    private static func number(_ d: Double) -> QueryValue {
        guard d.isFinite else { return .null }
        if d == d.rounded(), abs(d) < 9.0e15 { return .int(Int64(d)) }
        return .double(d)
    }

    private static func string(_ f: @escaping @Sendable (String) -> QueryValue) -> Function {
        Function { a in
            if a[0].isMissing { return .missing }
            guard case .string(let s) = a[0] else { return .null }
            return f(s)
        }
    }

    private static func roundTo(_ x: Double, _ digits: Int, _ rule: FloatingPointRoundingRule) -> Double {
        let m = pow(10, Double(digits))
        return (x * m).rounded(rule) / m
    }

    private static func withDigits(_ rule: FloatingPointRoundingRule) -> Function {
        Function { a in
            if a.contains(where: \.isMissing) { return .missing }
            guard let x = a[0].number else { return .null }
            let digits = a.count > 1 ? Int(max(-400, min(400, (a[1].number ?? 0).isNaN ? 0 : a[1].number ?? 0))) : 0
            return number(roundTo(x, digits, rule))
        }
    }

    private static func typeName(_ v: QueryValue) -> String {
        switch v {
        case .missing: return "missing"
        case .null: return "null"
        case .bool: return "boolean"
        case .int, .double: return "number"
        case .string: return "string"
        case .data: return "binary"
        case .fleece(let f): return f.type == .array ? "array" : "object"
        }
    }

    private static func isType(_ name: String) -> Function {
        Function { a in
            if a[0].isMissing { return .missing }
            if case .null = a[0] { return .null }
            return .bool(typeName(a[0]) == name)
        }
    }

    private static func arrayItems(_ v: QueryValue) -> [QueryValue]? {
        guard case .fleece(let f) = v, let arr = f.arrayValue else { return nil }
        return arr.map(QueryValue.init)
    }

    private static func arrayFunction(_ f: @escaping @Sendable ([QueryValue]) -> QueryValue) -> Function {
        Function { a in
            if a[0].isMissing { return .missing }
            guard let items = arrayItems(a[0]) else { return .null }
            return f(items)
        }
    }

    private static func regex(_ pattern: QueryValue) -> NSRegularExpression? {
        guard case .string(let p) = pattern else { return nil }
        return try? NSRegularExpression(pattern: p)
    }

    private static func toString(_ v: QueryValue) -> QueryValue {
        switch v {
        case .missing: return .missing
        case .null: return .null
        case .bool(let b): return .string(b ? "true" : "false")
        case .int(let i): return .string(String(i))
        case .double(let d): return .string(d == d.rounded() && abs(d) < 1e15 ? String(Int64(d)) : String(d))
        case .string: return v
        case .data, .fleece: return .null
        }
    }

    static let functions: [String: Function] = {
        var t: [String: Function] = [:]
        // Missing/null handling.
        t["ifmissing"] = Function { a in a.first { !$0.isMissing } ?? .missing }
        t["ifnull"] = Function { a in
            for v in a { if case .null = v { continue }; return v }
            return .null
        }
        t["ifmissingornull"] = Function { a in a.first { !$0.isMissingOrNull } ?? .null }
        t["missingif"] = Function { a in
            if a.contains(where: \.isMissing) { return .missing }
            return a[0].sqlEquals(a[1]) ? .missing : a[0]
        }
        t["nullif"] = Function { a in
            if a.contains(where: \.isMissing) { return .missing }
            return a[0].sqlEquals(a[1]) ? .null : a[0]
        }
        // Strings.
        t["length"] = string { .int(Int64($0.unicodeScalars.count)) }
        t["lower"] = string { .string($0.lowercased()) }
        t["upper"] = string { .string($0.uppercased()) }
        for (name, trimStart, trimEnd) in [("trim", true, true), ("ltrim", true, false), ("rtrim", false, true)] {
            t[name] = Function { a in
                if a.contains(where: \.isMissing) { return .missing }
                guard case .string(let s) = a[0] else { return .null }
                var chars = Set(" \t\n\r".unicodeScalars)
                if a.count > 1 { guard case .string(let c) = a[1] else { return .null }; chars = Set(c.unicodeScalars) }
                var scalars = Array(s.unicodeScalars)
                if trimStart { while let f = scalars.first, chars.contains(f) { scalars.removeFirst() } }
                if trimEnd { while let l = scalars.last, chars.contains(l) { scalars.removeLast() } }
                var out = ""; out.unicodeScalars.append(contentsOf: scalars)
                return .string(out)
            }
        }
        t["concat"] = Function { a in
            if a.contains(where: \.isMissing) { return .missing }
            var out = ""
            for v in a { guard case .string(let s) = v else { return .null }; out += s }
            return .string(out)
        }
        // `contains(s, sub[, collation flags])`: the translator adds flags for COLLATE.
        t["contains"] = Function { a in
            if a.contains(where: \.isMissing) { return .missing }
            guard case .string(let s) = a[0], case .string(let sub) = a[1] else { return .null }
            let flags = a.count > 2 ? Int(truncatingIfNeeded: Int64(a[2].number.map { $0.isFinite ? max(0, min(3, $0)) : 0 } ?? 0)) : 0
            if flags == 0 { return .bool(sub.isEmpty || Array(s.utf8).firstRange(of: Array(sub.utf8)) != nil) }
            return .bool(LikeMatcher.fold(s, flags).contains(LikeMatcher.fold(sub, flags)))
        }
        // Regular expressions (ICU syntax, like LiteCore).
        t["regexp_contains"] = Function { a in
            if a.contains(where: \.isMissing) { return .missing }
            guard case .string(let s) = a[0], let re = regex(a[1]) else { return .null }
            return .bool(re.firstMatch(in: s, range: NSRange(s.startIndex..., in: s)) != nil)
        }
        t["regexp_like"] = Function { a in
            if a.contains(where: \.isMissing) { return .missing }
            guard case .string(let s) = a[0], let re = regex(a[1]) else { return .null }
            let r = NSRange(s.startIndex..., in: s)
            return .bool(re.firstMatch(in: s, options: [.anchored], range: r).map { $0.range == r } ?? false)
        }
        t["regexp_position"] = Function { a in
            if a.contains(where: \.isMissing) { return .missing }
            guard case .string(let s) = a[0], let re = regex(a[1]) else { return .null }
            guard let m = re.firstMatch(in: s, range: NSRange(s.startIndex..., in: s)), let r = Range(m.range, in: s) else { return .int(-1) }
            return .int(Int64(s.unicodeScalars.distance(from: s.startIndex, to: r.lowerBound)))
        }
        t["regexp_replace"] = Function { a in
            if a.contains(where: \.isMissing) { return .missing }
            guard case .string(let s) = a[0], let re = regex(a[1]), case .string(let rep) = a[2] else { return .null }
            return .string(re.stringByReplacingMatches(in: s, range: NSRange(s.startIndex..., in: s), withTemplate: rep))
        }
        // Math.
        t["abs"] = numeric { Swift.abs($0) }
        t["ceil"] = numeric { $0.rounded(.up) }
        t["floor"] = numeric { $0.rounded(.down) }
        t["sqrt"] = numeric { $0.squareRoot() }
        t["exp"] = numeric { Foundation.exp($0) }
        t["ln"] = numeric { Foundation.log($0) }
        t["log"] = numeric { Foundation.log10($0) }
        t["sign"] = numeric { $0 > 0 ? 1 : ($0 < 0 ? -1 : 0) }
        t["sin"] = numeric { Foundation.sin($0) }
        t["cos"] = numeric { Foundation.cos($0) }
        t["tan"] = numeric { Foundation.tan($0) }
        t["asin"] = numeric { Foundation.asin($0) }
        t["acos"] = numeric { Foundation.acos($0) }
        t["atan"] = numeric { Foundation.atan($0) }
        t["degrees"] = numeric { $0 * 180 / .pi }
        t["radians"] = numeric { $0 * .pi / 180 }
        t["round"] = withDigits(.toNearestOrAwayFromZero)
        t["round_even"] = withDigits(.toNearestOrEven)
        t["trunc"] = withDigits(.towardZero)
        t["pi"] = Function { _ in .double(.pi) }
        t["e"] = Function { _ in .double(M_E) }
        let binary: [(String, @Sendable (Double, Double) -> Double)] = [
            ("power", { Foundation.pow($0, $1) }), ("atan2", { Foundation.atan2($0, $1) }),
            ("div", { $0 / $1 }), ("idiv", { ($0 / $1).rounded(.towardZero) }),
        ]
        for (name, f) in binary {
            t[name] = Function { a in
                if a.contains(where: \.isMissing) { return .missing }
                guard let x = a[0].number, let y = a[1].number else { return .null }
                return number(f(x, y))
            }
        }
        for (name, pickGreater) in [("greatest", true), ("least", false)] {
            t[name] = Function { a in
                if a.contains(where: \.isMissing) { return .missing }
                let nums = a.compactMap(\.number)
                guard nums.count == a.count, !nums.contains(where: \.isNaN) else { return .null }
                var best = 0
                for i in nums.indices where pickGreater ? nums[i] > nums[best] : nums[i] < nums[best] { best = i }
                return a[best]
            }
        }
        // Arrays.
        t["array_count"] = arrayFunction { .int(Int64($0.count)) }
        t["array_length"] = t["array_count"]
        t["array_sum"] = arrayFunction { number($0.compactMap(\.number).reduce(0, +)) }
        t["array_avg"] = arrayFunction { items in
            let n = items.compactMap(\.number)
            return n.isEmpty ? .null : number(n.reduce(0, +) / Double(n.count))
        }
        t["array_max"] = arrayFunction { items in items.compactMap(\.number).max().map(number) ?? .null }
        t["array_min"] = arrayFunction { items in items.compactMap(\.number).min().map(number) ?? .null }
        t["array_ifnull"] = arrayFunction { items in items.first { !$0.isMissingOrNull } ?? .null }
        t["array_contains"] = Function { a in
            if a[0].isMissing { return .missing }
            guard let items = arrayItems(a[0]) else { return .null }
            return .bool(items.contains { $0.sqlEquals(a[1]) })
        }
        t["array_of"] = Function { a in
            var enc = FleeceEncoder()
            enc.beginArray(reserve: a.count)
            for v in a { v.write(to: &enc) }
            enc.endArray()
            guard let bytes = try? enc.finish(), let doc = try? FleeceDocument(bytes: bytes) else { return .null }
            return .fleece(doc.root)
        }
        // Types.
        for name in ["array", "atom", "boolean", "number", "object", "string"] {
            let f: Function
            if name == "atom" {
                f = Function { a in
                    if a[0].isMissing { return .missing }
                    if case .null = a[0] { return .null }
                    if case .fleece = a[0] { return .bool(false) }
                    return .bool(true)
                }
            } else {
                f = isType(name)
            }
            t["is" + name] = f
            t["is_" + name] = f
        }
        let typeFn = Function { a in .string(typeName(a[0])) }
        t["type"] = typeFn
        t["typename"] = typeFn
        let toStr = Function { a in toString(a[0]) }
        t["tostring"] = toStr
        t["to_string"] = toStr
        let toNum = Function { a in
            switch a[0] {
            case .missing: return .missing
            case .null: return .null
            case .bool(let b): return .int(b ? 1 : 0)
            case .int, .double: return a[0]
            case .string(let s):
                if let i = Int64(s.trimmingCharacters(in: .whitespaces)) { return .int(i) }
                if let d = Double(s.trimmingCharacters(in: .whitespaces)), d.isFinite { return .double(d) }
                return .null
            default: return .null
            }
        }
        t["tonumber"] = toNum
        t["to_number"] = toNum
        let toBool = Function { a in
            switch a[0] {
            case .missing: return .missing
            case .null: return .null
            case .bool: return a[0]
            case .int, .double: let n = a[0].number!; return .bool(n != 0 && !n.isNaN)
            case .string(let s): return .bool(!s.isEmpty)
            case .data(let d): return .bool(!d.isEmpty)
            case .fleece(let f): return .bool((f.arrayValue?.count ?? f.dictValue?.count ?? 0) > 0)
            }
        }
        t["toboolean"] = toBool
        t["to_boolean"] = toBool
        N1QLConversionFunctions.add(to: &t)
        N1QLDateFunctions.add(to: &t)
        return t
    }()
}
