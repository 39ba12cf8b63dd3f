import Foundation
import SQLiteKit
import XCTest
@testable import CouchbaseLiteSwift

/// Collections and scopes through the 3.x API: created, listed and deleted; stored in the tables
/// real Couchbase Lite 3.x uses (checked with raw SQLite); documents, sequences, expirations,
/// indexes and listeners kept apart per collection; the 2.x calls acting on the default one.
final class CollectionTests: XCTestCase {
    private var directory: URL!
    private var db: Database!

    override func setUpWithError() throws {
        directory = try QueryTestSupport.temporaryDirectory()
        db = try CollectionTestSupport.open("colls", in: directory)
    }

    override func tearDownWithError() throws {
        try? db?.close()
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }

    private func raw() throws -> SQLiteConnection { try CollectionTestSupport.raw("colls", in: directory) }

    private func names(_ collections: [CouchbaseLiteSwift.Collection]) -> [String] { collections.map(\.fullName) }

    // MARK: Creating, listing, deleting

    func testDefaultCollectionAndScopeAlwaysExist() throws {
        let coll = try db.defaultCollection()
        XCTAssertEqual(coll.name, "_default")
        XCTAssertEqual(coll.scope.name, "_default")
        XCTAssertEqual(coll.fullName, "_default._default")
        XCTAssertTrue(coll.database === db)
        XCTAssertEqual(try db.defaultScope().name, "_default")
        XCTAssertEqual(try db.scopes().map(\.name), ["_default"])
        XCTAssertEqual(names(try db.collections()), ["_default._default"])
        XCTAssertEqual(try db.collection(name: "_default"), coll)
        XCTAssertNil(try db.collection(name: "tasks"))
        XCTAssertNil(try db.scope(name: "S"))
        XCTAssertEqual(Database.defaultCollectionName, "_default")
        XCTAssertEqual(Scope.defaultScopeName, "_default")
    }

    func testCreateListAndDeleteCollectionsAndScopes() throws {
        let tasks = try db.createCollection(name: "tasks")
        XCTAssertEqual(tasks.fullName, "_default.tasks")
        _ = try db.createCollection(name: "Widgets")
        let named = try db.createCollection(name: "name", scope: "S")
        XCTAssertEqual(named.fullName, "S.name")
        XCTAssertEqual(named.scope.name, "S")

        // Creating an existing collection returns it.
        let again = try db.createCollection(name: "tasks", scope: "_default")
        XCTAssertEqual(again, tasks)
        XCTAssertEqual(again.hashValue, tasks.hashValue)

        // Names are case-sensitive: "Widgets" and "widgets" are two collections.
        XCTAssertNil(try db.collection(name: "widgets"))
        XCTAssertEqual(names(try db.collections()), ["_default._default", "_default.Widgets", "_default.tasks"])
        XCTAssertEqual(names(try db.collections(scope: "S")), ["S.name"])
        XCTAssertEqual(try db.collections(scope: "nope"), [])
        XCTAssertEqual(try db.scopes().map(\.name), ["_default", "S"])
        let scope = try XCTUnwrap(try db.scope(name: "S"))
        XCTAssertEqual(names(try scope.collections()), ["S.name"])
        XCTAssertEqual(try scope.collection(name: "name"), named)
        XCTAssertNil(try scope.collection(name: "tasks"))

        try db.deleteCollection(name: "name", scope: "S")
        XCTAssertNil(try db.collection(name: "name", scope: "S"))
        XCTAssertNil(try db.scope(name: "S"), "a scope exists only while it has collections")
        XCTAssertEqual(try db.scopes().map(\.name), ["_default"])
        try db.deleteCollection(name: "name", scope: "S")     // absent: nothing happens
        try db.deleteCollection(name: "Widgets")
        XCTAssertEqual(names(try db.collections()), ["_default._default", "_default.tasks"])

        XCTAssertThrowsError(try db.deleteCollection(name: "_default")) { error in
            XCTAssertEqual(CollectionTestSupport.code(error), .invalidParameter)
            XCTAssertTrue("\(error)".contains("default collection cannot be deleted"), "\(error)")
        }
    }

