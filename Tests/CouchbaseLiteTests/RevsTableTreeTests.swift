import XCTest
@testable import CouchbaseLite

/// The 1.x revision tree's rules (spec 3.4, 3.6, 3.8) on concrete trees.
final class RevsTableTreeTests: XCTestCase {
    /// 1-a ─┬─ 2-b ─┬─ 3-c (live leaf)
    ///      │       └─ 3-d (live leaf)
    ///      └─ 2-x ─── 4-y (deleted leaf)
    /// Newest sequence first, as the store reads it.
    private let branched = RevsTableTree(nodes: [
        .init(sequence: 6, revID: "3-d", parent: 2, current: true, deleted: false),
        .init(sequence: 5, revID: "4-y", parent: 4, current: true, deleted: true),
        .init(sequence: 4, revID: "2-x", parent: 1, current: false, deleted: false, hasBody: false),
        .init(sequence: 3, revID: "3-c", parent: 2, current: true, deleted: false),
        .init(sequence: 2, revID: "2-b", parent: 1, current: false, deleted: false, hasBody: false),
        .init(sequence: 1, revID: "1-a", parent: nil, current: false, deleted: false, hasBody: false),
    ])

    func testLeavesAndWinnerPutLiveLeavesFirstThenHighestRevID() {
        XCTAssertEqual(branched.leaves.map(\.revID), ["3-d", "3-c", "4-y"])
        XCTAssertEqual(branched.winner?.revID, "3-d")
        XCTAssertTrue(branched.isInConflict)
    }

    func testWinnerComparesGenerationsNumerically() {
        let tree = RevsTableTree(nodes: [
            .init(sequence: 2, revID: "9-zz", parent: nil, current: true, deleted: false),
            .init(sequence: 3, revID: "10-aa", parent: nil, current: true, deleted: false),
        ])
        XCTAssertEqual(tree.winner?.revID, "10-aa")
    }

    func testDeletedLeavesOnlyMakeADeletedWinnerAndNoConflict() {
        let tree = RevsTableTree(nodes: [
            .init(sequence: 3, revID: "3-t", parent: 2, current: true, deleted: true),
            .init(sequence: 2, revID: "2-live", parent: 1, current: false, deleted: false),
            .init(sequence: 4, revID: "2-u", parent: 1, current: true, deleted: true),
            .init(sequence: 1, revID: "1-a", parent: nil, current: false, deleted: false),
        ])
        XCTAssertEqual(tree.winner?.revID, "3-t")
        XCTAssertEqual(tree.winner?.deleted, true)
        XCTAssertFalse(tree.isInConflict)
        XCTAssertNil(RevsTableTree(nodes: []).winner)
    }

    func testHistoryFollowsParentsNewestFirst() {
        XCTAssertEqual(branched.history(of: 3).map(\.revID), ["3-c", "2-b", "1-a"])
        XCTAssertEqual(branched.history(ofRevID: "4-y").map(\.revID), ["4-y", "2-x", "1-a"])
        XCTAssertEqual(branched.history(of: 3, limit: 2).map(\.revID), ["3-c", "2-b"])
        XCTAssertEqual(branched.history(of: 99), [])
        XCTAssertEqual(branched.history(ofRevID: "5-nope"), [])
        XCTAssertEqual(branched.ancestry(of: 6), [6, 2, 1])
    }

    func testHistoryStopsAtAPrunedRootAndAtACycle() {
        let pruned = RevsTableTree(nodes: [
            .init(sequence: 8, revID: "8-h", parent: 7, current: true, deleted: false),
            .init(sequence: 7, revID: "7-g", parent: 3, current: false, deleted: false),   // 3 was pruned
        ])
        XCTAssertEqual(pruned.history(of: 8).map(\.revID), ["8-h", "7-g"])
        let cycle = RevsTableTree(nodes: [
            .init(sequence: 2, revID: "2-b", parent: 1, current: true, deleted: false),
            .init(sequence: 1, revID: "1-a", parent: 2, current: false, deleted: false),
        ])
        XCTAssertEqual(cycle.history(of: 2).map(\.revID), ["2-b", "1-a"])
        XCTAssertEqual(cycle.descendants(of: 1), [1, 2])
    }

