import Foundation
import XCTest
@testable import CouchbaseLiteSwift

/// The query examples of the Couchbase Lite 2.x Swift documentation ("Queries": select, where,
/// collection operators, IN, LIKE, regex, JOIN, GROUP BY, ORDER BY, parameters, explain) run
/// over a small travel-sample-style data set written with `MutableDocument`.
final class QueryBuilderDocExamplesTests: XCTestCase {
    private var directory: URL!
    private var database: Database!

    override func setUpWithError() throws {
        directory = try QueryTestSupport.temporaryDirectory()
        database = try Database(name: "travel-sample", config: DatabaseConfiguration(directory: directory.path))
        try database.inBatch {
            let airlines: [(String, String, String?, String, String)] = [
                ("airline_10", "40-Mile Air", "Q5", "MILE-AIR", "United States"),
                ("airline_137", "Air France", "AF", "AIRFRANS", "France"),
                ("airline_1191", "Air Austral", "UU", "REUNION", "France"),
                ("airline_5209", "United Airlines", "UA", "UNITED", "United States"),
                ("airline_10226", "Atifly", nil, "ATIFLY", "United States"),
            ]
            for (id, name, iata, callsign, country) in airlines {
                try database.saveDocument(MutableDocument(id: id).setString("airline", forKey: "type")
                    .setString(name, forKey: "name").setValue(iata ?? NSNull(), forKey: "iata")
                    .setString(callsign, forKey: "callsign").setString(country, forKey: "country"))
            }
            let routes: [(String, String, String, String, Int)] = [
                ("route_1", "airline_137", "RIX", "CDG", 0),
                ("route_2", "airline_5209", "RIX", "SFO", 1),
                ("route_3", "airline_137", "CDG", "JFK", 0),
                ("route_4", "airline_999", "RIX", "LHR", 0),
            ]
            for (id, airline, from, to, stops) in routes {
                try database.saveDocument(MutableDocument(id: id).setString("route", forKey: "type")
                    .setString(airline, forKey: "airlineid").setString(from, forKey: "sourceairport")
                    .setString(to, forKey: "destinationairport").setInt(stops, forKey: "stops"))
            }
            let airports: [(String, String, String, String, Int)] = [
                ("airport_1", "Courchevel", "France", "Europe/Paris", 6588),
                ("airport_2", "Chambery", "France", "Europe/Paris", 779),
                ("airport_3", "Denver Intl", "United States", "America/Denver", 5431),
                ("airport_4", "Eagle Co", "United States", "America/Denver", 6548),
                ("airport_5", "Boulder", "United States", "America/Denver", 5288),
                ("airport_6", "San Francisco Intl", "United States", "America/Los_Angeles", 13),
            ]
            for (id, name, country, tz, alt) in airports {
                try database.saveDocument(MutableDocument(id: id).setString("airport", forKey: "type")
                    .setString(name, forKey: "airportname").setString(country, forKey: "country")
                    .setString(tz, forKey: "tz").setValue(["alt": alt, "lat": 45.0], forKey: "geo"))
            }
            let hotels: [(String, String, String, Bool, Double, [String])] = [
                ("hotel_1", "Hotel Ritz", "Paris", true, 650, ["Armani Langworth", "Sam"]),
                ("hotel_2", "Hôtel des Arts", "Paris", false, 150, []),
                ("hotel_3", "The Savoy", "London", true, 500.5, ["Sam", "Ana", "Bo"]),
                ("hotel_4", "premier inn", "London", true, 80, ["Ana"]),
                ("hotel_5", "Ace Hotel", "San Francisco", false, 220, ["Armani Langworth"]),
            ]
            for (id, name, city, vacancy, price, likes) in hotels {
                let doc = MutableDocument(id: id).setString("hotel", forKey: "type")
                    .setString(name, forKey: "name").setString(city, forKey: "city")
                    .setBoolean(vacancy, forKey: "vacancy").setDouble(price, forKey: "price")
                    .setValue(likes, forKey: "public_likes")
                if id != "hotel_5" { doc.setString("  \(name.lowercased())@example.com ", forKey: "email") }
                try database.saveDocument(doc)
            }
            try database.saveDocument(MutableDocument(id: "landmark_1").setString("landmark", forKey: "type")
                .setString("Royal Engineers Museum", forKey: "name").setString("United Kingdom", forKey: "country"))
            try database.saveDocument(MutableDocument(id: "landmark_2").setString("landmark", forKey: "type")
                .setString("Engine Shed", forKey: "name").setString("United Kingdom", forKey: "country"))
            try database.saveDocument(MutableDocument(id: "user_1").setString("user", forKey: "type")
                .setString("Armani", forKey: "first").setString("Langworth", forKey: "last")
                .setString("alangworth", forKey: "username"))
        }
    }

