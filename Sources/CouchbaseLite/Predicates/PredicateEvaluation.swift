import Foundation

extension PredicateNode {
    /// Evaluates the predicate on `object` (a query row, document, revision, model, dictionary…).
    func evaluate(with object: Any?) -> Bool {
        switch self {
        case .constant(let b): return b
        case .not(let p): return !p.evaluate(with: object)
        case .and(let a, let b): return a.evaluate(with: object) && b.evaluate(with: object)
        case .or(let a, let b): return a.evaluate(with: object) || b.evaluate(with: object)
        case .comparison(let c): return c.evaluate(with: object)
        }
    }
}

extension PredicateExpression {
    func value(for object: Any?) -> Any? {
        switch self {
        case .constant(let v):
            return v
        case .keyPath(let path):
            var current = object.flatMap(PredicateValue.normalize)
            for key in path {
                guard let c = current else { return nil }
                current = PredicateValue.normalize(KeyValueCoding.value(of: c, forKey: key) as Any)
            }
            return current
        case .list(let items):
            return items.map { $0.value(for: object) ?? NSNull() }
        }
    }
}

extension PredicateComparison {
    func evaluate(with object: Any?) -> Bool {
        let left = lhs.value(for: object)
        let right = rhs.value(for: object)
        switch quantifier {
        case .direct:
            return test(left, right)
        case .any:
            return PredicateValue.elements(of: left).contains { test($0, right) }
        case .all:
            return PredicateValue.elements(of: left).allSatisfy { test($0, right) }
        case .none:
            return !PredicateValue.elements(of: left).contains { test($0, right) }
        }
    }

    private var stringOptions: String.CompareOptions {
        var options: String.CompareOptions = []
        if caseInsensitive { options.insert(.caseInsensitive) }
        if diacriticInsensitive { options.insert(.diacriticInsensitive) }
        return options
    }

    private func test(_ left: Any?, _ right: Any?) -> Bool {
        switch op {
        case .equal: return PredicateValue.equal(left, right, options: stringOptions)
        case .notEqual: return !PredicateValue.equal(left, right, options: stringOptions)
        case .less: return PredicateValue.compare(left, right, options: stringOptions) == .orderedAscending
        case .lessOrEqual: return [.orderedAscending, .orderedSame].contains(PredicateValue.compare(left, right, options: stringOptions))
        case .greater: return PredicateValue.compare(left, right, options: stringOptions) == .orderedDescending
        case .greaterOrEqual: return [.orderedDescending, .orderedSame].contains(PredicateValue.compare(left, right, options: stringOptions))
        case .beginsWith:
            guard let l = left as? String, let r = right as? String else { return false }
            return l.range(of: r, options: stringOptions.union(.anchored)) != nil
        case .endsWith:
            guard let l = left as? String, let r = right as? String else { return false }
            return l.range(of: r, options: stringOptions.union([.anchored, .backwards])) != nil
        case .contains:
            if let l = left as? String {
                guard let r = right as? String else { return false }
                return l.range(of: r, options: stringOptions) != nil
            }
            guard let collection = PredicateValue.collection(left) else { return false }
            return collection.contains { PredicateValue.equal($0, right, options: stringOptions) }
        case .isIn:
            if let r = right as? String {
                guard let l = left as? String else { return false }
                return r.range(of: l, options: stringOptions) != nil
            }
            guard let collection = PredicateValue.collection(right) else { return false }
            return collection.contains { PredicateValue.equal(left, $0, options: stringOptions) }
        case .between:
            guard let bounds = right as? [Any], bounds.count == 2 else { return false }
            let low = PredicateValue.compare(left, bounds[0], options: stringOptions)
            let high = PredicateValue.compare(left, bounds[1], options: stringOptions)
            return (low == .orderedDescending || low == .orderedSame) && (high == .orderedAscending || high == .orderedSame)
        case .like:
            guard let l = left as? String, let r = right as? String else { return false }
            return PredicateValue.like(l, pattern: r, options: stringOptions)
        case .matches:
            guard var l = left as? String else { return false }
            if diacriticInsensitive { l = l.folding(options: .diacriticInsensitive, locale: nil) }
            let expression: NSRegularExpression
            if let regex {
                expression = regex
            } else if let pattern = right as? String,
                      let compiled = try? NSRegularExpression(pattern: pattern, options: caseInsensitive ? [.caseInsensitive] : []) {
                expression = compiled
            } else {
                return false
            }
            let range = NSRange(l.startIndex..., in: l)
            guard let match = expression.firstMatch(in: l, options: [.anchored], range: range) else { return false }
            return match.range == range
        }
    }
}