    /// Long histories (more nodes than a small tree scans) give the same walks: newest first,
    /// stopping at a cycle deep in the history, and the winner among several leaves.
    func testLongHistoryWalksAndStopsAtADeepCycle() {
        // 40-… → 39-… → … → 1-…, whose parent points back to 30 (a damaged file), plus a
        // deleted leaf 41-z on 40 and an older live leaf 2-y on 1.
        var nodes: [RevsTableTree.Node] = [
            .init(sequence: 42, revID: "41-z", parent: 40, current: true, deleted: true),
            .init(sequence: 41, revID: "2-y", parent: 1, current: true, deleted: false),
        ]
        for seq in stride(from: Int64(40), through: 1, by: -1) {
            nodes.append(.init(sequence: seq, revID: "\(seq)-r", parent: seq == 1 ? 30 : seq - 1,
                               current: seq == 40, deleted: false))
        }
        let tree = RevsTableTree(nodes: nodes)
        XCTAssertEqual(tree.history(of: 40).map(\.sequence), Array(stride(from: Int64(40), through: 1, by: -1)))
        XCTAssertEqual(tree.history(of: 40, limit: 20).count, 20)
        XCTAssertEqual(tree.history(of: 41).map(\.revID), ["2-y", "1-r"] + stride(from: 30, through: 2, by: -1).map { "\($0)-r" })
        XCTAssertEqual(tree.winner?.revID, "40-r")
        XCTAssertEqual(tree.leaves.map(\.revID), ["40-r", "2-y", "41-z"])
        XCTAssertTrue(tree.isInConflict)
        XCTAssertEqual(tree.node(sequence: 17)?.revID, "17-r")
        XCTAssertNil(tree.node(sequence: 99))
    }

    func testLeavesDescendingFromARevisionAreTheLatestOfItsBranch() {
        XCTAssertEqual(branched.descendants(of: 2), [2, 3, 6])
        XCTAssertEqual(branched.leaves(descendingFrom: 2).map(\.revID), ["3-d", "3-c"])
        XCTAssertEqual(branched.leaves(descendingFrom: 1).map(\.revID), ["3-d", "3-c", "4-y"])
        XCTAssertEqual(branched.leaves(descendingFrom: 3).map(\.revID), ["3-c"])
        XCTAssertEqual(branched.leaves(descendingFrom: 42), [])
    }

    func testPruningKeepsDepthRevisionsOfEveryBranch() {
        XCTAssertEqual(branched.sequencesBeyondDepth(3), [])
        XCTAssertEqual(branched.sequencesBeyondDepth(2), [1])
        XCTAssertEqual(branched.sequencesBeyondDepth(1), [4, 2, 1])
    }

    func testPurgingALeafKeepsAncestorsOtherLeavesNeed() {
        let plan = branched.purgePlan(revIDs: ["3-c"])
        XCTAssertEqual(plan.sequences, [3])
        XCTAssertEqual(plan.revIDs, ["3-c"])
        XCTAssertEqual(plan.formerParents, [2])

        let deletedBranch = branched.purgePlan(revIDs: ["4-y"])
        XCTAssertEqual(deletedBranch.revIDs, ["2-x", "4-y"])
        XCTAssertEqual(deletedBranch.formerParents, [1])
    }

    func testPurgingEveryLeafPurgesTheWholeTreeAndInnerRevisionsAlone() {
        let all = branched.purgePlan(revIDs: ["3-c", "3-d", "4-y", "unknown"])
        XCTAssertEqual(all.revIDs, ["1-a", "2-b", "2-x", "3-c", "3-d", "4-y"])
        XCTAssertEqual(all.formerParents, [])
        // An inner revision is an ancestor of a leaf that stays: nothing goes.
        XCTAssertEqual(branched.purgePlan(revIDs: ["2-x"]).sequences, [])
    }
}