    override func tearDownWithError() throws {
        try database?.close()
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }

    // MARK: SELECT and WHERE

    func testSelectMetaAndProperties() throws {
        let query = QueryBuilder
            .select(SelectResult.expression(Meta.id), SelectResult.property("name"), SelectResult.property("type"))
            .from(DataSource.database(database))
            .where(Expression.property("type").equalTo(Expression.string("hotel")))
            .orderBy(Ordering.expression(Meta.id))
        let results = try query.execute().allResults()
        XCTAssertEqual(results.map { $0.string(forKey: "id") }, ["hotel_1", "hotel_2", "hotel_3", "hotel_4", "hotel_5"])
        XCTAssertEqual(results.first?.string(forKey: "name"), "Hotel Ritz")
        XCTAssertEqual(results.first?.string(forKey: "type"), "hotel")
        XCTAssertEqual(results.first?.keyNames, ["id", "name", "type"])
    }

    func testSelectAllIsKeyedByTheDatabaseName() throws {
        let query = QueryBuilder
            .select(SelectResult.all())
            .from(DataSource.database(database))
            .where(Expression.property("type").equalTo(Expression.string("hotel")))
            .limit(Expression.int(10))
        let names = try query.execute().compactMap { $0.dictionary(forKey: "travel-sample")?.string(forKey: "name") }
        XCTAssertEqual(names.sorted(), ["Ace Hotel", "Hotel Ritz", "Hôtel des Arts", "The Savoy", "premier inn"])
    }

    func testCollectionOperatorArrayContains() throws {
        let query = QueryBuilder
            .select(SelectResult.expression(Meta.id), SelectResult.property("name"), SelectResult.property("public_likes"))
            .from(DataSource.database(database))
            .where(Expression.property("type").equalTo(Expression.string("hotel"))
                .and(ArrayFunction.contains(Expression.property("public_likes"), value: Expression.string("Armani Langworth"))))
            .orderBy(Ordering.expression(Meta.id))
        let results = try query.execute().allResults()
        XCTAssertEqual(results.map { $0.string(forKey: "name") }, ["Hotel Ritz", "Ace Hotel"])
        XCTAssertEqual(results.first?.array(forKey: "public_likes")?.toArray() as? [String], ["Armani Langworth", "Sam"])
    }

    func testInOperator() throws {
        let values = [Expression.property("first"), Expression.property("last"), Expression.property("username")]
        let query = QueryBuilder
            .select(SelectResult.all())
            .from(DataSource.database(database))
            .where(Expression.string("Armani").in(values))
        let users = try query.execute().compactMap { $0.dictionary(forKey: "travel-sample")?.string(forKey: "username") }
        XCTAssertEqual(users, ["alangworth"])
    }

