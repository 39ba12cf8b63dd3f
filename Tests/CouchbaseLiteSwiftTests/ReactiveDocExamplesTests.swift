import CouchbaseLiteSwift
import Foundation
import Observation
import OpenCombine
import XCTest

// The 3.2.3 documentation's Reactive APIs examples (the "Reactive APIs" page and its
// `CodableCombine.swift` snippets), SwiftUI views and the replicator left out, compiled against the
// public API with `import OpenCombine` in place of `import Combine`. Each adaptation is marked
// `// doc:` with what the documentation wrote and why it differs.

/// The snippets of `CodableCombine.swift`.
enum CodableSnippets {
    // tag::codable-data-model[]
    class Task: Codable {
        @DocumentID var id: String?
        var title: String
        var completed: Bool?

        init(id: String? = nil, title: String, completed: Bool? = nil) {   // doc: no initializer shown
            self.title = title
            self.completed = completed
            self.id = id
        }
    }

    class CodableCombine {
        var database: Database!
        var collection: Collection!
        var query: Query!
        var task: Task!
        var tasks: [Task] = []
        var cancellables = Set<AnyCancellable>()
        // doc: not in the snippets; the publishers deliver on it so the test can wait for them, and
        // the sinks log what they print.
        let queue: DispatchQueue
        var read: Task?
        var log: [String] = []

        init(queue: DispatchQueue) { self.queue = queue }

        func codable() throws {
            // tag::get-codable-doc[]
            let document = try collection.document(id: task.id!, as: Task.self)
            // end::get-codable-doc[]
            read = document   // doc: print(document!)

            // tag::save-codable-doc[]
            try collection.save(from: task)
            // end::save-codable-doc[]

            // tag::delete-codable-doc[]
            try collection.delete(for: task)
            // end::delete-codable-doc[]

            // tag::purge-codable-doc[]
            try collection.purge(for: task)
            // end::purge-codable-doc[]

            let query = try database.createQuery("SELECT meta().id AS id, title FROM _default.tasks")
            // tag::get-codable-result[]
            let results = try query.execute().allResults()
            for result in results {
                task = try result.data(as: Task.self)
            }
            // end::get-codable-result[]

            // tag::get-codable-result-all[]
            tasks = try query.execute().data(as: Task.self)
            // end::get-codable-result-all[]
        }

        func saveConflictCodable() throws -> Bool {
            // tag::conflict-save-codable-doc[]
            let resolved = try collection.save(from: task) { newTask, existingTask in
                newTask.title = "New Task"
                newTask.completed = false
                return true
            }
            // end::conflict-save-codable-doc[]
            return resolved   // doc: print(resolved)
        }

        func saveConcurrencyCodable() throws -> Bool {
            // tag::concurrency-save-codable-doc[]
            let resolved = try collection.save(from: task, concurrencyControl: .failOnConflict)
            // end::concurrency-save-codable-doc[]
            return resolved
        }

        func deleteConcurrencyCodable() throws -> Bool {
            // tag::concurrency-delete-codable-doc[]
            let resolved = try collection.delete(for: task, concurrencyControl: .failOnConflict)
            // end::concurrency-delete-codable-doc[]
            return resolved
        }

        func combine() throws {
            // doc: each publisher is given `on: queue` (Apple's default is the main queue, this
            // package's the listener's own queue), and the sinks log instead of printing.

            // tag::publish-result-changes[]
            query.changePublisher(on: queue)
                .map { try! $0.results?.data(as: Task.self) ?? [] }
                .sink { [weak self] tasks in
                    self?.tasks = tasks
                }
                .store(in: &cancellables)
            // end::publish-result-changes[]

            // tag::publish-collection-changes[]
            collection.changePublisher(on: queue)
                .sink { [weak self] change in self?.log.append("Collection \(change.collection.name) changed.") }
                .store(in: &cancellables)
            // end:publish-collection-changes[]

            // tag::publish-doc-changes[]
            collection.documentChangePublisher(for: task.id!, on: queue)
                .sink { [weak self] change in
                    self?.log.append("Task \(change.documentID) in collection \(change.collection.name) changed.")
                }
                .store(in: &cancellables)
            // end::publish-doc-changes[]

            // doc: replicator.changePublisher() and replicator.documentReplicationPublisher() are
            // left out: this package's 2.x side has no replicator.
        }
    }
}

/// The "Reactive APIs" page: its data model and its two view models.
enum ReactivePage {
    // Data model
    class Task: Codable {
        @DocumentID var id: String?
        var title: String
        var completed: Bool

        init(title: String, completed: Bool = false) {   // doc: the view models call these initializers
            self.title = title
            self.completed = completed
        }
    }

    // ViewModel — Combine Framework
    @MainActor
    class TodoViewModel: ObservableObject {
        @Published var todos: [Task] = []

        private let db: Database
        private let tasks: Collection
        private var cancellables = Set<AnyCancellable>()

