import Fleece
import Foundation
import SQLiteKit
import XCTest
@testable import CouchbaseLiteSwift

/// Writes through the 2.x API into our own new databases: every value type survives a reopen,
/// revisions, trees, sequences, tombstones, purges and expirations are stored as LiteCore stores them.
final class DatabaseWriteTests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("cblwrites-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }

    private func open(_ name: String = "writes") throws -> Database {
        try Database(name: name, config: DatabaseConfiguration(directory: directory.path))
    }

    /// A second, raw look at the file (after the database is closed).
    private func sqlite(_ name: String = "writes") throws -> SQLiteConnection {
        try SQLiteConnection(path: directory.appendingPathComponent("\(name).cblite2/db.sqlite3").path,
                             mode: .init(readOnly: true, create: false))
    }

    func testEveryValueTypeReadsBackAfterReopen() throws {
        let db = try open()
        let date = Date(timeIntervalSince1970: 1_500_000_000.125)
        let blob = Blob(contentType: "text/plain", data: Data("blob content".utf8))
        let doc = MutableDocument(id: "doc1")
            .setString("hello", forKey: "string")
            .setInt(42, forKey: "int")
            .setInt64(Int64.min, forKey: "int64")
            .setValue(UInt64.max, forKey: "uint64")
            .setDouble(3.25, forKey: "double")
            .setDouble(0.1, forKey: "fraction")
            .setFloat(1.5, forKey: "float")
            .setBoolean(true, forKey: "bool")
            .setDate(date, forKey: "date")
            .setValue(nil, forKey: "null")
            .setValue(Data([1, 2, 3]), forKey: "data")
            .setBlob(blob, forKey: "attachment")
        let nested = MutableDictionaryObject().setString("x", forKey: "a")
            .setArray(MutableArrayObject(data: [1, "two", [3.5], ["k": false]]), forKey: "list")
        doc.setDictionary(nested, forKey: "nested")
        doc.setArray(MutableArrayObject().addInt(1).addString("s")
            .addDictionary(MutableDictionaryObject(data: ["deep": ["deeper": [1, 2]]])), forKey: "array")
        doc["subscripted"].value = "via subscript"
        XCTAssertEqual(doc.string(forKey: "date"), "2017-07-14T02:40:00.125Z")

        try db.saveDocument(doc)
        XCTAssertEqual(doc.sequence, 1)
        XCTAssertTrue(doc.revisionID?.hasPrefix("1-") ?? false)
        XCTAssertEqual(doc.revisionID?.count, 42, "SHA-1 digest, 40 hex digits")
        try db.close()

        let reopened = try open()
        let read = try XCTUnwrap(reopened.document(withID: "doc1"))
        XCTAssertEqual(read.revisionID, doc.revisionID)
        XCTAssertEqual(read.sequence, 1)
        XCTAssertEqual(read.string(forKey: "string"), "hello")
        XCTAssertEqual(read.int(forKey: "int"), 42)
        XCTAssertEqual(read.int64(forKey: "int64"), Int64.min)
        XCTAssertEqual(read.number(forKey: "uint64")?.uint64Value, UInt64.max)
        XCTAssertEqual(read.double(forKey: "double"), 3.25)
        XCTAssertEqual(read.double(forKey: "fraction"), 0.1)
        XCTAssertEqual(read.float(forKey: "float"), 1.5)
        XCTAssertTrue(read.boolean(forKey: "bool"))
        XCTAssertEqual(try XCTUnwrap(read.date(forKey: "date")).timeIntervalSince1970, date.timeIntervalSince1970, accuracy: 0.0005)
        XCTAssertTrue(read.value(forKey: "null") is NSNull)
        XCTAssertEqual(read.value(forKey: "data") as? Data, Data([1, 2, 3]))
        XCTAssertEqual(read.string(forKey: "subscripted"), "via subscript")
        XCTAssertEqual(read.dictionary(forKey: "nested")?.string(forKey: "a"), "x")
        let list = try XCTUnwrap(read.dictionary(forKey: "nested")?.array(forKey: "list"))
        XCTAssertEqual(list.count, 4)
        XCTAssertEqual(list.int(at: 0), 1)
        XCTAssertEqual(list.string(at: 1), "two")
        XCTAssertEqual(list.array(at: 2)?.double(at: 0), 3.5)
        XCTAssertEqual(list.dictionary(at: 3)?.contains(key: "k"), true)
        XCTAssertEqual(list.dictionary(at: 3)?.boolean(forKey: "k"), false)
        XCTAssertEqual(read.array(forKey: "array")?.dictionary(at: 2)?.dictionary(forKey: "deep")?.array(forKey: "deeper")?.int(at: 1), 2)

        let readBlob = try XCTUnwrap(read.blob(forKey: "attachment"))
        XCTAssertEqual(readBlob.content, Data("blob content".utf8))
        XCTAssertEqual(readBlob.digest, blob.digest)
        XCTAssertEqual(readBlob.contentType, "text/plain")
        XCTAssertEqual(readBlob.length, 12)
        XCTAssertNotNil(reopened.getBlob(properties: readBlob.properties))

        // The whole document compares equal as plain values (blob aside: not Equatable).
        var expected = doc.toDictionary(); expected["attachment"] = nil
        var actual = read.toDictionary(); actual["attachment"] = nil
        XCTAssertEqual(NSDictionary(dictionary: actual), NSDictionary(dictionary: expected))
        XCTAssertEqual(Set(read.keys), Set(doc.keys))

        // Row: HasAttachments (a blob), one leaf revision with body, sequence 0 in the tree (spec 3.3).
        let record = try XCTUnwrap(try reopened.record(forDocumentID: "doc1"))
        XCTAssertEqual(record.flags, .hasAttachments)
        XCTAssertEqual(record.tree.revisions.count, 1)
        XCTAssertEqual(record.tree.revisions[0].flags, [.leaf, .hasAttachments])
        XCTAssertEqual(record.tree.revisions[0].sequence, 0)
        try reopened.close()

        let raw = try sqlite()
        XCTAssertEqual(try raw.scalarInt("SELECT lastSeq FROM kvmeta WHERE name='default'"), 1)
        XCTAssertEqual(try raw.scalarInt("SELECT count(*) FROM kv_info WHERE key='SharedKeys'"), 1)
        raw.close()
    }

    func testUpdateAddsChildRevisionAndStripsParentBody() throws {
        let db = try open()
        let doc = MutableDocument(id: "d", data: ["n": 1])
        try db.saveDocument(doc)
        let first = try XCTUnwrap(doc.revisionID)
        let second = try XCTUnwrap(db.document(withID: "d")).toMutable()
        second.setInt(2, forKey: "n").removeValue(forKey: "missing")
        try db.saveDocument(second)
        XCTAssertTrue(second.revisionID?.hasPrefix("2-") ?? false)
        XCTAssertEqual(second.sequence, 2)

        let record = try XCTUnwrap(try db.record(forDocumentID: "d"))
        XCTAssertEqual(record.tree.currentHistory, [second.revisionID!, first])
        XCTAssertEqual(record.tree.revisions[0].flags, [.leaf])
        XCTAssertNotNil(record.tree.revisions[0].body)
        XCTAssertEqual(record.tree.revisions[0].sequence, 0)
        XCTAssertEqual(record.tree.revisions[1].flags, [])
        XCTAssertNil(record.tree.revisions[1].body, "a non-leaf revision keeps no body")
        XCTAssertEqual(record.tree.revisions[1].sequence, 1, "older revisions keep the sequence of their save")
        XCTAssertEqual(record.version, BinaryRevisionID.encode(second.revisionID!))
        XCTAssertEqual(db.document(withID: "d")?.int(forKey: "n"), 2)

        // History is pruned to maxRevTreeDepth (20) as LiteCore does.
        for i in 3...25 {
            let next = try XCTUnwrap(db.document(withID: "d")).toMutable().setInt(i, forKey: "n")
            try db.saveDocument(next)
        }
        let pruned = try XCTUnwrap(try db.record(forDocumentID: "d"))
        XCTAssertEqual(pruned.tree.revisions.count, 20)
        XCTAssertTrue(pruned.revisionID?.hasPrefix("25-") ?? false)
        XCTAssertNil(pruned.tree.revisions.last?.parentIndex)
    }

    func testFailOnConflictRefusesAStaleSave() throws {
        let db = try open()
        try db.saveDocument(MutableDocument(id: "c", data: ["v": 1]))
        let a = try XCTUnwrap(db.document(withID: "c")).toMutable()
        let b = try XCTUnwrap(db.document(withID: "c")).toMutable()
        a.setInt(2, forKey: "v")
        XCTAssertTrue(try db.saveDocument(a, concurrencyControl: .failOnConflict))
        b.setInt(3, forKey: "v")
        XCTAssertFalse(try db.saveDocument(b, concurrencyControl: .failOnConflict))
        XCTAssertEqual(db.document(withID: "c")?.int(forKey: "v"), 2)
        XCTAssertEqual(db.document(withID: "c")?.revisionID, a.revisionID)
        XCTAssertFalse(try db.saveDocument(MutableDocument(id: "c"), concurrencyControl: .failOnConflict),
                       "a new document over an existing one is a conflict")
        XCTAssertFalse(try db.deleteDocument(b, concurrencyControl: .failOnConflict))

        // Last write wins: the stale copy becomes a child of the current revision.
        XCTAssertTrue(try db.saveDocument(b, concurrencyControl: .lastWriteWins))
        let record = try XCTUnwrap(try db.record(forDocumentID: "c"))
        XCTAssertEqual(record.tree.currentHistory.count, 3)
        XCTAssertEqual(record.tree.currentHistory[1], a.revisionID)
        XCTAssertEqual(db.document(withID: "c")?.int(forKey: "v"), 3)
        XCTAssertEqual(try db.withOpenFile { try $0.lastSequence() }, 3)
    }

    func testConflictHandlerMergesOrDeclines() throws {
        let db = try open()
        try db.saveDocument(MutableDocument(id: "m", data: ["a": 1]))
        let mine = try XCTUnwrap(db.document(withID: "m")).toMutable().setInt(2, forKey: "mine")
        try db.saveDocument(try XCTUnwrap(db.document(withID: "m")).toMutable().setInt(3, forKey: "theirs"))
        XCTAssertFalse(try db.saveDocument(mine) { _, _ in false })
        XCTAssertNil(db.document(withID: "m")?.value(forKey: "mine"))
        var seen: Int?
        XCTAssertTrue(try db.saveDocument(mine) { doc, current in
            seen = current?.int(forKey: "theirs")
            doc.setInt(current?.int(forKey: "theirs") ?? 0, forKey: "theirs")
            return true
        })
        XCTAssertEqual(seen, 3)
        let merged = try XCTUnwrap(db.document(withID: "m"))
        XCTAssertEqual(merged.int(forKey: "mine"), 2)
        XCTAssertEqual(merged.int(forKey: "theirs"), 3)
        XCTAssertTrue(merged.revisionID?.hasPrefix("3-") ?? false)
    }

    func testDeleteLeavesTombstoneRow() throws {
        let db = try open()
        let doc = MutableDocument(id: "gone", data: ["x": "y"])
        try db.saveDocument(doc)
        let parent = try XCTUnwrap(BinaryRevisionID.encode(doc.revisionID!))
        try db.deleteDocument(try XCTUnwrap(db.document(withID: "gone")))
        XCTAssertNil(db.document(withID: "gone"))
        XCTAssertEqual(db.count, 0)
        XCTAssertThrowsError(try db.deleteDocument(doc)) { XCTAssertEqual(($0 as? CouchbaseLiteError)?.code, .notFound) }

        let tombstone = try XCTUnwrap(try db.documentIncludingDeleted(withID: "gone"))
        XCTAssertTrue(tombstone.isDeleted)
        let record = try XCTUnwrap(try db.record(forDocumentID: "gone"))
        XCTAssertEqual(record.flags, .deleted)
        XCTAssertEqual(record.tree.revisions[0].flags, [.leaf, .deleted])
        XCTAssertEqual(record.tree.revisions[0].body, [0x70, 0x00], "a tombstone's body is an empty dict")
        XCTAssertEqual(record.version, BinaryRevisionID.generate(parent: parent, deleted: true, body: [0x70, 0x00]))
        XCTAssertTrue(tombstone.revisionID?.hasPrefix("2-") ?? false)

        // A new document with the same ID continues the tombstone's history (LiteCore's rule).
        try db.saveDocument(MutableDocument(id: "gone", data: ["back": true]))
        XCTAssertEqual(db.document(withID: "gone")?.boolean(forKey: "back"), true)
        XCTAssertTrue(db.document(withID: "gone")?.revisionID?.hasPrefix("3-") ?? false)
        try db.close()

        let raw = try sqlite()
        XCTAssertEqual(try raw.scalarInt("SELECT flags FROM kv_default WHERE key='gone'"), 0)
        raw.close()
    }

    func testPurgeRemovesTheRow() throws {
        let db = try open()
        try db.saveDocument(MutableDocument(id: "p", data: ["a": 1]))
        try db.saveDocument(MutableDocument(id: "q", data: ["a": 2]))
        try db.purgeDocument(try XCTUnwrap(db.document(withID: "p")))
        XCTAssertNil(try db.record(forDocumentID: "p"))
        XCTAssertThrowsError(try db.purgeDocument(withID: "p")) { XCTAssertEqual(($0 as? CouchbaseLiteError)?.code, .notFound) }
        XCTAssertEqual(db.count, 1)
        try db.close()
        let raw = try sqlite()
        XCTAssertEqual(try raw.scalarInt("SELECT count(*) FROM kv_default WHERE key='p'"), 0)
        XCTAssertEqual(try raw.scalarInt("SELECT purgeCnt FROM kvmeta WHERE name='default'"), 1)
        XCTAssertEqual(try raw.scalarInt("SELECT lastSeq FROM kvmeta WHERE name='default'"), 2, "purging does not reuse sequences")
        raw.close()
    }

    func testExpirationStoredInMilliseconds() throws {
        let db = try open()
        try db.saveDocument(MutableDocument(id: "e", data: ["a": 1]))
        let when = Date(timeIntervalSince1970: 1_900_000_000.5)
        try db.setDocumentExpiration(withID: "e", expiration: when)
        XCTAssertEqual(try db.getDocumentExpiration(withID: "e")?.timeIntervalSince1970, 1_900_000_000.5)
        // A later save keeps the expiration, as LiteCore's update does.
        try db.saveDocument(try XCTUnwrap(db.document(withID: "e")).toMutable().setInt(2, forKey: "a"))
        XCTAssertEqual(try db.getDocumentExpiration(withID: "e")?.timeIntervalSince1970, 1_900_000_000.5)
        XCTAssertThrowsError(try db.setDocumentExpiration(withID: "nope", expiration: when))
        try db.close()

        let raw = try sqlite()
        XCTAssertEqual(try raw.scalarInt("SELECT expiration FROM kv_default WHERE key='e'"), 1_900_000_000_500)
        XCTAssertEqual(try raw.scalarInt("SELECT count(*) FROM sqlite_master WHERE name='kv_default_expiration'"), 1)
        raw.close()

        let reopened = try open()
        try reopened.setDocumentExpiration(withID: "e", expiration: nil)
        XCTAssertNil(try reopened.getDocumentExpiration(withID: "e"))
    }

    func testInBatchCommitsTogetherOrNotAtAll() throws {
        let db = try open()
        try db.inBatch {
            for i in 0..<50 { try db.saveDocument(MutableDocument(id: "b\(i)", data: ["i": i, "key\(i % 5)": true])) }
        }
        XCTAssertEqual(db.count, 50)
        struct Stop: Error {}
        XCTAssertThrowsError(try db.inBatch {
            try db.saveDocument(MutableDocument(id: "rolledBack", data: ["brandNewKey": 1]))
            throw Stop()
        })
        XCTAssertNil(db.document(withID: "rolledBack"))
        XCTAssertEqual(try db.withOpenFile { try $0.lastSequence() }, 50)
        // The key the rolled-back body added is stored with the next successful write (spec 6.7).
        try db.saveDocument(MutableDocument(id: "after", data: ["other": 1]))
        try db.close()
        let reopened = try open()
        XCTAssertEqual(reopened.document(withID: "after")?.int(forKey: "other"), 1)
        XCTAssertEqual(reopened.document(withID: "b7")?.boolean(forKey: "key2"), true)
        let keys = try reopened.withOpenFile { $0.sharedKeys.allKeys() }
        XCTAssertTrue(keys.contains("brandNewKey") && keys.contains("other"))
    }

    func testIllegalTopLevelKeyIsRefused() throws {
        let db = try open()
        XCTAssertThrowsError(try db.saveDocument(MutableDocument(id: "x", data: ["_id": "x"]))) {
            XCTAssertEqual(($0 as? CouchbaseLiteError)?.code, .corruptRevisionData)
        }
        XCTAssertNil(db.document(withID: "x"))
    }
}
