import Fleece
import Foundation
import JSONCore
import SQLiteKit
import XCTest
@testable import CouchbaseLiteSwift

/// Our 2.x storage reads real Couchbase Lite 2.x/3.x files (fixtures/cbl2/lite_dbs) as LiteCore's
/// `c4DatabaseTest.cc` asserts, and its encoders reproduce LiteCore's bytes.
final class TwoXStorageTests: XCTestCase {
    private func open(_ fixture: String, in scratch: Scratch) throws -> Database {
        let bundle = try scratch.copyFixture(fixture)
        return try openConverted(bundle)
    }

    func testReads27And28FilesAsLiteCoreAsserts() throws {
        for fixture in ["cbl2/lite_dbs/upgrade_2.7.cblite2", "cbl2/lite_dbs/upgrade_2.8.cblite2"] {
            let scratch = Scratch()
            let db = try open(fixture, in: scratch)
            XCTAssertEqual(db.count, 50, fixture)
            let all = try db.allDocuments(includeDeleted: true)
            XCTAssertEqual(all.map(\.id), (1...100).map { String(format: "doc-%03d", $0) })
            var evenCount = 0, evenSum = 0
            for (i, doc) in all.enumerated() {
                let n = i + 1
                XCTAssertEqual(doc.int(forKey: "n"), n)
                XCTAssertEqual(doc.boolean(forKey: "even"), n % 2 == 0)
                XCTAssertEqual(doc.isDeleted, n > 50)
                XCTAssertEqual(doc.revisionID, "1-abcd")
                if !doc.isDeleted && doc.boolean(forKey: "even") { evenCount += 1; evenSum += n }
            }
            // `SELECT n FROM _ WHERE even == true`: 25 rows summing to 650.
            XCTAssertEqual(evenCount, 25)
            XCTAssertEqual(evenSum, 650)
            XCTAssertNil(db.document(withID: "doc-051"))
            XCTAssertEqual(try db.withOpenFile { (0..<$0.sharedKeys.count).compactMap($0.sharedKeys.string(forCode:)) }, ["n", "even"])
            try db.close()
        }
    }

    func testReads30NamesFileWithExtraColumn() throws {
        let scratch = Scratch()
        let db = try open("cbl2/lite_dbs/db_3_0_0_names_100_with_deleted.cblite2", in: scratch)
        let lines = try String(contentsOf: try SharedFixtures.root().appendingPathComponent("cbl2/query_data/names_100.json"), encoding: .utf8)
            .split(separator: "\n").filter { !$0.isEmpty }
        XCTAssertEqual(lines.count, 100)
        let live = try db.allDocuments()
        XCTAssertEqual(db.count, UInt64(live.count))
        XCTAssertEqual(live.count, 78)
        // The document IDs are random; every live body is one of the source lines, each at most once.
        let sourceBodies = Set(try lines.map { try JSON.string(try JSON.parse(Array($0.utf8)), sortedKeys: true) })
        var seen = Set<String>()
        for doc in live {
            let body = try JSON.string(plainProperties(doc), sortedKeys: true)
            XCTAssertTrue(sourceBodies.contains(body), "\(doc.id): \(body)")
            XCTAssertTrue(seen.insert(body).inserted, doc.id)
            XCTAssertNotNil(doc.revisionID)
        }
        try db.close()
    }

    func testReads31FileWithDeletedTableAndCollections() throws {
        let scratch = Scratch()
        let db = try open("cbl2/lite_dbs/upgrade_3.1_peerCheckpoints.cblite2", in: scratch)
        XCTAssertEqual(try db.withOpenFile { $0.schemaVersion }, 500)
        XCTAssertTrue(try db.withOpenFile { $0.hasDeletedTable })
        _ = try db.allDocuments(includeDeleted: true)
        try db.close()
    }

    func testReads28IndexFileDocuments() throws {
        let scratch = Scratch()
        let db = try open("cbl2/lite_dbs/upgrade_2.8_index.cblite2", in: scratch)
        for id in ["-3aW8VeEWNHiXlvj6lhl2Cl", "-4xUa8BVjx0TiT_iCFWjpzM"] {
            let doc = try XCTUnwrap(db.document(withID: id))
            XCTAssertEqual(doc.string(forKey: "firstName"), "fName")
            XCTAssertEqual(doc.string(forKey: "lastName"), "lName")
        }
        try db.close()
    }

