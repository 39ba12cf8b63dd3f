import Foundation
import JSONCore

/// What the matcher may ask about a document to explain a row that only one side has.
public struct DocumentFacts: Sendable {
    /// The document exists (not deleted) in the 1.x database.
    public var liveInLegacy: Bool
    /// The document is deleted in the 1.x database.
    public var deletedInLegacy: Bool
    /// The 1.x document's current sequence, when live.
    public var legacySequence: Int64?
    /// The document exists in the converted (2.x) database.
    public var inConverted: Bool

    public init(liveInLegacy: Bool, deletedInLegacy: Bool, legacySequence: Int64?, inConverted: Bool) {
        self.liveInLegacy = liveInLegacy
        self.deletedInLegacy = deletedInLegacy
        self.legacySequence = legacySequence
        self.inConverted = inConverted
    }
}

/// Matches the rows of a view query with the rows of a N1QL query and explains each difference
/// by a `DifferenceRule`. Pure: everything it needs about documents comes through `facts`.
public struct RowMatcher {
    /// Compare values too (false when the N1QL query has no `value` column).
    public var compareValues = true
    /// The view query was descending (its order is then high to low).
    public var descending = false
    /// The view query's group level (0 = none).
    public var groupLevel: UInt = 0
    /// Whether the N1QL query orders its rows by the key (its first ORDER BY terms are the key's
    /// expression or its elements); when not, order differences are that, not a collation rule.
    public var orderedByKey = true
    /// The last sequence the view's stored index saw, when it is behind the database.
    public var staleIndexSequence: Int64?
    /// Facts about a document (nil when unknown).
    public var facts: (String) -> DocumentFacts? = { _ in nil }

    public init() {}

    private struct MatchKey: Hashable {
        let documentID: String?
        let key: ComparedValue
    }

    /// The differences between `viewRows` and `n1qlRows` (both in their query's order). Map rows
    /// (with document IDs) match by document ID and key, reduced rows by key.
    public func differences(viewRows: [ComparedRow], n1qlRows: [ComparedRow]) -> [RowDifference] {
        let byDocument = viewRows.contains { $0.documentID != nil } || n1qlRows.contains { $0.documentID != nil }
        var matching = Self.exactMatches(viewRows: viewRows, n1qlRows: n1qlRows, byDocument: byDocument)
        var out = byDocument
            ? pairSameDocument(&matching, viewRows: viewRows, n1qlRows: n1qlRows)
            : Self.pairGroupKeyShapes(&matching, viewRows: viewRows, n1qlRows: n1qlRows)
        out += unmatched(matching, viewRows: viewRows, n1qlRows: n1qlRows)
        if compareValues {
            out += Self.valueDifferences(matching.pairs, viewRows: viewRows, n1qlRows: n1qlRows)
        }
        out += orderDifferences(matching.pairs, viewRows: viewRows, n1qlRows: n1qlRows)
        return out
    }

    /// Row indices paired so far (view, N1QL) and those still without a partner on each side.
    private struct Matching {
        var pairs: [(v: Int, q: Int)] = []
        var viewLeft: [Int] = []
        var n1qlLeft: [Int] = []
    }

    /// Pairs rows with the same match key, the n-th view row of a key with the n-th N1QL row of it.
    private static func exactMatches(viewRows: [ComparedRow], n1qlRows: [ComparedRow], byDocument: Bool) -> Matching {
        func matchKey(_ r: ComparedRow) -> MatchKey { MatchKey(documentID: byDocument ? r.documentID : nil, key: r.key) }
        var queues: [MatchKey: [Int]] = [:]
        for (i, r) in n1qlRows.enumerated() { queues[matchKey(r), default: []].append(i) }
        var heads: [MatchKey: Int] = [:]
        var matching = Matching()
        var n1qlUsed = Set<Int>()
        for (i, r) in viewRows.enumerated() {
            let k = matchKey(r)
            let h = heads[k, default: 0]
            if let queue = queues[k], h < queue.count {
                matching.pairs.append((i, queue[h]))
                n1qlUsed.insert(queue[h])
                heads[k] = h + 1
            } else {
                matching.viewLeft.append(i)
            }
        }
        matching.n1qlLeft = n1qlRows.indices.filter { !n1qlUsed.contains($0) }
        return matching
    }