    func testNamesAreValidatedAsInLiteCore() throws {
        let invalid: [(String, String?)] = [("", nil), ("_tasks", nil), ("%tasks", nil), ("a b", nil), ("a.b", nil),
                                            ("café", nil), (String(repeating: "x", count: 252), nil),
                                            ("tasks", "_scope"), ("tasks", "a.b"), ("_default", "S")]
        for (name, scope) in invalid {
            XCTAssertThrowsError(try db.createCollection(name: name, scope: scope), "\(name) in \(scope ?? "-")") { error in
                XCTAssertEqual(CollectionTestSupport.code(error), .invalidParameter)
                XCTAssertTrue("\(error)".contains("'\(scope != nil && !KeyStore.isValidName(scope!) ? scope! : name)'"), "\(error)")
            }
            XCTAssertThrowsError(try db.collection(name: name, scope: scope))
        }
        let longest = String(repeating: "y", count: 251)
        for (name, scope) in [("a-b_c%1", nil), ("Z9", "my-scope%"), (longest, nil), ("tasks", "_default")] as [(String, String?)] {
            XCTAssertEqual(try db.createCollection(name: name, scope: scope).name, name)
        }
        XCTAssertNotNil(try db.collection(name: longest))
    }

    // MARK: Storage

    func testTablesSequencesAndSchemaAreLiteCore3xs() throws {
        XCTAssertEqual(try db.withOpenFile { $0.schemaVersion }, 302, "a new database has the 2.8 layout")
        let tasks = try db.createCollection(name: "tasks")
        let widgets = try db.createCollection(name: "Widgets")
        let named = try db.createCollection(name: "name", scope: "s")
        _ = try db.createCollection(name: "name", scope: "S")
        try tasks.save(document: MutableDocument(id: "t1", data: ["title": "one"]))
        try tasks.save(document: MutableDocument(id: "t2", data: ["title": "two"]))
        try named.save(document: MutableDocument(id: "n1", data: ["n": 1]))
        let gone = MutableDocument(id: "w1", data: ["w": true])
        try widgets.save(document: gone)
        try widgets.delete(document: gone)

        let sql = try raw()
        // Every upper-case letter is escaped, in scope names too (`.S.name` → `kv_.\S.name`).
        XCTAssertEqual(try CollectionTestSupport.tables(sql), [
            "kv_.\\S.name", "kv_.\\Widgets", "kv_.s.name", "kv_.tasks", "kv_default",
            "kv_del_.\\S.name", "kv_del_.\\Widgets", "kv_del_.s.name", "kv_del_.tasks", "kv_del_default", "kv_info",
        ])
        // Real 3.1 DDL: the 3.0 table, then `expiration` added, and its partial index.
        XCTAssertEqual(try sql.columns(of: "kv_.tasks"), ["key", "sequence", "flags", "version", "body", "extra", "expiration"])
        XCTAssertEqual(try sql.columns(of: "kv_del_.\\Widgets"), ["key", "sequence", "flags", "version", "body", "extra", "expiration"])
        XCTAssertEqual(try sql.scalarString("SELECT sql FROM sqlite_master WHERE name='kv_.tasks_expiration'"),
                       "CREATE INDEX \"kv_.tasks_expiration\" ON \"kv_.tasks\" (expiration) WHERE expiration not null")
        // The 2.8 file became a 3.1 file: `extra` everywhere, deleted-docs tables, versioning 1.
        XCTAssertEqual(sql.userVersion, 500)
        XCTAssertEqual(try sql.columns(of: "kv_default"), ["key", "sequence", "flags", "version", "body", "extra", "expiration"])
        XCTAssertEqual(try sql.scalar("SELECT body FROM kv_info WHERE key='versioning'"), .blob([0, 0, 0, 0, 0, 0, 0, 1]))

        // Each collection numbers its own documents in its own kvmeta row.
        XCTAssertEqual(try CollectionTestSupport.strings("SELECT name || '=' || lastSeq FROM kvmeta ORDER BY name", sql),
                       [".Widgets=2", ".s.name=1", ".tasks=2", "default=0", "info=3"])
        XCTAssertEqual(try CollectionTestSupport.strings("SELECT key || ':' || sequence FROM \"kv_.tasks\" ORDER BY key", sql),
                       ["t1:1", "t2:2"])
        // A deleted document lives in the kv_del_ table (3.1+).
        XCTAssertEqual(try sql.scalarInt("SELECT count(*) FROM \"kv_.\\Widgets\""), 0)
        XCTAssertEqual(try CollectionTestSupport.strings("SELECT key || ':' || sequence || ':' || flags FROM \"kv_del_.\\Widgets\"", sql),
                       ["w1:2:1"])
        // Documents are 3.x rows: Fleece body plus the rest of the tree in `extra`.
        XCTAssertEqual(try sql.scalarInt("SELECT count(*) FROM \"kv_.tasks\" WHERE extra IS NOT NULL"), 2)
        XCTAssertEqual(try sql.integrityCheck(), "ok")

        try db.deleteCollection(name: "Widgets")
        XCTAssertFalse(try CollectionTestSupport.tables(sql).contains { $0.contains("Widgets") })
    }