/// Value rules for predicate evaluation: numbers of any type compare numerically (a Bool as 0/1),
/// strings with the comparison's options, dates as dates (an ISO-8601 string against a `Date`
/// too), `NSNull` as nil; arrays and dictionaries are equal when their elements are.
enum PredicateValue {
    /// Swift numbers of every width become `Int`/`Double`; sets become arrays; `NSNull` and
    /// `Optional.none` become nil.
    static func normalize(_ value: Any) -> Any? {
        switch value {
        case is NSNull: return nil
        case let s as String: return s
        case let i as Int: return i
        case let d as Double: return d
        case let b as Bool: return b
        case let n as NSNumber: return Int(exactly: n.doubleValue) ?? n.doubleValue
        case let i as any BinaryInteger: return Int(exactly: i) ?? Double(i)
        case let f as any BinaryFloatingPoint: return Double(f)
        case let s as Substring: return String(s)
        case let set as Set<AnyHashable>: return Array(set.map { $0.base })
        case let optional as AnyOptional: return optional.wrappedAny.flatMap(normalize)
        default: return value
        }
    }

    static func elements(of value: Any?) -> [Any?] {
        guard let value else { return [] }
        if let collection = collection(value) { return collection.map { normalize($0) } }
        return [value]
    }

    static func collection(_ value: Any?) -> [Any]? {
        switch value {
        case let array as [Any]: return array
        case let dict as [String: Any]: return Array(dict.values)
        case let set as Set<AnyHashable>: return set.map(\.base)
        default: return nil
        }
    }

    static func equal(_ a: Any?, _ b: Any?, options: String.CompareOptions) -> Bool {
        let a = a.flatMap(normalize), b = b.flatMap(normalize)
        switch (a, b) {
        case (nil, nil): return true
        case (nil, _), (_, nil): return false
        case let (l as String, r as String):
            return options.isEmpty ? l == r : l.compare(r, options: options) == .orderedSame
        case let (l as [Any], r as [Any]):
            return l.count == r.count && zip(l, r).allSatisfy { equal($0, $1, options: options) }
        case let (l as [String: Any], r as [String: Any]):
            return l.count == r.count && l.allSatisfy { key, value in r[key].map { equal(value, $0, options: options) } ?? false }
        default:
            if let order = compare(a, b, options: options) { return order == .orderedSame }
            if let l = a as? AnyHashable, let r = b as? AnyHashable { return l == r }
            return false
        }
    }

    /// The order of two values of comparable kinds (numbers, strings, dates); nil otherwise.
    static func compare(_ a: Any?, _ b: Any?, options: String.CompareOptions) -> ComparisonResult? {
        let a = a.flatMap(normalize), b = b.flatMap(normalize)
        switch (a, b) {
        case let (l as String, r as String):
            return l.compare(r, options: options)
        case let (l as Date, r as Date):
            return order(l, r)
        case let (l as Date, r as String):
            return ISO8601Date.date(from: r).map { order(l, $0) }
        case let (l as String, r as Date):
            return ISO8601Date.date(from: l).map { order($0, r) }
        case let (l as Int, r as Int):
            return order(l, r)
        default:
            guard let a, let b, let l = number(a), let r = number(b) else { return nil }
            return order(l, r)
        }
    }

    private static func number(_ v: Any) -> Double? {
        switch v {
        case let i as Int: return Double(i)
        case let d as Double: return d
        case let b as Bool: return b ? 1 : 0
        default: return nil
        }
    }

    private static func order<T: Comparable>(_ l: T, _ r: T) -> ComparisonResult {
        l < r ? .orderedAscending : (l > r ? .orderedDescending : .orderedSame)
    }

    /// `LIKE`: `*` matches any run of characters, `?` one character, `\` escapes the next one.
    static func like(_ string: String, pattern: String, options: String.CompareOptions) -> Bool {
        let fold: (String) -> [Character] = { options.isEmpty ? Array($0) : Array($0.folding(options: options, locale: nil)) }
        let s = fold(string), p = fold(pattern)
        // Iterative wildcard match with backtracking to the last '*'.
        var si = 0, pi = 0
        var starP = -1, starS = 0
        while si < s.count {
            if pi < p.count, p[pi] == "\\", pi + 1 < p.count, p[pi + 1] == s[si] {
                si += 1; pi += 2
            } else if pi < p.count, p[pi] == "?" || (p[pi] == s[si] && p[pi] != "*" && p[pi] != "\\") {
                si += 1; pi += 1
            } else if pi < p.count, p[pi] == "*" {
                starP = pi; starS = si; pi += 1
            } else if starP >= 0 {
                pi = starP + 1; starS += 1; si = starS
            } else {
                return false
            }
        }
        while pi < p.count, p[pi] == "*" { pi += 1 }
        return pi == p.count
    }
}
