// 2.x query benchmark (`--only query2x`): N1QL queries through the `CouchbaseLiteSwift` API on
// names-like documents written through the 1.x API and converted by the upgrader, against the same
// questions asked of SQLite directly with its own JSON functions (`json_extract`) on a JSON copy of
// the same documents (`docs(id TEXT PRIMARY KEY, json TEXT)` with the equivalent expression
// indexes), in the same run. Also `saveDocument` ×N in one `inBatch` against the 1.x bulk insert.
//
// Every timed sample runs the baseline and the library back to back (alternating which goes
// first); a row's ratio is the median of the per-round ratios, its times the medians of each side.

import CouchbaseLite
import CouchbaseLiteSwift
import CouchbaseLiteUpgrade
import Foundation
import JSONCore
import SQLiteKit
import CBLTestSupport

// MARK: Data set

/// Names-like documents (the shape of fixtures/cbl2/query_data/names_100.json), generated from a
/// seed: `name {first,last}`, `gender`, `birthday`, `contact {address {street,zip,city,state},
/// email[], region, phone[]}`, `likes[]`, `memberSince`. The first e-mail address is unique (it
/// carries the document's number), so looking it up is a point lookup.
struct NamesCorpus {
    let ids: [String]
    let properties: [[String: Any]]
    /// The documents as JSON text (for the SQLite baseline).
    let json: [[UInt8]]
    let emails: [String]
    let birthdays: [String]
    let cities: [String]

    static let femaleFirst = ["Lue", "Kandra", "Mary", "Patricia", "Linda", "Barbara", "Elizabeth", "Jennifer", "Maria",
                              "Susan", "Margaret", "Dorothy", "Lisa", "Nancy", "Karen", "Betty", "Helen", "Sandra",
                              "Donna", "Carol", "Ruth", "Sharon", "Michelle", "Laura", "Sarah", "Kimberly", "Deborah",
                              "Jessica", "Shirley", "Cynthia", "Angela", "Melissa", "Brenda", "Amy", "Anna", "Rebecca"]
    static let maleFirst = ["Jasper", "Jeff", "Tuan", "James", "John", "Robert", "Michael", "William", "David", "Richard",
                            "Charles", "Joseph", "Thomas", "Christopher", "Daniel", "Paul", "Mark", "Donald", "George",
                            "Kenneth", "Steven", "Edward", "Brian", "Ronald", "Anthony", "Kevin", "Jason", "Matthew",
                            "Gary", "Timothy", "Jose", "Larry", "Jeffrey", "Frank", "Scott", "Eric"]
    static let lastStems = ["Las", "Gre", "Beich", "Schm", "Cli", "Mor", "Hal", "Ken", "Wil", "Bar", "Dun", "Fel", "Gar",
                            "Hol", "Kes", "Lin", "Mar", "Nor", "Pel", "Ros", "Sal", "Tam", "Ver", "Wal", "Yor", "Zel",
                            "Ash", "Bro", "Car", "Del"]
    static let lastEnds = ["erna", "bel", "ner", "ith", "mer", "ton", "ley", "son", "ford", "man", "ridge", "well",
                           "ing", "sky", "ello", "berg", "stein", "ez", "ini", "ova", "ard", "worth", "wick", "field",
                           "more", "ston", "by", "ham", "ler", "ick"]
    /// (city, state, zip prefix, phone region)
    static let places: [(String, String, String, String)] = [
        ("San Pedro", "CA", "907", "310"), ("Burns", "KS", "668", "316"), ("Tacoma", "WA", "984", "253"),
        ("Poughkeepsie", "AR", "725", "870"), ("Bedminster", "NJ", "079", "908"), ("Austin", "TX", "787", "512"),
        ("Denver", "CO", "802", "303"), ("Boise", "ID", "837", "208"), ("Portland", "OR", "972", "503"),
        ("Reno", "NV", "895", "775"), ("Tulsa", "OK", "741", "918"), ("Omaha", "NE", "681", "402"),
        ("Madison", "WI", "537", "608"), ("Duluth", "MN", "558", "218"), ("Peoria", "IL", "616", "309"),
        ("Dayton", "OH", "454", "937"), ("Erie", "PA", "165", "814"), ("Albany", "NY", "122", "518"),
        ("Hartford", "CT", "061", "860"), ("Bangor", "ME", "044", "207"), ("Durham", "NC", "277", "919"),
        ("Macon", "GA", "312", "478"), ("Tampa", "FL", "336", "813"), ("Mobile", "AL", "366", "251"),
        ("Jackson", "MS", "392", "601"), ("Shreveport", "LA", "711", "318"), ("Memphis", "TN", "381", "901"),
        ("Lexington", "KY", "405", "859"), ("Richmond", "VA", "232", "804"), ("Wheeling", "WV", "260", "304"),
        ("Fargo", "ND", "581", "701"), ("Billings", "MT", "591", "406"), ("Casper", "WY", "826", "307"),
        ("Provo", "UT", "846", "801"), ("Tucson", "AZ", "857", "520"), ("Santa Fe", "NM", "875", "505"),
        ("Anchorage", "AK", "995", "907"), ("Hilo", "HI", "967", "808"), ("Sioux Falls", "SD", "571", "605"),
        ("Des Moines", "IA", "503", "515"), ("Fresno", "CA", "937", "559"), ("Spokane", "WA", "992", "509"),
    ]
    static let streets = ["Deer Loop", "Florida Loop", "John Run", "198th St", "Kansas St", "Oak Ave", "Main St",
                          "Elm Ct", "Pine Rd", "Cedar Ln", "Lake Dr", "Hill Way"]
    static let hobbies = ["chatting", "boxing", "reading", "swimming", "shopping", "running", "driving", "snowboarding",
                          "ironing", "skiing", "travelling", "checkers"]

