import CouchbaseLite
import Foundation

/// One task as the list screen shows it (a row of the `tasks/byList` view).
struct TaskRow: Equatable {
    var title: String
    var checked: Bool
    var hasImage: Bool

    /// `[x] Milk (photo)`.
    var line: String { "[\(checked ? "x" : " ")] \(title)\(hasImage ? " (photo)" : "")" }
}

/// The app's data layer: lists and tasks stored as documents, and the views its screens query.
/// Written as a 1.x iOS app's data layer was, with the same calls (`viewNamed`, `setMapBlock`,
/// `createDocument`, `putProperties`, `update`, `setAttachmentNamed`), so it reads like one.
final class TodoStore {
    let database: CBLDatabase
    private var lastTimestamp = Date.distantPast

    init(database: CBLDatabase) {
        self.database = database
        defineViews()
    }

    // MARK: Views

    /// Map functions are registered every time the app starts; the `version` string tells
    /// Couchbase Lite when a map changed and its index must be rebuilt.
    private func defineViews() {
        // Every list, by title: the app's first screen.
        database.viewNamed("lists/byTitle").setMapBlock({ doc, emit in
            if doc["type"] as? String == "list", let title = doc["title"] {
                emit(title, nil)
            }
        }, version: "1")

        // Tasks keyed by [list ID, creation date], so one list's tasks are a key range, oldest first.
        // The reduce counts rows (the classic 1.x count: values.count, then totalValues when re-reducing),
        // so a query with groupLevel = 1 gives the number of tasks in each list.
        database.viewNamed("tasks/byList").setMapBlock({ doc, emit in
            if doc["type"] as? String == "task", let listID = doc["list_id"], let createdAt = doc["created_at"] {
                // Like the PhoneGap ToDoLite's map, the value says whether the task has its image.
                let attachments = doc["_attachments"] as? [String: Any]
                emit([listID, createdAt], ["title": doc["title"] ?? "", "checked": doc["checked"] ?? false,
                                           "image": attachments?["image"] != nil])
            }
        }, reduce: { _, values, rereduce in
            rereduce ? CBLView.totalValues(values) : Double(values.count)
        }, version: "1")

        // 1 for each unchecked task, keyed by list ID; the reduce sums them with CBLView.totalValues.
        database.viewNamed("tasks/openByList").setMapBlock({ doc, emit in
            if doc["type"] as? String == "task", let listID = doc["list_id"] {
                emit(listID, doc["checked"] as? Bool == true ? 0 : 1)
            }
        }, reduce: { _, values, _ in
            CBLView.totalValues(values)
        }, version: "1")
    }

    // MARK: Writing

    @discardableResult
    func createList(title: String) throws -> CBLDocument {
        let list = database.createDocument()   // a new document with a random (UUID) ID
        try list.putProperties(["type": "list", "title": title, "created_at": timestamp()])
        return list
    }

    @discardableResult
    func addTask(_ title: String, to list: CBLDocument) throws -> CBLDocument {
        let task = database.createDocument()
        try task.putProperties(["type": "task", "list_id": list.documentID, "title": title,
                                "checked": false, "created_at": timestamp()])
        return task
    }

    /// `update` re-runs the block if another writer got in first (a 409 conflict), so the change
    /// is always applied to the latest revision.
    func setChecked(_ checked: Bool, task: CBLDocument) throws {
        try task.update { newRev in
            newRev["checked"] = checked
            return true
        }
    }

    /// Attachments are saved with a new revision; the bytes go to the database's blob store.
    func attachImage(_ image: Data, contentType: String, to task: CBLDocument) throws {
        try task.update { newRev in
            newRev.setAttachmentNamed("image", withContentType: contentType, content: image)
            return true
        }
    }

    // MARK: Reading

    /// The tasks of one list, oldest first: the key range [listID] … [listID, {}] of `tasks/byList`.
    func tasksQuery(for list: CBLDocument) -> CBLQuery {
        let query = database.viewNamed("tasks/byList").createQuery()
        query.startKey = [list.documentID]
        query.endKey = [list.documentID, [String: Any]()]   // {} sorts after every date string
        query.mapOnly = true                                 // the rows themselves, not the count
        return query
    }

    static func taskRows(_ rows: CBLQueryEnumerator) -> [TaskRow] {
        rows.map { row in
            let value = row.value as? [String: Any] ?? [:]
            return TaskRow(title: value["title"] as? String ?? "", checked: value["checked"] as? Bool ?? false,
                           hasImage: value["image"] as? Bool ?? false)
        }
    }

    /// Each list with its number of tasks and of open tasks, from the two views' reduces.
    func listSummaries() throws -> [(title: String, tasks: Int, open: Int)] {
        let counts = database.viewNamed("tasks/byList").createQuery()
        counts.groupLevel = 1                        // one row per list: key [listID], value = count
        var tasksPerList: [String: Int] = [:]
        for row in try counts.run() {
            if let listID = row.key(at: 0) as? String { tasksPerList[listID] = Self.int(row.value) }
        }
        let open = database.viewNamed("tasks/openByList").createQuery()
        open.groupLevel = 1                          // scalar keys: one row per list ID
        var openPerList: [String: Int] = [:]
        for row in try open.run() {
            if let listID = row.key as? String { openPerList[listID] = Self.int(row.value) }
        }
        let lists = database.viewNamed("lists/byTitle").createQuery()
        return try lists.run().map { row in
            let id = row.documentID ?? ""
            return (row.key as? String ?? "", tasksPerList[id] ?? 0, openPerList[id] ?? 0)
        }
    }

    private static func int(_ value: Any?) -> Int {
        switch value {
        case let d as Double: return Int(d)
        case let i as Int: return i
        case let n as NSNumber: return n.intValue
        default: return 0
        }
    }

    /// ISO-8601 creation dates sort in time order in a view; kept strictly increasing so tasks
    /// created within the same millisecond still have a stable order.
    private func timestamp() -> String {
        let now = max(Date(), lastTimestamp.addingTimeInterval(0.001))
        lastTimestamp = now
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: now)
    }
}
