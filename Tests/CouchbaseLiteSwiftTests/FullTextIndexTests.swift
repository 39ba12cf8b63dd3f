import Foundation
import XCTest
@testable import CouchbaseLiteSwift

/// Full-text indexes (spec 2.2): stored as LiteCore stores them (FTS4 table `kv_default::name`,
/// triggers, `indexes` row of type 1), kept in sync with document writes, and searched with
/// MATCH()/RANK() from N1QL, JSON and the QueryBuilder.
final class FullTextIndexTests: XCTestCase {
    private var directory: URL?

    override func setUpWithError() throws {
        directory = try QueryTestSupport.temporaryDirectory()
    }

    override func tearDownWithError() throws {
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }

    static let sentences: [(String, String)] = [
        ("s1", "The quick brown fox jumps over the lazy dog"),
        ("s2", "Running is good for the heart"),
        ("s3", "She runs every morning; runners love running"),
        ("s4", "A café in Paris serves crème brûlée"),
        ("s5", "Dogs and cats are friends"),
    ]

    private func open(_ name: String = "fts") throws -> Database {
        try Database(name: name, config: DatabaseConfiguration(directory: try XCTUnwrap(directory).path))
    }

    private func sentencesDatabase() throws -> Database {
        let db = try open()
        try db.inBatch {
            for (id, text) in Self.sentences {
                try db.saveDocument(MutableDocument(id: id).setString(text, forKey: "text"))
            }
        }
        return db
    }

    private func ids(_ db: Database, _ n1ql: String, parameters: [String: Any] = [:]) throws -> [String] {
        let q = try db.createQuery(n1ql)
        if !parameters.isEmpty { q.parameters = Parameters(parameters) }
        return try q.execute().map { $0.string(at: 0) ?? "" }
    }

    private func search(_ db: Database, _ text: String, index: String = "sentence") throws -> [String] {
        try ids(db, "SELECT meta().id FROM _ WHERE MATCH(\(index), $q) ORDER BY meta().id", parameters: ["q": text])
    }

    private func sqlite(_ db: Database, _ sql: String) throws -> [String] {
        try db.withOpenFile { try CollectionTestSupport.strings(sql, $0.connection) }
    }

    private func assertError(_ code: CouchbaseLiteError.Code, _ message: String, file: StaticString = #filePath,
                             line: UInt = #line, _ body: () throws -> Void) {
        XCTAssertThrowsError(try body(), file: file, line: line) { error in
            guard let e = error as? CouchbaseLiteError else { return XCTFail("\(error)", file: file, line: line) }
            XCTAssertEqual(e.code, code, e.message, file: file, line: line)
            XCTAssertTrue(e.message.contains(message), e.message, file: file, line: line)
        }
    }

    // MARK: Storage