    /// The same document with different keys on each side.
    private func pairSameDocument(_ matching: inout Matching, viewRows: [ComparedRow],
                                  n1qlRows: [ComparedRow]) -> [RowDifference] {
        var out: [RowDifference] = []
        var n1qlByDoc: [String: [Int]] = [:]
        for j in matching.n1qlLeft { if let id = n1qlRows[j].documentID { n1qlByDoc[id, default: []].append(j) } }
        var stillLeft: [Int] = []
        var paired = Set<Int>()
        for i in matching.viewLeft {
            guard let id = viewRows[i].documentID, var list = n1qlByDoc[id], !list.isEmpty else { stillLeft.append(i); continue }
            let j = list.removeFirst()
            n1qlByDoc[id] = list
            paired.insert(j)
            let (v, q) = (viewRows[i], n1qlRows[j])
            let rule = isStale(id) ? .staleIndex : Self.keyRule(v.key, q.key)
            out.append(RowDifference(kind: .keyDiffers, viewRow: v, n1qlRow: q, rule: rule,
                                     detail: "\(id): the view's key is \(v.key.json), N1QL's is \(q.key.json)"))
        }
        matching.viewLeft = stillLeft
        matching.n1qlLeft = matching.n1qlLeft.filter { !paired.contains($0) }
        return out
    }

    /// Grouped rows whose keys differ only in shape: the view's group_level key `[x]` (or a
    /// prefix array) against N1QL's scalar `x` from GROUP BY x.
    private static func pairGroupKeyShapes(_ matching: inout Matching, viewRows: [ComparedRow],
                                           n1qlRows: [ComparedRow]) -> [RowDifference] {
        var out: [RowDifference] = []
        var n1qlByKey: [ComparedValue: [Int]] = [:]
        for j in matching.n1qlLeft { n1qlByKey[n1qlRows[j].key, default: []].append(j) }
        var stillLeft: [Int] = []
        var paired = Set<Int>()
        for i in matching.viewLeft {
            let v = viewRows[i]
            guard case .value(.array(let items)) = v.key, let first = items.first.map(ComparedValue.value),
                  var list = n1qlByKey[items.count == 1 ? first : v.key] ?? (items.count == 1 ? nil : n1qlByKey[first]), !list.isEmpty else {
                stillLeft.append(i)
                continue
            }
            let j = list.removeFirst()
            n1qlByKey[n1qlRows[j].key] = list
            paired.insert(j)
            out.append(RowDifference(kind: .keyDiffers, viewRow: v, n1qlRow: n1qlRows[j], rule: .groupLevelWithoutCounterpart,
                                     detail: "the view groups by the array \(v.key.json), N1QL by \(n1qlRows[j].key.json): select the group key as an array"))
        }
        matching.viewLeft = stillLeft
        matching.n1qlLeft = matching.n1qlLeft.filter { !paired.contains($0) }
        return out
    }

    /// The rows left without a partner on either side.
    private func unmatched(_ matching: Matching, viewRows: [ComparedRow], n1qlRows: [ComparedRow]) -> [RowDifference] {
        var out: [RowDifference] = []
        let viewRowsPerDoc = Dictionary(grouping: viewRows.compactMap(\.documentID), by: { $0 }).mapValues(\.count)
        for i in matching.viewLeft {
            let r = viewRows[i]
            let rule = onlyInViewRule(r, rowsForDocument: r.documentID.flatMap { viewRowsPerDoc[$0] } ?? 0)
            out.append(RowDifference(kind: .onlyInView, viewRow: r, n1qlRow: nil, rule: rule,
                                     detail: "only the view has \(Self.describe(r))"))
        }
        for j in matching.n1qlLeft {
            let r = n1qlRows[j]
            out.append(RowDifference(kind: .onlyInN1QL, viewRow: nil, n1qlRow: r, rule: onlyInN1QLRule(r),
                                     detail: "only N1QL has \(Self.describe(r))"))
        }
        return out
    }

