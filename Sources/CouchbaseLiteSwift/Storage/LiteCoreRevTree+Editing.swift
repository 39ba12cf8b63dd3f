import Crypto
import Fleece

extension BinaryRevisionID {
    /// The ID LiteCore gives a new revision (`generateDocRevID`): generation = the parent's + 1
    /// (1 without parent); digest = SHA-1 of the length of the parent's ID in text form (one byte,
    /// 0 without parent), that text (`1-1fdf…`), the deleted flag (one byte) and the Fleece body
    /// (`70 00` for a tombstone). Checked against every revision of the 3.0 fixture.
    package static func generate(parent: [UInt8]?, deleted: Bool, body: [UInt8]) -> [UInt8] {
        let parentID = parent ?? []
        let parentText = Array((parent.flatMap { decode($0) } ?? "").utf8.prefix(255))
        var sha1 = Insecure.SHA1()
        sha1.update(data: [UInt8(parentText.count)])
        sha1.update(data: parentText)
        sha1.update(data: [deleted ? 1 : 0])
        sha1.update(data: body)
        var out: [UInt8] = []
        Varint.append(generation(of: parentID) + 1, to: &out)
        out.append(contentsOf: sha1.finalize())
        return out
    }

    /// The generation of a binary revision ID (0 for an empty or malformed one).
    package static func generation(of revID: [UInt8]) -> UInt64 {
        var offset = 0
        return revID.withUnsafeBytes { Varint.read($0, at: &offset) } ?? 0
    }
}

extension LiteCoreRevTree {
    /// Adds a new leaf revision under `parentIndex` the way LiteCore's `RevTree` does on a save:
    /// revisions stored with sequence 0 take the old record's sequence, the parent stops being a
    /// leaf and loses its body (unless KeepBody), then the tree is re-sorted (index 0 = winner)
    /// and pruned to `maxDepth` (spec 3.3). The new revision gets sequence 0 ("this save").
    package mutating func addRevision(_ revID: [UInt8], parentIndex: Int?, flags: RevisionFlags, body: [UInt8],
                                      recordSequence: UInt64, maxDepth: Int) {
        for i in revisions.indices where revisions[i].sequence == 0 {
            revisions[i].sequence = recordSequence
        }
        if let p = parentIndex {
            revisions[p].flags.remove(.leaf)
            if !revisions[p].flags.contains(.keepBody) { revisions[p].body = nil }
        }
        revisions.append(TreeRevision(revID: revID, parentIndex: parentIndex, flags: flags.union(.leaf),
                                      sequence: 0, body: body))
        sort()
        prune(maxDepth: maxDepth)
    }

    /// LiteCore's priority order (`RevTree::sort`): leaves first, then non-conflicts, live before
    /// deleted, open before closed, then higher revision ID first.
    package mutating func sort() {
        let order = revisions.indices.sorted { Self.precedes(revisions[$0], revisions[$1]) }
        reorder(keeping: order)
    }

    private static func precedes(_ a: TreeRevision, _ b: TreeRevision) -> Bool {
        if a.isLeaf != b.isLeaf { return a.isLeaf }
        let ac = a.flags.contains(.isConflict), bc = b.flags.contains(.isConflict)
        if ac != bc { return !ac }
        if a.isDeleted != b.isDeleted { return !a.isDeleted }
        let aClosed = a.flags.contains(.closed), bClosed = b.flags.contains(.closed)
        if aClosed != bClosed { return !aClosed }
        return BinaryRevisionID.compare(a.revID, b.revID) > 0
    }

    /// Removes revisions farther than `maxDepth` from every leaf (`RevTree::prune`); a revision
    /// whose parent is removed becomes a root.
    package mutating func prune(maxDepth: Int) {
        guard maxDepth > 0, revisions.count > maxDepth else { return }
        var depth = [Int](repeating: Int.max, count: revisions.count)
        for leaf in revisions.indices where revisions[leaf].isLeaf {
            var index: Int? = leaf
            var d = 1
            while let i = index, d < depth[i], d <= revisions.count {
                depth[i] = d
                index = revisions[i].parentIndex
                d += 1
            }
        }
        let kept = revisions.indices.filter { depth[$0] <= maxDepth }
        if kept.count < revisions.count { reorder(keeping: kept) }
    }

    /// Keeps the revisions at `order` (old indexes), in that order, remapping parents and remotes.
    private mutating func reorder(keeping order: [Int]) {
        var newIndex = [Int?](repeating: nil, count: revisions.count)
        for (new, old) in order.enumerated() { newIndex[old] = new }
        revisions = order.map { old in
            var rev = revisions[old]
            rev.parentIndex = rev.parentIndex.flatMap { newIndex[$0] }
            return rev
        }
        remotes = remotes.compactMap { entry in newIndex[entry.revision].map { (entry.remote, $0) } }
    }

    /// The document flags this tree gives its row (spec 3.3): Deleted when the winner is deleted,
    /// Conflicted with two or more live leaves, HasAttachments when any revision has blobs.
    package var documentFlags: DocumentFlags {
        var flags: DocumentFlags = []
        if revisions.first?.isDeleted == true { flags.insert(.deleted) }
        if revisions.filter({ $0.isLeaf && !$0.isDeleted }).count >= 2 { flags.insert(.conflicted) }
        if revisions.contains(where: { $0.flags.contains(.hasAttachments) }) { flags.insert(.hasAttachments) }
        return flags
    }
}
