import CouchbaseLite
import CouchbaseLiteListener
import Foundation
import XCTest

/// `POST /_replicate` between two remote databases (issue 18 B9): the listener under test holds
/// neither database and replicates from one listener to another, as CouchDB's replicator does.
final class ListenerRelayReplicationTests: ReplicationTestCase {
    var sourceListener: CBLListener!
    var targetListener: CBLListener!
    var targetDirectory: URL!
    var targetManager: CBLManager!

    override func setUpWithError() throws {
        try super.setUpWithError()
        sourceListener = CBLListener(manager: clientManager, port: 0)
        sourceListener.bindAddress = "127.0.0.1"
        try sourceListener.start()
        targetDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("cbl-target-\(UUID().uuidString)")
        targetManager = try CBLManager(directory: targetDirectory.path)
        targetListener = CBLListener(manager: targetManager, port: 0)
        targetListener.bindAddress = "127.0.0.1"
        try targetListener.start()
    }

    override func tearDownWithError() throws {
        listener?.stop()
        sourceListener?.stop()
        targetListener?.stop()
        targetManager?.close()
        if let targetDirectory { try? FileManager.default.removeItem(at: targetDirectory) }
        try super.tearDownWithError()
    }

    var sourceBase: String { "http://127.0.0.1:\(sourceListener.port)" }
    var targetBase: String { "http://127.0.0.1:\(targetListener.port)" }

    /// Relay databases left in the temporary directory.
    private func relayDirectories() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: FileManager.default.temporaryDirectory.path)) ?? [])
            .filter { $0.hasPrefix("cbl-relay-") }
    }

    func testOneShotRemoteToRemoteKeepsRevisionsConflictsAndAttachments() throws {
        let relaysBefore = Set(relayDirectories())
        let source = try clientManager.databaseNamed("src")
        for i in 0..<15 { try source.document(withID: "d\(i)")!.putProperties(["i": i]) }
        let withAttachment = try source.document(withID: "att")!.putProperties([
            "_attachments": ["a.txt": ["content_type": "text/plain", "data": Data("relayed".utf8).base64EncodedString()]],
        ])
        // A conflict: both leaves must arrive.
        let doc = source.document(withID: "c")!
        let base = try doc.putProperties(["side": "base"])
        let left = try doc.putProperties(["_rev": base.revisionID as Any, "side": "left"])
        let branch = base.createRevision()
        var branchProperties = branch.properties ?? [:]
        branchProperties["side"] = "right"
        branch.properties = branchProperties
        let right = try branch.saveAllowingConflict().revisionID
        // A deletion.
        let gone = try source.document(withID: "gone")!.putProperties(["x": 1])
        try source.document(withID: "gone")!.delete()

        let r = try request("POST", "/_replicate", json: [
            "source": "\(sourceBase)/src", "target": "\(targetBase)/tgt", "create_target": true,
        ], timeout: 60)
        expect(r, 200)
        XCTAssertEqual(r.dict["ok"] as? Bool, true)
        XCTAssertGreaterThanOrEqual(r.dict["docs_read"] as? Int ?? 0, 18, r.text)
        XCTAssertGreaterThanOrEqual(r.dict["docs_written"] as? Int ?? 0, 18, r.text)

        let target = try targetManager.existingDatabaseNamed("tgt")
        XCTAssertEqual(target.documentCount, 17)
        XCTAssertEqual(target.existingDocument(withID: "d7")?.properties?["i"] as? Int, 7)
        XCTAssertEqual(target.existingDocument(withID: "att")?.currentRevisionID, withAttachment.revisionID)
        let attachment = target.existingDocument(withID: "att")?.currentRevision?.attachmentNamed("a.txt")
        XCTAssertEqual(attachment?.content, Data("relayed".utf8))
        let leaves = Set((try target.existingDocument(withID: "c")?.getLeafRevisions() ?? []).map(\.revisionID))
        XCTAssertEqual(leaves, [left.revisionID, right])
        XCTAssertNil(target.existingDocument(withID: "gone"))
        XCTAssertNotEqual(gone.revisionID, "")
        // The relay database is gone with the replication.
        XCTAssertEqual(Set(relayDirectories()).subtracting(relaysBefore), [])

        // Again: the same target, unchanged.
        let again = try request("POST", "/_replicate", json: ["source": "\(sourceBase)/src", "target": "\(targetBase)/tgt"],
                                timeout: 60)
        expect(again, 200)
        XCTAssertEqual(target.documentCount, 17)

        // doc_ids select what the relay pulls; a missing target without create_target fails.
        try source.document(withID: "only")!.putProperties(["n": 1])
        try source.document(withID: "other")!.putProperties(["n": 2])
        expect(try request("POST", "/_replicate", json: [
            "source": "\(sourceBase)/src", "target": "\(targetBase)/tgt", "doc_ids": ["only"],
        ], timeout: 60), 200)
        XCTAssertNotNil(target.existingDocument(withID: "only"))
        XCTAssertNil(target.existingDocument(withID: "other"))
        expectError(try request("POST", "/_replicate", json: ["source": "\(sourceBase)/src", "target": "\(targetBase)/none"],
                                timeout: 60), 404, "not_found")
        expectError(try request("POST", "/_replicate", json: ["source": "\(sourceBase)/nosrc", "target": "\(targetBase)/tgt"],
                                timeout: 60), 404, "not_found")
    }

    func testContinuousRemoteToRemoteFlowsUntilCancelled() throws {
        let source = try clientManager.databaseNamed("live")
        _ = try targetManager.databaseNamed("copy")
        try source.document(withID: "first")!.putProperties(["n": 1])
        let start = try request("POST", "/_replicate", json: [
            "source": "\(sourceBase)/live", "target": "\(targetBase)/copy", "continuous": true,
        ])
        expect(start, 202)
        let session = try XCTUnwrap(start.dict["session_id"] as? String)
        let copy = try targetManager.existingDatabaseNamed("copy")
        XCTAssertTrue(waitUntil(20) { copy.existingDocument(withID: "first") != nil })
        let task = try XCTUnwrap(try get("/_active_tasks").array.first as? [String: Any])
        XCTAssertEqual(task["task"] as? String, session)
        XCTAssertEqual(task["source"] as? String, "\(sourceBase)/live")
        XCTAssertEqual(task["target"] as? String, "\(targetBase)/copy")
        XCTAssertEqual(task["continuous"] as? Bool, true)

        try source.document(withID: "later")!.putProperties(["n": 2])
        XCTAssertTrue(waitUntil(20) { copy.existingDocument(withID: "later")?.properties?["n"] as? Int == 2 })

        expect(try request("POST", "/_replicate", json: ["replication_id": session, "source": "\(sourceBase)/live",
                                                          "target": "\(targetBase)/copy", "cancel": true]), 200)
        XCTAssertTrue(waitUntil { ((try? self.get("/_active_tasks").array) ?? [1]).isEmpty })
        try source.document(withID: "after-cancel")!.putProperties(["n": 3])
        Thread.sleep(forTimeInterval: 0.5)
        XCTAssertNil(copy.existingDocument(withID: "after-cancel"))
    }
}