    /// Matched rows whose values differ.
    private static func valueDifferences(_ pairs: [(v: Int, q: Int)], viewRows: [ComparedRow],
                                         n1qlRows: [ComparedRow]) -> [RowDifference] {
        pairs.compactMap { p in
            let (v, q) = (viewRows[p.v], n1qlRows[p.q])
            guard v.value != q.value else { return nil }
            return RowDifference(kind: .valueDiffers, viewRow: v, n1qlRow: q, rule: valueRule(v.value, q.value),
                                 detail: "\(describe(v)): the view's value is \(v.value.json), N1QL's is \(q.value.json)")
        }
    }

    /// Order: the longest run of matched rows in the same relative order stays; the rest moved.
    private func orderDifferences(_ pairs: [(v: Int, q: Int)], viewRows: [ComparedRow],
                                  n1qlRows: [ComparedRow]) -> [RowDifference] {
        var out: [RowDifference] = []
        let sorted = pairs.sorted { $0.v < $1.v }
        let kept = Self.longestIncreasingSubsequence(sorted.map(\.q))
        var keptPairs: [(v: Int, q: Int)] = []
        for (k, p) in sorted.enumerated() where kept.contains(k) { keptPairs.append(p) }
        for (k, p) in sorted.enumerated() where !kept.contains(k) {
            let v = viewRows[p.v], q = n1qlRows[p.q]
            // The kept neighbour it jumped over.
            let before = keptPairs.last { $0.v < p.v && $0.q > p.q }
            let after = keptPairs.first { $0.v > p.v && $0.q < p.q }
            var rule = DifferenceRule.unexplained
            var detail = "\(Self.describe(v)) is row \(p.v + 1) in the view but row \(p.q + 1) in N1QL"
            if let w = before {
                rule = orderRule(first: viewRows[w.v].key, second: v.key)
                detail += "; the view puts \(viewRows[w.v].key.json) before \(v.key.json), N1QL after"
            } else if let w = after {
                rule = orderRule(first: v.key, second: viewRows[w.v].key)
                detail += "; the view puts \(v.key.json) before \(viewRows[w.v].key.json), N1QL after"
            }
            out.append(RowDifference(kind: .orderDiffers, viewRow: v, n1qlRow: q, rule: rule, detail: detail))
        }
        return out
    }

    static func describe(_ r: ComparedRow) -> String {
        if let id = r.documentID { return "\(id) → \(r.key.json)" }
        return "key \(r.key.json)"
    }

    // MARK: Rules

    private func isStale(_ id: String?) -> Bool {
        guard let stale = staleIndexSequence, let id, let f = facts(id) else { return false }
        if let seq = f.legacySequence { return seq > stale }
        return f.deletedInLegacy
    }

    func onlyInViewRule(_ r: ComparedRow, rowsForDocument: Int) -> DifferenceRule {
        if let id = r.documentID {
            if id.hasPrefix("_") { return .designDocuments }
            if let f = facts(id), !f.inConverted || f.deletedInLegacy { return f.deletedInLegacy || !f.liveInLegacy ? .droppedRevisions : .unexplained }
            if isStale(id) { return .staleIndex }
            if rowsForDocument > 1 { return .multipleEmits }
        } else if groupLevel > 0, case .value(.array) = r.key {
            return .groupLevelWithoutCounterpart
        }
        switch r.key {
        case .value(.null), .missing: return .nullVersusMissing
        default: return .unexplained
        }
    }