    func testIndexIsStoredAsLiteCoreStoresIt() throws {
        let db = try sentencesDatabase()
        try db.createIndex(FullTextIndexConfiguration(["text"], language: "en"), name: "sentence")
        XCTAssertEqual(db.indexes, ["sentence"])
        XCTAssertEqual(try sqlite(db, "SELECT sql FROM sqlite_master WHERE name = 'kv_default::sentence'"),
                       [#"CREATE VIRTUAL TABLE "kv_default::sentence" USING fts4("text", tokenize=unicodesn "stopwords=en" "stemmer=en" "remove_diacritics=0")"#])
        XCTAssertEqual(try sqlite(db, "SELECT name || '|' || type || '|' || keyStore || '|' || expression || '|' || indexTableName FROM indexes"),
                       [#"sentence|1|default|[[".text"]]|kv_default::sentence"#])
        XCTAssertEqual(try sqlite(db, "SELECT sql FROM sqlite_master WHERE type = 'trigger' ORDER BY name"), [
            #"CREATE TRIGGER "kv_default::sentence::del" AFTER DELETE ON "kv_default"   BEGIN DELETE FROM "kv_default::sentence" WHERE docid = old.rowid; END"#,
            #"CREATE TRIGGER "kv_default::sentence::ins" AFTER INSERT ON "kv_default"   BEGIN INSERT INTO "kv_default::sentence" (docid, "text") VALUES (new.rowid, fl_fts_value(new.body, 'text')); END"#,
            #"CREATE TRIGGER "kv_default::sentence::postupdate" AFTER UPDATE OF body ON "kv_default"   BEGIN INSERT INTO "kv_default::sentence" (docid, "text") VALUES (new.rowid, fl_fts_value(new.body, 'text')); END"#,
            #"CREATE TRIGGER "kv_default::sentence::preupdate" BEFORE UPDATE OF body ON "kv_default"   BEGIN DELETE FROM "kv_default::sentence" WHERE docid = old.rowid; END"#,
        ])
        // Existing documents were indexed: FTS docids are the documents' rowids.
        XCTAssertEqual(try sqlite(db, #"SELECT count(*) FROM "kv_default::sentence" f JOIN kv_default d ON d.rowid = f.docid"#), ["5"])
        // A 2.8-layout file (302) already has the schema the `indexes` table needs.
        XCTAssertEqual(try sqlite(db, "PRAGMA user_version"), ["302"])
    }

    func testTokenizerArgumentsFollowTheOptions() throws {
        let db = try sentencesDatabase()
        let cases: [(FullTextIndexConfiguration, String)] = [
            (FullTextIndexConfiguration(["text"], ignoreAccents: true, language: ""), "tokenize=unicodesn"),
            (FullTextIndexConfiguration(["text"], ignoreAccents: true, language: "en_US"), #"tokenize=unicodesn "stopwords=en" "stemmer=en""#),
            // French: LiteCore's French stop words; no stemmer (only English stems here).
            (FullTextIndexConfiguration(["text"], language: "fr"), #"tokenize=unicodesn "stopwords=fr" "remove_diacritics=0""#),
            (FullTextIndexConfiguration(["text"], where: nil, language: "", ignoreAccents: false), #"tokenize=unicodesn "remove_diacritics=0""#),
        ]
        for (config, arguments) in cases {
            try db.createIndex(config, name: "opts")
            XCTAssertEqual(try sqlite(db, "SELECT sql FROM sqlite_master WHERE name = 'kv_default::opts'"),
                           [#"CREATE VIRTUAL TABLE "kv_default::opts" USING fts4("text", "# + arguments + ")"])
        }
        XCTAssertEqual(db.indexes, ["opts"])
        try db.createIndex(IndexBuilder.fullTextIndex(items: FullTextIndexItem.property("text")).language("en").ignoreAccents(true),
                           withName: "built")
        XCTAssertEqual(try sqlite(db, "SELECT sql FROM sqlite_master WHERE name = 'kv_default::built'"),
                       [#"CREATE VIRTUAL TABLE "kv_default::built" USING fts4("text", tokenize=unicodesn "stopwords=en" "stemmer=en")"#])
    }

    func testSameIndexIsKeptAndADifferentOneReplaced() throws {
        let db = try sentencesDatabase()
        try db.createIndex(FullTextIndexConfiguration(["text"], language: "en"), name: "sentence")
        // Make the table stale behind LiteCore's back: an identical re-creation must not rebuild it.
        try db.withOpenFile { try $0.connection.execute(#"DELETE FROM "kv_default::sentence" WHERE docid = (SELECT rowid FROM kv_default WHERE key = 's1')"#) }
        try db.createIndex(FullTextIndexConfiguration(["text"], language: "en"), name: "sentence")
        XCTAssertEqual(try search(db, "dog"), ["s5"])
        try db.createIndex(FullTextIndexConfiguration(["text"], ignoreAccents: true, language: "en"), name: "sentence")
        XCTAssertEqual(try search(db, "dog"), ["s1", "s5"])
        // A value index of the same name replaces the FTS index, table and triggers.
        try db.createIndex(ValueIndexConfiguration(["text"]), name: "sentence")
        XCTAssertEqual(try sqlite(db, "SELECT type || ':' || name FROM sqlite_master WHERE name LIKE 'kv_default::%' OR type = 'trigger'"), [])
        XCTAssertEqual(try sqlite(db, "SELECT type FROM indexes"), ["0"])
    }

    // MARK: Searching

    func testWordsStemsPrefixesAndPhrases() throws {
        let db = try sentencesDatabase()
        try db.createIndex(FullTextIndexConfiguration(["text"], language: "en"), name: "sentence")
        XCTAssertEqual(try search(db, "dog"), ["s1", "s5"])                 // "Dogs" stems to dog
        XCTAssertEqual(try search(db, "running"), ["s2", "s3"])             // runs, running → run
        XCTAssertEqual(try search(db, "run"), ["s2", "s3"])
        XCTAssertEqual(try search(db, "runner"), ["s3"])
        XCTAssertEqual(try search(db, "bro*"), ["s1"])
        XCTAssertEqual(try search(db, "\"lazy dog\""), ["s1"])
        XCTAssertEqual(try search(db, "\"dog lazy\""), [])
        XCTAssertEqual(try search(db, "dog OR heart"), ["s1", "s2", "s5"])
        XCTAssertEqual(try search(db, "dog NOT cat"), ["s1"])
        XCTAssertEqual(try search(db, "quick AND fox"), ["s1"])
        XCTAssertEqual(try search(db, "quick NEAR/1 fox"), ["s1"])
        XCTAssertEqual(try search(db, "QUICK"), ["s1"])
        // Stop words are neither indexed nor searched for; a stop word as a prefix still is.
        try db.saveDocument(MutableDocument(id: "t1").setString("A theory of everything", forKey: "text"))
        XCTAssertEqual(try search(db, "the"), [])
        XCTAssertEqual(try search(db, "the*"), ["t1"])
        XCTAssertEqual(try search(db, "giraffe"), [])
    }

    func testAccents() throws {
        let db = try sentencesDatabase()
        try db.createIndex(FullTextIndexConfiguration(["text"], language: "en"), name: "sentence")
        XCTAssertEqual(try search(db, "café"), ["s4"])
        XCTAssertEqual(try search(db, "cafe"), [])
        XCTAssertEqual(try search(db, "CRÈME"), ["s4"])
        try db.createIndex(FullTextIndexConfiguration(["text"], ignoreAccents: true, language: "en"), name: "plain")
        XCTAssertEqual(try search(db, "cafe", index: "plain"), ["s4"])
        XCTAssertEqual(try search(db, "café", index: "plain"), ["s4"])
        XCTAssertEqual(try search(db, "brulee", index: "plain"), ["s4"])
    }

    func testRankOrdersByRelevance() throws {
        let db = try sentencesDatabase()
        try db.createIndex(FullTextIndexConfiguration(["text"], language: "en"), name: "sentence")
        let q = try db.createQuery("SELECT meta().id, rank(sentence) FROM _ WHERE MATCH(sentence, 'run') ORDER BY rank(sentence) DESC")
        let rows = try q.execute().map { ($0.string(at: 0) ?? "", $0.double(at: 1)) }
        // LiteCore's rank: hits in the row / hits in all rows, summed over phrases and columns.
        XCTAssertEqual(rows.map(\.0), ["s3", "s2"])
        XCTAssertEqual(rows[0].1, 2.0 / 3.0, accuracy: 1e-12)
        XCTAssertEqual(rows[1].1, 1.0 / 3.0, accuracy: 1e-12)
        let two = try db.createQuery("SELECT meta().id, rank(sentence) FROM _ WHERE MATCH(sentence, 'dog OR fox') ORDER BY rank(sentence) DESC, meta().id")
        XCTAssertEqual(try two.execute().map { "\($0.string(at: 0) ?? ""):\($0.double(at: 1))" }, ["s1:1.5", "s5:0.5"])
    }

    func testMatchWithOtherTermsParametersAndSeveralIndexes() throws {
        let db = try sentencesDatabase()
        try db.inBatch {
            for (id, doc) in [("s1", ["lang": "en", "n": 1]), ("s2", ["lang": "en", "n": 2]), ("s3", ["lang": "en", "n": 3])] {
                let m = try XCTUnwrap(db.document(withID: id)).toMutable()
                for (k, v) in doc { m.setValue(v, forKey: k) }
                try db.saveDocument(m)
            }
        }
        try db.createIndex(FullTextIndexConfiguration(["text"], language: "en"), name: "sentence")
        try db.createIndex(FullTextIndexConfiguration(["lang"], language: ""), name: "language")
        XCTAssertEqual(try ids(db, "SELECT meta().id FROM _ WHERE MATCH(sentence, 'run') AND n > 2"), ["s3"])
        XCTAssertEqual(try ids(db, "SELECT meta().id FROM _ WHERE n < 3 AND (MATCH(sentence, $q) AND meta().id != 's3') ORDER BY n",
                               parameters: ["q": "run OR dog"]), ["s1", "s2"])
        XCTAssertEqual(try ids(db, "SELECT meta().id FROM _ WHERE MATCH(language, 'en') AND MATCH(sentence, 'dog')"), ["s1"])
        let json = #"{"WHAT": [["._id"]], "WHERE": ["AND", ["MATCH()", "sentence", "heart"], ["=", [".lang"], "en"]]}"#
        XCTAssertEqual(try db.createQuery(json: json).execute().map { $0.string(at: 0) ?? "" }, ["s2"])
    }

    func testSeveralPropertiesNestedPathsAndArrays() throws {
        let db = try open()
        try db.saveDocument(MutableDocument(id: "a").setString("Alpine walks", forKey: "title")
            .setValue(["body": "Long hikes in the mountains"], forKey: "note").setValue(["red", "green"], forKey: "tags")
            .setInt(1984, forKey: "year").setBoolean(true, forKey: "done"))
        try db.saveDocument(MutableDocument(id: "b").setString("City breaks", forKey: "title")
            .setValue(["body": "Museums and walks"], forKey: "note").setValue(["blue"], forKey: "tags"))
        try db.createIndex(FullTextIndexConfiguration(["title", "note.body"], language: "en"), name: "notes")
        try db.createIndex(FullTextIndexConfiguration(["tags", "year", "done"], language: ""), name: "misc")
        XCTAssertEqual(try sqlite(db, "SELECT sql FROM sqlite_master WHERE name = 'kv_default::notes'"),
                       [#"CREATE VIRTUAL TABLE "kv_default::notes" USING fts4("title", "note.body", tokenize=unicodesn "stopwords=en" "stemmer=en" "remove_diacritics=0")"#])
        XCTAssertEqual(try search(db, "walk", index: "notes"), ["a", "b"])
        XCTAssertEqual(try search(db, "hiking", index: "notes"), ["a"])
        XCTAssertEqual(try search(db, "title:walk", index: "notes"), ["a"])
        XCTAssertEqual(try search(db, "green", index: "misc"), ["a"])
        XCTAssertEqual(try search(db, "1984", index: "misc"), ["a"])
        // LiteCore's text of a boolean is T or F.
        XCTAssertEqual(try search(db, "t", index: "misc"), ["a"])
        XCTAssertEqual(try sqlite(db, #"SELECT "tags" FROM "kv_default::misc" ORDER BY docid"#), [" red green", " blue"])
    }

    // MARK: Keeping the index in sync

    func testWritesUpdateTheIndex() throws {
        let db = try open()
        // The index exists before any document: everything arrives through the triggers.
        try db.createIndex(FullTextIndexConfiguration(["text"], language: "en"), name: "sentence")
        for (id, text) in Self.sentences { try db.saveDocument(MutableDocument(id: id).setString(text, forKey: "text")) }
        XCTAssertEqual(try search(db, "run"), ["s2", "s3"])

        let s2 = try XCTUnwrap(db.document(withID: "s2")).toMutable()
        s2.setString("Walking is good too", forKey: "text")
        try db.saveDocument(s2)
        XCTAssertEqual(try search(db, "run"), ["s3"])
        XCTAssertEqual(try search(db, "walk"), ["s2"])

        try db.deleteDocument(try XCTUnwrap(db.document(withID: "s3")))
        XCTAssertEqual(try search(db, "run"), [])
        try db.purgeDocument(withID: "s1")
        XCTAssertEqual(try search(db, "fox"), [])
        // Recreating a deleted document indexes its new text.
        try db.saveDocument(MutableDocument(id: "s3").setString("Runs again", forKey: "text"))
        XCTAssertEqual(try search(db, "run"), ["s3"])
        let s4 = try XCTUnwrap(db.document(withID: "s4")).toMutable()
        s4.removeValue(forKey: "text")
        try db.saveDocument(s4)
        XCTAssertEqual(try search(db, "café"), [])
        // The FTS table holds exactly the live documents' text, nothing stale.
        XCTAssertEqual(try sqlite(db, #"SELECT count(*) FROM "kv_default::sentence" WHERE "text" IS NOT NULL"#), ["3"])
        XCTAssertEqual(try sqlite(db, #"SELECT count(*) FROM "kv_default::sentence" WHERE docid NOT IN (SELECT rowid FROM kv_default)"#), ["0"])
        XCTAssertEqual(try sqlite(db, "PRAGMA integrity_check"), ["ok"])
    }

    func testDeleteIndexDropsTableAndTriggers() throws {
        let db = try sentencesDatabase()
        try db.createIndex(FullTextIndexConfiguration(["text"], language: "en"), name: "sentence")
        try db.createIndex(ValueIndexConfiguration(["text"]), name: "byText")
        try db.deleteIndex(forName: "sentence")
        XCTAssertEqual(db.indexes, ["byText"])
        XCTAssertEqual(try sqlite(db, "SELECT name FROM sqlite_master WHERE name LIKE 'kv_default::%' OR type = 'trigger'"), [])
        assertError(.missingIndex, "'match' test requires a full-text index") {
            _ = try db.createQuery("SELECT meta().id FROM _ WHERE MATCH(sentence, 'dog')")
        }
        // Writes still work without the triggers.
        try db.saveDocument(MutableDocument(id: "s6").setString("more dogs", forKey: "text"))
        try db.deleteIndex(forName: "sentence")
    }

    func testIndexSurvivesReopen() throws {
        var db = try sentencesDatabase()
        try db.createIndex(FullTextIndexConfiguration(["text"], language: "en"), name: "sentence")
        try db.close()
        db = try open()
        XCTAssertEqual(db.indexes, ["sentence"])
        XCTAssertEqual(try search(db, "dog"), ["s1", "s5"])
        // A write right after opening runs the triggers (tokenizer and fl_fts_value registered on open).
        try db.saveDocument(MutableDocument(id: "s6").setString("Hot dogs", forKey: "text"))
        XCTAssertEqual(try search(db, "dog"), ["s1", "s5", "s6"])
        try db.close()
    }

    func testExplainShowsTheFullTextTable() throws {
        let db = try sentencesDatabase()
        try db.createIndex(FullTextIndexConfiguration(["text"], language: "en"), name: "sentence")
        let plan = try db.createQuery("SELECT meta().id FROM _ WHERE MATCH(sentence, 'dog') ORDER BY rank(sentence) DESC").explain()
        XCTAssertTrue(plan.contains(#"JOIN "kv_default::sentence" AS "<idx1>" ON "<idx1>".docid = _doc.rowid"#), plan)
        XCTAssertTrue(plan.contains(#""<idx1>"."kv_default::sentence" MATCH 'dog'"#), plan)
        XCTAssertTrue(plan.contains(#"rank(matchinfo("<idx1>"."kv_default::sentence"))"#), plan)
        // SQLite searches the FTS index, then fetches each document by rowid.
        XCTAssertTrue(plan.contains("SCAN <idx1> VIRTUAL TABLE INDEX"), plan)
        XCTAssertTrue(plan.contains("SEARCH _doc USING INTEGER PRIMARY KEY (rowid=?)"), plan)
    }

    // MARK: Errors, as LiteCore reports them

    func testInvalidUsesAreRejected() throws {
        let db = try sentencesDatabase()
        try db.createIndex(FullTextIndexConfiguration(["text"], language: "en"), name: "sentence")
        assertError(.missingIndex, "no full-text index named 'nope'") {
            _ = try db.createQuery("SELECT meta().id FROM _ WHERE MATCH(nope, 'dog')")
        }
        for n1ql in ["SELECT meta().id FROM _ WHERE MATCH(sentence, 'dog') OR meta().id = 's2'",
                     "SELECT meta().id FROM _ WHERE NOT MATCH(sentence, 'dog')",
                     "SELECT meta().id FROM _ WHERE meta().id = 's1' AND (MATCH(sentence, 'dog') OR meta().id = 's2')"] {
            assertError(.invalidQuery, "MATCH can only appear at top-level, or in a top-level AND") { _ = try db.createQuery(n1ql) }
        }
        assertError(.invalidQuery, "a MATCH is not allowed outside the WHERE clause") {
            _ = try db.createQuery("SELECT MATCH(sentence, 'dog') FROM _")
        }
        assertError(.invalidQuery, "RANK() cannot be used without MATCH()") {
            _ = try db.createQuery("SELECT rank(sentence) FROM _")
        }
        assertError(.invalidQuery, "multiple MATCHes of the same property") {
            _ = try db.createQuery("SELECT meta().id FROM _ WHERE MATCH(sentence, 'dog') AND MATCH(sentence, 'fox')")
        }
        assertError(.invalidQuery, "only index document properties") {
            try db.createIndex(FullTextIndexConfiguration(["lower(text)"]), name: "bad")
        }
        assertError(.invalidParameter, "double quote") {
            try db.createIndex(FullTextIndexConfiguration(["text"]), name: "a\"b")
        }
        XCTAssertEqual(db.indexes, ["sentence"])
    }

    // MARK: QueryBuilder

    func testQueryBuilderMatchAndRank() throws {
        let db = try sentencesDatabase()
        try db.createIndex(IndexBuilder.fullTextIndex(items: FullTextIndexItem.property("text")).language("en"), withName: "sentence")
        let index = Expression.fullTextIndex("sentence")
        let q = QueryBuilder.select(SelectResult.expression(Meta.id), SelectResult.expression(FullTextFunction.rank(index)))
            .from(DataSource.database(db))
            .where(FullTextFunction.match(index, query: "run"))
            .orderBy(Ordering.expression(FullTextFunction.rank(index)).descending())
        XCTAssertEqual(try q.execute().map { $0.string(at: 0) ?? "" }, ["s3", "s2"])

        let old = QueryBuilder.select(SelectResult.expression(Meta.id))
            .from(DataSource.database(db))
            .where(FullTextFunction.match(indexName: "sentence", query: "dog").and(Meta.id.notEqualTo(Expression.string("s5"))))
            .orderBy(Ordering.expression(FullTextFunction.rank("sentence")))
        XCTAssertEqual(try old.execute().map { $0.string(at: 0) ?? "" }, ["s1"])

        let aliased = QueryBuilder.select(SelectResult.expression(Meta.id.from("s")))
            .from(DataSource.database(db).as("s"))
            .where(FullTextFunction.match(Expression.fullTextIndex("sentence").from("s"), query: "heart"))
        XCTAssertEqual(try aliased.execute().map { $0.string(at: 0) ?? "" }, ["s2"])
        XCTAssertEqual(try db.createQuery("SELECT s.text FROM _ AS s WHERE MATCH(s.sentence, 'heart')").execute()
            .map { $0.string(at: 0) ?? "" }, ["Running is good for the heart"])

        let outside = QueryBuilder.select(SelectResult.expression(Meta.id)).from(DataSource.database(db))
            .where(FullTextFunction.match(index, query: "dog").or(Meta.id.equalTo(Expression.string("s2"))))
        assertError(.invalidQuery, "top-level") { _ = try outside.execute() }
    }

    // MARK: Partial full-text index (3.2)

    func testPartialIndexOnlyIndexesMatchingDocuments() throws {
        let db = try open()
        try db.inBatch {
            try db.saveDocument(MutableDocument(id: "n1").setString("note", forKey: "type").setString("buy dog food", forKey: "text"))
            try db.saveDocument(MutableDocument(id: "n2").setString("note", forKey: "type").setString("walk the dog", forKey: "text"))
            try db.saveDocument(MutableDocument(id: "m1").setString("mail", forKey: "type").setString("your dog is cute", forKey: "text"))
        }
        try db.createIndex(FullTextIndexConfiguration(["text"], where: "type = 'note'", language: "en"), name: "notes")
        XCTAssertEqual(try search(db, "dog", index: "notes"), ["n1", "n2"])
        XCTAssertEqual(try sqlite(db, "SELECT expression FROM indexes"),
                       [#"{"WHAT":[[".text"]],"WHERE":["=",[".type"],"note"]}"#])
        XCTAssertEqual(try sqlite(db, "SELECT sql FROM sqlite_master WHERE name = 'kv_default::notes::ins'"),
                       [#"CREATE TRIGGER "kv_default::notes::ins" AFTER INSERT ON "kv_default" WHEN (fl_value(new.body, 'type') = 'note')  BEGIN INSERT INTO "kv_default::notes" (docid, "text") VALUES (new.rowid, fl_fts_value(new.body, 'text')); END"#])
        try db.saveDocument(MutableDocument(id: "m2").setString("mail", forKey: "type").setString("dog days", forKey: "text"))
        try db.saveDocument(MutableDocument(id: "n3").setString("note", forKey: "type").setString("dog days", forKey: "text"))
        XCTAssertEqual(try search(db, "dog", index: "notes"), ["n1", "n2", "n3"])
        // A note turned into mail leaves the index; mail turned into a note enters it.
        let n1 = try XCTUnwrap(db.document(withID: "n1")).toMutable()
        try db.saveDocument(n1.setString("mail", forKey: "type"))
        let m1 = try XCTUnwrap(db.document(withID: "m1")).toMutable()
        try db.saveDocument(m1.setString("note", forKey: "type"))
        XCTAssertEqual(try search(db, "dog", index: "notes"), ["m1", "n2", "n3"])
        XCTAssertEqual(try sqlite(db, #"SELECT count(*) FROM "kv_default::notes""#), ["3"])
    }

    // MARK: Other layouts and generations

    /// A copy of a fixture bundle, writable, opened (skips when the shared fixtures are absent).
    private func fixture(_ name: String) throws -> Database {
        let source = try QueryTestSupport.requireFixtures().appendingPathComponent("lite_dbs/\(name).cblite2")
        let dir = try XCTUnwrap(directory)
        let target = dir.appendingPathComponent("\(name).cblite2")
        try FileManager.default.copyItem(at: source, to: target)
        for f in try FileManager.default.contentsOfDirectory(atPath: target.path) {
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: target.appendingPathComponent(f).path)
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: target.path)
        return try Database(name: name, config: DatabaseConfiguration(directory: dir.path))
    }

    /// A real 3.0 file (names_100 with `extra` rev trees and deleted documents in `kv_default`):
    /// the index finds what a scan finds, and follows saves and deletions of 3.x rows.
    func testIndexOnA30File() throws {
        let db = try fixture("db_3_0_0_names_100_with_deleted")
        let scan = try ids(db, "SELECT meta().id FROM _ WHERE ANY l IN likes SATISFIES l = 'running' END ORDER BY meta().id")
        XCTAssertFalse(scan.isEmpty)
        try db.createIndex(FullTextIndexConfiguration(["likes", "contact.address.street"], language: "en"), name: "person")
        XCTAssertEqual(try search(db, "likes:run", index: "person"), scan)
        let loops = try ids(db, "SELECT meta().id FROM _ WHERE contact.address.street LIKE '% Loop' ORDER BY meta().id")
        XCTAssertFalse(loops.isEmpty)
        XCTAssertEqual(try search(db, "loop", index: "person"), loops)

        try db.saveDocument(MutableDocument(id: "runner-1").setValue(["running", "chess"], forKey: "likes"))
        XCTAssertEqual(try search(db, "likes:run", index: "person"), (scan + ["runner-1"]).sorted())
        try db.deleteDocument(try XCTUnwrap(db.document(withID: scan[0])))
        XCTAssertEqual(try search(db, "likes:run", index: "person"), (scan + ["runner-1"]).sorted().filter { $0 != scan[0] })
        XCTAssertEqual(try sqlite(db, "PRAGMA integrity_check"), ["ok"])
    }

    /// A 3.1 file, whose deleted documents move to `kv_del_default`: deleting removes the FTS row
    /// (the delete trigger), re-creating the document brings it back.
    func testIndexOnA31FileWithDeletedTable() throws {
        let db = try fixture("upgrade_3.1_peerCheckpoints")
        for (id, text) in Self.sentences { try db.saveDocument(MutableDocument(id: id).setString(text, forKey: "text")) }
        try db.createIndex(FullTextIndexConfiguration(["text"], language: "en"), name: "sentence")
        XCTAssertEqual(try search(db, "dog"), ["s1", "s5"])
        try db.deleteDocument(try XCTUnwrap(db.document(withID: "s5")))
        XCTAssertEqual(try sqlite(db, "SELECT count(*) FROM kv_del_default WHERE key = 's5'"), ["1"])
        XCTAssertEqual(try search(db, "dog"), ["s1"])
        XCTAssertEqual(try sqlite(db, #"SELECT count(*) FROM "kv_default::sentence""#), ["4"])
        try db.saveDocument(MutableDocument(id: "s5").setString("Dogs again", forKey: "text"))
        XCTAssertEqual(try search(db, "dog"), ["s1", "s5"])
        XCTAssertEqual(try sqlite(db, #"SELECT count(*) FROM "kv_default::sentence""#), ["5"])
        // FTS docids are kv_default rowids: a search cannot take in kv_del_default's rows.
        assertError(.unimplemented, "meta().deleted") {
            _ = try db.createQuery("SELECT meta().id FROM _ WHERE MATCH(sentence, 'dog') AND meta().deleted")
        }
    }

    /// An FTS index as LiteCore 2.0/2.1 left it: no `indexes` table, `::ins`/`::upd`/`::del`
    /// triggers calling fl_value, the 2.0 tokenizer arguments. It is listed, searched and kept in
    /// sync; registering it in a new `indexes` table keeps its type; deleting drops all of it.
    func testPre25FullTextIndex() throws {
        let db = try sentencesDatabase()
        try db.withOpenFile { file in
            let c = file.connection
            try c.execute(#"CREATE VIRTUAL TABLE "kv_default::legacy" USING fts4("text", tokenize=unicodesn "stemmer=en" "remove_diacritics=1")"#)
            try c.execute(#"INSERT INTO "kv_default::legacy" (docid, "text") SELECT rowid, fl_value(new.body, 'text') FROM kv_default AS new"#)
            try c.execute(#"CREATE TRIGGER "kv_default::legacy::ins" AFTER INSERT ON kv_default BEGIN INSERT INTO "kv_default::legacy" (docid, "text") VALUES (new.rowid, fl_value(new.body, 'text')); END"#)
            try c.execute(#"CREATE TRIGGER "kv_default::legacy::del" AFTER DELETE ON kv_default BEGIN DELETE FROM "kv_default::legacy" WHERE docid = old.rowid; END"#)
            try c.execute(#"CREATE TRIGGER "kv_default::legacy::upd" AFTER UPDATE ON kv_default BEGIN UPDATE "kv_default::legacy" SET "text" = fl_value(new.body, 'text') WHERE docid = new.rowid; END"#)
        }
        XCTAssertEqual(db.indexes, ["legacy"])
        XCTAssertEqual(try search(db, "cafe", index: "legacy"), ["s4"])
        try db.saveDocument(MutableDocument(id: "s6").setString("Dog days", forKey: "text"))
        let s1 = try XCTUnwrap(db.document(withID: "s1")).toMutable()
        try db.saveDocument(s1.setString("no animals", forKey: "text"))
        XCTAssertEqual(try search(db, "dog", index: "legacy"), ["s5", "s6"])

        try db.createIndex(ValueIndexConfiguration(["text"]), name: "byText")
        XCTAssertEqual(try sqlite(db, "SELECT name || ':' || type || ':' || ifnull(indexTableName, 'NULL') FROM indexes ORDER BY name"),
                       ["byText:0:NULL", "legacy:1:kv_default::legacy"])
        try db.deleteIndex(forName: "legacy")
        XCTAssertEqual(db.indexes, ["byText"])
        XCTAssertEqual(try sqlite(db, "SELECT name FROM sqlite_master WHERE name LIKE 'kv_default::%' OR type = 'trigger'"), [])
    }
}