    init(count: Int, seed: UInt64) {
        var rng = SplitMix64(seed: seed)
        func pick<T>(_ a: [T]) -> T { a[Int(rng.next() % UInt64(a.count))] }
        func digits(_ n: Int) -> String {
            var s = ""
            for _ in 0..<n { s.append(Character(Unicode.Scalar(UInt8(48 + rng.next() % 10)))) }
            return s
        }
        func date(_ fromYear: Int, _ years: Int) -> String {
            String(format: "%04d-%02d-%02d", fromYear + Int(rng.next() % UInt64(years)),
                   1 + Int(rng.next() % 12), 1 + Int(rng.next() % 28))
        }
        var ids = [String](), props = [[String: Any]](), json = [[UInt8]](), emails = [String](), birthdays = [String]()
        var cities = [String]()
        for i in 0..<count {
            let female = rng.next() % 2 == 0
            let first = pick(female ? Self.femaleFirst : Self.maleFirst)
            let last = pick(Self.lastStems) + pick(Self.lastEnds)
            let (city, state, zip, region) = pick(Self.places)
            let email = "\(first.lowercased()).\(last.lowercased())\(i)@nosql-matters.org"
            var emailList = [email]
            if rng.next() % 2 == 0 { emailList.append("\(last.lowercased())@nosql-matters.org") }
            var phones: [String] = []
            for _ in 0..<Int(rng.next() % 3) { phones.append("\(region)-\(digits(7))") }
            var likes: [String] = []
            for _ in 0..<Int(rng.next() % 4) {
                let h = pick(Self.hobbies)
                if !likes.contains(h) { likes.append(h) }
            }
            let birthday = date(1940, 65)
            let p: [String: Any] = [
                "name": ["first": first, "last": last],
                "gender": female ? "female" : "male",
                "birthday": birthday,
                "contact": [
                    "address": ["street": "\(1 + rng.next() % 40) \(pick(Self.streets))", "zip": zip + digits(2),
                                "city": city, "state": state],
                    "email": emailList,
                    "region": region,
                    "phone": phones,
                ] as [String: Any],
                "likes": likes,
                "memberSince": date(2008, 7),
            ]
            ids.append(String(format: "person-%06d", i))
            props.append(p)
            json.append(try! JSON.canonicalData(p))
            emails.append(email)
            birthdays.append(birthday)
            cities.append(city)
        }
        self.ids = ids; self.properties = props; self.json = json; self.emails = emails
        self.birthdays = birthdays; self.cities = cities
    }