    func testLikeWildcardsAndRegex() throws {
        func landmarks(_ condition: ExpressionProtocol) throws -> [String] {
            try QueryBuilder
                .select(SelectResult.expression(Meta.id), SelectResult.property("country"), SelectResult.property("name"))
                .from(DataSource.database(database))
                .where(Expression.property("type").equalTo(Expression.string("landmark")).and(condition))
                .orderBy(Ordering.property("name"))
                .execute().compactMap { $0.string(forKey: "name") }
        }
        let lowerName = Function.lower(Expression.property("name"))
        XCTAssertEqual(try landmarks(lowerName.like(Expression.string("royal engineers museum"))), ["Royal Engineers Museum"])
        XCTAssertEqual(try landmarks(lowerName.like(Expression.string("eng%e%"))), ["Engine Shed"])
        XCTAssertEqual(try landmarks(lowerName.like(Expression.string("%eng____r%"))), ["Royal Engineers Museum"])
        XCTAssertEqual(try landmarks(Expression.property("name").like(Expression.string("royal%"))), [], "LIKE is case-sensitive")
        XCTAssertEqual(try landmarks(lowerName.regex(Expression.string(".*\\beng.*s\\b.*"))), ["Royal Engineers Museum"],
                       "REGEXP_LIKE matches the whole string")
        XCTAssertEqual(try landmarks(lowerName.regex(Expression.string("eng.*"))), ["Engine Shed"])
    }

    // MARK: JOIN

    func testJoinAirlinesAndRoutes() throws {
        let query = QueryBuilder
            .select(
                SelectResult.expression(Expression.property("name").from("airline")),
                SelectResult.expression(Expression.property("callsign").from("airline")),
                SelectResult.expression(Expression.property("destinationairport").from("route")),
                SelectResult.expression(Expression.property("stops").from("route")))
            .from(DataSource.database(database).as("airline"))
            .join(Join.join(DataSource.database(database).as("route"))
                .on(Meta.id.from("airline").equalTo(Expression.property("airlineid").from("route"))))
            .where(Expression.property("type").from("route").equalTo(Expression.string("route"))
                .and(Expression.property("type").from("airline").equalTo(Expression.string("airline")))
                .and(Expression.property("sourceairport").from("route").equalTo(Expression.string("RIX"))))
            .orderBy(Ordering.expression(Expression.property("name").from("airline")))
        let rows = try query.execute().map { [$0.string(forKey: "name"), $0.string(forKey: "callsign"),
                                                $0.string(forKey: "destinationairport"), String($0.int(forKey: "stops"))] }
        XCTAssertEqual(rows, [["Air France", "AIRFRANS", "CDG", "0"], ["United Airlines", "UNITED", "SFO", "1"]])
    }

    func testLeftJoinKeepsUnmatchedRoutesAndCrossJoinPairsEverything() throws {
        let left = QueryBuilder
            .select(SelectResult.expression(Meta.id.from("route")).as("route"),
                    SelectResult.expression(Expression.property("name").from("airline")).as("airline"))
            .from(DataSource.database(database).as("route"))
            .join(Join.leftJoin(DataSource.database(database).as("airline"))
                .on(Meta.id.from("airline").equalTo(Expression.property("airlineid").from("route"))))
            .where(Expression.property("type").from("route").equalTo(Expression.string("route")))
            .orderBy(Ordering.expression(Meta.id.from("route")))
        let rows = try left.execute().map { "\($0.string(forKey: "route") ?? "-"):\($0.string(forKey: "airline") ?? "-")" }
        XCTAssertEqual(rows, ["route_1:Air France", "route_2:United Airlines", "route_3:Air France", "route_4:-"])

        let cross = QueryBuilder
            .select(SelectResult.expression(Function.count(Expression.all())).as("pairs"))
            .from(DataSource.database(database).as("a"))
            .join(Join.crossJoin(DataSource.database(database).as("b")))
            .where(Expression.property("type").from("a").equalTo(Expression.string("airline"))
                .and(Expression.property("type").from("b").equalTo(Expression.string("hotel"))))
        XCTAssertEqual(try cross.execute().allResults().first?.int(forKey: "pairs"), 25)
    }

    // MARK: GROUP BY, HAVING, ORDER BY, LIMIT

