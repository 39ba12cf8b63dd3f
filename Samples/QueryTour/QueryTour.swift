import CouchbaseLiteSwift
import Foundation

/// QueryTour: the 2.x query API over data converted from 1.x.
///
///     swift run QueryTour [DIRECTORY]
///
/// Writes a small 1.x contacts database, converts it to the 2.x format, opens it with the 2.x API
/// and queries it: a N1QL string with parameters, the same kind of query built with QueryBuilder,
/// an aggregate with GROUP BY, a value index and `explain()` showing SQLite uses it, and a live
/// query whose listener fires after a save. Works in a temporary directory that it deletes,
/// unless given a directory (which then keeps both databases).
@main
enum QueryTour {
    static func main() {
        do {
            try Tour(arguments: Array(CommandLine.arguments.dropFirst())).run()
        } catch {
            FileHandle.standardError.write(Data("QueryTour: error: \(error)\n".utf8))
            exit(1)
        }
    }
}

final class Tour {
    private let directory: URL
    private let isTemporary: Bool

    init(arguments: [String]) throws {
        if let path = arguments.first {
            directory = URL(fileURLWithPath: path, isDirectory: true)
            isTemporary = false
            let existing = directory.appendingPathComponent("\(ContactsDatabase.name).cblite2").path
            if FileManager.default.fileExists(atPath: existing) {
                throw SampleError("\(existing) exists already; give a new or empty directory")
            }
        } else {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("QueryTour-\(UUID().uuidString)", isDirectory: true)
            isTemporary = true
        }
    }