    func testDocumentsAreKeptApartPerCollection() throws {
        let tasks = try db.createCollection(name: "tasks")
        let other = try db.createCollection(name: "tasks", scope: "archive")
        try db.saveDocument(MutableDocument(id: "doc", data: ["where": "default"]))
        try tasks.save(document: MutableDocument(id: "doc", data: ["where": "tasks"]))
        try other.save(document: MutableDocument(id: "doc", data: ["where": "archive"]))
        try tasks.save(document: MutableDocument(id: "only-in-tasks", data: ["n": 1]))

        XCTAssertEqual(db.document(withID: "doc")?.string(forKey: "where"), "default")
        XCTAssertEqual(try db.defaultCollection().document(id: "doc")?.string(forKey: "where"), "default")
        XCTAssertEqual(try tasks.document(id: "doc")?.string(forKey: "where"), "tasks")
        XCTAssertEqual(try other.document(id: "doc")?.string(forKey: "where"), "archive")
        XCTAssertEqual(tasks["doc"]["where"].string, "tasks")
        XCTAssertTrue(tasks["only-in-tasks"].exists)
        XCTAssertFalse(other["only-in-tasks"].exists)
        XCTAssertNil(db.document(withID: "only-in-tasks"))
        XCTAssertEqual(db["doc"]["where"].string, "default")
        XCTAssertEqual([db.count, tasks.count, other.count], [1, 2, 1])
        XCTAssertEqual(try db.defaultCollection().count, 1)

        // Each collection has its own sequences.
        XCTAssertEqual(try tasks.document(id: "doc")?.sequence, 1)
        XCTAssertEqual(try tasks.document(id: "only-in-tasks")?.sequence, 2)
        XCTAssertEqual(try other.document(id: "doc")?.sequence, 1)

        // Updating, deleting and purging touch only their collection.
        let update = try XCTUnwrap(try tasks.document(id: "doc")).toMutable().setString("tasks v2", forKey: "where")
        try tasks.save(document: update)
        XCTAssertEqual(update.sequence, 3)
        XCTAssertTrue(update.revisionID?.hasPrefix("2-") ?? false)
        try tasks.delete(document: try XCTUnwrap(try tasks.document(id: "only-in-tasks")))
        XCTAssertNil(try tasks.document(id: "only-in-tasks"))
        try other.purge(id: "doc")
        XCTAssertNil(try other.document(id: "doc"))
        XCTAssertThrowsError(try other.purge(id: "doc")) { XCTAssertEqual(CollectionTestSupport.code($0), .notFound) }
        XCTAssertEqual(try tasks.document(id: "doc")?.string(forKey: "where"), "tasks v2")
        XCTAssertEqual(db.document(withID: "doc")?.string(forKey: "where"), "default")
        XCTAssertEqual([db.count, tasks.count, other.count], [1, 1, 0])
        XCTAssertEqual(try db.documentIncludingDeleted(withID: "only-in-tasks", in: tasks.keyStore)?.isDeleted, true)

        // A document knows its collection, and cannot be written into another one.
        let read = try XCTUnwrap(try tasks.document(id: "doc"))
        XCTAssertEqual(read.collection, tasks)
        XCTAssertEqual(read.toMutable().collection, tasks)
        XCTAssertThrowsError(try db.saveDocument(read.toMutable())) { error in
            XCTAssertEqual(CollectionTestSupport.code(error), .invalidParameter)
            XCTAssertTrue("\(error)".contains("_default.tasks"), "\(error)")
        }
        XCTAssertThrowsError(try other.delete(document: read)) { XCTAssertEqual(CollectionTestSupport.code($0), .invalidParameter) }
        XCTAssertNil(MutableDocument(id: "new").collection)
    }