    func testGroupByCountryAndTimeZone() throws {
        let query = QueryBuilder
            .select(
                SelectResult.expression(Function.count(Expression.all())),
                SelectResult.property("country"),
                SelectResult.property("tz"))
            .from(DataSource.database(database))
            .where(Expression.property("type").equalTo(Expression.string("airport"))
                .and(Expression.property("geo.alt").greaterThanOrEqualTo(Expression.int(300))))
            .groupBy(Expression.property("country"), Expression.property("tz"))
            .orderBy(Ordering.expression(Function.count(Expression.all())).descending())
        let rows = try query.execute().map { "\($0.int(forKey: "$1")) \($0.string(forKey: "country")!) \($0.string(forKey: "tz")!)" }
        XCTAssertEqual(rows, ["3 United States America/Denver", "2 France Europe/Paris"])
    }

    func testHavingAndAggregates() throws {
        let query = QueryBuilder
            .select(SelectResult.property("city"),
                    SelectResult.expression(Function.count(Expression.all())).as("hotels"),
                    SelectResult.expression(Function.avg(Expression.property("price"))).as("avg"),
                    SelectResult.expression(Function.max(Expression.property("price"))).as("max"),
                    SelectResult.expression(Function.sum(Expression.property("price"))).as("sum"))
            .from(DataSource.database(database))
            .where(Expression.property("type").equalTo(Expression.string("hotel")))
            .groupBy(Expression.property("city"))
            .having(Function.count(Expression.all()).greaterThan(Expression.int(1)))
            .orderBy(Ordering.property("city").ascending())
        let rows = try query.execute().allResults()
        XCTAssertEqual(rows.map { $0.string(forKey: "city") }, ["London", "Paris"])
        XCTAssertEqual(rows.map { $0.int(forKey: "hotels") }, [2, 2])
        XCTAssertEqual(rows.map { $0.double(forKey: "avg") }, [290.25, 400])
        XCTAssertEqual(rows.map { $0.double(forKey: "sum") }, [580.5, 800])
        XCTAssertEqual(rows.map { $0.double(forKey: "max") }, [500.5, 650])
    }

    func testOrderByLimitOffsetAndDistinct() throws {
        let query = QueryBuilder
            .select(SelectResult.expression(Meta.id), SelectResult.property("name"))
            .from(DataSource.database(database))
            .where(Expression.property("type").equalTo(Expression.string("hotel")))
            .orderBy(Ordering.property("price").descending())
            .limit(Expression.int(2), offset: Expression.int(1))
        XCTAssertEqual(try query.execute().map { $0.string(forKey: "name") }, ["The Savoy", "Ace Hotel"])

        let cities = QueryBuilder
            .selectDistinct(SelectResult.property("city"))
            .from(DataSource.database(database))
            .where(Expression.property("type").equalTo(Expression.string("hotel")))
            .orderBy(Ordering.property("city"))
        XCTAssertEqual(try cities.execute().map { $0.string(forKey: "city") }, ["London", "Paris", "San Francisco"])
    }

    func testCollationOrdersCaseAndAccentInsensitively() throws {
        func names(_ ordering: OrderingProtocol) throws -> [String] {
            try QueryBuilder.select(SelectResult.property("name"))
                .from(DataSource.database(database))
                .where(Expression.property("type").equalTo(Expression.string("hotel")))
                .orderBy(ordering)
                .execute().compactMap { $0.string(forKey: "name") }
        }
        XCTAssertEqual(try names(Ordering.property("name")),
                       ["Ace Hotel", "Hotel Ritz", "Hôtel des Arts", "The Savoy", "premier inn"], "binary by default")
        XCTAssertEqual(try names(Ordering.expression(Expression.property("name").collate(Collation.unicode()))),
                       ["Ace Hotel", "Hôtel des Arts", "Hotel Ritz", "premier inn", "The Savoy"],
                       "letters first, accents and case only break ties")
        let insensitive = Expression.property("name").collate(Collation.unicode().ignoreCase(true).ignoreAccents(true))
        let matches = try QueryBuilder.select(SelectResult.expression(Meta.id))
            .from(DataSource.database(database))
            .where(insensitive.equalTo(Expression.string("HOTEL DES ARTS")))
            .execute().map { $0.string(forKey: "id") }
        XCTAssertEqual(matches, ["hotel_2"])
    }

