import Foundation
import SQLiteKit
import XCTest
@testable import CouchbaseLite

/// Bad input that used to trap (`!`, `try!`, `precondition`) now throws a 1.x status (issue 22).
final class NoCrashTests: DatabaseTestCase {
    /// `copy()` used `try!`: a manager whose directory is gone still copies, as `init()` does.
    func testManagerCopyAfterItsDirectoryIsRemoved() throws {
        let directory = dir.url.appendingPathComponent("gone").path
        let original = try CBLManager(directory: directory)
        try FileManager.default.removeItem(atPath: directory)
        let copy = try XCTUnwrap(original.copy() as? CBLManager)
        XCTAssertEqual(copy.directory, original.directory)
        XCTAssertFalse(FileManager.default.fileExists(atPath: directory), "a copy neither creates nor upgrades")
    }

    /// A model made with neither a document nor a database (1.x asserts) saves with a 404.
    func testModelWithoutDocumentOrDatabaseThrowsOnSave() throws {
        let model = Titled(document: nil, orDatabase: nil)
        XCTAssertNil(model.document)
        model.title = "orphan"
        XCTAssertEqual(model.title, "orphan")
        XCTAssertThrowsStatus(404, try model.save())
    }

    /// The insertion paths reject an invalid ID with 400 before the write transaction.
    func testForceInsertWithInvalidDocumentIDThrows400() throws {
        XCTAssertThrowsStatus(400, try db.forceInsert(docID: "_bad", history: ["1-abcd"], properties: ["x": 1]))
        XCTAssertThrowsStatus(400, try db.forceInsert(docID: "", history: ["1-abcd"], properties: ["x": 1]))
        XCTAssertEqual(db.documentCount, 0)
    }

    /// `superEncoder()` on a keyed container whose keys have no `super` case used to trap.
    func testSuperEncoderWithoutSuperKeyCase() throws {
        struct Child: Encodable {
            enum CodingKeys: String, CodingKey { case name }
            func encode(to encoder: Encoder) throws {
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode("kid", forKey: .name)
                var parent = container.superEncoder().container(keyedBy: CodingKeys.self)
                try parent.encode("base", forKey: .name)
            }
        }
        let value = try JSONValueEncoder().encode(Child())
        let object = try XCTUnwrap(value as? [String: Any])
        XCTAssertEqual(object["name"] as? String, "kid")
        XCTAssertEqual((object["super"] as? [String: Any])?["name"] as? String, "base")
    }

    /// A commit or rollback with no transaction open is SQLITE_MISUSE, not a trap.
    func testCommitWithoutBeginThrowsMisuse() throws {
        let path = dir.url.appendingPathComponent("plain.sqlite3").path
        let connection = try SQLiteConnection(path: path, mode: .init(readOnly: false, create: true))
        XCTAssertThrowsError(try connection.commit()) { XCTAssertEqual(($0 as? SQLiteError)?.code, 21) }
        XCTAssertThrowsError(try connection.rollback()) { XCTAssertEqual(($0 as? SQLiteError)?.code, 21) }
    }
}