    func onlyInN1QLRule(_ r: ComparedRow) -> DifferenceRule {
        switch r.key {
        case .value(.null), .missing: return .nullVersusMissing
        default: break
        }
        if let id = r.documentID {
            if isStale(id) { return .staleIndex }
            if let f = facts(id), !f.liveInLegacy { return .droppedRevisions }
        } else if groupLevel > 0, case .value(.array) = r.key {
            return .groupLevelWithoutCounterpart
        }
        return .unexplained
    }

    static func keyRule(_ view: ComparedValue, _ n1ql: ComparedValue) -> DifferenceRule {
        valueRule(view, n1ql)
    }

    static func valueRule(_ view: ComparedValue, _ n1ql: ComparedValue) -> DifferenceRule {
        guard case .value(let v) = view, case .value(let q) = n1ql else { return .nullVersusMissing }
        switch (v, q) {
        case (.bool(let b), let n) where n.isNumber, (let n, .bool(let b)) where n.isNumber:
            return n.doubleValue == (b ? 1.0 : 0.0) ? .booleansAsNumbers : .unexplained
        case (.object(let a), .object(let b)):
            let strip: (JSONObject) -> JSONObject = { JSONObject($0.filter { !$0.key.hasPrefix("_") }) }
            return strip(a) == strip(b) ? .metaProperties : .unexplained
        default: return .unexplained
        }
    }

    /// Why N1QL put `second` before `first` when the view (in its direction) put `first` first.
    func orderRule(first: ComparedValue, second: ComparedValue) -> DifferenceRule {
        let (x, y) = descending ? (second, first) : (first, second)   // view: x ≤ y ascending
        if x == y { return .equalKeysOrder }
        if !orderedByKey { return .notOrderedByKey }
        guard case .value(let vx) = x, case .value(let vy) = y else { return .nullVersusMissing }
        switch (vx, vy) {
        case (.null, _), (_, .null): return .nullOrdering
        case (.bool, .bool): return .booleansAsNumbers
        case (.bool, let n) where n.isNumber, (let n, .bool) where n.isNumber: return .booleansAsNumbers
        case (.array(let a), .array(let b)) where a.count == b.count:
            // Same length: Fleece writes the same header, so the first differing element decides
            // the bytes' order; its rule is the more useful explanation when one applies.
            if let i = a.indices.first(where: { a[$0] != b[$0] }) {
                let inner = orderRule(first: .value(descending ? b[i] : a[i]), second: .value(descending ? a[i] : b[i]))
                if inner != .unexplained && inner != .equalKeysOrder { return inner }
            }
            return .arraysAndObjectsAsBlobs
        case (.array, _), (_, .array), (.object, _), (_, .object): return .arraysAndObjectsAsBlobs
        case (.string(let a), .string(let b)):
            // N1QL put b before a: BINARY byte order explains it only if b's bytes sort first.
            guard Array(b.utf8).lexicographicallyPrecedes(Array(a.utf8)) else { return .unexplained }
            if a.lowercased() == b.lowercased() { return .caseOrder }
            if !a.unicodeScalars.allSatisfy(\.isASCII) || !b.unicodeScalars.allSatisfy(\.isASCII) { return .accents }
            return .binaryCollation
        default: return .unexplained
        }
    }

    /// Indices (into `values`) of one longest strictly increasing subsequence.
    static func longestIncreasingSubsequence(_ values: [Int]) -> Set<Int> {
        guard !values.isEmpty else { return [] }
        var tails: [Int] = []          // index into values of the smallest tail of each length
        var previous = [Int](repeating: -1, count: values.count)
        for (i, v) in values.enumerated() {
            var lo = 0, hi = tails.count
            while lo < hi {
                let mid = (lo + hi) / 2
                if values[tails[mid]] < v { lo = mid + 1 } else { hi = mid }
            }
            if lo > 0 { previous[i] = tails[lo - 1] }
            if lo == tails.count { tails.append(i) } else { tails[lo] = i }
        }
        var out = Set<Int>()
        var k = tails.last!
        while k >= 0 { out.insert(k); k = previous[k] }
        return out
    }
}
