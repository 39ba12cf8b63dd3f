import Foundation
import XCTest
@testable import CouchbaseLiteSwift

/// The 2.x write and query pieces together: documents saved, updated and deleted through the
/// API are what N1QL then sees, after a reopen too.
final class WriteThenQueryTests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("cblwq-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }

    func testSavedUpdatedAndDeletedDocumentsAreWhatQueriesSee() throws {
        var db = try Database(name: "tasks", config: DatabaseConfiguration(directory: directory.path))
        try db.inBatch {
            for i in 0..<20 {
                let doc = MutableDocument(id: String(format: "task%02d", i))
                    .setString(i % 2 == 0 ? "open" : "done", forKey: "state")
                    .setInt(i, forKey: "n")
                    .setString("Task \(i)", forKey: "title")
                try db.saveDocument(doc)
            }
        }
        let five = try XCTUnwrap(db.document(withID: "task05")).toMutable()
        five.setString("open", forKey: "state")
        try db.saveDocument(five)
        try db.deleteDocument(try XCTUnwrap(db.document(withID: "task00")))

        func openTasks() throws -> [String] {
            try db.createQuery("SELECT meta().id AS id, n FROM _ WHERE state = 'open' ORDER BY n")
                .execute().map { $0.string(forKey: "id") ?? "?" }
        }
        let expected = ["task02", "task04", "task05", "task06", "task08", "task10", "task12", "task14", "task16", "task18"]
        XCTAssertEqual(try openTasks(), expected)
        let count = try db.createQuery("SELECT COUNT(*) AS c FROM _").execute().map { $0.int(forKey: "c") }
        XCTAssertEqual(count, [19], "the deleted document is not counted")

        try db.close()
        db = try Database(name: "tasks", config: DatabaseConfiguration(directory: directory.path))
        XCTAssertEqual(try openTasks(), expected, "the same after reopening")
        let deleted = try db.createQuery("SELECT meta().id AS id FROM _ WHERE meta().deleted").execute()
            .map { $0.string(forKey: "id") ?? "?" }
        XCTAssertEqual(deleted, ["task00"])
        try db.close()
    }

    /// The README's example, compiled and checked.
    func testReadmeExample() throws {
        let db = try Database(name: "app", config: DatabaseConfiguration(directory: directory.path))
        try db.saveDocument(MutableDocument(id: "t1").setString("open", forKey: "state").setInt(3, forKey: "n"))
        try db.saveDocument(MutableDocument(id: "t2").setString("done", forKey: "state").setInt(1, forKey: "n"))
        let query = try db.createQuery("SELECT meta().id AS id, n FROM _ WHERE state = $s ORDER BY n")
        query.parameters = Parameters().setString("open", forName: "s")
        var rows: [String] = []
        for row in try query.execute() { rows.append("\(row.string(forKey: "id")!) \(row.int(forKey: "n"))") }
        XCTAssertEqual(rows, ["t1 3"])
        XCTAssertFalse(try query.explain().isEmpty)
        try db.close()
    }
}