    var averageJSONSize: Double { Double(json.reduce(0) { $0 + $1.count }) / Double(max(json.count, 1)) }
}

// MARK: The four questions

/// One question, as N1QL for the library and as SQL with `json_extract` for the baseline.
struct Question2x {
    let name: String
    let n1ql: String
    let sql: String
    let parameter: String?
    /// Whether an index serves it (budget 1.5×) or it scans (2×).
    let indexed: Bool
    /// Rows are (group key, count) pairs.
    var grouped = false
}

let questions2x = [
    Question2x(name: "point lookup (indexed)",
               n1ql: "SELECT meta().id, name.first, name.last FROM _ WHERE contact.email[0] = $email",
               sql: "SELECT id, json_extract(json, '$.name.first'), json_extract(json, '$.name.last') FROM docs "
                   + "WHERE json_extract(json, '$.contact.email[0]') = ?",
               parameter: "email", indexed: true),
    Question2x(name: "range, ORDER BY, LIMIT 20",
               n1ql: "SELECT meta().id, name.last, birthday FROM _ WHERE birthday >= $from ORDER BY birthday LIMIT 20",
               sql: "SELECT id, json_extract(json, '$.name.last'), json_extract(json, '$.birthday') FROM docs "
                   + "WHERE json_extract(json, '$.birthday') >= ? ORDER BY json_extract(json, '$.birthday') LIMIT 20",
               parameter: "from", indexed: true),
    Question2x(name: "GROUP BY + count()",
               n1ql: "SELECT contact.address.state, count(*) FROM _ GROUP BY contact.address.state",
               sql: "SELECT json_extract(json, '$.contact.address.state'), count(*) FROM docs "
                   + "GROUP BY json_extract(json, '$.contact.address.state')",
               parameter: nil, indexed: true, grouped: true),
    // The same question on a property without an index: both sides scan and sort.
    Question2x(name: "GROUP BY, unindexed",
               n1ql: "SELECT contact.address.city, count(*) FROM _ GROUP BY contact.address.city",
               sql: "SELECT json_extract(json, '$.contact.address.city'), count(*) FROM docs "
                   + "GROUP BY json_extract(json, '$.contact.address.city')",
               parameter: nil, indexed: false, grouped: true),
    Question2x(name: "scan, WHERE unindexed",
               n1ql: "SELECT meta().id, name.first, name.last FROM _ WHERE contact.address.city = $city",
               sql: "SELECT id, json_extract(json, '$.name.first'), json_extract(json, '$.name.last') FROM docs "
                   + "WHERE json_extract(json, '$.contact.address.city') = ?",
               parameter: "city", indexed: false),
]

/// The indexes, as N1QL expressions for the library and as the baseline's expression indexes.
let indexes2x: [(name: String, n1ql: String, jsonPath: String)] = [
    ("email", "contact.email[0]", "$.contact.email[0]"),
    ("birthday", "birthday", "$.birthday"),
    ("state", "contact.address.state", "$.contact.address.state"),
]

// MARK: Building the databases

/// The 1.x API's bulk path: one `inTransaction`, `document(withID:)!.putProperties` per document.
func legacyBulkInsert(dir: URL, name: String, corpus: NamesCorpus) throws -> Duration {
    let manager = try CBLManager(directory: dir.path)
    defer { manager.close() }
    let db = try manager.databaseNamed(name)
    settleDisk()
    let elapsed = try timedPutProperties(db, ids: corpus.ids, properties: corpus.properties)
    guard db.documentCount == UInt(corpus.ids.count) else { throw CBLError(500, "1.x insert stored \(db.documentCount) docs") }
    try db.close()
    return elapsed
}

