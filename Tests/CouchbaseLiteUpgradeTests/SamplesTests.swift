import CBLTestSupport
import Foundation
import XCTest

/// The samples (`Samples/NAME`, `swift run NAME`): each built executable runs to completion
/// (bounded), exits 0 and prints what it did. Skipped when the samples are not built.
final class SamplesTests: XCTestCase {
    private var scratch: Scratch!

    override func setUp() { scratch = Scratch() }
    override func tearDown() { scratch = nil }

    func testTodoLite() throws {
        let run = try runSample("TodoLite")
        XCTAssertEqual(run.status, 0, run.all)
        for line in ["created 2 lists and 5 tasks: 7 documents",
                     "  Chores: 3 tasks, 3 open",
                     "  Groceries: 2 tasks, 2 open",
                     "live query: Groceries: [ ] Milk, [ ] Eggs",
                     "live query: Groceries: [x] Milk, [ ] Eggs, [ ] Bread",
                     "live query: Groceries: [x] Milk, [ ] Eggs, [ ] Bread (photo)",
                     "Bread's attachment 'image': image/png, 70 bytes, sha1-",
                     "push: 8 changes sent; app 8 documents, server 8",
                     "live query: Groceries: [x] Milk, [ ] Eggs, [ ] Bread (photo), [ ] Coffee",
                     "both databases have 9 documents; the server's Bread has its 70-byte image",
                     "  Groceries: 4 tasks, 3 open",
                     "done"] {
            XCTAssertTrue(run.lines.contains { $0.hasPrefix(line) }, "no line '\(line)' in:\n\(run.all)")
        }
        XCTAssertNotNil(run.stdout.range(of: #"listener: serving the server's databases at http://127\.0\.0\.1:\d+/"#,
                                         options: .regularExpression), run.stdout)
        XCTAssertNotNil(run.stdout.range(of: #"pull: \d+ changes checked, 1 new; app 9 documents, server 9"#,
                                         options: .regularExpression), run.stdout)
        // Its temporary directory is gone.
        let workLine = try XCTUnwrap(run.lines.first { $0.hasPrefix("TodoLite: working in ") })
        XCTAssertFalse(FileManager.default.fileExists(atPath: String(workLine.dropFirst("TodoLite: working in ".count))))
    }