    func testConcurrencyControlAndConflictHandlerPerCollection() throws {
        let tasks = try db.createCollection(name: "tasks")
        let first = MutableDocument(id: "c", data: ["v": 1])
        try tasks.save(document: first)
        let stale = try XCTUnwrap(try tasks.document(id: "c")).toMutable()
        try tasks.save(document: try XCTUnwrap(try tasks.document(id: "c")).toMutable().setInt(2, forKey: "v"))

        stale.setInt(3, forKey: "v")
        XCTAssertFalse(try tasks.save(document: stale, concurrencyControl: .failOnConflict))
        XCTAssertEqual(try tasks.document(id: "c")?.int(forKey: "v"), 2)
        XCTAssertFalse(try tasks.delete(document: stale, concurrencyControl: .failOnConflict))

        let merged = try tasks.save(document: stale) { mine, current in
            mine.setInt(mine.int(forKey: "v") + (current?.int(forKey: "v") ?? 0), forKey: "v")
            return true
        }
        XCTAssertTrue(merged)
        XCTAssertEqual(try tasks.document(id: "c")?.int(forKey: "v"), 5)
        XCTAssertTrue(try tasks.document(id: "c")?.revisionID?.hasPrefix("3-") ?? false)
        XCTAssertTrue(try tasks.save(document: try XCTUnwrap(try tasks.document(id: "c")).toMutable(), concurrencyControl: .failOnConflict))
    }

    func testExpirationPerCollection() throws {
        let tasks = try db.createCollection(name: "tasks")
        try tasks.save(document: MutableDocument(id: "e", data: ["n": 1]))
        try db.saveDocument(MutableDocument(id: "e", data: ["n": 2]))
        let when = Date(timeIntervalSince1970: 2_000_000_000.5)
        try tasks.setDocumentExpiration(id: "e", expiration: when)
        XCTAssertEqual(try tasks.getDocumentExpiration(id: "e"), when)
        XCTAssertNil(try db.getDocumentExpiration(withID: "e"))
        XCTAssertEqual(try raw().scalarInt("SELECT expiration FROM \"kv_.tasks\" WHERE key='e'"), 2_000_000_000_500)
        try tasks.setDocumentExpiration(id: "e", expiration: nil)
        XCTAssertNil(try tasks.getDocumentExpiration(id: "e"))
        XCTAssertThrowsError(try tasks.getDocumentExpiration(id: "missing")) { XCTAssertEqual(CollectionTestSupport.code($0), .notFound) }
    }

