import Foundation
import XCTest
@testable import CouchbaseLiteSwift

/// 2.x calls that used to trap on bad input now throw a `CouchbaseLiteError` (issue 22).
final class NoCrash2xTests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("cblnocrash-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }

    private func open() throws -> Database {
        try Database(name: "nocrash", config: DatabaseConfiguration(directory: directory.path))
    }

    private func assertCode(_ code: CouchbaseLiteError.Code, mentions text: String, _ expression: @autoclosure () throws -> Any,
                            file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try expression(), file: file, line: line) { error in
            let e = error as? CouchbaseLiteError
            XCTAssertEqual(e?.code, code, "\(error)", file: file, line: line)
            XCTAssertTrue(e?.message.contains(text) ?? false, "\(error)", file: file, line: line)
        }
    }

    private struct NotAValue {}

    /// A setter given a type documents cannot hold records it; the save throws naming the key,
    /// as 2.x's invalid-argument exception names it, and nothing is stored.
    func testUnsupportedValueMakesTheSaveThrowNamingTheKey() throws {
        let db = try open()
        defer { try? db.close() }
        let collection = try db.defaultCollection()
        let doc = MutableDocument(id: "bad").setString("fine", forKey: "ok").setValue(NotAValue(), forKey: "odd")
        assertCode(.invalidParameter, mentions: "key 'odd'", try collection.save(document: doc))
        XCTAssertNil(try collection.document(id: "bad"))

        let nested = MutableDocument(id: "nested")
        nested.setValue(["list": [1, NotAValue()] as [Any]] as [String: Any], forKey: "outer")
        assertCode(.invalidParameter, mentions: "key 'outer.list[1]'", try collection.save(document: nested))

        // Replacing the bad value makes the document saveable again.
        doc.setInt(1, forKey: "odd")
        try collection.save(document: doc)
        XCTAssertEqual(try collection.document(id: "bad")?.int(forKey: "odd"), 1)
    }

    /// An array index out of range (2.x: a range exception) is ignored and reported by the save.
    func testArrayIndexOutOfRangeMakesTheSaveThrow() throws {
        let db = try open()
        defer { try? db.close() }
        let collection = try db.defaultCollection()
        let list = MutableArrayObject(data: [1, 2])
        list.setValue(9, at: 5).insertValue(9, at: 3).removeValue(at: -1)
        XCTAssertEqual(list.toArray() as? [Int], [1, 2], "out-of-range edits change nothing")
        let doc = MutableDocument(id: "arr").setArray(list, forKey: "list")
        assertCode(.invalidParameter, mentions: "cannot set at index 5 of an array of 2 (key 'list')",
                   try collection.save(document: doc))
        list.setData([3])
        try collection.save(document: doc)
        XCTAssertEqual(try collection.document(id: "arr")?.array(forKey: "list")?.toArray() as? [Int], [3])
    }

    /// A `DataSourceProtocol` that `DataSource` did not make: building the query cannot throw,
    /// running it throws `invalidQuery` (it used to trap in `from(_:)`).
    func testForeignDataSourceThrowsWhenRun() throws {
        struct ForeignSource: DataSourceProtocol {}
        let query = QueryBuilder.select(SelectResult.all()).from(ForeignSource())
        assertCode(.invalidQuery, mentions: "DataSource", try query.execute())
        assertCode(.invalidQuery, mentions: "DataSource", try query.explain())

        let reported = DispatchSemaphore(value: 0)
        let token = query.addChangeListener { change in
            XCTAssertNil(change.results)
            XCTAssertEqual((change.error as? CouchbaseLiteError)?.code, .invalidQuery)
            reported.signal()
        }
        XCTAssertEqual(reported.wait(timeout: .now() + 10), .success, "the listener gets the error")
        token.remove()
    }

    /// Changing the ID of a Codable model tied to a saved document (a trap in 3.x) is refused:
    /// the model keeps its ID and the next save or delete throws.
    func testChangingATiedDocumentIDThrowsOnSave() throws {
        final class Note: Codable {
            @DocumentID var id: String?
            var text = "hello"
        }
        let db = try open()
        defer { try? db.close() }
        let collection = try db.defaultCollection()
        let note = Note()
        note.id = "note1"
        try collection.save(from: note)
        note.id = "other"
        XCTAssertEqual(note.id, "note1")
        assertCode(.invalidParameter, mentions: "note1", try collection.save(from: note))
        assertCode(.invalidParameter, mentions: "note1", try collection.delete(for: note))
        XCTAssertNil(try collection.document(id: "other"))
        // Setting it back to its own ID clears the refusal.
        note.id = "note1"
        try collection.save(from: note)
    }
}