    /// The 2.0 (schema 201) reference with blob properties (`"@type": "blob"`).
    func testReads20FileWithBlobs() throws {
        let scratch = Scratch()
        let bundle = try scratch.copyFixture("cbl1/cbl2-reference/android200/android-sqlite.cblite2")
        let db = try openConverted(bundle)
        XCTAssertEqual(db.count, 2)
        let doc = try XCTUnwrap(db.document(withID: "doc1"))
        XCTAssertEqual(doc.string(forKey: "key"), "1")
        let blob = try XCTUnwrap(doc.blob(forKey: "attach1"))
        XCTAssertEqual(blob.length, 7)
        XCTAssertEqual(blob.digest, "sha1-P1i5kI/sosq745/9BDR7kEghKps=")
        XCTAssertEqual(blob.content?.count, 7)
        XCTAssertTrue(doc.value(forKey: "attach1") is Blob)
        try db.close()
    }

    func testEncryptedAndOneXFilesAreRefused() throws {
        let scratch = Scratch()
        for fixture in ["cbl2/lite_dbs/encrypted_databases/Mac_2.1_AES128.cblite2", "cbl2/lite_dbs/upgrade_2.8_encrypted.cblite2"] {
            let bundle = try scratch.copyFixture(fixture)
            XCTAssertThrowsError(try openConverted(bundle), fixture) {
                XCTAssertEqual(($0 as? CouchbaseLiteError)?.code, .notADatabaseFile, "\($0)")
            }
        }
        let oneX = try scratch.copyFixture("cbl2/cbl1_upgrade_inputs/ios130/iosdb.cblite2")
        XCTAssertThrowsError(try openConverted(oneX)) { error in
            XCTAssertEqual((error as? CouchbaseLiteError)?.code, .databaseTooOld)
            XCTAssertTrue("\(error)".contains("cbl upgrade"))
        }
    }

    /// Spec 6.9: rev trees of every 2.7/2.8/3.0 fixture row decode and re-encode byte-exactly.
    func testRevisionTreesRoundTripByteExactly() throws {
        let scratch = Scratch()
        for (fixture, column) in [("cbl2/lite_dbs/upgrade_2.8.cblite2", "body"), ("cbl2/lite_dbs/upgrade_2.7.cblite2", "body"),
                                  ("cbl2/lite_dbs/db_3_0_0_names_100_with_deleted.cblite2", "extra")] {
            let bundle = try scratch.copyFixture(fixture, as: UUID().uuidString + ".cblite2")
            let c = try SQLiteConnection(path: bundle.appendingPathComponent("db.sqlite3").path, mode: .init(readOnly: true))
            let stmt = try c.prepare("SELECT key, \(column), version FROM kv_default")
            var rows = 0
            while try stmt.step() {
                let bytes = try XCTUnwrap(stmt.bytes(1))
                let tree = try LiteCoreRevTree.decode(bytes)
                XCTAssertEqual(tree.encoded(includeCurrentBody: column == "body"), bytes, "\(fixture) \(stmt.string(0) ?? "")")
                XCTAssertEqual(tree.current?.revID, stmt.bytes(2))
                rows += 1
            }
            XCTAssertGreaterThan(rows, 0)
        }
    }

    /// Spec 3.3's worked example: doc1 of the android120 upgrade input.
    func testConvertedTreeMatchesSpecWorkedExample() throws {
        let scratch = Scratch()
        let source = try scratch.copyFixture("cbl2/cbl1_upgrade_inputs/android120/androiddb.cblite2")
        let (bundle, _) = try upgrade(source, in: scratch)
        let c = try SQLiteConnection(path: bundle.appendingPathComponent("db.sqlite3").path, mode: .init(readOnly: true))
        let stmt = try c.prepare("SELECT sequence, flags, version, body FROM kv_default WHERE key='doc1'")
        XCTAssertTrue(try stmt.step())
        XCTAssertEqual(stmt.int(0), 1)
        XCTAssertEqual(stmt.int(1), 4)
        let rev2: [UInt8] = [0x02, 0xDB, 0x99, 0x41, 0xF7, 0x4D, 0x7F, 0xD4, 0x5D, 0x60, 0xC2, 0x72, 0xB7, 0x96, 0xAE, 0x50, 0xC7]
        let rev1: [UInt8] = [0x01, 0xE2, 0xA2, 0xBD, 0xC0, 0xB0, 0x0E, 0x32, 0xEC, 0xD0, 0xB6, 0xBC, 0x54, 0x60, 0x24, 0x80, 0x8B]
        XCTAssertEqual(stmt.bytes(2), rev2)
        let body = try XCTUnwrap(stmt.bytes(3))
        XCTAssertEqual(body.count, 130 + 26 + 4)
        XCTAssertEqual(Array(body[0..<8]), [0x00, 0x00, 0x00, 0x82, 0x00, 0x01, 0x8A, 0x11])
        XCTAssertEqual(Array(body[8..<25]), rev2)
        XCTAssertEqual(body[25], 0x00)
        XCTAssertEqual(Array(body[130..<138]), [0x00, 0x00, 0x00, 0x1A, 0xFF, 0xFF, 0x00, 0x11])
        XCTAssertEqual(Array(body[138..<155]), rev1)
        XCTAssertEqual(Array(body[155...]), [0x00, 0x00, 0x00, 0x00, 0x00])
    }

