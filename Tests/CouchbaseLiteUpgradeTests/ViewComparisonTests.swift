import CouchbaseLite
import CouchbaseLiteSwift
import Foundation
import XCTest
@testable import CouchbaseLiteUpgrade

/// The view-vs-N1QL comparison: one case per rule of spec 9.4 (and the converter's), each
/// asserting the rule named; identical queries report equality; bad input is a clear error.
final class ViewComparisonTests: XCTestCase {
    private var directory: URL!
    private var bundle: URL { directory.appendingPathComponent("people.cblite2") }

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("cblcmp-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }

    /// Writes a 1.x database with `docs` and indexes `view` with `map` (its stored index is then
    /// what the comparison reads); `afterIndexing` may change documents without re-indexing.
    private func makeLegacy(_ docs: [(String, [String: Any])], view: String = "app/byKey",
                            map: @escaping CBLMapBlock, afterIndexing: ((CBLDatabase) throws -> Void)? = nil) throws {
        let manager = try CBLManager(directory: directory.path)
        defer { manager.close() }
        let db = try manager.databaseNamed("people")
        for (id, props) in docs { _ = try XCTUnwrap(db.document(withID: id)).putProperties(props) }
        db.viewNamed(view).setMapBlock(map, version: "1")
        _ = try db.viewNamed(view).createQuery().run()
        try afterIndexing?(db)
    }

    private func compare(_ n1ql: String, view: String = "app/byKey", options: ViewQueryOptions = ViewQueryOptions()) throws -> ComparisonReport {
        try ViewComparison(legacyDatabase: bundle).compare(view: .stored(name: view), options: options, n1ql: n1ql)
    }

    private func emitName(_ doc: [String: Any], _ emit: CBLMapEmitBlock) {
        if doc["type"] as? String == "person", let name = doc["name"] { emit(name, nil) }
    }

    private func people(_ names: [String]) -> [(String, [String: Any])] {
        names.enumerated().map { ("p\($0.offset)", ["type": "person", "name": $0.element]) }
    }

    private func rules(_ report: ComparisonReport) -> Set<DifferenceRule> { Set(report.differences.map(\.rule)) }

    func testIdenticalQueriesAreEqual() throws {
        try makeLegacy(people(["carol", "alice", "bob"]) + [("x", ["type": "other", "name": "zed"])]) { self.emitName($0, $1) }
        let report = try compare("SELECT meta().id AS id, name AS key FROM _ WHERE type = 'person' ORDER BY name, meta().id")
        XCTAssertTrue(report.isEqual, "\(report.differences)")
        XCTAssertEqual(report.viewRows.map(\.key), [.value("alice"), .value("bob"), .value("carol")])
        XCTAssertEqual(report.n1qlRows.map(\.documentID), ["p1", "p2", "p0"])
        XCTAssertEqual(report.matchedBy, "document ID and key")
    }

    func testBinaryCollationIsNamedAndUnicodeCollationFixesIt() throws {
        try makeLegacy(people(["alice", "Bob"])) { self.emitName($0, $1) }
        let binary = try compare("SELECT meta().id AS id, name AS key FROM _ WHERE type = 'person' ORDER BY name")
        XCTAssertEqual(binary.differences.map(\.kind), [.orderDiffers])
        XCTAssertEqual(rules(binary), [.binaryCollation])
        let unicode = try compare("SELECT meta().id AS id, name AS key FROM _ WHERE type = 'person' ORDER BY name COLLATE UNICODE")
        XCTAssertTrue(unicode.isEqual, "\(unicode.differences)")
    }

    func testCaseOrder() throws {
        try makeLegacy(people(["Ann", "ann"])) { self.emitName($0, $1) }
        let report = try compare("SELECT meta().id AS id, name AS key FROM _ WHERE type = 'person' ORDER BY name")
        XCTAssertEqual(report.viewRows.map(\.key), [.value("ann"), .value("Ann")], "1.x: lowercase first")
        XCTAssertEqual(rules(report), [.caseOrder])
    }

    func testAccents() throws {
        try makeLegacy(people(["fred", "émile"])) { self.emitName($0, $1) }
        let report = try compare("SELECT meta().id AS id, name AS key FROM _ WHERE type = 'person' ORDER BY name")
        XCTAssertEqual(report.viewRows.map(\.key), [.value("émile"), .value("fred")])
        XCTAssertEqual(rules(report), [.accents])
    }

    func testNullOrdering() throws {
        try makeLegacy(people(["bob"]) + [("pnull", ["type": "person", "name": NSNull()])]) { self.emitName($0, $1) }
        let report = try compare("SELECT meta().id AS id, name AS key FROM _ WHERE type = 'person' ORDER BY name")
        XCTAssertEqual(report.viewRows.map(\.key), [.value(.null), .value("bob")])
        XCTAssertEqual(rules(report), [.nullOrdering])
    }

    func testNullVersusMissing() throws {
        try makeLegacy(people(["bob"]) + [("nameless", ["type": "person"])]) { self.emitName($0, $1) }
        let report = try compare("SELECT meta().id AS id, name AS key FROM _ WHERE type = 'person' ORDER BY name")
        let only = try XCTUnwrap(report.differences.first)
        XCTAssertEqual(report.differences.count, 1)
        XCTAssertEqual(only.kind, .onlyInN1QL)
        XCTAssertEqual(only.n1qlRow?.documentID, "nameless")
        XCTAssertEqual(only.n1qlRow?.key, .missing)
        XCTAssertEqual(only.rule, .nullVersusMissing)
        let fixed = try compare("SELECT meta().id AS id, name AS key FROM _ WHERE type = 'person' AND name IS VALUED ORDER BY name")
        XCTAssertTrue(fixed.isEqual)
    }

    func testBooleansAsNumbers() throws {
        let docs: [(String, [String: Any])] = [("t", ["rank": true]), ("f", ["rank": false]), ("half", ["rank": 0.5]), ("two", ["rank": 2])]
        try makeLegacy(docs) { doc, emit in if let r = doc["rank"] { emit(r, nil) } }
        let report = try compare("SELECT meta().id AS id, rank AS key FROM _ WHERE rank IS VALUED ORDER BY rank")
        XCTAssertEqual(report.viewRows.compactMap(\.documentID), ["f", "t", "half", "two"])
        XCTAssertEqual(report.n1qlRows.compactMap(\.documentID), ["f", "half", "t", "two"])
        XCTAssertEqual(rules(report), [.booleansAsNumbers])
    }

    func testArraysCompareAsBlobs() throws {
        let docs: [(String, [String: Any])] = [("long", ["k": [1, 2, 3]]), ("short", ["k": [2]])]
        try makeLegacy(docs) { doc, emit in if let k = doc["k"] { emit(k, nil) } }
        let report = try compare("SELECT meta().id AS id, k AS key FROM _ WHERE k IS VALUED ORDER BY k")
        XCTAssertEqual(report.viewRows.compactMap(\.documentID), ["long", "short"])
        XCTAssertEqual(report.n1qlRows.compactMap(\.documentID), ["short", "long"], "Fleece: the shorter array's header sorts first")
        XCTAssertEqual(rules(report), [.arraysAndObjectsAsBlobs])
    }

    func testEqualKeysOrder() throws {
        try makeLegacy([("b", ["type": "person", "name": "same"]), ("a", ["type": "person", "name": "same"])]) { self.emitName($0, $1) }
        let report = try compare("SELECT meta().id AS id, name AS key FROM _ WHERE type = 'person' ORDER BY name")
        XCTAssertEqual(report.viewRows.compactMap(\.documentID), ["a", "b"])
        if report.n1qlRows.compactMap(\.documentID) == ["b", "a"] {
            XCTAssertEqual(rules(report), [.equalKeysOrder])
        }
        let fixed = try compare("SELECT meta().id AS id, name AS key FROM _ WHERE type = 'person' ORDER BY name, meta().id")
        XCTAssertTrue(fixed.isEqual)
    }

    func testMultipleEmits() throws {
        try makeLegacy([("d", ["tags": ["x", "y"]])]) { doc, emit in
            for t in doc["tags"] as? [Any] ?? [] { emit(t, nil) }
        }
        let report = try compare("SELECT meta().id AS id, tags[0] AS key FROM _ WHERE tags IS VALUED")
        XCTAssertEqual(report.differences.map(\.kind), [.onlyInView])
        XCTAssertEqual(rules(report), [.multipleEmits])
    }

    func testStaleIndexAndDroppedRevisions() throws {
        try makeLegacy(people(["alice", "bob", "carol"]), map: { self.emitName($0, $1) }) { db in
            try db.document(withID: "p0")?.delete()                                   // the index still has alice
            _ = try db.document(withID: "p1")?.update { rev in rev["name"] = "bobby"; return true }
        }
        let report = try compare("SELECT meta().id AS id, name AS key FROM _ WHERE type = 'person' ORDER BY name COLLATE UNICODE")
        let byDoc = Dictionary(report.differences.map { (($0.viewRow ?? $0.n1qlRow)!.documentID!, $0) }, uniquingKeysWith: { a, _ in a })
        XCTAssertEqual(byDoc["p0"]?.kind, .onlyInView)
        XCTAssertEqual(byDoc["p0"]?.rule, .droppedRevisions, "deleted after the view indexed it: not converted")
        XCTAssertEqual(byDoc["p1"]?.kind, .keyDiffers)
        XCTAssertEqual(byDoc["p1"]?.rule, .staleIndex, "changed after the view's last index update")
        XCTAssertEqual(report.viewRows.count, 3)
    }

    func testMetaPropertiesInEmittedDocuments() throws {
        try makeLegacy(people(["alice"])) { doc, emit in
            if doc["type"] as? String == "person" { emit(doc["name"] ?? NSNull(), doc) }
        }
        let report = try compare("SELECT meta().id AS id, p.name AS key, p AS value FROM _ AS p WHERE p.type = 'person'")
        XCTAssertEqual(report.differences.map(\.kind), [.valueDiffers])
        XCTAssertEqual(rules(report), [.metaProperties])
    }

    func testReducedRowsMatchByKeyAndGroupLevelIsNamed() throws {
        let docs: [(String, [String: Any])] = [
            ("a", ["date": [2016, 1, 5]]), ("b", ["date": [2016, 1, 9]]), ("c", ["date": [2016, 2, 1]]), ("d", ["date": [2017, 1, 1]]),
        ]
        try makeLegacy(docs) { doc, emit in if let d = doc["date"] { emit(d, nil) } }
        var options = ViewQueryOptions()
        options.groupLevel = 2
        options.reduce = .count
        let same = try compare("SELECT [date[0], date[1]] AS key, count(*) AS value FROM _ WHERE date IS VALUED "
                               + "GROUP BY date[0], date[1] ORDER BY date[0], date[1]", options: options)
        XCTAssertEqual(same.matchedBy, "key")
        XCTAssertEqual(same.viewRows.map(\.value), [.value(2), .value(1), .value(1)])
        XCTAssertTrue(same.isEqual, "\(same.differences)")
        let whole = try compare("SELECT date AS key, count(*) AS value FROM _ WHERE date IS VALUED GROUP BY date", options: options)
        XCTAssertFalse(whole.isEqual)
        XCTAssertEqual(rules(whole), [.groupLevelWithoutCounterpart])
    }

    func testArrayKeysOrderedByAnElementNameTheElementsRule() throws {
        let docs: [(String, [String: Any])] = [("a", ["c": "alice"]), ("b", ["c": "Bob"])]
        try makeLegacy(docs) { doc, emit in if let c = doc["c"] { emit([c], nil) } }
        let report = try compare("SELECT meta().id AS id, [c] AS key FROM _ WHERE c IS VALUED ORDER BY [c]")
        XCTAssertEqual(report.differences.map(\.kind), [.orderDiffers])
        XCTAssertEqual(rules(report), [.binaryCollation], "same-length arrays: the element's own rule")
    }

    func testAQueryOrderedBySomethingElseIsNamedSo() throws {
        let docs: [(String, [String: Any])] = [("a", ["k": "x", "t": "2"]), ("b", ["k": "y", "t": "1"])]
        try makeLegacy(docs) { doc, emit in if let k = doc["k"] { emit(k, nil) } }
        let other = try compare("SELECT meta().id AS id, k AS key FROM _ WHERE k IS VALUED ORDER BY t")
        XCTAssertEqual(other.differences.map(\.kind), [.orderDiffers])
        XCTAssertEqual(rules(other), [.notOrderedByKey], "x < y under every collation: the query's ORDER BY is the cause")
        let byAlias = try compare("SELECT meta().id AS id, k AS key FROM _ WHERE k IS VALUED ORDER BY key DESC")
        XCTAssertEqual(rules(byAlias), [.unexplained], "ordered by the key, the wrong way round: nothing explains it")
        XCTAssertTrue(ViewComparison.ordersByKey(try N1QLParser.parseTree("SELECT [a, b] AS key FROM _ ORDER BY a COLLATE UNICODE, b DESC")))
        XCTAssertTrue(ViewComparison.ordersByKey(try N1QLParser.parseTree("SELECT n AS key FROM _ ORDER BY key")))
        XCTAssertFalse(ViewComparison.ordersByKey(try N1QLParser.parseTree("SELECT n AS key FROM _")))
    }

    func testGroupKeysThatDifferOnlyInShape() throws {
        let docs: [(String, [String: Any])] = [("a", ["c": "x"]), ("b", ["c": "x"]), ("d", ["c": "y"])]
        try makeLegacy(docs) { doc, emit in if let c = doc["c"] { emit([c], 1) } }
        var options = ViewQueryOptions()
        options.groupLevel = 1
        options.reduce = .count
        let report = try compare("SELECT c AS key, count(*) AS value FROM _ WHERE c IS VALUED GROUP BY c ORDER BY c", options: options)
        XCTAssertEqual(report.differences.map(\.kind), [.keyDiffers, .keyDiffers])
        XCTAssertEqual(rules(report), [.groupLevelWithoutCounterpart])
        XCTAssertTrue(report.unexplained.isEmpty)
    }

    func testTheGivenDatabaseIsNeverTouched() throws {
        try makeLegacy(people(["alice"])) { self.emitName($0, $1) }
        let before = try FileManager.default.contentsOfDirectory(atPath: bundle.path).sorted()
        let sums = try checksums(bundle)
        _ = try compare("SELECT meta().id AS id, name AS key FROM _")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: bundle.path).sorted(), before, "no -wal/-shm appear")
        XCTAssertEqual(try checksums(bundle), sums)
    }

    func testUnexplainedDifferencesAreFlagged() throws {
        try makeLegacy(people(["alice", "bob"])) { self.emitName($0, $1) }
        let report = try compare("SELECT meta().id AS id, name AS key FROM _ WHERE type = 'person' AND name <> 'alice' ORDER BY name")
        XCTAssertEqual(report.unexplained.count, 1)
        XCTAssertEqual(report.unexplained.first?.viewRow?.documentID, "p0")
    }

    func testBadInputIsAClearError() throws {
        try makeLegacy(people(["alice"])) { self.emitName($0, $1) }
        XCTAssertThrowsError(try compare("SELECT meta().id AS id, name AS key FROM _", view: "app/nope")) { error in
            XCTAssertTrue("\(error)".contains("No view named 'app/nope'") && "\(error)".contains("app/byKey"), "\(error)")
        }
        XCTAssertThrowsError(try compare("SELECT meta().id AS id, name AS key FROM _ WHERE")) { error in
            XCTAssertTrue(error is ComparisonError, "\(error)")
            XCTAssertTrue("\(error)".contains("syntax error"), "\(error)")
        }
        XCTAssertThrowsError(try compare("SELECT meta().id AS id, name FROM _")) { error in
            XCTAssertTrue("\(error)".contains("must name its columns"), "\(error)")
        }
        // A 2.x database where the 1.x one is expected.
        let twoX = try Database(name: "modern", config: DatabaseConfiguration(directory: directory.path))
        try twoX.close()
        XCTAssertThrowsError(try ViewComparison(legacyDatabase: directory.appendingPathComponent("modern.cblite2"))
            .compare(view: .stored(name: "x"), n1ql: "SELECT 1 AS key")) { error in
            XCTAssertTrue("\(error)".contains("2.x/3.x database"), "\(error)")
        }
    }

    func testLongestIncreasingSubsequence() {
        XCTAssertEqual(RowMatcher.longestIncreasingSubsequence([0, 1, 2]), [0, 1, 2])
        XCTAssertEqual(RowMatcher.longestIncreasingSubsequence([1, 0]).count, 1)
        XCTAssertEqual(RowMatcher.longestIncreasingSubsequence([3, 0, 1, 2]), [1, 2, 3])
    }
}