    func run() throws {
        defer { if isTemporary { try? FileManager.default.removeItem(at: directory) } }

        // 0. Converted data: a 1.x database, upgraded to the 2.x format, opened with the 2.x API.
        let (legacy, _, report) = try ContactsDatabase.createAndUpgrade(in: directory)
        print("converted the 1.x database \(legacy.lastPathComponent): \(report.documentsConverted) documents, \(report.attachmentsCopied) attachment(s)")
        let database = try Database(name: ContactsDatabase.name, config: DatabaseConfiguration(directory: directory.path))
        defer { try? database.close() }
        print("opened it with the 2.x API: \(database.count) documents")
        if let avatar = database.document(withID: "user-ana")?.dictionary(forKey: "_attachments")?.blob(forKey: "avatar") {
            print("user-ana's 1.x attachment is a 2.x blob: \(avatar.contentType ?? "?"), \(avatar.length) bytes")
        }

        // 1. A N1QL string with parameters: `$city` and `$minAge` are bound before each run.
        let adults = try database.createQuery("""
            SELECT meta().id AS id, name, age FROM _
            WHERE type = 'user' AND city = $city AND age >= $minAge
            ORDER BY age DESC
            """)
        adults.parameters = Parameters().setString("Lyon", forName: "city").setInt(30, forName: "minAge")
        print("\n1. N1QL with parameters (city = Lyon, minAge = 30):")
        for row in try adults.execute() {
            print("   \(row.string(forKey: "id") ?? "?")  \(row.string(forKey: "name") ?? "?"), \(row.int(forKey: "age"))")
        }

        // 2. QueryBuilder: the same language as Swift expressions; ordered by name.
        let users = QueryBuilder
            .select(SelectResult.expression(Meta.id), SelectResult.property("name"))
            .from(DataSource.database(database))
            .where(Expression.property("type").equalTo(Expression.string("user")))
            .orderBy(Ordering.property("name"))
        let names = try users.execute().map { "\($0.string(forKey: "name") ?? "?") (\($0.string(forKey: "id") ?? "?"))" }
        print("\n2. QueryBuilder, users by name:\n   " + names.joined(separator: ", "))

        // 3. An aggregate: users and average age per city, largest city first.
        let perCity = QueryBuilder
            .select(SelectResult.property("city"),
                    SelectResult.expression(Function.count(Expression.all())).as("users"),
                    SelectResult.expression(Function.avg(Expression.property("age"))).as("averageAge"))
            .from(DataSource.database(database))
            .where(Expression.property("type").equalTo(Expression.string("user")))
            .groupBy(Expression.property("city"))
            .orderBy(Ordering.expression(Function.count(Expression.all())).descending(), Ordering.property("city"))
        print("\n3. GROUP BY city:")
        for row in try perCity.execute() {
            let count = row.int(forKey: "users")
            print("   \(row.string(forKey: "city") ?? "?"): \(count) user\(count == 1 ? "" : "s"), average age \(String(format: "%.1f", row.double(forKey: "averageAge")))")
        }

        // 4. A value index, and explain() showing that SQLite's plan uses it.
        let byCity = try database.createQuery("SELECT meta().id AS id, name FROM _ WHERE type = 'user' AND city = $city")
        print("\n4. A value index for: SELECT meta().id AS id, name FROM _ WHERE type = 'user' AND city = $city")
        print("   plan before: " + Self.plan(try byCity.explain()))
        try database.createIndex(ValueIndexConfiguration(["type", "city"]), name: "idx_user_city")
        print("   createIndex(ValueIndexConfiguration([\"type\", \"city\"]), name: \"idx_user_city\")")
        let plan = Self.plan(try byCity.explain())
        print("   plan after:  " + plan)
        guard plan.contains("USING INDEX idx_user_city") || plan.contains("USING COVERING INDEX idx_user_city") else {
            throw SampleError("the query does not use the index:\n\(try byCity.explain())")
        }

        // 5. A live query: the listener gets the rows now, then again after each save that changes them.
        let lyon = try database.createQuery("SELECT name FROM _ WHERE type = 'user' AND city = 'Lyon' ORDER BY name")
        let changes = ChangeLog()
        print("\n5. Live query, users in Lyon:")
        let token = lyon.addChangeListener { change in
            let names = change.results?.map { $0.string(forKey: "name") ?? "?" } ?? []
            print("   listener: \(names.joined(separator: ", "))\(change.error.map { " (error: \($0))" } ?? "")")
            changes.append(names)
        }
        defer { lyon.removeChangeListener(withToken: token) }
        try changes.wait(for: "the first results") { $0.count >= 1 }

        let newcomer = MutableDocument(id: "user-hugo")
            .setString("user", forKey: "type").setString("Hugo", forKey: "name")
            .setInt(38, forKey: "age").setString("Lyon", forKey: "city")
        print("   saving user-hugo (Hugo, Lyon)")
        try database.saveDocument(newcomer)
        try changes.wait(for: "Hugo") { $0.last?.contains("Hugo") == true }
        print("\ndone")
    }

    /// The plan lines of `explain()` (after the SQL and a blank line), joined.
    private static func plan(_ explanation: String) -> String {
        let parts = explanation.components(separatedBy: "\n\n")
        let lines = (parts.count > 1 ? parts[1] : explanation).split(separator: "\n")
        return lines.map { $0.split(separator: "|", maxSplits: 3).last.map(String.init) ?? String($0) }.joined(separator: "; ")
    }
}

/// What a query listener reported, in order; the tour waits (bounded) for a result to arrive.
final class ChangeLog: @unchecked Sendable {
    private let condition = NSCondition()
    private var results: [[String]] = []

    func append(_ names: [String]) {
        condition.lock()
        results.append(names)
        condition.broadcast()
        condition.unlock()
    }

    func wait(for what: String, timeout: TimeInterval = 10, until satisfied: ([[String]]) -> Bool) throws {
        let deadline = Date().addingTimeInterval(timeout)
        condition.lock()
        defer { condition.unlock() }
        while !satisfied(results) {
            guard condition.wait(until: deadline) else {
                throw SampleError("the live query did not report \(what) within \(Int(timeout)) s")
            }
        }
    }
}

/// A failure the sample reports (exit status 1).
struct SampleError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
