import Foundation

/// Why a view row and a N1QL row differ: the rules of `cbl2-format.md` 9.3/9.4 (and the
/// converter's of section 8) that make 1.x map/reduce and LiteCore's N1QL disagree. A
/// difference no rule explains is `.unexplained`: those are the dangerous ones.
public enum DifferenceRule: String, Codable, CaseIterable, Sendable {
    case nullOrdering = "null-ordering"
    case nullVersusMissing = "null-vs-missing"
    case booleansAsNumbers = "booleans-as-numbers"
    case binaryCollation = "binary-collation"
    case caseOrder = "case-order"
    case accents = "accents"
    case arraysAndObjectsAsBlobs = "arrays-objects-as-blobs"
    case equalKeysOrder = "equal-keys-order"
    case notOrderedByKey = "not-ordered-by-key"
    case groupLevelWithoutCounterpart = "group-level"
    case multipleEmits = "multiple-emits"
    case droppedRevisions = "dropped-revisions"
    case designDocuments = "design-documents"
    case metaProperties = "meta-properties"
    case staleIndex = "stale-index"
    case unexplained = "unexplained"

    /// A short title.
    public var title: String {
        switch self {
        case .nullOrdering: return "null sorts differently"
        case .nullVersusMissing: return "null vs MISSING"
        case .booleansAsNumbers: return "booleans are numbers in N1QL"
        case .binaryCollation: return "BINARY string collation"
        case .caseOrder: return "upper/lower case order"
        case .accents: return "accents and non-ASCII text"
        case .arraysAndObjectsAsBlobs: return "arrays and objects compare as bytes"
        case .equalKeysOrder: return "order among equal keys"
        case .notOrderedByKey: return "N1QL does not order by the key"
        case .groupLevelWithoutCounterpart: return "group_level has no N1QL counterpart"
        case .multipleEmits: return "several rows per document"
        case .droppedRevisions: return "deleted or conflicting revisions"
        case .designDocuments: return "design documents"
        case .metaProperties: return "_id/_rev live in meta() in 2.x"
        case .staleIndex: return "the view's index is stale"
        case .unexplained: return "UNEXPLAINED"
        }
    }

    /// What the rule says, and what to do about it.
    public var explanation: String {
        switch self {
        case .nullOrdering:
            return "Views sort null before everything; N1QL sorts null after numbers and strings. Filter nulls out (WHERE key IS VALUED) or order by IFNULL(key, …)."
        case .nullVersusMissing:
            return "A map function that does not emit for documents lacking the property has no row; N1QL returns them with a MISSING or null key. Add WHERE key IS VALUED (or IS NOT MISSING) to the query."
        case .booleansAsNumbers:
            return "Views sort false < true before all numbers; N1QL treats false/true as 0/1 among the numbers (and sums them as such)."
        case .binaryCollation:
            return "Views compare strings Unicode-aware, case-insensitively first (\"a\" < \"B\"); N1QL compares bytes by default (\"B\" < \"a\"). Add COLLATE UNICODE to ORDER BY and comparisons."
        case .caseOrder:
            return "Views put lowercase before uppercase on otherwise equal strings (\"a\" < \"A\"); N1QL BINARY puts uppercase first. COLLATE UNICODE orders lowercase first like the view."
        case .accents:
            return "Views order accented letters next to their base letter (\"é\" < \"f\"); N1QL BINARY orders by UTF-8 bytes, so they sort after \"z\". Use COLLATE UNICODE (NODIAC to ignore accents)."
        case .arraysAndObjectsAsBlobs:
            return "Views compare arrays element by element and objects key by key; N1QL stores them as Fleece blobs and orders them by raw bytes, after all strings. Order by the elements instead (ORDER BY key[0], key[1])."
        case .equalKeysOrder:
            return "Views order rows with equal keys by document ID; N1QL leaves their order open. Add meta().id as the last ORDER BY term."
        case .notOrderedByKey:
            return "Views return rows in key order; the N1QL query orders by something else (or nothing), so its order is not the view's. ORDER BY the key's expression(s), then meta().id."
        case .groupLevelWithoutCounterpart:
            return "group_level groups array keys by their first N elements; N1QL has no prefix grouping: GROUP BY the first N elements as separate expressions."
        case .multipleEmits:
            return "The map function emits several rows for one document (e.g. one per array element); N1QL gives one row per document unless the query UNNESTs the array."
        case .droppedRevisions:
            return "The view indexed a revision the converter did not keep: the 2.x database has only each document's winning revision (conflicts resolved, tombstones of deleted documents kept only as deletions)."
        case .designDocuments:
            return "Design documents (_design/…) and other documents whose ID starts with _ are not converted and are invisible to N1QL."
        case .metaProperties:
            return "1.x bodies carry _id, _rev and _attachments; 2.x keeps the ID and revision in meta() (meta().id, meta().revisionID). Select them from meta() or compare without them."
        case .staleIndex:
            return "The view's stored index was last updated before the latest change in the 1.x database; re-run the app (or update the index) before comparing."
        case .unexplained:
            return "No known difference between 1.x views and N1QL explains this: check the query."
        }
    }