    func testBinaryRevisionIDs() {
        XCTAssertEqual(BinaryRevisionID.encode("2-db9941f74d7fd45d60c272b796ae50c7"),
                       [0x02, 0xDB, 0x99, 0x41, 0xF7, 0x4D, 0x7F, 0xD4, 0x5D, 0x60, 0xC2, 0x72, 0xB7, 0x96, 0xAE, 0x50, 0xC7])
        XCTAssertEqual(BinaryRevisionID.encode("1-abcd"), [0x01, 0xAB, 0xCD])
        XCTAssertEqual(BinaryRevisionID.encode("300-ab"), [0xAC, 0x02, 0xAB])
        for bad in ["1-ABCD", "1-abc", "0-ab", "-ab", "1-", "x-ab", "1-abzz", "123456789012345678901-ab", "1"] {
            XCTAssertNil(BinaryRevisionID.encode(bad), bad)
        }
        XCTAssertEqual(BinaryRevisionID.decode([0xAC, 0x02, 0xAB]), "300-ab")
        XCTAssertNil(BinaryRevisionID.decode([0x00, 0x01]))
        XCTAssertLessThan(BinaryRevisionID.compare([0x01, 0xFF], [0x02, 0x00]), 0)
        XCTAssertLessThan(BinaryRevisionID.compare([0x02, 0x00], [0x02, 0x00, 0x00]), 0)
    }

    func testHostileRevisionTreesThrow() {
        let valid: [UInt8] = [0, 0, 0, 0x18, 0xFF, 0xFF, 0x82, 3, 1, 0xAB, 0xCD, 0, 0x70, 2, 0, 0, 0, 1, 0, 1, 0x34, 0, 0x80, 5, 0, 0, 0, 0]
        XCTAssertNoThrow(try LiteCoreRevTree.decode(valid))
        for cut in 0..<(valid.count - 4) {
            XCTAssertThrowsError(try LiteCoreRevTree.decode(Array(valid[0..<cut])), "cut at \(cut)")
        }
        var badParent = valid
        badParent[4] = 0; badParent[5] = 7
        XCTAssertThrowsError(try LiteCoreRevTree.decode(badParent))
        var hugeSize = valid
        hugeSize[0] = 0x7F
        XCTAssertThrowsError(try LiteCoreRevTree.decode(hugeSize))
    }

    func testNewDatabaseHasThe28Layout() throws {
        let scratch = Scratch()
        let db = try Database(name: "fresh", config: DatabaseConfiguration(directory: scratch.url.path))
        XCTAssertEqual(db.count, 0)
        XCTAssertTrue(Database.exists(withName: "fresh", inDirectory: scratch.url.path))
        XCTAssertFalse(Database.exists(withName: "other", inDirectory: scratch.url.path))
        XCTAssertNil(db.document(withID: "x"))
        try db.close()
        let c = try SQLiteConnection(path: scratch.path("fresh.cblite2/db.sqlite3").path, mode: .init(readOnly: true))
        XCTAssertEqual(c.userVersion, 302)
        XCTAssertEqual(try c.scalarInt("SELECT count(*) FROM kv_info WHERE key IN ('versioning','publicUUID','privateUUID')"), 3)
        XCTAssertThrowsError(try db.documentIncludingDeleted(withID: "x")) { XCTAssertEqual(($0 as? CouchbaseLiteError)?.code, .notOpen) }
    }
}