    // MARK: Parameters, array expressions, functions, meta

    func testParameters() throws {
        let query = QueryBuilder
            .select(SelectResult.expression(Meta.id))
            .from(DataSource.database(database))
            .where(Expression.property("type").equalTo(Expression.parameter("type"))
                .and(Expression.property("price").lessThan(Expression.parameter("maxPrice"))))
            .orderBy(Ordering.expression(Meta.id))
        query.parameters = Parameters().setString("hotel", forName: "type").setDouble(200, forName: "maxPrice")
        XCTAssertEqual(try query.execute().map { $0.string(forKey: "id") }, ["hotel_2", "hotel_4"])
        query.parameters = Parameters().setString("hotel", forName: "type").setInt(1000, forName: "maxPrice")
        XCTAssertEqual(try query.execute().allResults().count, 5)
    }

    func testArrayExpressions() throws {
        let like = ArrayExpression.variable("like")
        func hotels(_ condition: ExpressionProtocol) throws -> [String] {
            try QueryBuilder.select(SelectResult.expression(Meta.id))
                .from(DataSource.database(database))
                .where(Expression.property("type").equalTo(Expression.string("hotel")).and(condition))
                .orderBy(Ordering.expression(Meta.id))
                .execute().compactMap { $0.string(forKey: "id") }
        }
        let likes = Expression.property("public_likes")
        XCTAssertEqual(database.document(withID: "hotel_2")?.array(forKey: "public_likes")?.count, 0,
                       "an empty array is saved as an array")
        XCTAssertEqual(try hotels(ArrayExpression.any(like).in(likes).satisfies(like.equalTo(Expression.string("Sam")))),
                       ["hotel_1", "hotel_3"])
        XCTAssertEqual(try hotels(ArrayExpression.every(like).in(likes).satisfies(like.like(Expression.string("A%")))),
                       ["hotel_2", "hotel_4", "hotel_5"], "EVERY holds for an empty array")
        XCTAssertEqual(try hotels(ArrayExpression.anyAndEvery(like).in(likes).satisfies(like.like(Expression.string("A%")))),
                       ["hotel_4", "hotel_5"])
        XCTAssertEqual(try hotels(ArrayFunction.length(likes).greaterThanOrEqualTo(Expression.int(2))), ["hotel_1", "hotel_3"])
    }

