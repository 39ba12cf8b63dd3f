import CouchbaseLite
import CouchbaseLiteJavaScript
import Foundation
import XCTest

/// A push replication naming a design document's JavaScript filter (`design/filter`).
final class JavaScriptReplicationTests: ReplicationTestCase {
    override func tearDownWithError() throws {
        CBLDatabase.setFilterCompiler(nil)
        try super.tearDownWithError()
    }

    func testPushWithADesignDocumentFilter() throws {
        let local = try clientManager.databaseNamed("local")
        for i in 0..<10 { try local.document(withID: "d\(i)")!.putProperties(["i": i, "even": i % 2 == 0]) }
        try local.document(withID: "_design/app")!.putProperties(["filters": [
            "evens": "function(doc, req) { return doc.even === true && doc.i >= Number(req.query.min); }",
        ]])
        _ = try createDB("filtered")

        // Without a filter compiler the name is unknown: the push fails with 404.
        let refused = local.createPushReplication(remoteURL("filtered"))
        refused.filter = "app/evens"
        runToCompletion(refused)
        XCTAssertTrue(String(describing: refused.lastError).contains("No filter named 'app/evens'"), String(describing: refused.lastError))

        CBLDatabase.setFilterCompiler(CBLJSFilterCompiler())
        let push = local.createPushReplication(remoteURL("filtered"))
        push.filter = "app/evens"
        push.filterParams = ["min": 4]
        runToCompletion(push)
        XCTAssertNil(push.lastError)
        let server = try manager.existingDatabaseNamed("filtered")
        XCTAssertEqual(Set((0..<10).filter { server.existingDocument(withID: "d\($0)") != nil }), [4, 6, 8])
        XCTAssertNil(server.existingDocument(withID: "_design/app"))
    }
}