        init(database: Database) throws {   // doc: init(), with AppDataStore.shared.database
            self.db = database
            // doc: `db.collection(name: "tasks")`, which throws and returns an optional.
            self.tasks = try db.collection(name: "tasks")!

            let query = "SELECT meta().id, title, completed from tasks"
            // doc: `publish()`: Apple's default queue is the main queue, which this @MainActor
            // model relies on; here the default is the listener's own queue, so it is named.
            // doc: `.map { $0.results?.data(as: Task.self) ?? [] }`: `data(as:)` throws.
            try? db.createQuery(query).publish(on: .main)
                .map { (try? $0.results?.data(as: Task.self)) ?? [] }
                .sink { [weak self] tasks in self?.todos = tasks }
                .store(in: &cancellables)
        }

        func addTask(title: String) throws {
            try tasks.save(from: Task(title: title))
        }

        func toggleCompletion(for task: Task) throws {
            if let index = todos.firstIndex(where: { $0.id == task.id }) {
                todos[index].completed.toggle() // Reflect UI right away
                try tasks.save(from: todos[index])
            }
        }

        func deleteTask(_ task: Task) throws {
            try tasks.delete(for: task)
        }
    }

    // ViewModel — Observation Framework
    // doc: the page subscribes with `publish().sink` and drops the AnyCancellable, which cancels
    // the subscription at once; updated from the query's AsyncSequence instead, as an
    // `@Observable` model is.
    @Observable @MainActor
    final class ObservableTodoViewModel {
        var todos: [Task] = []    // Observable property automatically tracked by SwiftUI

        @ObservationIgnored private let db: Database
        @ObservationIgnored private let tasks: Collection
        @ObservationIgnored private var updates: _Concurrency.Task<Void, Never>?

        init(database: Database) throws {
            self.db = database
            self.tasks = try db.collection(name: "tasks")!

            let query = try db.createQuery("SELECT meta().id, title, completed FROM tasks")

            // Subscribe to changes and update todos directly
            updates = _Concurrency.Task { [weak self] in
                do {
                    for try await results in query.changes() {
                        self?.todos = try results.data(as: Task.self)
                    }
                } catch {
                    self?.todos = []
                }
            }
        }

        func stop() { updates?.cancel() }

        func addTask(title: String) throws {
            try tasks.save(from: Task(title: title, completed: false))
        }

        func toggleCompletion(for task: Task) throws {
            if let index = todos.firstIndex(where: { $0.id == task.id }) {
                todos[index].completed.toggle()
                try tasks.save(from: todos[index])
            }
        }

        func deleteTask(_ task: Task) throws {
            try tasks.delete(for: task)
        }
    }
}

final class ReactiveDocExamplesTests: XCTestCase {
    private var directory: URL!
    private var db: Database!
    private let queue = DispatchQueue(label: "ReactiveDocExamplesTests")

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("reactive-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        db = try Database(name: "todo", config: DatabaseConfiguration(directory: directory.path))
        try db.createCollection(name: "tasks")
    }

    override func tearDownWithError() throws {
        try? db?.close()
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }

    private func drain() { queue.sync {} }

    // MARK: CodableCombine.swift

    func testCodableSnippets() throws {
        let snippets = CodableSnippets.CodableCombine(queue: queue)
        snippets.database = db
        snippets.collection = try db.collection(name: "tasks")
        try snippets.collection.save(from: CodableSnippets.Task(id: "keep", title: "Keep me", completed: true))
        let task = CodableSnippets.Task(title: "Buy milk")
        try snippets.collection.save(from: task)
        snippets.task = task

        try snippets.codable()
        XCTAssertEqual(snippets.read?.title, "Buy milk")
        XCTAssertEqual(snippets.read?.id, task.id)
        XCTAssertNil(try db.collection(name: "tasks")?.document(id: task.id!), "saved, deleted, then purged")
        // The last row decoded is the one left; its query has no `completed`, an optional.
        XCTAssertEqual(snippets.task.id, "keep")
        XCTAssertEqual(snippets.task.title, "Keep me")
        XCTAssertNil(snippets.task.completed)
        XCTAssertEqual(snippets.tasks.map(\.id), ["keep"])
    }

    func testConflictAndConcurrencySnippets() throws {
        let snippets = CodableSnippets.CodableCombine(queue: queue)
        snippets.database = db
        snippets.collection = try db.collection(name: "tasks")
        try snippets.collection.save(from: CodableSnippets.Task(id: "t", title: "Original"))
        let stale = try XCTUnwrap(snippets.collection.document(id: "t", as: CodableSnippets.Task.self))
        let other = try XCTUnwrap(snippets.collection.document(id: "t", as: CodableSnippets.Task.self))
        other.title = "Changed elsewhere"
        try snippets.collection.save(from: other)

        snippets.task = stale
        XCTAssertFalse(try snippets.saveConcurrencyCodable())
        XCTAssertFalse(try snippets.deleteConcurrencyCodable())
        XCTAssertTrue(try snippets.saveConflictCodable())
        let stored = try XCTUnwrap(snippets.collection.document(id: "t", as: CodableSnippets.Task.self))
        XCTAssertEqual(stored.title, "New Task")
        XCTAssertEqual(stored.completed, false)
        XCTAssertTrue(try snippets.deleteConcurrencyCodable(), "the resolved model is current again")
        XCTAssertNil(try snippets.collection.document(id: "t"))
    }