    func testOperatorsAndFunctions() throws {
        let price = Expression.property("price")
        let query = QueryBuilder
            .select(SelectResult.expression(Meta.id),
                    SelectResult.expression(price.multiply(Expression.int(2)).add(Expression.int(1))).as("calc"),
                    SelectResult.expression(Function.round(price.divide(Expression.double(3)), digits: Expression.int(1))).as("third"),
                    SelectResult.expression(price.modulo(Expression.int(7))).as("mod"),
                    SelectResult.expression(Function.abs(Expression.int(10).subtract(price))).as("abs"),
                    SelectResult.expression(Function.upper(Expression.property("city"))).as("city"),
                    SelectResult.expression(Function.trim(Expression.property("email"))).as("email"),
                    SelectResult.expression(Function.length(Expression.property("name"))).as("len"))
            .from(DataSource.database(database))
            .where(Expression.property("type").equalTo(Expression.string("hotel"))
                .and(price.between(Expression.int(100), and: Expression.int(500))))
            .orderBy(Ordering.expression(Meta.id))
        let rows = try query.execute().allResults()
        XCTAssertEqual(rows.map { $0.string(forKey: "id") }, ["hotel_2", "hotel_5"])
        XCTAssertEqual(rows.map { $0.double(forKey: "calc") }, [301, 441])
        XCTAssertEqual(rows.map { $0.double(forKey: "third") }, [50, 73.3])
        XCTAssertEqual(rows.map { $0.double(forKey: "mod") }, [3, 3])
        XCTAssertEqual(rows.map { $0.double(forKey: "abs") }, [140, 210])
        XCTAssertEqual(rows.map { $0.string(forKey: "city") }, ["PARIS", "SAN FRANCISCO"])
        XCTAssertEqual(rows.map { $0.string(forKey: "email") }, ["hôtel des arts@example.com", nil])
        XCTAssertEqual(rows.map { $0.int(forKey: "len") }, [14, 9])

        func ids(_ condition: ExpressionProtocol) throws -> [String] {
            try QueryBuilder.select(SelectResult.expression(Meta.id)).from(DataSource.database(database))
                .where(Expression.property("type").equalTo(Expression.string("airline")).and(condition))
                .orderBy(Ordering.expression(Meta.id)).execute().compactMap { $0.string(forKey: "id") }
        }
        XCTAssertEqual(try ids(Expression.property("iata").isNotValued()), ["airline_10226"])
        XCTAssertEqual(try ids(Expression.property("iata").isValued()), ["airline_10", "airline_1191", "airline_137", "airline_5209"])
        XCTAssertEqual(try ids(Expression.property("iata").is(Expression.value(nil))), ["airline_10226"])
        XCTAssertEqual(try ids(Expression.not(Expression.property("country").equalTo(Expression.string("France")))
            .and(Expression.property("iata").isNot(Expression.value(nil)))), ["airline_10", "airline_5209"])
        XCTAssertEqual(try ids(Expression.property("country").equalTo(Expression.string("France"))
            .or(Expression.property("name").like(Expression.string("A%")))), ["airline_10226", "airline_1191", "airline_137"])
        XCTAssertEqual(try ids(Expression.negated(Expression.property("name")).isValued()).count, 5, "SQLite: -'text' is 0")
        XCTAssertEqual(try ids(Expression.negated(Expression.int(2)).lessThan(Expression.int(-1))).count, 5)
    }

    func testMetaProperties() throws {
        let doc = try XCTUnwrap(database.document(withID: "hotel_1"))
        let query = QueryBuilder
            .select(SelectResult.expression(Meta.id), SelectResult.expression(Meta.sequence),
                    SelectResult.expression(Meta.revisionID), SelectResult.expression(Meta.expiration))
            .from(DataSource.database(database))
            .where(Meta.id.equalTo(Expression.string("hotel_1")))
        let row = try XCTUnwrap(query.execute().allResults().first)
        XCTAssertEqual(row.keyNames, ["id", "sequence", "revisionID", "expiration"])
        XCTAssertEqual(row.int64(forKey: "sequence"), Int64(doc.sequence))
        XCTAssertEqual(row.string(forKey: "revisionID"), doc.revisionID)
        XCTAssertNil(row.value(forKey: "expiration"), "no expiration set (the file had no expiration column)")

        try database.deleteDocument(doc)
        let deleted = QueryBuilder.select(SelectResult.expression(Meta.id))
            .from(DataSource.database(database))
            .where(Meta.deleted.equalTo(Expression.boolean(true)))
        XCTAssertEqual(try deleted.execute().map { $0.string(forKey: "id") }, ["hotel_1"])
    }

    func testExpirationIsQueryable() throws {
        let expires = Date(timeIntervalSince1970: 4_000_000_000)
        try database.setDocumentExpiration(withID: "hotel_3", expiration: expires)
        let query = QueryBuilder
            .select(SelectResult.expression(Meta.id), SelectResult.expression(Meta.expiration))
            .from(DataSource.database(database))
            .where(Meta.expiration.isValued())
        let rows = try query.execute().allResults()
        XCTAssertEqual(rows.map { $0.string(forKey: "id") }, ["hotel_3"])
        XCTAssertEqual(rows.first?.int64(forKey: "expiration"), 4_000_000_000_000)
        let n1ql = try database.createQuery("SELECT meta().id FROM _ WHERE meta().expiration IS VALUED").execute()
        XCTAssertEqual(n1ql.map { $0.string(forKey: "id") }, ["hotel_3"])
    }

