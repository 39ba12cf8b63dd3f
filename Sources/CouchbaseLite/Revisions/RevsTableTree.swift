/// One 1.x document's revision tree as its `revs` rows hold it (spec 3.4): each revision a node
/// linked to its parent by sequence, `current` marking the leaves. The one owner of the 1.x tree
/// rules (leaves, winner, history, descendants, pruning and purging), as LiteCore's `RevTree` is
/// for 2.x (whose serialized form is `CouchbaseLiteSwift`'s `LiteCoreRevTree`); the store reads
/// the rows, this type decides.
///
/// The rows form a forest when old roots were pruned or purged (their children's `parent` became
/// NULL), and a damaged file may even hold a parent cycle: every walk stops at a missing parent
/// and never visits a node twice.
package struct RevsTableTree: Sendable {
    /// One revision of the tree: one `revs` row without its body.
    package struct Node: Sendable, Equatable {
        package let sequence: Int64
        package let revID: String
        /// The parent's sequence; nil for a root (the first revision, or the oldest one kept).
        package let parent: Int64?
        /// Whether the row is a leaf (`current=1`).
        package let current: Bool
        package let deleted: Bool
        /// Whether the row still has its JSON body (compaction and replication leave ancestors bodiless).
        package let hasBody: Bool

        package init(sequence: Int64, revID: String, parent: Int64?, current: Bool, deleted: Bool, hasBody: Bool = true) {
            self.sequence = sequence
            self.revID = revID
            self.parent = parent
            self.current = current
            self.deleted = deleted
            self.hasBody = hasBody
        }

        var generation: Int { RevisionID.generation(revID) }
    }

    /// Every revision, in the order given (the store gives newest sequence first).
    package let nodes: [Node]
    /// Positions by sequence, for trees of more than ``smallTree`` nodes (empty otherwise).
    private let indexBySequence: [Int64: Int]
    /// Up to this many nodes, finding one by sequence scans them: most documents have a short
    /// history, and a dictionary per tree would cost more than the scans (the upgrader builds a
    /// tree per document).
    private static let smallTree = 16

    package init(nodes: [Node]) {
        self.nodes = nodes
        var index: [Int64: Int] = [:]
        if nodes.count > Self.smallTree {
            index.reserveCapacity(nodes.count)
            for (i, node) in nodes.enumerated() { index[node.sequence] = i }
        }
        indexBySequence = index
    }

    var isEmpty: Bool { nodes.isEmpty }

    func node(sequence: Int64) -> Node? {
        let position = nodes.count > Self.smallTree ? indexBySequence[sequence] : nodes.lastIndex { $0.sequence == sequence }
        return position.map { nodes[$0] }
    }

    func node(revID: String) -> Node? { nodes.first { $0.revID == revID } }

    // MARK: Leaves and winner

    /// The leaves, winner first: non-deleted before deleted, then the greatest revision ID under
    /// the REVID collation (spec 3.4; the order of `ORDER BY deleted ASC, revid DESC`).
    package var leaves: [Node] { nodes.filter(\.current).sorted(by: Self.winsOver) }

    /// The winning revision (spec 3.4); nil for an empty tree.
    package var winner: Node? {
        var best: Node?
        for node in nodes where node.current {
            if let current = best, !Self.winsOver(node, current) { continue }
            best = node
        }
        return best
    }

    /// Whether the document has two or more live leaves (spec 3.4).
    package var isInConflict: Bool { nodes.lazy.filter { $0.current && !$0.deleted }.count >= 2 }

    /// The 1.x winner order: whether `a` ranks before `b`.
    static func winsOver(_ a: Node, _ b: Node) -> Bool {
        if a.deleted != b.deleted { return !a.deleted }
        return RevisionCollation.compare(a.revID, b.revID) > 0
    }

    // MARK: Walks

    /// The history of a revision, itself first, then its ancestors by `parent` links (spec 3.4);
    /// empty when the sequence is not in the tree. At most `limit` nodes.
    package func history(of sequence: Int64, limit: Int = .max) -> [Node] {
        var result: [Node] = []
        result.reserveCapacity(min(limit, nodes.count))
        // A short history is checked for a repeat by scanning it; a long one by a set.
        var visited = Set<Int64>()
        var next: Int64? = sequence
        while result.count < limit, let seq = next, let found = self.node(sequence: seq) {
            if result.count < Self.smallTree {
                if result.contains(where: { $0.sequence == seq }) { break }
            } else {
                if visited.isEmpty { visited = Set(result.map(\.sequence)) }
                guard visited.insert(seq).inserted else { break }
            }
            result.append(found)
            next = found.parent
        }
        return result
    }

    /// ``history(of:limit:)`` by revision ID; empty when the revision is unknown.
    func history(ofRevID revID: String) -> [Node] {
        guard let start = node(revID: revID) else { return [] }
        return history(of: start.sequence)
    }

    /// The sequences of a revision and all its ancestors.
    func ancestry(of sequence: Int64) -> Set<Int64> { Set(history(of: sequence).map(\.sequence)) }

    /// The sequences of a revision and every revision descending from it.
    func descendants(of sequence: Int64) -> Set<Int64> {
        var children: [Int64: [Int64]] = [:]
        for node in nodes {
            if let parent = node.parent { children[parent, default: []].append(node.sequence) }
        }
        var found = Set<Int64>()
        var pending = node(sequence: sequence) == nil ? [] : [sequence]
        while let seq = pending.popLast() {
            if found.insert(seq).inserted { pending += children[seq] ?? [] }
        }
        return found
    }

    /// The leaves descending from a revision (itself when it is a leaf), winner first: what CouchDB's
    /// `latest=true` answers for a revision superseded meanwhile (`couch_key_tree:get_key_leafs`).
    func leaves(descendingFrom sequence: Int64) -> [Node] {
        let below = descendants(of: sequence)
        return leaves.filter { below.contains($0.sequence) }
    }

    // MARK: Pruning and purging

    /// The revisions pruning to `depth` deletes from a tree with several branches (spec 3.6): all
    /// but the `depth` newest revisions of every leaf's branch, leaf included. In sequence order
    /// of ``nodes``.
    func sequencesBeyondDepth(_ depth: Int) -> [Int64] {
        var keep = Set<Int64>()
        for leaf in nodes where leaf.current {
            for node in history(of: leaf.sequence, limit: max(depth, 0)) { keep.insert(node.sequence) }
        }
        return nodes.map(\.sequence).filter { !keep.contains($0) }
    }

    /// What purging some revisions removes (spec 3.8): each named revision with its ancestors,
    /// except ancestors still needed by a leaf not purged. Unknown revision IDs are ignored.
    func purgePlan(revIDs: [String]) -> PurgePlan {
        var purge = Set<Int64>()
        for revID in revIDs { if let named = self.node(revID: revID) { purge.formUnion(ancestry(of: named.sequence)) } }
        var keep = Set<Int64>()
        for leaf in nodes where leaf.current && !purge.contains(leaf.sequence) { keep.formUnion(ancestry(of: leaf.sequence)) }
        purge.subtract(keep)
        // The surviving parents of purged revisions may become leaves again (the store checks
        // that no other child remains).
        var parents = Set<Int64>()
        for seq in purge { if let parent = node(sequence: seq)?.parent, !purge.contains(parent) { parents.insert(parent) } }
        return PurgePlan(sequences: purge, revIDs: purge.compactMap { node(sequence: $0)?.revID }.sorted(),
                         formerParents: parents)
    }

    /// The rows a revision purge deletes and the revisions that may become leaves after it.
    struct PurgePlan: Sendable, Equatable {
        /// Sequences of the rows to delete.
        let sequences: Set<Int64>
        /// Their revision IDs, sorted.
        let revIDs: [String]
        /// Surviving parents of deleted rows: leaves again unless another child is left.
        let formerParents: Set<Int64>
    }
}