    /// Given a directory, TodoLite keeps both databases there, and MigrateAndCompare reads the
    /// app's one as a real 1.x database.
    func testTodoLiteDatabaseThroughMigrateAndCompare() throws {
        let directory = scratch.path("todo")
        let todo = try runSample("TodoLite", [directory.path])
        XCTAssertEqual(todo.status, 0, todo.all)
        let appDatabase = directory.appendingPathComponent("app/todos.cblite2")
        XCTAssertTrue(FileManager.default.fileExists(atPath: appDatabase.appendingPathComponent("db.sqlite3").path))
        XCTAssertTrue(FileManager.default.fileExists(atPath: directory.appendingPathComponent("server/todos.cblite2/db.sqlite3").path))

        let again = try runSample("TodoLite", [directory.path])
        XCTAssertNotEqual(again.status, 0, "a directory holding databases already is refused")
        XCTAssertTrue(again.stderr.contains("exists already"), again.all)

        let filesBefore = try FileManager.default.contentsOfDirectory(atPath: appDatabase.path).sorted()
        let bytesBefore = try Data(contentsOf: appDatabase.appendingPathComponent("db.sqlite3"))
        let compare = try runSample("MigrateAndCompare", [appDatabase.path, "tasks/byList", "lists/byTitle"])
        XCTAssertEqual(compare.status, 0, compare.all)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: appDatabase.path).sorted(), filesBefore,
                       "the given database is left as it was (no -wal/-shm files either)")
        XCTAssertEqual(try Data(contentsOf: appDatabase.appendingPathComponent("db.sqlite3")), bytesBefore)
        XCTAssertTrue(compare.stdout.contains("1.x database todos.cblite2: 9 documents, views: lists/byTitle, tasks/byList, tasks/openByList"),
                      compare.stdout)
        XCTAssertTrue(compare.stdout.contains("  documents: 9 converted (0 tombstones)"), compare.stdout)
        XCTAssertTrue(compare.stdout.contains("-- suggested N1QL: SELECT meta().id AS id, title AS key FROM _ WHERE type = 'list' AND title IS VALUED ORDER BY title COLLATE UNICODE, meta().id"),
                      compare.stdout)
        XCTAssertTrue(compare.stdout.contains("2 of 2 suggestions verified"), compare.stdout)

        let missing = try runSample("MigrateAndCompare", [scratch.path("nowhere.cblite2").path])
        XCTAssertEqual(missing.status, 1)
        XCTAssertTrue(missing.stderr.contains("is not a database bundle"), missing.all)
    }

    func testMigrateAndCompare() throws {
        let run = try runSample("MigrateAndCompare")
        XCTAssertEqual(run.status, 0, run.all)
        for text in ["1.x database shop.cblite2: 13 documents, views: orders/byCustomer, users/byName",
                     "  documents: 14 converted (1 tombstones)",
                     "  attachments: 1 copied",
                     "=== users/byName (map rows) ===",
                     "DIFFERENT: 4 differences, all explained",
                     "  binary-collation ×1: BINARY string collation",
                     "-- suggested N1QL: SELECT meta().id AS id, name AS key, email AS value FROM _ WHERE name IS VALUED ORDER BY name COLLATE UNICODE, meta().id",
                     "   index:          try database.createIndex(ValueIndexConfiguration([\"name\"]), name: \"idx_users_byName\")",
                     "=== orders/byCustomer (groupLevel 1, reduce _sum) ===",
                     "GROUP BY customer ORDER BY customer COLLATE UNICODE",
                     "   verified: same 5 rows, same order, same values as the view",
                     "2 of 2 suggestions verified, 0 unexplained differences"] {
            XCTAssertTrue(run.stdout.contains(text), "no '\(text)' in:\n\(run.all)")
        }
        // Difference rows name the document and the rule that explains them.
        for fragments in [["only-in-n1ql", "user-guest", "null", "null-vs-missing"],
                          ["only-in-n1ql", "user-import", "MISSING", "null-vs-missing"],
                          ["order-differs", "user-alice", "binary-collation"],
                          ["order-differs", "user-zack", "accents"],
                          ["order-differs", "[\"alice\"]", "binary-collation"],
                          ["order-differs", "[\"Zack\"]", "accents"]] {
            XCTAssertTrue(run.lines.contains { line in fragments.allSatisfy(line.contains) }, "no row with \(fragments) in:\n\(run.all)")
        }
        XCTAssertFalse(run.stdout.contains("\u{1B}["), "no colours when piped")
    }

    func testQueryTour() throws {
        let run = try runSample("QueryTour")
        XCTAssertEqual(run.status, 0, run.all)
        for line in ["converted the 1.x database contacts.cblite2: 8 documents, 1 attachment(s)",
                     "opened it with the 2.x API: 8 documents",
                     "user-ana's 1.x attachment is a 2.x blob: image/png, 64 bytes",
                     "   user-chloe  Chloé, 41",
                     "   user-farid  Farid, 30",
                     "   Ana (user-ana), Ben (user-ben), Chloé (user-chloe), David (user-david), Eva (user-eva), Farid (user-farid), Gina (user-gina)",
                     "   Lyon: 3 users, average age 35.0",
                     "   Nantes: 1 user, average age 19.0",
                     "   plan before: SCAN _doc",
                     "   plan after:  SEARCH _doc USING INDEX idx_user_city",
                     "   listener: Ana, Chloé, Farid",
                     "   listener: Ana, Chloé, Farid, Hugo",
                     "done"] {
            XCTAssertTrue(run.lines.contains { $0.hasPrefix(line) }, "no line '\(line)' in:\n\(run.all)")
        }
        XCTAssertFalse(run.lines.contains("   user-ben  Ben, 27"), "Paris is not Lyon")
    }

    // MARK: Running a built sample

    private struct SampleRun {
        var status: Int32
        var stdout: String
        var stderr: String
        var lines: [String] { stdout.components(separatedBy: "\n") }
        var all: String { "exit \(status)\n\(stdout)\nstderr:\n\(stderr)" }
    }

    /// The sample's executable next to the test bundle (`.build/debug/NAME`), or a skip.
    private func sampleExecutable(_ name: String) throws -> URL {
        guard let url = BuiltExecutable.find(name) else {
            throw XCTSkip("\(name) is not built; build with `swift build --build-tests`")
        }
        return url
    }

    /// Runs a sample to completion, at most `timeout` seconds (then it is killed and the test fails).
    private func runSample(_ name: String, _ arguments: [String] = [], timeout: TimeInterval = 120) throws -> SampleRun {
        let process = Process()
        process.executableURL = try sampleExecutable(name)
        process.arguments = arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        let exited = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in exited.signal() }
        try process.run()
        // Read both pipes while it runs, so a full pipe never blocks the sample.
        let output = SampleOutput()
        let readers = DispatchGroup()
        for (pipe, isError) in [(out, false), (err, true)] {
            DispatchQueue.global().async(group: readers) {
                output.set(pipe.fileHandleForReading.readDataToEndOfFile(), isError: isError)
            }
        }
        if exited.wait(timeout: .now() + timeout) == .timedOut {
            process.terminate()
            exited.wait()
            readers.wait()
            XCTFail("\(name) did not finish within \(Int(timeout)) s:\n\(output.text(isError: false))")
        }
        readers.wait()
        return SampleRun(status: process.terminationStatus, stdout: output.text(isError: false), stderr: output.text(isError: true))
    }
}

private final class SampleOutput: @unchecked Sendable {
    private let lock = NSLock()
    private var data: [Bool: Data] = [:]
    func set(_ bytes: Data, isError: Bool) { lock.lock(); data[isError] = bytes; lock.unlock() }
    func text(isError: Bool) -> String { lock.lock(); defer { lock.unlock() }; return String(decoding: data[isError] ?? Data(), as: UTF8.self) }
}