    func testLiteralsAndWholeDocumentsOfJoinedSources() throws {
        let opened = Date(timeIntervalSince1970: 1_500_000_000)
        try database.saveDocument(MutableDocument(id: "hotel_9").setString("hotel", forKey: "type")
            .setString("New Inn", forKey: "name").setDate(opened, forKey: "opened"))
        let byDate = QueryBuilder.select(SelectResult.expression(Meta.id))
            .from(DataSource.database(database))
            .where(Expression.property("opened").equalTo(Expression.date(opened)))
        XCTAssertEqual(try byDate.execute().map { $0.string(forKey: "id") }, ["hotel_9"])

        let literals = QueryBuilder
            .select(SelectResult.expression(Expression.array([1, "two", Expression.property("name") as Any])).as("a"),
                    SelectResult.expression(Expression.dictionary(["n": Expression.property("name") as Any, "x": Optional<Any>.none as Any])).as("d"),
                    SelectResult.expression(Expression.value(nil)).as("null"),
                    SelectResult.expression(Expression.boolean(true)).as("t"))
            .from(DataSource.database(database))
            .where(Meta.id.equalTo(Expression.string("hotel_9")))
        let row = try XCTUnwrap(literals.execute().allResults().first)
        XCTAssertEqual(QueryTestSupport.canonical(row.toDictionary()),
                       QueryTestSupport.canonical(["a": [1, "two", "New Inn"], "d": ["n": "New Inn", "x": NSNull()],
                                                   "null": NSNull(), "t": true] as [String: Any]))

        let pairs = QueryBuilder
            .select(SelectResult.all().from("route"), SelectResult.all().from("airline"))
            .from(DataSource.database(database).as("route"))
            .join(Join.innerJoin(DataSource.database(database).as("airline"))
                .on(Meta.id.from("airline").equalTo(Expression.property("airlineid").from("route"))))
            .where(Meta.id.from("route").equalTo(Expression.string("route_3")))
        let pair = try XCTUnwrap(pairs.execute().allResults().first)
        XCTAssertEqual(pair.keyNames, ["route", "airline"])
        XCTAssertEqual(pair.dictionary(forKey: "route")?.string(forKey: "destinationairport"), "JFK")
        XCTAssertEqual(pair.dictionary(forKey: "airline")?.string(forKey: "name"), "Air France")
    }

    func testExplainAndJSONTree() throws {
        let query = QueryBuilder
            .select(SelectResult.expression(Meta.id), SelectResult.property("name").as("n"))
            .from(DataSource.database(database).as("h"))
            .where(Expression.property("type").from("h").equalTo(Expression.string("hotel"))
                .and(Expression.property("name").like(Expression.parameter("p")).collate(Collation.unicode().ignoreCase(true))))
            .orderBy(Ordering.property("price").descending())
            .limit(Expression.int(3))
        let expected: [String: Any] = [
            "WHAT": [["._id"], ["AS", [".name"], "n"]],
            "FROM": [["AS": "h"]],
            "WHERE": ["AND", ["=", [".h.type"], "hotel"],
                      ["COLLATE", ["UNICODE": true, "CASE": false, "DIAC": true], ["LIKE", [".name"], ["$p"]]]],
            "ORDER_BY": [["DESC", [".price"]]],
            "LIMIT": 3,
        ]
        XCTAssertEqual(QueryTestSupport.canonical(query.tree.foundation), QueryTestSupport.canonical(expected))
        let plan = try query.explain()
        XCTAssertTrue(plan.hasPrefix("SELECT"), plan)
        XCTAssertTrue(plan.contains("LIMIT"), plan)
        query.parameters = Parameters().setString("the%", forName: "p")
        XCTAssertEqual(try query.execute().map { $0.string(forKey: "n") }, ["The Savoy"])
    }