/// The 2.x API: one `inBatch`, a `MutableDocument` and `saveDocument` per document.
func batchSaveDocuments(dir: URL, name: String, corpus: NamesCorpus) throws -> Duration {
    let db = try CouchbaseLiteSwift.Database(name: name, config: DatabaseConfiguration(directory: dir.path))
    settleDisk()
    let elapsed = try clock.measure {
        try db.inBatch {
            for i in corpus.ids.indices {
                try db.saveDocument(MutableDocument(id: corpus.ids[i], data: corpus.properties[i]))
            }
        }
    }
    guard db.count == UInt64(corpus.ids.count) else { throw CBLError(500, "inBatch saved \(db.count) docs") }
    try db.close()
    return elapsed
}

/// The baseline file: the documents' JSON in `docs(id, json)` (doc-ID order, like the converted
/// file), WAL + synchronous=NORMAL like the library's files, and the expression indexes.
func buildJSONBaseline(path: String, corpus: NamesCorpus) throws {
    let c = try SQLiteConnection(path: path, mode: .init(readOnly: false, create: true))
    defer { c.close() }
    try c.execute("PRAGMA journal_mode=WAL")
    try c.execute("PRAGMA synchronous=NORMAL")
    try c.execute("CREATE TABLE docs (id TEXT PRIMARY KEY, json TEXT)")
    let insert = try c.prepare("INSERT INTO docs (id, json) VALUES (?, ?)")
    try c.execute("BEGIN")
    for i in corpus.ids.indices.sorted(by: { corpus.ids[$0] < corpus.ids[$1] }) {
        try insert.bind(corpus.ids[i], at: 1)
        try insert.bindText(corpus.json[i], at: 2)
        _ = try insert.step()
        insert.reset()
    }
    try c.execute("COMMIT")
    for index in indexes2x {
        try c.execute("CREATE INDEX docs_\(index.name) ON docs (json_extract(json, '\(index.jsonPath)'))")
    }
    try c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
}

// MARK: Running the questions

/// The parameter values of one sample: `count` executions of question `q`.
func questionArguments(_ q: Question2x, corpus: NamesCorpus, count: Int, seed: UInt64) -> [String] {
    var rng = SplitMix64(seed: seed)
    let n = corpus.ids.count
    switch q.parameter {
    case "email": return (0..<count).map { _ in corpus.emails[Int(rng.next() % UInt64(n))] }
    case "from": return (0..<count).map { _ in corpus.birthdays[Int(rng.next() % UInt64(n))] }
    case "city": return (0..<count).map { _ in corpus.cities[Int(rng.next() % UInt64(n))] }
    default: return Array(repeating: "", count: count)
    }
}

/// What a sample read: rows and a checksum of the values both sides must agree on.
struct QuestionCheck: Equatable {
    var rows = 0
    var sum = 0
}

/// The page cache and memory map the library's connections use (LiteCore's settings): the
/// baseline connection gets the same, so the ratios compare query work, not I/O settings.
let connectionSettings2x = "PRAGMA cache_size=-10240; PRAGMA mmap_size=52428800"

/// What no query on LiteCore's 2.x schema can avoid for a GROUP BY over every live document
/// served by an index: the index in key order plus a look-up of each row's `flags` (deleted
/// documents stay in `kv_default` and value indexes cover them too), here as plain SQL on the
/// converted file. The baseline's `docs` table has no such column: its index alone answers.
func groupByFloor(bundle: URL, runs: Int) throws -> Duration {
    let c = try SQLiteConnection(path: bundle.appendingPathComponent("db.sqlite3").path, mode: .init(readOnly: true))
    defer { c.close() }
    try c.execute(connectionSettings2x)
    let stmt = try c.prepare("SELECT count(*) FROM kv_default INDEXED BY state WHERE (flags & 1 = 0)")
    return try clock.measure {
        for _ in 0..<runs {
            while try stmt.step() { require(stmt.int64(0) > 0, "empty kv_default") }
            stmt.reset()
        }
    }
}

