import CouchbaseLite
import Foundation
import XCTest

/// `NSPredicate(format:)` as 1.x apps wrote it compiles with a plain `import CouchbaseLite` (Linux
/// Foundation's own is unavailable) and evaluates on query rows, documents and dictionaries.
final class PredicateFormatTests: SingleDatabaseTestCase {
    override var databaseName: String { "pred" }

    /// A view like app A's: key `[listID, createdAt, title]`, filtered by title with `key2 CONTAINS[cd] %@`.
    private func tasksView() throws -> CBLView {
        let rows: [(String, String, String)] = [
            ("l1", "2016-01-01T10:00:00.000Z", "Crème brûlée"),
            ("l1", "2016-01-02T10:00:00.000Z", "Buy CREAM"),
            ("l1", "2016-01-03T10:00:00.000Z", "Walk the dog"),
            ("l2", "2016-01-04T10:00:00.000Z", "Ice cream"),
        ]
        for (i, row) in rows.enumerated() {
            try db.document(withID: "t\(i)")!.putProperties(["type": "task", "list": row.0, "createdAt": row.1, "task": row.2,
                                                             "n": i, "tags": i % 2 == 0 ? ["even"] : ["odd", "x"]])
        }
        let view = db.viewNamed("tasksByCreatedAt")
        view.setMapBlock({ doc, emit in
            if doc["type"] as? String == "task" {
                emit([doc["list"]!, doc["createdAt"]!, doc["task"]!], ["n": doc["n"]!, "tags": doc["tags"]!])
            }
        }, version: "1")
        return view
    }

    func testAppSearchFilterCompilesAndFiltersQueryRows() throws {
        let query = try tasksView().createQuery()
        let searchText = "CREME"
        query.postFilter = NSPredicate(format: "key2 CONTAINS[cd] %@", searchText)
        XCTAssertEqual(try query.run().map { $0.documentID! }, ["t0"])

        query.postFilter = NSPredicate(format: "key2 CONTAINS[c] %@", "cream")
        XCTAssertEqual(try query.run().map { $0.documentID! }, ["t1", "t3"])

        query.postFilter = NSPredicate(format: "key2 CONTAINS %@", "cream")
        XCTAssertEqual(try query.run().map { $0.documentID! }, ["t3"])

        // limit/skip apply after the filter, as in 1.x.
        query.postFilter = NSPredicate(format: "key0 == %@", "l1")
        query.skip = 1
        query.limit = 1
        XCTAssertEqual(try query.run().map { $0.documentID! }, ["t1"])
    }

    func testLiveQueryPostFilter() throws {
        let query = try tasksView().createQuery()
        query.postFilter = NSPredicate(format: "key2 CONTAINS[cd] %@", "cream")
        let live = query.asLive()
        live.updateInterval = 0.05
        XCTAssertTrue(live.waitForRows())
        XCTAssertEqual(live.rows?.count, 2)
        let three = expectation(description: "three matching rows")
        let token = live.addChangeListener { rows in if rows.count == 3 { three.fulfill() } }
        try db.document(withID: "t9")!.putProperties(["type": "task", "list": "l3", "createdAt": "2016-02-01T00:00:00.000Z",
                                                     "task": "Sour cream", "n": 9, "tags": [String]()])
        try db.document(withID: "t10")!.putProperties(["type": "task", "list": "l3", "createdAt": "2016-02-02T00:00:00.000Z",
                                                      "task": "Not matching", "n": 10, "tags": [String]()])
        wait(for: [three], timeout: 10)
        XCTAssertEqual(live.rows?.allObjects.map { $0.documentID! }.sorted(), ["t1", "t3", "t9"])
        live.removeChangeListener(token)
        live.stop()
    }