    func testIndexesBelongToTheirCollection() throws {
        let tasks = try db.createCollection(name: "tasks")
        try tasks.createIndex(withName: "byTitle", config: ValueIndexConfiguration(["title"]))
        try db.createIndex(ValueIndexConfiguration(["name"]), name: "byName")
        XCTAssertEqual(try tasks.indexes(), ["byTitle"])
        XCTAssertEqual(try db.getIndexes(), ["byName"])
        XCTAssertEqual(try db.defaultCollection().indexes(), ["byName"])

        let sql = try raw()
        XCTAssertEqual(try CollectionTestSupport.strings("SELECT name || ' ' || keyStore FROM indexes ORDER BY name", sql),
                       ["byName default", "byTitle .tasks"])
        XCTAssertEqual(try sql.scalarString("SELECT tbl_name FROM sqlite_master WHERE type='index' AND name='byTitle'"), "kv_.tasks")

        // The planner uses the collection's index.
        try tasks.save(document: MutableDocument(id: "t", data: ["title": "x"]))
        XCTAssertTrue(try db.createQuery("SELECT title FROM tasks WHERE title = 'x'").explain().contains("byTitle"))

        try tasks.deleteIndex(forName: "byName")           // another collection's: untouched
        XCTAssertEqual(try db.getIndexes(), ["byName"])
        try tasks.deleteIndex(forName: "byTitle")
        XCTAssertEqual(try tasks.indexes(), [])
        try tasks.createIndex(IndexBuilder.valueIndex(items: .property("title")), name: "again")
        try db.deleteCollection(name: "tasks")
        XCTAssertEqual(try CollectionTestSupport.strings("SELECT name FROM indexes", sql), ["byName"],
                       "a deleted collection's index records go with it")
    }

    func testFullTextIndexesOnACollection() throws {
        let notes = try db.createCollection(name: "notes")
        try db.saveDocument(MutableDocument(id: "d", data: ["text": "running dogs"]))
        try notes.save(document: MutableDocument(id: "n1", data: ["text": "the dog runs home"]))
        try notes.save(document: MutableDocument(id: "n2", data: ["text": "cats sleep"]))
        try notes.createIndex(withName: "noteText", config: FullTextIndexConfiguration(["text"], language: "en"))
        try notes.save(document: MutableDocument(id: "n3", data: ["text": "a running dog"]))
        let sql = try raw()
        XCTAssertEqual(try sql.scalarString("SELECT indexTableName FROM indexes WHERE name='noteText'"), "kv_.notes::noteText")
        let ids = try db.createQuery("SELECT meta().id FROM notes WHERE MATCH(noteText, 'dog') ORDER BY meta().id").execute()
            .map { $0.string(at: 0) ?? "?" }
        XCTAssertEqual(ids, ["n1", "n3"], "stemmed, this collection only, kept in sync after creation")
        try db.deleteCollection(name: "notes")
        XCTAssertEqual(try sql.scalarInt("SELECT count(*) FROM sqlite_master WHERE name LIKE 'kv_.notes%'"), 0,
                       "the FTS table goes with its collection")
    }

    func testADeletedCollectionRefusesCallsWithNotOpen() throws {
        let tasks = try db.createCollection(name: "tasks")
        try tasks.save(document: MutableDocument(id: "t", data: ["n": 1]))
        try db.deleteCollection(name: "tasks")
        XCTAssertEqual(tasks.count, 0)
        XCTAssertThrowsError(try tasks.document(id: "t")) { error in
            XCTAssertEqual(CollectionTestSupport.code(error), .notOpen)
            XCTAssertTrue("\(error)".contains("_default.tasks"), "\(error)")
        }
        XCTAssertThrowsError(try tasks.save(document: MutableDocument(id: "u"))) { XCTAssertEqual(CollectionTestSupport.code($0), .notOpen) }
        XCTAssertThrowsError(try tasks.indexes()) { XCTAssertEqual(CollectionTestSupport.code($0), .notOpen) }

        // Recreated, it starts empty.
        let recreated = try db.createCollection(name: "tasks")
        XCTAssertEqual(recreated.count, 0)
        XCTAssertNil(try tasks.document(id: "t"))

        try db.close()
        XCTAssertThrowsError(try recreated.document(id: "t")) { XCTAssertEqual(CollectionTestSupport.code($0), .notOpen) }
        XCTAssertThrowsError(try db.collections()) { XCTAssertEqual(CollectionTestSupport.code($0), .notOpen) }
    }