/// Baseline: one prepared statement, re-bound and stepped per execution; every column read.
final class BaselineQuestions {
    let connection: SQLiteConnection
    let statements: [SQLiteStatement]

    init(path: String) throws {
        let c = try SQLiteConnection(path: path, mode: .init(readOnly: false, create: false))
        try c.execute("PRAGMA journal_mode=WAL")
        try c.execute("PRAGMA synchronous=NORMAL")
        try c.execute(connectionSettings2x)
        connection = c
        statements = try questions2x.map { try c.prepare($0.sql) }
    }

    func run(_ i: Int, _ arguments: [String]) throws -> (Duration, QuestionCheck) {
        let stmt = statements[i]
        let grouped = questions2x[i].grouped
        let columns = Int32(grouped ? 2 : 3)
        var check = QuestionCheck()
        let elapsed = try clock.measure {
            for argument in arguments {
                if questions2x[i].parameter != nil { try stmt.bind(argument, at: 1) }
                while try stmt.step() {
                    check.rows += 1
                    if grouped {
                        check.sum &+= (stmt.string(0)?.utf8.count ?? 0) &* 1_000_003 &+ Int(stmt.int64(1))
                    } else {
                        for c in 0..<columns { check.sum &+= stmt.string(c)?.utf8.count ?? 0 }
                    }
                }
                stmt.reset()
            }
        }
        return (elapsed, check)
    }

    func plan(_ i: Int) throws -> String {
        let stmt = try connection.prepare("EXPLAIN QUERY PLAN " + questions2x[i].sql)
        var out: [String] = []
        while try stmt.step() { out.append(stmt.string(3) ?? "") }
        return out.joined(separator: "; ")
    }

    func close() { connection.close() }
}

/// The library: one `Query` per question, created once; per execution new `Parameters` and
/// `execute()`, every column of every row read through `Result`.
final class LibraryQuestions {
    let database: CouchbaseLiteSwift.Database
    let queries: [CouchbaseLiteSwift.Query]

    init(directory: URL, name: String) throws {
        let db = try CouchbaseLiteSwift.Database(name: name, config: DatabaseConfiguration(directory: directory.path))
        database = db
        queries = try questions2x.map { try db.createQuery($0.n1ql) }
    }

    func run(_ i: Int, _ arguments: [String]) throws -> (Duration, QuestionCheck) {
        let query = queries[i]
        let parameter = questions2x[i].parameter
        let grouped = questions2x[i].grouped
        var check = QuestionCheck()
        let elapsed = try clock.measure {
            for argument in arguments {
                if let parameter { query.parameters = Parameters().setString(argument, forName: parameter) }
                for row in try query.execute() {
                    check.rows += 1
                    if grouped {
                        check.sum &+= (row.string(at: 0)?.utf8.count ?? 0) &* 1_000_003 &+ row.int(at: 1)
                    } else {
                        for c in 0..<3 { check.sum &+= row.string(at: c)?.utf8.count ?? 0 }
                    }
                }
            }
        }
        return (elapsed, check)
    }

    func close() throws { try database.close() }
}

// MARK: The group

/// `precondition` that also says why in release builds.
func require(_ condition: Bool, _ message: @autoclosure () -> String) {
    guard !condition else { return }
    FileHandle.standardError.write(Data("query2x: \(message())\n".utf8))
    exit(1)
}

