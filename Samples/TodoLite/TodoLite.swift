import CouchbaseLite
import CouchbaseLiteListener
import Foundation

/// TodoLite: a to-do app's data layer on Couchbase Lite 1.x for Linux.
///
///     swift run TodoLite [DIRECTORY]
///
/// Creates lists and tasks, counts them with map/reduce views, watches one list with a live
/// query, attaches an image to a task, then syncs with a second database that a REST listener
/// serves on 127.0.0.1 (push, a change made on the server by "another device", pull).
/// Works in a temporary directory that it deletes, unless given a directory (which then keeps
/// both databases: `swift run cbl info DIRECTORY/app/todos.cblite2`).
@main
enum TodoLite {
    static func main() {
        do {
            try TodoLiteDemo(arguments: Array(CommandLine.arguments.dropFirst())).run()
        } catch {
            FileHandle.standardError.write(Data("TodoLite: error: \(error)\n".utf8))
            exit(1)
        }
    }
}

final class TodoLiteDemo {
    private let directory: URL
    private let isTemporary: Bool

    init(arguments: [String]) throws {
        if let path = arguments.first {
            directory = URL(fileURLWithPath: path, isDirectory: true)
            isTemporary = false
            for name in ["app", "server"] where FileManager.default.fileExists(atPath: directory.appendingPathComponent(name).path) {
                throw SampleError("\(directory.path)/\(name) exists already; give a new or empty directory")
            }
        } else {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("TodoLite-\(UUID().uuidString)", isDirectory: true)
            isTemporary = true
        }
    }

    func run() throws {
        defer { if isTemporary { try? FileManager.default.removeItem(at: directory) } }
        print("TodoLite: working in \(directory.path)")

        // 1. The app's manager and database (created on first use), and its data layer.
        let manager = try CBLManager(directory: directory.appendingPathComponent("app").path)
        defer { manager.close() }
        let db = try manager.databaseNamed("todos")
        let store = TodoStore(database: db)

        // 2. Two lists and their tasks: each one a JSON document with a "type".
        let groceries = try store.createList(title: "Groceries")
        let chores = try store.createList(title: "Chores")
        let milk = try store.addTask("Milk", to: groceries)
        try store.addTask("Eggs", to: groceries)
        for title in ["Vacuum the stairs", "Water the plants", "Take out the recycling"] {
            try store.addTask(title, to: chores)
        }
        print("created 2 lists and 5 tasks: \(db.documentCount) documents")
        try printSummaries(store)

        // 3. The Groceries screen follows a live query: it re-runs after each change to the
        //    database and calls the listener when its rows changed.
        let screen = ListScreen(title: "Groceries")
        let liveQuery = store.tasksQuery(for: groceries).asLive()
        liveQuery.addChangeListener { rows in screen.show(TodoStore.taskRows(rows)) }
        liveQuery.start()
        defer { liveQuery.stop() }
        try screen.waitUntil("the first rows") { $0.count == 2 }

        print("adding Bread")
        let bread = try store.addTask("Bread", to: groceries)
        try screen.waitUntil("Bread") { $0.contains { $0.title == "Bread" } }
        print("checking Milk")
        try store.setChecked(true, task: milk)
        try screen.waitUntil("Milk checked") { $0.contains { $0.title == "Milk" && $0.checked } }

        // 4. An attachment: a small PNG saved with a new revision of the Bread task.
        print("attaching a photo to Bread")
        try store.attachImage(Self.photo, contentType: "image/png", to: bread)
        guard let image = bread.currentRevision?.attachmentNamed("image"), image.content == Self.photo else {
            throw SampleError("the image attached to Bread did not read back")
        }
        print("Bread's attachment 'image': \(image.contentType ?? "?"), \(image.length) bytes, \(image.digest ?? "")")
        try screen.waitUntil("Bread's photo") { $0.contains { $0.title == "Bread" && $0.hasImage } }

        // 5. Sync. A second manager plays the server: a listener serves its databases over
        //    CouchDB's REST API on 127.0.0.1, on a free port.
        let serverManager = try CBLManager(directory: directory.appendingPathComponent("server").path)
        defer { serverManager.close() }
        let serverDB = try serverManager.databaseNamed("todos")
        let listener = CBLListener(manager: serverManager, port: 0)
        listener.bindAddress = "127.0.0.1"
        try listener.start()
        defer { listener.stop() }
        guard let serverURL = listener.url else { throw SampleError("the listener has no URL") }
        let remoteDB = serverURL.appendingPathComponent("todos")
        print("listener: serving the server's databases at \(serverURL.absoluteString)")

        // One-shot push: every document (and the image) goes to the server.
        let push = db.createPushReplication(remoteDB)
        try push.runToCompletion()
        print("push: \(push.completedChangesCount) changes sent; app \(db.documentCount) documents, server \(serverDB.documentCount)")

        // Someone else adds a task to Groceries on the server (their phone synced it there).
        guard let serverGroceries = serverDB.existingDocument(withID: groceries.documentID) else {
            throw SampleError("the Groceries list did not reach the server")
        }
        try TodoStore(database: serverDB).addTask("Coffee", to: serverGroceries)
        print("server: another device added Coffee to Groceries")

        // One-shot pull: the new task arrives, and the live query shows it.
        let pull = db.createPullReplication(remoteDB)
        let before = db.documentCount
        try pull.runToCompletion()
        print("pull: \(pull.completedChangesCount) changes checked, \(db.documentCount - before) new; app \(db.documentCount) documents, server \(serverDB.documentCount)")
        try screen.waitUntil("Coffee from the server") { $0.contains { $0.title == "Coffee" } }

        let serverImage = serverDB.existingDocument(withID: bread.documentID)?.currentRevision?.attachmentNamed("image")
        guard db.documentCount == serverDB.documentCount, serverImage?.content == Self.photo else {
            throw SampleError("the two databases differ after push and pull")
        }
        print("both databases have \(db.documentCount) documents; the server's Bread has its \(serverImage?.length ?? 0)-byte image")
        try printSummaries(store)
        if !isTemporary {
            print("kept: \(directory.path)/app/todos.cblite2 and \(directory.path)/server/todos.cblite2 (swift run cbl info PATH)")
        }
        print("done")
    }

    /// The first screen: each list with its task counts, from the views' reduces.
    private func printSummaries(_ store: TodoStore) throws {
        for list in try store.listSummaries() {
            print("  \(list.title): \(list.tasks) tasks, \(list.open) open")
        }
    }

    /// A 1×1 PNG, standing in for a photo of the item.
    static let photo = Data(base64Encoded:
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==")!
}

extension CBLReplication {
    /// Runs a one-shot (non-continuous) replication and waits until it stops, following its
    /// `.cblReplicationChange` notifications as 1.x apps did; throws its error if it failed.
    func runToCompletion(timeout: TimeInterval = 30) throws {
        continuous = false
        let changed = DispatchSemaphore(value: 0)
        let observer = NotificationCenter.default.addObserver(forName: .cblReplicationChange, object: self, queue: nil) { _ in
            changed.signal()
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        start()
        let deadline = Date().addingTimeInterval(timeout)
        while running {
            if Date() > deadline {
                stop()
                throw SampleError("\(pull ? "pull" : "push") did not finish within \(Int(timeout)) s")
            }
            _ = changed.wait(timeout: .now() + 0.1)
        }
        if let error = lastError { throw error }
    }
}
