import Foundation
import XCTest
@testable import CouchbaseLiteSwift

/// Queries over collections: every FROM spelling 3.x accepts (spec 2.3), result titles as LiteCore
/// gives them, joins across collections, QueryBuilder's `DataSource.collection`, clear errors for
/// unknown collections, and live queries that wake up only for the collections they read.
final class CollectionQueryTests: XCTestCase {
    private var directory: URL!
    private var db: Database!
    private var tasks: CouchbaseLiteSwift.Collection!
    private var users: CouchbaseLiteSwift.Collection!

    override func setUpWithError() throws {
        directory = try QueryTestSupport.temporaryDirectory()
        db = try CollectionTestSupport.open("planner", in: directory)
        tasks = try db.createCollection(name: "tasks")
        users = try db.createCollection(name: "users", scope: "people")
        try db.saveDocument(MutableDocument(id: "d1", data: ["title": "in default"]))
        for (id, title, owner, done) in [("t1", "write spec", "u1", false), ("t2", "review", "u2", true),
                                         ("t3", "ship", "u1", false), ("t4", "orphan", "u9", false)] {
            try tasks.save(document: MutableDocument(id: id, data: ["title": title, "owner": owner, "done": done]))
        }
        try users.save(document: MutableDocument(id: "u1", data: ["name": "Ada"]))
        try users.save(document: MutableDocument(id: "u2", data: ["name": "Brian"]))
    }

    override func tearDownWithError() throws {
        try? db?.close()
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }

    private func rows(_ n1ql: String) throws -> [String] {
        try db.createQuery(n1ql).execute().map { row in
            row.toArray().map { QueryTestSupport.canonical($0) }.joined(separator: "|")
        }
    }

    func testEveryFromSpelling() throws {
        let inTasks = ["\"orphan\"", "\"review\"", "\"ship\"", "\"write spec\""]
        XCTAssertEqual(try rows("SELECT title FROM tasks ORDER BY title"), inTasks)
        XCTAssertEqual(try rows("SELECT title FROM _default.tasks ORDER BY title"), inTasks)
        XCTAssertEqual(try rows("SELECT tasks.title FROM tasks ORDER BY tasks.title"), inTasks)
        XCTAssertEqual(try rows("SELECT t.title FROM _default.tasks AS t ORDER BY t.title"), inTasks)
        XCTAssertEqual(try rows("SELECT tasks.title FROM _default.tasks ORDER BY title"), inTasks)
        XCTAssertEqual(try rows("SELECT _default.tasks.title FROM _default.tasks ORDER BY title"), inTasks)
        XCTAssertEqual(try rows("SELECT name FROM people.users ORDER BY name"), ["\"Ada\"", "\"Brian\""])
        XCTAssertEqual(try rows("SELECT users.name FROM people.users WHERE meta(users).id = 'u2'"), ["\"Brian\""])
        XCTAssertEqual(try rows("SELECT people.users.name FROM people.users WHERE meta().id = 'u1'"), ["\"Ada\""])
        for source in ["_", "_default", "_default._default", "planner", "`planner`"] {
            XCTAssertEqual(try rows("SELECT title FROM \(source)"), ["\"in default\""], source)
        }
        XCTAssertEqual(try rows("SELECT count(*) FROM tasks WHERE done = false"), ["3"])
        XCTAssertEqual(try rows("SELECT meta().id, meta().sequence FROM tasks WHERE title = 'ship'"), ["\"t3\"|3"])
    }

    func testWholeDocumentColumnsAreTitledAsLiteCoreDoes() throws {
        func titles(_ n1ql: String) throws -> [String] { try db.createQuery(n1ql).columnNames }
        XCTAssertEqual(try titles("SELECT * FROM tasks"), ["tasks"])
        XCTAssertEqual(try titles("SELECT * FROM _default.tasks"), ["tasks"])
        XCTAssertEqual(try titles("SELECT * FROM people.users"), ["users"])
        XCTAssertEqual(try titles("SELECT * FROM people.users AS u"), ["u"])
        XCTAssertEqual(try titles("SELECT * FROM _"), ["_"])
        XCTAssertEqual(try titles("SELECT * FROM _default"), ["_default"])
        XCTAssertEqual(try titles("SELECT * FROM planner"), ["planner"])
        let row = try XCTUnwrap(try db.createQuery("SELECT * FROM people.users WHERE meta().id = 'u1'").execute().next())
        XCTAssertEqual(row.dictionary(forKey: "users")?.string(forKey: "name"), "Ada")
    }

    func testJoinAcrossCollections() throws {
        XCTAssertEqual(try rows("""
            SELECT t.title, u.name FROM tasks AS t JOIN people.users AS u ON t.owner = meta(u).id ORDER BY t.title
            """), ["\"review\"|\"Brian\"", "\"ship\"|\"Ada\"", "\"write spec\"|\"Ada\""])
        XCTAssertEqual(try rows("""
            SELECT tasks.title, users.name FROM tasks LEFT JOIN people.users ON tasks.owner = meta(users).id \
            WHERE tasks.done = false ORDER BY tasks.title
            """), ["\"orphan\"|MISSING", "\"ship\"|\"Ada\"", "\"write spec\"|\"Ada\""])
        // The default collection joined with a named one.
        try db.saveDocument(MutableDocument(id: "d2", data: ["task": "t2"]))
        XCTAssertEqual(try rows("SELECT t.title FROM _ AS d JOIN tasks AS t ON d.task = meta(t).id"), ["\"review\""])
    }