    func testCombineSnippets() throws {
        let snippets = CodableSnippets.CodableCombine(queue: queue)
        snippets.database = db
        snippets.collection = try db.collection(name: "tasks")
        let task = CodableSnippets.Task(id: "t1", title: "First")
        try snippets.collection.save(from: task)
        snippets.task = task
        snippets.query = try db.createQuery("SELECT meta().id AS id, title FROM tasks ORDER BY title")

        try snippets.combine()
        drain()
        XCTAssertEqual(snippets.tasks.map(\.title), ["First"])
        XCTAssertEqual(snippets.log, [])

        task.title = "Again"
        try snippets.collection.save(from: task)
        try snippets.collection.save(from: CodableSnippets.Task(id: "t2", title: "Second"))
        drain()
        XCTAssertEqual(snippets.tasks.map(\.title), ["Again", "Second"])
        XCTAssertEqual(snippets.log.filter { $0.hasPrefix("Collection") }.count, 2)
        XCTAssertEqual(snippets.log.filter { $0.hasPrefix("Task t1") }.count, 1)
        XCTAssertTrue(snippets.log.contains("Task t1 in collection tasks changed."))

        snippets.cancellables.removeAll()          // AnyCancellable cancels when released
        try snippets.collection.save(from: CodableSnippets.Task(id: "t3", title: "Third"))
        drain()
        XCTAssertEqual(snippets.tasks.count, 2)
        XCTAssertEqual(snippets.log.count, 3)
    }

    // MARK: View models

    @MainActor
    func testCombineViewModel() async throws {
        let model = try ReactivePage.TodoViewModel(database: db)
        try await waitUntil(model) { $0.count == 0 }

        try model.addTask(title: "Write tests")
        try await waitUntil(model) { $0.count == 1 }
        let task = try XCTUnwrap(model.todos.first)
        XCTAssertEqual(task.title, "Write tests")
        XCTAssertFalse(task.completed)
        XCTAssertNotNil(task.id)

        try model.toggleCompletion(for: task)
        XCTAssertEqual(try db.collection(name: "tasks")?.document(id: task.id!, as: ReactivePage.Task.self)?.completed, true)
        try await waitUntil(model) { $0.first !== task && $0.first?.completed == true }

        try model.deleteTask(try XCTUnwrap(model.todos.first))
        try await waitUntil(model) { $0.isEmpty }
    }

    @MainActor
    func testObservationViewModel() async throws {
        let model = try ReactivePage.ObservableTodoViewModel(database: db)
        defer { model.stop() }
        try await nextChange(of: model) {}                       // the initial (empty) results
        XCTAssertEqual(model.todos.count, 0)

        try await nextChange(of: model) { try model.addTask(title: "Observe") }
        XCTAssertEqual(model.todos.map(\.title), ["Observe"])

        let task = try XCTUnwrap(model.todos.first)
        try model.toggleCompletion(for: task)                    // changes `todos` in place…
        try await nextChange(of: model) {}                       // …and the query sends new rows
        XCTAssertEqual(model.todos.first?.completed, true)

        try await nextChange(of: model) { try model.deleteTask(try XCTUnwrap(model.todos.first)) }
        XCTAssertEqual(model.todos.count, 0)
    }

    // MARK: Helpers

    /// Waits (at most 5 s) until the model's published `todos` satisfy `condition`.
    @MainActor
    private func waitUntil(_ model: ReactivePage.TodoViewModel,
                           _ condition: @escaping ([ReactivePage.Task]) -> Bool) async throws {
        let done = expectation(description: "todos")
        done.assertForOverFulfill = false
        let subscription = model.$todos.sink { if condition($0) { done.fulfill() } }
        await fulfillment(of: [done], timeout: 5)
        subscription.cancel()
    }

    /// Runs `action`, then waits (at most 5 s) until the Observation framework reports a change of
    /// `todos` (tracking starts before the action, so no change is missed).
    @MainActor
    private func nextChange(of model: ReactivePage.ObservableTodoViewModel,
                            after action: () throws -> Void) async throws {
        let changed = expectation(description: "todos changed")
        changed.assertForOverFulfill = false
        let signal = Signal(changed)
        withObservationTracking { _ = model.todos } onChange: { signal.fire() }
        try action()
        await fulfillment(of: [changed], timeout: 5)
        await Task.yield()   // the change is a willSet: let the setter finish
    }

    /// Carries an expectation into the `@Sendable` onChange closure.
    private final class Signal: @unchecked Sendable {
        let expectation: XCTestExpectation
        init(_ expectation: XCTestExpectation) { self.expectation = expectation }
        func fire() { expectation.fulfill() }
    }
}
