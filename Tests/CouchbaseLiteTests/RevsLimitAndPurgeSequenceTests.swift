import Foundation
import XCTest
@testable import CouchbaseLite

/// `maxRevTreeDepth` (CouchDB's `_revs_limit`), the purge sequence and `_purged_infos_limit` in
/// real 1.x files: kept by the `info` table across reopening and compaction, and compaction
/// pruning every document to the depth (issue 34, items 5 and 6).
final class RevsLimitAndPurgeSequenceTests: DatabaseTestCase {
    private func reopen() throws {
        manager.close()
        manager = try makeManager(dir)
        db = try manager.databaseNamed(databaseName)
    }

    private func history(_ docID: String, _ revID: String) throws -> [String] {
        try db.syncHistory(docID: docID, revID: revID).map(\.revID)
    }

    /// A document edited `count` times after its first revision; returns its current revision.
    @discardableResult
    private func edited(_ docID: String, count: Int) throws -> String {
        let doc = db.document(withID: docID)!
        try doc.putProperties(["i": 0])
        for i in 1...count { try doc.update { $0["i"] = i; return true } }
        return doc.currentRevisionID!
    }

    func testMaxRevTreeDepthIsKeptInTheFile() throws {
        XCTAssertEqual(db.maxRevTreeDepth, 20)
        db.maxRevTreeDepth = 5
        try reopen()
        XCTAssertEqual(db.maxRevTreeDepth, 5)
        try db.compact()
        XCTAssertEqual(db.maxRevTreeDepth, 5)
        try reopen()
        XCTAssertEqual(db.maxRevTreeDepth, 5)
        // 0 means the default, never "keep nothing".
        db.maxRevTreeDepth = 0
        XCTAssertEqual(db.maxRevTreeDepth, 20)
        try reopen()
        XCTAssertEqual(db.maxRevTreeDepth, 20)
    }

    /// Lowering the depth prunes nothing by itself; compaction prunes every document to it,
    /// linear histories and each branch of a conflict alike.
    func testCompactionPrunesEveryDocumentToTheDepth() throws {
        let linear = try edited("linear", count: 11)              // 12 generations
        let main = try edited("branched", count: 9)               // 10 generations
        let gen2 = try XCTUnwrap(try history("branched", main).first { $0.hasPrefix("2-") })
        try db.forceInsert(docID: "branched", history: ["3-bbbb", gen2], properties: ["side": true])
        XCTAssertEqual(try history("linear", linear).count, 12)

        db.maxRevTreeDepth = 5
        XCTAssertEqual(try history("linear", linear).count, 12, "setting the depth prunes nothing by itself")
        try db.compact()
        XCTAssertEqual(try history("linear", linear).count, 5)
        XCTAssertEqual(try history("linear", linear).first, linear)
        XCTAssertEqual(try history("branched", main).count, 5)
        let side = try history("branched", "3-bbbb")
        XCTAssertEqual(side.count, 3, "a short branch keeps its whole history")
        XCTAssertEqual(Array(side.prefix(2)), ["3-bbbb", gen2])

        try reopen()
        XCTAssertEqual(try history("linear", linear).count, 5)
        XCTAssertEqual(db.existingDocument(withID: "linear")?.properties?["i"] as? Int, 11)
    }

    func testPurgeSequenceAdvancesAndIsKept() throws {
        XCTAssertEqual(db.purgeSequence, 0)
        try edited("a", count: 1)
        let b = try edited("b", count: 1)
        try db.document(withID: "a")!.purgeDocument()
        XCTAssertEqual(db.purgeSequence, 1)
        XCTAssertEqual(try db.purgeRevisions(docID: "b", revIDs: [b]).count, 2)
        XCTAssertEqual(db.purgeSequence, 2)
        // One per document named, found or not, as CouchDB counts purge requests.
        XCTAssertEqual(try db.syncPurge([(docID: "nosuch", revIDs: ["1-abc"]), (docID: "other", revIDs: ["1-def"])]), [[], []])
        XCTAssertEqual(db.purgeSequence, 4)
        try db.compact()
        XCTAssertEqual(db.purgeSequence, 4)
        try reopen()
        XCTAssertEqual(db.purgeSequence, 4)
    }

    func testPurgedInfosLimitIsKept() throws {
        XCTAssertEqual(db.purgedInfosLimit, 1000)
        db.purgedInfosLimit = 7
        try db.compact()
        try reopen()
        XCTAssertEqual(db.purgedInfosLimit, 7)
    }
}