    /// Where the rule is written down.
    public var reference: String {
        switch self {
        case .nullOrdering, .booleansAsNumbers, .binaryCollation, .caseOrder, .accents, .arraysAndObjectsAsBlobs,
             .groupLevelWithoutCounterpart:
            return "cbl2-format.md §9.4"
        case .nullVersusMissing: return "cbl2-format.md §9.3, §9.4"
        case .equalKeysOrder, .notOrderedByKey, .multipleEmits, .staleIndex: return "cbl1-format.md §7"
        case .droppedRevisions, .designDocuments, .metaProperties: return "cbl2-format.md §8.2"
        case .unexplained: return "-"
        }
    }
}

/// A row of either side: the document ID (nil for reduced rows), key and value.
public struct ComparedRow: Codable, Sendable, Hashable {
    /// The emitting document (map rows), nil for reduced/grouped rows.
    public var documentID: String?
    public var key: ComparedValue
    public var value: ComparedValue
    /// Position on its side (0-based).
    public var index: Int

    public init(documentID: String?, key: ComparedValue, value: ComparedValue, index: Int) {
        self.documentID = documentID
        self.key = key
        self.value = value
        self.index = index
    }

    enum CodingKeys: String, CodingKey { case documentID = "id", key, value, index, keyMissing, valueMissing }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        documentID = try c.decodeIfPresent(String.self, forKey: .documentID)
        key = (try c.decodeIfPresent(Bool.self, forKey: .keyMissing) ?? false) ? .missing : try c.decode(ComparedValue.self, forKey: .key)
        value = (try c.decodeIfPresent(Bool.self, forKey: .valueMissing) ?? false) ? .missing : try c.decode(ComparedValue.self, forKey: .value)
        index = try c.decode(Int.self, forKey: .index)
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeIfPresent(documentID, forKey: .documentID)
        try c.encode(key, forKey: .key)
        try c.encode(value, forKey: .value)
        try c.encode(index, forKey: .index)
        if key == .missing { try c.encode(true, forKey: .keyMissing) }
        if value == .missing { try c.encode(true, forKey: .valueMissing) }
    }
}

/// One difference between the two result lists, with the rule that explains it.
public struct RowDifference: Codable, Sendable, Hashable {
    public enum Kind: String, Codable, Sendable {
        /// A view row with no N1QL counterpart.
        case onlyInView = "only-in-view"
        /// A N1QL row with no view counterpart.
        case onlyInN1QL = "only-in-n1ql"
        /// The same document, but different keys.
        case keyDiffers = "key-differs"
        /// Matched rows whose values differ.
        case valueDiffers = "value-differs"
        /// Matched rows in a different relative order.
        case orderDiffers = "order-differs"
    }

    public var kind: Kind
    public var viewRow: ComparedRow?
    public var n1qlRow: ComparedRow?
    public var rule: DifferenceRule
    /// What exactly differs, in a sentence.
    public var detail: String

    public init(kind: Kind, viewRow: ComparedRow?, n1qlRow: ComparedRow?, rule: DifferenceRule, detail: String) {
        self.kind = kind
        self.viewRow = viewRow
        self.n1qlRow = n1qlRow
        self.rule = rule
        self.detail = detail
    }
}

/// The outcome of comparing a view query with a N1QL query.
public struct ComparisonReport: Codable, Sendable {
    /// The view and its query options, as given.
    public var view: String
    public var viewOptions: [String: String]
    /// The N1QL (or JSON) query.
    public var query: String
    /// Whether rows were matched by document ID and key (map rows) or by key (reduced rows).
    public var matchedBy: String
    public var viewRows: [ComparedRow]
    public var n1qlRows: [ComparedRow]
    public var differences: [RowDifference]

    /// True when both sides gave the same rows in the same order with the same values.
    public var isEqual: Bool { differences.isEmpty }
    /// Differences no rule explains.
    public var unexplained: [RowDifference] { differences.filter { $0.rule == .unexplained } }

    /// How many differences each rule explains, most first.
    public var countsByRule: [(rule: DifferenceRule, count: Int)] {
        var counts: [DifferenceRule: Int] = [:]
        for d in differences { counts[d.rule, default: 0] += 1 }
        return counts.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key.rawValue < $1.key.rawValue }
            .map { ($0.key, $0.value) }
    }
}