    func testCollectionsAndDocumentsSurviveReopen() throws {
        let tasks = try db.createCollection(name: "tasks")
        let named = try db.createCollection(name: "Name", scope: "S")
        try tasks.save(document: MutableDocument(id: "t1", data: ["title": "persisted", "tags": ["a", "b"]]))
        try named.save(document: MutableDocument(id: "n1", data: ["n": 7]))
        try db.saveDocument(MutableDocument(id: "d1", data: ["default": true]))
        try db.close()

        db = try CollectionTestSupport.open("colls", in: directory)
        XCTAssertEqual(names(try db.collections()), ["_default._default", "_default.tasks"])
        XCTAssertEqual(try db.scopes().map(\.name), ["_default", "S"])
        let reopened = try XCTUnwrap(try db.collection(name: "tasks"))
        XCTAssertEqual(try reopened.document(id: "t1")?.string(forKey: "title"), "persisted")
        XCTAssertEqual(try reopened.document(id: "t1")?.array(forKey: "tags")?.toArray() as? [String], ["a", "b"])
        XCTAssertEqual(try db.collection(name: "Name", scope: "S")?.document(id: "n1")?.int(forKey: "n"), 7)
        XCTAssertNil(try db.collection(name: "name", scope: "S"))
        XCTAssertEqual(db.document(withID: "d1")?.boolean(forKey: "default"), true)
        XCTAssertEqual(try db.withOpenFile { $0.schemaVersion }, 500)
        try reopened.save(document: MutableDocument(id: "t2"))
        XCTAssertEqual(try reopened.document(id: "t2")?.sequence, 2)
    }

    // MARK: Listeners

    final class Log: @unchecked Sendable {
        private let lock = NSLock()
        private var items: [String] = []
        func add(_ item: String) { lock.lock(); items.append(item); lock.unlock() }
        var all: [String] { lock.lock(); defer { lock.unlock() }; return items }
    }

    func testChangeListenersHearTheirCollectionOnly() throws {
        let queue = DispatchQueue(label: "CollectionTests.listeners")
        let tasks = try db.createCollection(name: "tasks")
        let notes = try db.createCollection(name: "notes", scope: "S")
        let log = Log()
        let t1 = tasks.addChangeListener(queue: queue) { change in
            log.add("tasks:\(change.collection.fullName):\(change.documentIDs.joined(separator: ","))")
        }
        let t2 = try db.defaultCollection().addChangeListener(queue: queue) { change in
            log.add("default-coll:\(change.documentIDs.joined(separator: ","))")
        }
        let t3 = db.addChangeListener(withQueue: queue) { change in
            log.add("database:\(change.documentIDs.joined(separator: ","))")
        }
        let t4 = notes.addDocumentChangeListener(id: "same", queue: queue) { change in
            log.add("doc:\(change.collection.fullName):\(change.documentID)")
        }
        let t5 = db.addDocumentChangeListener(withID: "same", queue: queue) { change in
            log.add("dbdoc:\(change.collection.fullName):\(change.documentID)")
        }

        try tasks.save(document: MutableDocument(id: "a"))
        queue.sync {}
        XCTAssertEqual(log.all, ["tasks:_default.tasks:a"])

        try db.inBatch {
            try tasks.save(document: MutableDocument(id: "b"))
            try tasks.save(document: MutableDocument(id: "c"))
            try notes.save(document: MutableDocument(id: "same"))
            try db.saveDocument(MutableDocument(id: "same"))
        }
        queue.sync {}
        XCTAssertEqual(Set(log.all.dropFirst()), ["tasks:_default.tasks:b,c", "doc:S.notes:same", "default-coll:same",
                                                   "database:same", "dbdoc:_default._default:same"])
        XCTAssertEqual(log.all.count, 6)

        for token in [t1, t2, t3, t4, t5] { token.remove() }
        try tasks.purge(id: "a")
        try notes.purge(id: "same")
        queue.sync {}
        XCTAssertEqual(log.all.count, 6)
    }
}