    func testOperatorsOnRows() throws {
        let rows = try tasksView().createQuery().run().allObjects
        func ids(_ predicate: NSPredicate) -> [String] { rows.filter { predicate.evaluate(with: $0) }.map { $0.documentID! } }

        XCTAssertEqual(ids(NSPredicate(format: "value.n >= 2")), ["t2", "t3"])
        XCTAssertEqual(ids(NSPredicate(format: "value.n < %d", 1)), ["t0"])
        XCTAssertEqual(ids(NSPredicate(format: "value.n BETWEEN {1, 2}")), ["t1", "t2"])
        XCTAssertEqual(ids(NSPredicate(format: "value.n IN %@", [0, 3])), ["t0", "t3"])
        XCTAssertEqual(ids(NSPredicate(format: "key0 != 'l1'")), ["t3"])
        XCTAssertEqual(ids(NSPredicate(format: "key2 BEGINSWITH[c] 'buy'")), ["t1"])
        XCTAssertEqual(ids(NSPredicate(format: "key2 ENDSWITH 'dog'")), ["t2"])
        XCTAssertEqual(ids(NSPredicate(format: "key2 LIKE[cd] 'cr*e'")), ["t0"])
        XCTAssertEqual(ids(NSPredicate(format: "key2 LIKE '?ce cream'")), ["t3"])
        XCTAssertEqual(ids(NSPredicate(format: "key2 MATCHES '.*[Cc]ream'")), ["t3"])
        XCTAssertEqual(ids(NSPredicate(format: "key2 MATCHES[c] 'BUY.*'")), ["t1"])
        XCTAssertEqual(ids(NSPredicate(format: "value.tags CONTAINS 'odd'")), ["t1", "t3"])
        XCTAssertEqual(ids(NSPredicate(format: "ANY value.tags == 'x'")), ["t1", "t3"])
        XCTAssertEqual(ids(NSPredicate(format: "value.tags.@count == 2")), ["t1", "t3"])
        XCTAssertEqual(ids(NSPredicate(format: "key0 == 'l1' AND (key2 CONTAINS[c] 'cream' OR value.n == 2)")), ["t1", "t2"])
        XCTAssertEqual(ids(NSPredicate(format: "NOT key0 == 'l1'")), ["t3"])
        XCTAssertEqual(ids(NSPredicate(format: "key0 == 'l1' && !(value.n > 0)")), ["t0"])
        XCTAssertEqual(ids(NSPredicate(format: "%K == %@", "documentID", "t2")), ["t2"])
        XCTAssertEqual(ids(NSPredicate(format: "key.@count == 3 AND key3 == nil")), ["t0", "t1", "t2", "t3"])
        XCTAssertEqual(ids(NSPredicate(format: "key1 >= %@", Date(timeIntervalSince1970: 1_451_815_200))), ["t2", "t3"],
                       "ISO-8601 strings compare with dates as dates")
        XCTAssertEqual(ids(NSPredicate(format: "key0 NOT IN {'l2', 'l3'}")), ["t0", "t1", "t2"])
        XCTAssertEqual(ids(NSPredicate(format: "value.n == %f", 1.0)), ["t1"])
        XCTAssertEqual(ids(NSPredicate(format: "documentProperties.list == 'l2'")), ["t3"])
        XCTAssertEqual(ids(NSPredicate(format: "TRUEPREDICATE")).count, 4)
        XCTAssertEqual(ids(NSPredicate(format: "FALSEPREDICATE")), [])
        XCTAssertEqual(ids(NSPredicate(format: "ALL value.tags == 'even'")), ["t0", "t2"])
        XCTAssertEqual(ids(NSPredicate(format: "NONE value.tags == 'even'")), ["t1", "t3"])
        XCTAssertEqual(ids(NSPredicate(format: "key2 IN[c] 'walk the dog, buy cream'")), ["t1", "t2"])
        XCTAssertEqual(ids(NSPredicate(format: "key0 == \"l2\"", argumentArray: [])), ["t3"])
    }

    func testPredicatesOnDocumentsModelsAndDictionaries() throws {
        _ = try tasksView()
        let docs = (0..<4).compactMap { db.document(withID: "t\($0)") }
        XCTAssertEqual(docs.filter { NSPredicate(format: "task BEGINSWITH 'W'").evaluate(with: $0) }.map(\.documentID), ["t2"])
        XCTAssertEqual(docs.filter { NSPredicate(format: "properties.n == 3 OR documentID == 't0'").evaluate(with: $0) }.count, 2)

        final class Task: CBLModel { @CBLProperty var task: String? }
        let model = try XCTUnwrap(Task(for: docs[1]))
        XCTAssertTrue(NSPredicate(format: "task ==[c] 'buy cream'").evaluate(with: model))

        let dict: [String: Any] = ["name": "Zoë", "age": 30, "address": ["city": "Paris"]]
        XCTAssertTrue(NSPredicate(format: "name ==[d] 'Zoe' AND age > 18 AND address.city == 'Paris'").evaluate(with: dict))
        XCTAssertTrue(NSPredicate(format: "SELF.age == 30").evaluate(with: dict))
        XCTAssertTrue(NSPredicate(format: "SELF == 'x'").evaluate(with: "x"))
        XCTAssertTrue(NSPredicate(format: "missing == nil").evaluate(with: dict))
        XCTAssertFalse(NSPredicate(format: "age == nil").evaluate(with: dict))

        // Compound predicates made from format predicates work with Foundation's NSCompoundPredicate.
        let both = NSCompoundPredicate(andPredicateWithSubpredicates: [NSPredicate(format: "age > 18"), NSPredicate(format: "name == 'Zoë'")])
        XCTAssertTrue(both.evaluate(with: dict))
    }

    func testUnsupportedSyntaxIsAClearError() {
        func message(_ format: String, _ args: Any...) -> String {
            do {
                _ = try NSPredicate.parse(format: format, argumentArray: args)
                return "parsed"
            } catch let error as CBLPredicateError {
                return error.description
            } catch {
                return "\(error)"
            }
        }
        XCTAssertTrue(message("SUBQUERY(tags, $t, $t == 'a').@count > 0").contains("substitution variables"))
        XCTAssertTrue(message("FUNCTION(name, 'uppercase') == 'A'").contains("FUNCTION is not supported"))
        XCTAssertTrue(message("age + 1 > 2").contains("arithmetic"))
        XCTAssertTrue(message("name == $NAME").contains("substitution variables"))
        XCTAssertTrue(message("tags[0] == 'a'").contains("array index"))
        XCTAssertTrue(message("name == %@").contains("has no argument"))
        XCTAssertTrue(message("name === 'a'").contains("expected a key path or value"))
        XCTAssertTrue(message("name == 'a").contains("unterminated string"))
        XCTAssertTrue(message("name SOUNDSLIKE 'a'").contains("not a supported operator"))
        XCTAssertTrue(message("name MATCHES '('").contains("invalid regular expression"))
        XCTAssertTrue(message("name == 'a' garbage").contains("after the predicate"))
        XCTAssertTrue(message("name == 'a' garbage").contains("offset 12"))
        XCTAssertEqual(message("name == 'a'"), "parsed")
    }

    func testAnInvalidFormatNeverStopsTheProgramAndMatchesNothing() {
        let broken = NSPredicate(format: "name == 'a' garbage")
        XCTAssertFalse(broken.evaluate(with: ["name": "a"]))
        XCTAssertFalse(NSPredicate(format: "name == %@").evaluate(with: ["name": "a"]), "a missing argument")
    }
}