    func testBadQueryFailsAtExecuteNotAtBuild() throws {
        let query = QueryBuilder.select(SelectResult.expression(Meta.id))
            .from(DataSource.database(database))
            .where(Function.count(Expression.all()).greaterThan(Expression.int(1)))
        XCTAssertThrowsError(try query.execute())
        XCTAssertThrowsError(try query.explain())
    }

    // MARK: The SQL++ (N1QL) string examples of the same documentation pages

    private func rows(_ n1ql: String, _ parameters: Parameters? = nil) throws -> [[String: Any]] {
        let query = try database.createQuery(n1ql)
        if let parameters { query.parameters = parameters }
        return try query.execute().allResults().map { $0.toDictionary() }
    }

    func testSQLPlusPlusSelectWhereOrderLimit() throws {
        let r = try rows(#"SELECT META().id AS id, name FROM _ WHERE type = "airline" AND country = "France" ORDER BY name LIMIT 10"#)
        XCTAssertEqual(r.map { $0["id"] as? String }, ["airline_1191", "airline_137"])
        XCTAssertEqual(r.first?["name"] as? String, "Air Austral")
    }

    func testSQLPlusPlusGroupByWithAliasedCountInOrderBy() throws {
        let r = try rows("SELECT COUNT(*) AS cnt, country FROM _ WHERE type = 'airline' GROUP BY country ORDER BY cnt DESC, country")
        XCTAssertEqual(r.map { $0["country"] as? String }, ["United States", "France"])
        XCTAssertEqual(r.map { $0["cnt"] as? Int }, [3, 2])
    }

    func testSQLPlusPlusJoin() throws {
        let r = try rows("""
            SELECT airline.name, route.destinationairport FROM _ AS airline
            JOIN _ AS route ON META(airline).id = route.airlineid
            WHERE route.type = 'route' AND airline.type = 'airline' ORDER BY route.destinationairport
            """)
        XCTAssertEqual(r.map { $0["destinationairport"] as? String }, ["CDG", "JFK", "SFO"])
        XCTAssertEqual(r.map { $0["name"] as? String }, ["Air France", "Air France", "United Airlines"])
    }

    func testSQLPlusPlusLikeParametersAndMissing() throws {
        XCTAssertEqual(try rows("SELECT name FROM _ WHERE type = 'airline' AND name LIKE 'Air%' ORDER BY name").map { $0["name"] as? String },
                       ["Air Austral", "Air France"])
        let p = Parameters().setString("France", forName: "country")
        XCTAssertEqual(try rows("SELECT airportname FROM _ WHERE type = 'airport' AND country = $country ORDER BY airportname", p)
                        .map { $0["airportname"] as? String }, ["Chambery", "Courchevel"])
        XCTAssertEqual(try rows("SELECT META().id AS id FROM _ WHERE type = 'airline' AND iata IS NULL").map { $0["id"] as? String },
                       ["airline_10226"])
        XCTAssertEqual(try rows("SELECT META().id AS id FROM _ WHERE type = 'hotel' AND email IS MISSING").map { $0["id"] as? String },
                       ["hotel_5"])
    }

    func testSQLPlusPlusArrayOperatorsAndFunctions() throws {
        let r = try rows("""
            SELECT name, ARRAY_LENGTH(public_likes) AS likes FROM _ WHERE type = 'hotel'
            AND ANY who IN public_likes SATISFIES who = 'Sam' END ORDER BY likes DESC
            """)
        XCTAssertEqual(r.map { $0["name"] as? String }, ["The Savoy", "Hotel Ritz"])
        let upper = try rows("SELECT UPPER(city) AS city, ROUND(AVG(price), 1) AS avg FROM _ WHERE type = 'hotel' GROUP BY city ORDER BY city")
        XCTAssertEqual(upper.map { $0["city"] as? String }, ["LONDON", "PARIS", "SAN FRANCISCO"])
        XCTAssertEqual(upper.first?["avg"] as? Double, 290.3)
    }
}