    func testDeletedDocumentsOfACollection() throws {
        try tasks.delete(document: try XCTUnwrap(try tasks.document(id: "t4")))
        XCTAssertEqual(try rows("SELECT count(*) FROM tasks"), ["3"])
        XCTAssertEqual(try rows("SELECT meta().id FROM tasks WHERE meta().deleted"), ["\"t4\""])
        XCTAssertEqual(try rows("SELECT count(*) FROM tasks WHERE meta().deleted OR true"), ["4"])
    }

    func testUnknownOrInvalidCollectionsAreNamedInTheError() throws {
        for (source, named) in [("nope", "\"nope\""), ("people.nope", "\"people.nope\""), ("nobody.users", "\"nobody.users\""),
                                ("tasks t JOIN absent a ON t.x = a.x", "\"absent\""), ("`_bad`", "\"_bad\"")] {
            XCTAssertThrowsError(try db.createQuery("SELECT * FROM \(source)"), source) { error in
                XCTAssertEqual(CollectionTestSupport.code(error), .invalidQuery, source)
                XCTAssertTrue("\(error)".contains(named), "\(error)")
            }
        }
    }

    func testTheDatabaseNameMeansTheDefaultCollectionUnlessACollectionHasIt() throws {
        let named = try db.createCollection(name: "planner")
        try named.save(document: MutableDocument(id: "p", data: ["title": "in the planner collection"]))
        XCTAssertEqual(try rows("SELECT title FROM planner"), ["\"in the planner collection\""])
        XCTAssertEqual(try rows("SELECT title FROM _"), ["\"in default\""])
    }

    func testQueryBuilderCollectionSources() throws {
        let all = QueryBuilder.select(SelectResult.all()).from(DataSource.collection(users))
            .where(Meta.id.equalTo(Expression.string("u1")))
        XCTAssertEqual(try all.columnNames, ["users"])
        XCTAssertEqual(try all.execute().next()?.dictionary(forKey: "users")?.string(forKey: "name"), "Ada")

        let joined = QueryBuilder
            .select(SelectResult.expression(Expression.property("title").from("t")),
                    SelectResult.expression(Expression.property("name").from("u")))
            .from(DataSource.collection(tasks).as("t"))
            .join(Join.join(DataSource.collection(users).as("u"))
                .on(Expression.property("owner").from("t").equalTo(Meta.id.from("u"))))
            .orderBy(Ordering.expression(Expression.property("title").from("t")))
        XCTAssertEqual(try joined.execute().map { "\($0.string(at: 0) ?? "?")/\($0.string(at: 1) ?? "?")" },
                       ["review/Brian", "ship/Ada", "write spec/Ada"])

        let fromDefault = QueryBuilder.select(SelectResult.property("title")).from(DataSource.collection(try db.defaultCollection()))
        XCTAssertEqual(try fromDefault.execute().map { $0.string(at: 0) ?? "?" }, ["in default"])
        let fromDatabase = QueryBuilder.select(SelectResult.all()).from(DataSource.database(db))
        XCTAssertEqual(try fromDatabase.columnNames, ["planner"])
    }

    func testLiveQueriesWakeUpForTheCollectionsTheyRead() throws {
        let queue = DispatchQueue(label: "CollectionQueryTests.live")
        let log = CollectionTests.Log()
        let query = try db.createQuery("SELECT t.title FROM tasks t JOIN people.users u ON t.owner = meta(u).id WHERE u.name = 'Ada' ORDER BY t.title")
        let runs = CollectionTests.Log()
        let token = query.addChangeListener(withQueue: queue) { change in
            runs.add("run")
            log.add(change.results?.map { $0.string(at: 0) ?? "?" }.joined(separator: ",") ?? "error: \(change.error!)")
        }
        queue.sync {}
        XCTAssertEqual(log.all, ["ship,write spec"])

        try tasks.save(document: MutableDocument(id: "t5", data: ["title": "celebrate", "owner": "u1"]))
        queue.sync {}
        XCTAssertEqual(log.all.last, "celebrate,ship,write spec")

        // A change in a joined collection counts too.
        try users.save(document: try XCTUnwrap(try users.document(id: "u2")).toMutable().setString("Ada", forKey: "name"))
        queue.sync {}
        XCTAssertEqual(log.all.last, "celebrate,review,ship,write spec")

        // Writes to collections the query does not read do not even re-run it.
        let before = runs.all.count
        try db.saveDocument(MutableDocument(id: "d9", data: ["title": "x"]))
        let other = try db.createCollection(name: "other")
        try other.save(document: MutableDocument(id: "o"))
        queue.sync {}
        XCTAssertEqual(runs.all.count, before)
        token.remove()
    }
}