@MainActor
func runQuery2xBenchmarks(options: Options) throws -> (rows: [BenchRow], notes: [String]) {
    var rows: [BenchRow] = []
    var notes: [String] = []
    let docs = options.docs
    let corpus = NamesCorpus(count: docs, seed: options.seed &+ 200)
    print(String(format: "  query2x corpus: %d names-like docs, average JSON %.0f bytes", docs, corpus.averageJSONSize))
    print("  sample: \(String(decoding: corpus.json[0], as: UTF8.self))")

    // 1. Warm-up of both write paths on a small corpus, then the 1.x bulk insert that makes the
    //    database to convert, and the saveDocument rounds against further 1.x bulk inserts.
    let warm = NamesCorpus(count: min(2_000, docs), seed: options.seed &+ 201)
    _ = try legacyBulkInsert(dir: fresh("q2x-warm-1x"), name: "names", corpus: warm)
    _ = try batchSaveDocuments(dir: fresh("q2x-warm-2x"), name: "names", corpus: warm)

    let saveRounds = options.quick ? 1 : 3
    var legacyTimes: [Duration] = [], saveTimes: [Duration] = [], saveRatios: [Double] = []
    var legacyDir = URL(fileURLWithPath: "/")
    for round in 0..<saveRounds {
        let l = fresh("q2x-1x"), s = fresh("q2x-2x")
        let legacy: Duration, saves: Duration
        if round % 2 == 0 {
            legacy = try legacyBulkInsert(dir: l, name: "names", corpus: corpus)
            saves = try batchSaveDocuments(dir: s, name: "names", corpus: corpus)
        } else {
            saves = try batchSaveDocuments(dir: s, name: "names", corpus: corpus)
            legacy = try legacyBulkInsert(dir: l, name: "names", corpus: corpus)
        }
        legacyTimes.append(legacy); saveTimes.append(saves); saveRatios.append(seconds(saves) / seconds(legacy))
        try? FileManager.default.removeItem(at: s)
        if round > 0 { try? FileManager.default.removeItem(at: legacyDir) }
        legacyDir = l
    }

    // 2. The converted database (the upgrader's output of the 1.x file above) with the value
    //    indexes, and the JSON baseline with the equivalent expression indexes.
    let queryDir = fresh("q2x-converted")
    let report = try DatabaseUpgrader(source: legacyDir.appendingPathComponent("names.cblite2"),
                                      destination: queryDir.appendingPathComponent("names.cblite2")).run()
    require(report.documentsConverted == docs, "converted \(report.documentsConverted) of \(docs) docs")
    do {
        let db = try CouchbaseLiteSwift.Database(name: "names", config: DatabaseConfiguration(directory: queryDir.path))
        for index in indexes2x { try db.createIndex(ValueIndexConfiguration([index.n1ql]), name: index.name) }
        try db.close()
    }
    let baselinePath = fresh("q2x-json").appendingPathComponent("docs.sqlite3").path
    try buildJSONBaseline(path: baselinePath, corpus: corpus)
    notes.append(String(format: "query2x: %d docs through the 1.x API, converted by DatabaseUpgrader in %.2f s "
                        + "(%d shared keys, %.1f MiB); baseline docs(id, json) %.1f MiB, same 3 indexes as expression indexes",
                        docs, report.seconds, report.sharedKeys, Double(report.destinationBytes) / 1_048_576,
                        Double((try? FileManager.default.attributesOfItem(atPath: baselinePath)[.size] as? Int) ?? 0) / 1_048_576))

    let base = try BaselineQuestions(path: baselinePath)
    let library = try LibraryQuestions(directory: queryDir, name: "names")
    defer { base.close(); try? library.close() }

    // Both sides must use an index for the indexed questions, and no index for the scan.
    for (i, q) in questions2x.enumerated() {
        let basePlan = try base.plan(i)
        let libraryPlan = try library.queries[i].explain().components(separatedBy: "\n\n").dropFirst()
            .joined().split(separator: "\n").map { $0.split(separator: "|", maxSplits: 3).last.map(String.init) ?? "" }.joined(separator: "; ")
        if options.plans {
            notes.append("plan \(q.name): baseline: \(basePlan)")
            notes.append("plan \(q.name): library:  \(libraryPlan)")
        }
        if i < 2 {
            require(basePlan.contains("INDEX") && libraryPlan.contains("INDEX"),
                         "\(q.name) does not use the index: \(basePlan) / \(libraryPlan)")
        }
    }

    // 3. Paired rounds: in each, every question is timed on both sides back to back.
    let executions = options.quick ? [2_000, 1_000, 2, 2, 2] : [20_000, 5_000, 3, 3, 3]
    let rounds = options.quick ? 3 : 7
    for (i, q) in questions2x.enumerated() {   // warm-up (caches, code paths) and a result check
        let args = questionArguments(q, corpus: corpus, count: max(1, executions[i] / 10), seed: options.seed &+ 300)
        let (_, b) = try base.run(i, args)
        let (_, l) = try library.run(i, args)
        require(b == l && b.rows > 0, "\(q.name): baseline read \(b), library read \(l)")
    }
    var times = Array(repeating: (base: [Duration](), library: [Duration](), ratios: [Double]()), count: questions2x.count)
    var rowsRead = Array(repeating: 0, count: questions2x.count)
    var floorTimes: [Duration] = [], floorRatios: [Double] = []
    for round in 0..<rounds {
        for (i, q) in questions2x.enumerated() {
            let args = questionArguments(q, corpus: corpus, count: executions[i], seed: options.seed &+ 400 &+ UInt64(round * 10 + i))
            let b: (Duration, QuestionCheck), l: (Duration, QuestionCheck)
            if round % 2 == 0 {
                b = try base.run(i, args); l = try library.run(i, args)
            } else {
                l = try library.run(i, args); b = try base.run(i, args)
            }
            require(b.1 == l.1, "\(q.name): baseline read \(b.1), library read \(l.1)")
            rowsRead[i] = b.1.rows
            times[i].base.append(b.0); times[i].library.append(l.0); times[i].ratios.append(seconds(l.0) / seconds(b.0))
            if i == 2 {
                let floor = try groupByFloor(bundle: queryDir.appendingPathComponent("names.cblite2"), runs: executions[i])
                floorTimes.append(floor); floorRatios.append(seconds(floor) / seconds(b.0))
            }
        }
    }
    for (i, q) in questions2x.enumerated() {
        rows.append(BenchRow(name: q.name, base: median(times[i].base), api: median(times[i].library),
                             budget: q.indexed ? 1.5 : 2.0, ops: executions[i], pairedRatio: median(times[i].ratios)))
        notes.append("query2x \(q.name): \(executions[i]) executions per sample, \(rowsRead[i]) rows; library/baseline per round: "
                     + times[i].ratios.map { fmt($0, 2) }.joined(separator: " "))
    }
    rows.append(BenchRow(name: "GROUP BY floor (info)", base: median(times[2].base), api: median(floorTimes),
                         budget: nil, ops: executions[2], pairedRatio: median(floorRatios)))
    notes.append("query2x GROUP BY floor: plain SQL on the converted file walking the state index and reading each row's "
                 + "flags (what LiteCore's schema needs to skip deleted docs), vs the baseline; per round: "
                 + floorRatios.map { fmt($0, 2) }.joined(separator: " "))
    rows.append(BenchRow(name: "saveDocument inBatch (info)", base: median(legacyTimes), api: median(saveTimes),
                         budget: nil, ops: docs, pairedRatio: median(saveRatios)))
    notes.append("query2x saves: \(docs) saveDocument calls in one inBatch vs the 1.x bulk insert (inTransaction + putProperties) "
                 + "of the same documents; per round: " + saveRatios.map { fmt($0, 2) }.joined(separator: " "))
    notes.append("query2x: N1QL \"" + questions2x.map(\.n1ql).joined(separator: "\" / \"") + "\"")
    return (rows, notes)
}
