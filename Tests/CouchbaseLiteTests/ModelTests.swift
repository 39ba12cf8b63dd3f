import CouchbaseLite
import Foundation
import XCTest

// A 1.x ToDoLite-style data layer, ported the way MIGRATING.md says: `@NSManaged` → `@CBLProperty`,
// `@objc(Name)` dropped. Only public API (plain `import CouchbaseLite`, as an app has).

class Titled: CBLModel {
    @CBLProperty var title: String?
    @CBLProperty("created_at") var createdAt: Date?

    var awakeCount = 0
    var loadCount = 0
    var willSaveNames: [Set<AnyHashable>?] = []

    override func awakeFromInitializer() {
        awakeCount += 1
        if isNew { createdAt = Date(timeIntervalSince1970: 1_430_408_734.922) }
    }

    override func didLoadFromDocument() { loadCount += 1 }

    override func willSave(_ changedPropertyNames: Set<AnyHashable>?) {
        willSaveNames.append(changedPropertyNames)
    }
}

final class TodoList: Titled {
    @CBLProperty var owner: String?
    @CBLProperty var members: [String]
    @CBLProperty var archived = false
}

struct Reminder: Codable, Equatable {
    var at: Date
    var note: String?
    var repeats: Int
}

final class TodoTask: Titled {
    @CBLProperty var checked: Bool
    @CBLProperty("list_id") var list: TodoList?
    @CBLProperty var tags: [String]
    @CBLProperty var priority: Int
    @CBLProperty var estimate: Double?
    @CBLProperty var photoThumbnail: Data?
    @CBLProperty var link: URL?
    @CBLProperty var due: [Date]
    @CBLProperty var reminder: Reminder?
    @CBLProperty var history: [Reminder] = []
    @CBLProperty var blockedBy: [TodoTask]
    @CBLProperty var extra: [String: Any]?
    @CBLProperty var counts: [String: Int]

    var keepTypeInTombstone = false

    override func propertiesToSaveForDeletion() -> [AnyHashable: Any] {
        var props = super.propertiesToSaveForDeletion()
        if keepTypeInTombstone { props["type"] = type }
        return props
    }
}

/// A profile whose document ID is chosen by the model (1.x `idForNewDocumentInDatabase:`).
final class Profile: CBLModel {
    @CBLProperty var name: String?
    @CBLProperty("user_id") var userID: String?

    override func idForNewDocument(in database: CBLDatabase) -> String? {
        userID.map { "p:" + $0 } ?? "p:anonymous"
    }
}

final class ModelTests: SingleDatabaseTestCase {
    override var databaseName: String { "todos" }

    override func setUpWithError() throws {
        try super.setUpWithError()
        register(db)
    }

    private func register(_ database: CBLDatabase) {
        database.modelFactory?.registerClass(TodoList.self, forDocumentType: "list")
        database.modelFactory?.registerClass(TodoTask.self, forDocumentType: "task")
    }

    private func reopen() throws {
        manager.close()
        manager = try CBLManager(directory: dir.url.appendingPathComponent("m").path)
        db = try manager.databaseNamed("todos")
        register(db)
    }

    private func storedJSON(_ docID: String, in database: CBLDatabase? = nil) throws -> [String: Any] {
        let props = try XCTUnwrap((database ?? db).document(withID: docID)?.properties)
        return props.filter { !$0.key.hasPrefix("_") }
    }

    // MARK: The app-style hierarchy round trip

    func testListAndTasksRoundTripThroughSaveReopenFactoryAndDeletion() throws {
        let list = TodoList(forNewDocumentIn: db)
        XCTAssertTrue(list.isNew)
        XCTAssertEqual(list.type, "list", "the factory's type for the class is set on new models")
        XCTAssertEqual(list.awakeCount, 1)
        XCTAssertTrue(list.needsSave)
        list.title = "Groceries"
        list.owner = "alice"
        list.members = ["bob", "carol"]
        try list.save()
        XCTAssertFalse(list.isNew)
        XCTAssertFalse(list.needsSave)
        XCTAssertEqual(list.willSaveNames.count, 1)
        XCTAssertEqual(list.willSaveNames.first??.count, 5)   // type, created_at, title, owner, members
        let listID = try XCTUnwrap(list.document?.documentID)

        let task = TodoTask(forNewDocumentIn: db)
        task.title = "Milk"
        task.list = list
        task.tags = ["dairy", "urgent"]
        task.priority = 2
        task.due = [Date(timeIntervalSince1970: 1_500_000_000.25)]
        let image = Data((0..<200).map { UInt8($0) })
        task.setAttachmentNamed("image", withContentType: "image/jpg", content: image)
        XCTAssertEqual(task.attachmentNames, ["image"])
        XCTAssertEqual(task.attachmentNamed("image")?.content, image)
        try task.save()
        let taskID = try XCTUnwrap(task.document?.documentID)

        // The JSON 1.x stored (the shapes of the real ToDoLite documents in the fixtures).
        let listJSON = try storedJSON(listID)
        XCTAssertEqual(listJSON["type"] as? String, "list")
        XCTAssertEqual(listJSON["created_at"] as? String, "2015-04-30T15:45:34.922Z")
        XCTAssertEqual(listJSON["members"] as? [String], ["bob", "carol"])
        XCTAssertNil(listJSON["archived"], "unset properties are not written")
        let taskJSON = try storedJSON(taskID)
        XCTAssertEqual(taskJSON["list_id"] as? String, listID, "a model reference is stored as its document ID")
        XCTAssertEqual(taskJSON["due"] as? [String], ["2017-07-14T02:40:00.250Z"])
        XCTAssertEqual(taskJSON["priority"] as? Int, 2)
        XCTAssertEqual(taskJSON["type"] as? String, "task")
        let stub = try XCTUnwrap(task.document?.properties?["_attachments"] as? [String: Any])["image"] as? [String: Any]
        XCTAssertEqual(stub?["length"] as? Int, 200)
        XCTAssertEqual(stub?["content_type"] as? String, "image/jpg")

        // One model object per document, found again by class or through the factory.
        XCTAssertTrue(TodoTask(for: task.document!) === task)
        XCTAssertTrue(CBLModel(for: task.document!) === task)
        XCTAssertTrue(CBLModel.modelForDocument(task.document!) === task)
        XCTAssertTrue(task.list === list, "a reference loads the referenced document's model")
        XCTAssertNil(TodoList(for: task.document!), "a document's model has one class")

        // Reopen: nothing is cached; the factory picks classes by `type`.
        try reopen()
        let reloadedTask = try XCTUnwrap(CBLModel.modelForDocument(try XCTUnwrap(db.existingDocument(withID: taskID))) as? TodoTask)
        XCTAssertFalse(reloadedTask.isNew)
        XCTAssertEqual(reloadedTask.loadCount, 1)
        XCTAssertEqual(reloadedTask.title, "Milk")
        XCTAssertEqual(reloadedTask.tags, ["dairy", "urgent"])
        XCTAssertEqual(reloadedTask.priority, 2)
        XCTAssertFalse(reloadedTask.checked)
        XCTAssertNil(reloadedTask.estimate)
        XCTAssertEqual(reloadedTask.due, [Date(timeIntervalSince1970: 1_500_000_000.25)])
        XCTAssertEqual(reloadedTask.createdAt, Date(timeIntervalSince1970: 1_430_408_734.922))
        XCTAssertEqual(reloadedTask.attachmentNamed("image")?.content, image)
        let reloadedList = try XCTUnwrap(reloadedTask.list)
        XCTAssertEqual(reloadedList.title, "Groceries")
        XCTAssertEqual(reloadedList.members, ["bob", "carol"])
        XCTAssertTrue(TodoList(for: reloadedList.document!) === reloadedList)
        XCTAssertEqual(try reloadedList.findInverse(ofRelation: "list_id", fromClass: TodoTask.self).map { $0 === reloadedTask }, [true])

        // Edit, then delete.
        reloadedTask.checked = true
        reloadedTask.removeAttachmentNamed("image")
        XCTAssertEqual(reloadedTask.attachmentNames, [])
        try reloadedTask.save()
        XCTAssertEqual(try storedJSON(taskID)["checked"] as? Bool, true)
        XCTAssertNil(db.document(withID: taskID)?.currentRevision?.attachmentNamed("image"))

        let taskDoc = try XCTUnwrap(reloadedTask.document)
        reloadedTask.keepTypeInTombstone = true
        reloadedTask.title = "never saved"
        try reloadedTask.deleteDocument()
        XCTAssertTrue(taskDoc.isDeleted)
        XCTAssertNil(reloadedTask.document, "the deletion detaches the model, as in 1.x")
        XCTAssertFalse(reloadedTask.needsSave)
        XCTAssertNil(db.existingDocument(withID: taskID))
        let tombstone = try XCTUnwrap(try taskDoc.getLeafRevisions().first)
        XCTAssertTrue(tombstone.isDeletion)
        XCTAssertEqual(tombstone.properties?["type"] as? String, "task", "propertiesToSaveForDeletion kept the type")
        XCTAssertNil(tombstone.properties?["title"])
        XCTAssertTrue(db.unsavedModels.isEmpty)
    }

    func testValueMappingsMatchWhat1xStored() throws {
        let task = TodoTask(forNewDocumentIn: db)
        task.estimate = 1.5
        task.photoThumbnail = Data("hello".utf8)
        task.link = URL(string: "https://example.com/a?b=c")
        task.reminder = Reminder(at: Date(timeIntervalSince1970: 0.5), note: nil, repeats: 3)
        task.history = [Reminder(at: Date(timeIntervalSince1970: 86400), note: "x", repeats: 0)]
        task.extra = ["nested": ["a": 1, "b": [true, "s"] as [Any]] as [String: Any], "n": NSNull()]
        task.counts = ["a": 1, "b": 2]
        let other = TodoTask(forNewDocumentIn: db)
        try other.save()
        task.blockedBy = [other]
        try task.save()

        let json = try storedJSON(task.document!.documentID)
        XCTAssertEqual(json["estimate"] as? Double, 1.5)
        XCTAssertEqual(json["photoThumbnail"] as? String, "aGVsbG8=")
        XCTAssertEqual(json["link"] as? String, "https://example.com/a?b=c")
        XCTAssertJSONEqual(json["reminder"], ["at": "1970-01-01T00:00:00.500Z", "repeats": 3] as [String: Any])
        XCTAssertJSONEqual(json["history"], [["at": "1970-01-02T00:00:00.000Z", "note": "x", "repeats": 0] as [String: Any]])
        XCTAssertJSONEqual(json["extra"], ["nested": ["a": 1, "b": [true, "s"] as [Any]] as [String: Any], "n": NSNull()] as [String: Any])
        XCTAssertJSONEqual(json["counts"], ["a": 1, "b": 2])
        XCTAssertEqual(json["blockedBy"] as? [String], [other.document!.documentID])

        let reread = try XCTUnwrap(TodoTask(for: task.document!))
        XCTAssertTrue(reread === task)
        XCTAssertEqual(reread.photoThumbnail, Data("hello".utf8))
        XCTAssertEqual(reread.link?.host, "example.com")
        XCTAssertEqual(reread.reminder, Reminder(at: Date(timeIntervalSince1970: 0.5), note: nil, repeats: 3))
        XCTAssertEqual(reread.history.first?.note, "x")
        XCTAssertEqual(reread.blockedBy.count, 1)
        XCTAssertTrue(reread.blockedBy.first === other)
        XCTAssertEqual(reread.counts, ["a": 1, "b": 2])
        XCTAssertEqual((reread.extra?["nested"] as? [String: Any])?["a"] as? Int, 1)

        // Values as other 1.x apps wrote them: numbers for booleans, doubles for integers,
        // dates without milliseconds or with offsets, unpadded base64.
        let doc = try XCTUnwrap(db.document(withID: "hand-written"))
        try doc.putProperties(["type": "task", "checked": 1, "priority": 3.0, "created_at": "2015-04-30T17:45:34+02:00",
                               "photoThumbnail": "aGVsbG8", "tags": ["a", 7, "b"] as [Any], "due": ["2016-01-15T23:08:40.803Z", "junk"],
                               "estimate": "not a number", "reminder": ["at": "bad date", "repeats": 1] as [String: Any]])
        let handWritten = try XCTUnwrap(CBLModel.modelForDocument(doc) as? TodoTask)
        XCTAssertTrue(handWritten.checked)
        XCTAssertEqual(handWritten.priority, 3)
        XCTAssertEqual(handWritten.createdAt, Date(timeIntervalSince1970: 1_430_408_734))
        XCTAssertEqual(handWritten.photoThumbnail, Data("hello".utf8))
        XCTAssertEqual(handWritten.tags, ["a", "b"], "items of the wrong type are left out, as 1.x did")
        XCTAssertEqual(handWritten.due.count, 1)
        XCTAssertNil(handWritten.estimate, "a value of the wrong type reads as the default")
        XCTAssertNil(handWritten.reminder)
        XCTAssertEqual(handWritten.priority, 3)
    }

    /// A document written by a real iOS 1.4 app (`sqlite-cblite2/ios140`): its `date` came from
    /// `[CBLJSON JSONObjectWithDate:]`, the conversion `CBLModel` used for `NSDate` properties.
    func testReadsRealIOS14DocumentAndWritesDatesTheSameWay() throws {
        let root = try Fixtures.requireRoot()
        let source = root.appendingPathComponent("cbl1/sqlite-cblite2/ios140/iosdb.cblite2")
        try FileManager.default.copyItem(at: source, to: dir.url.appendingPathComponent("m/ios.cblite2"))
        let ios = try manager.existingDatabaseNamed("ios")

        final class FixtureDoc: CBLModel {
            @CBLProperty var date: Date?
            @CBLProperty var boolean: Bool
            @CBLProperty var number: Int
            @CBLProperty var foo: String?
        }
        ios.modelFactory?.registerClass(FixtureDoc.self, forDocumentType: "doc")
        let doc = try XCTUnwrap(ios.existingDocument(withID: "doc1"))
        let stored = try XCTUnwrap(doc["date"] as? String)
        XCTAssertEqual(stored, "2017-01-31T23:56:31.714Z")
        let model = try XCTUnwrap(CBLModel.modelForDocument(doc) as? FixtureDoc)
        XCTAssertTrue(model.boolean)
        XCTAssertEqual(model.number, 1)
        XCTAssertEqual(model.foo, "bar")
        let date = try XCTUnwrap(model.date)
        XCTAssertEqual(CBLJSON.jsonObject(with: date), stored, "the date writes back byte for byte")
        XCTAssertEqual(model.attachmentNamed("attach1")?.content, Data("attach1".utf8))

        // Saving an unrelated change keeps the date string and the attachment as they were.
        model.foo = "baz"
        try model.save()
        XCTAssertEqual(doc["date"] as? String, stored)
        XCTAssertEqual(doc.currentRevision?.attachmentNamed("attach1")?.content, Data("attach1".utf8))
        model.date = date
        XCTAssertFalse(model.needsSave, "setting an equal date is not a change")
    }

    /// ToDoLite documents written by the real 1.1 Android app (`legacy-cblite/android110-guest`,
    /// upgraded on open): the same shapes the iOS ToDoLite `CBLModel` classes (`List`, `Task` with
    /// `list_id`, `created_at`, an `image` attachment) read and wrote.
    func testReadsRealToDoLiteDocuments() throws {
        let root = try Fixtures.requireRoot()
        let source = root.appendingPathComponent("cbl1/legacy-cblite/android110-guest")
        let managerDir = dir.url.appendingPathComponent("legacy")
        try FileManager.default.createDirectory(at: managerDir, withIntermediateDirectories: true)
        for item in try FileManager.default.contentsOfDirectory(atPath: source.path) {
            try FileManager.default.copyItem(at: source.appendingPathComponent(item), to: managerDir.appendingPathComponent(item))
        }
        let legacyManager = try CBLManager(directory: managerDir.path)
        defer { legacyManager.close() }
        let guest = try legacyManager.existingDatabaseNamed("guest")
        register(guest)

        let taskDoc = try XCTUnwrap(guest.existingDocument(withID: "d3e80747-2568-47c8-81e8-a04ba1b5c5d4"))
        let task = try XCTUnwrap(CBLModel.modelForDocument(taskDoc) as? TodoTask)
        XCTAssertEqual(task.title, "TEST ITEM 1")
        XCTAssertFalse(task.checked)
        XCTAssertEqual(task.createdAt.map(CBLJSON.jsonObject(with:)), "2015-04-30T16:21:50.989Z")
        XCTAssertEqual(task.attachmentNamed("image")?.length, 5959)
        XCTAssertEqual(task.attachmentNamed("image")?.contentType, "image/jpg")
        let list = try XCTUnwrap(task.list)
        XCTAssertEqual(list.document?.documentID, "9e9686e5-0a9b-4ff0-9d94-36b6c5995825")
        XCTAssertEqual(list.title, "TEST LIST")
        XCTAssertEqual(list.members, [])
        XCTAssertEqual(list.type, "list")
        let tasks = try list.findInverse(ofRelation: "list_id", fromClass: TodoTask.self)
        XCTAssertEqual(tasks.count, 2)
        XCTAssertTrue(tasks.contains { $0 === task })

        // Check a task off as the app did: only `checked` changes in the new revision.
        let before = try XCTUnwrap(taskDoc.properties)
        task.checked = true
        try task.save()
        let after = try XCTUnwrap(taskDoc.properties)
        XCTAssertEqual(after["checked"] as? Bool, true)
        for key in ["created_at", "title", "type", "list_id"] {
            XCTAssertJSONEqual(after[key], before[key], key)
        }
        XCTAssertEqual(taskDoc.currentRevision?.attachmentNamed("image")?.length, 5959)
    }

    /// Data of a real pre-1.0 iOS app (`legacy-cblite/ios-people`, from couchbase-lite-ios' TestData):
    /// messages and comments referring to people and posts by document ID, `created_at` dates as
    /// ISO-8601 strings, a nested `body` object, `tags` arrays and a `picture` attachment — the
    /// shapes 1.x `CBLModel` properties map to.
    func testReadsRealIOSPeopleAppDocuments() throws {
        let root = try Fixtures.requireRoot()
        let source = root.appendingPathComponent("cbl1/legacy-cblite/ios-people")
        let managerDir = dir.url.appendingPathComponent("people")
        try FileManager.default.createDirectory(at: managerDir, withIntermediateDirectories: true)
        for item in try FileManager.default.contentsOfDirectory(atPath: source.path) {
            try FileManager.default.copyItem(at: source.appendingPathComponent(item), to: managerDir.appendingPathComponent(item))
        }
        let peopleManager = try CBLManager(directory: managerDir.path)
        defer { peopleManager.close() }
        let people = try peopleManager.existingDatabaseNamed("people")

        final class Person: CBLModel {
            @CBLProperty var first: String?
            @CBLProperty var last: String?
            @CBLProperty var nick: String?
            @CBLProperty var timestamp: Date?
        }
        struct Body: Codable, Equatable {
            var fmt: String
            var src: String
        }
        final class Message: CBLModel {
            @CBLProperty var title: String?
            @CBLProperty var author: Person?
            @CBLProperty("created_at") var createdAt: Date?
            @CBLProperty var body: Body?
            @CBLProperty var tags: [String]
        }
        final class Comment: CBLModel {
            @CBLProperty var author: Person?
            @CBLProperty var post: Message?
            @CBLProperty("created_at") var createdAt: Date?
            @CBLProperty var body: Body?
        }
        people.modelFactory?.registerClass(Person.self, forDocumentType: "person")
        people.modelFactory?.registerClass(Message.self, forDocumentType: "message")
        people.modelFactory?.registerClass(Comment.self, forDocumentType: "comment")

        let commentDoc = try XCTUnwrap(people.existingDocument(withID: "B17BDF9C-17D7-4A20-99C7-98DECBC5DBBD"))
        let comment = try XCTUnwrap(CBLModel.modelForDocument(commentDoc) as? Comment)
        XCTAssertEqual(comment.body, Body(fmt: "markdown", src: "First comment ever!"))
        XCTAssertEqual(comment.createdAt.map(CBLJSON.jsonObject(with:)), "2014-02-25T18:54:28.537Z")
        let post = try XCTUnwrap(comment.post)
        XCTAssertEqual(post.title, "Starting over")
        XCTAssertEqual(post.tags, ["beanbag"])
        XCTAssertEqual(post.createdAt.map(CBLJSON.jsonObject(with:)), "2014-02-23T23:56:09.728Z")
        let author = try XCTUnwrap(post.author)
        XCTAssertTrue(comment.author === author, "both references load the one model of the person document")
        XCTAssertEqual(author.nick, "snej")
        XCTAssertEqual(author.timestamp.map(CBLJSON.jsonObject(with:)), "2014-02-23T23:54:27.917Z")
        XCTAssertEqual(author.attachmentNamed("picture")?.length, 39730)
        XCTAssertEqual(author.attachmentNamed("picture")?.contentType, "image/jpeg")

        let comments = try post.findInverse(ofRelation: "post", fromClass: Comment.self)
        XCTAssertEqual(comments.count, 5)
        XCTAssertTrue(comments.contains { $0 === comment })

        // Written back unchanged: the stored JSON of every mapped property is what the app wrote.
        let before = try XCTUnwrap(commentDoc.properties)
        comment.body = Body(fmt: "markdown", src: "First comment ever! (edited)")
        try comment.save()
        let after = try XCTUnwrap(commentDoc.properties)
        for key in ["author", "post", "created_at", "type", "(signed)"] { XCTAssertJSONEqual(after[key], before[key], key) }
        XCTAssertJSONEqual(after["body"], ["fmt": "markdown", "src": "First comment ever! (edited)"])
    }

    // MARK: Saving semantics

    func testNeedsSaveRevertAndUnsavedModels() throws {
        let list = TodoList(forNewDocumentIn: db)
        try list.save()
        XCTAssertFalse(list.needsSave)
        list.title = "A"
        XCTAssertTrue(list.needsSave)
        XCTAssertEqual(db.unsavedModels.count, 1)
        list.revertChanges()
        XCTAssertFalse(list.needsSave)
        XCTAssertNil(list.title)
        XCTAssertTrue(db.unsavedModels.isEmpty)

        // Setting the same value is not a change; saving nothing writes nothing.
        list.title = "B"
        try list.save()
        let rev = list.document?.currentRevisionID
        list.title = "B"
        XCTAssertFalse(list.needsSave)
        try list.save()
        XCTAssertEqual(list.document?.currentRevisionID, rev)

        // nil removes the property.
        list.title = nil
        try list.save()
        XCTAssertNil(list.document?["title"])
        XCTAssertNotNil(list.document?["created_at"])

        // Undeclared properties through the 1.x accessors.
        list.setValue("kitchen", ofProperty: "room")
        list.setValue(Date(timeIntervalSince1970: 60), ofProperty: "touched")
        XCTAssertEqual(list.getValueOfProperty("room") as? String, "kitchen")
        try list.save()
        XCTAssertEqual(list.document?["touched"] as? String, "1970-01-01T00:01:00.000Z")
        XCTAssertEqual(list.value(forKey: "room") as? String, "kitchen")
    }

    func testSaveAllModelsSavesEveryChangedModelInOneTransaction() throws {
        let lists = (0..<3).map { i -> TodoList in
            let list = TodoList(forNewDocumentIn: db)
            list.title = "L\(i)"
            return list
        }
        XCTAssertEqual(db.unsavedModels.count, 3)
        var notifications = 0
        let token = db.addChangeListener { changes in notifications += 1; XCTAssertEqual(changes.count, 3) }
        try db.saveAllModels()
        db.removeChangeListener(token)
        XCTAssertEqual(notifications, 1, "one transaction, one notification")
        XCTAssertTrue(db.unsavedModels.isEmpty)
        XCTAssertEqual(db.documentCount, 3)
        XCTAssertTrue(lists.allSatisfy { !$0.needsSave && !$0.isNew })
    }

    func testAutosaveRunsShortlyAfterChangesAndAutosaveAllModelsFlushes() throws {
        let list = TodoList(forNewDocumentIn: db)
        list.autosaves = true
        list.title = "auto"
        list.owner = "me"      // changed together: saved together
        let deadline = Date().addingTimeInterval(10)
        while list.needsSave && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        XCTAssertFalse(list.needsSave)
        XCTAssertEqual(list.document?["title"] as? String, "auto")
        XCTAssertEqual(list.document?.currentRevisionID?.hasPrefix("1-"), true, "one revision for both changes")

        final class SlowList: CBLModel {
            @CBLProperty var title: String?
            override var autosaveDelay: TimeInterval { 30 }
        }
        let slow = SlowList(forNewDocumentIn: db)
        slow.autosaves = true
        slow.title = "later"
        let manual = TodoList(forNewDocumentIn: db)
        manual.title = "not autosaved"
        XCTAssertTrue(slow.needsSave)
        try db.autosaveAllModels()
        XCTAssertFalse(slow.needsSave)
        XCTAssertEqual(slow.document?["title"] as? String, "later")
        XCTAssertTrue(manual.needsSave, "autosaveAllModels saves only models that autosave")
        try db.saveAllModels()
        XCTAssertFalse(manual.needsSave)
    }

    func testExternalChangesShowThroughAndCallDidLoad() throws {
        let list = TodoList(forNewDocumentIn: db)
        list.title = "mine"
        try list.save()
        let loads = list.loadCount
        let doc = try XCTUnwrap(list.document)

        // Another writer changes the document: unchanged properties show the new values.
        list.owner = "unsaved owner"
        var props = try XCTUnwrap(doc.properties)
        props["title"] = "theirs"
        props["owner"] = "their owner"
        try doc.putProperties(props)
        XCTAssertEqual(list.loadCount, loads + 1)
        XCTAssertEqual(list.title, "theirs")
        XCTAssertEqual(list.owner, "unsaved owner", "unsaved changes win until saved")
        try list.save()
        XCTAssertEqual(doc["owner"] as? String, "unsaved owner")
        XCTAssertEqual(doc["title"] as? String, "theirs")
        XCTAssertEqual(list.loadCount, loads + 1, "the model's own save is not an external change")

        // Deleted elsewhere: the model drops its changes and detaches.
        list.title = "doomed"
        try doc.delete()
        XCTAssertNil(list.document)
        XCTAssertFalse(list.needsSave)
        XCTAssertTrue(db.unsavedModels.isEmpty)
    }

    func testOwnSavesAreNotExternalChangesWhenNotificationsAreQueued() throws {
        let queue = DispatchQueue(label: "notifications")
        manager.dispatchQueue = queue
        let list = TodoList(forNewDocumentIn: db)
        list.title = "queued"
        try list.save()
        list.title = "again"
        try list.save()
        queue.sync {}   // the queued notifications of both saves have been delivered
        XCTAssertEqual(list.loadCount, 0, "echoes of the model's own saves")
        XCTAssertFalse(list.isNew)

        try list.document!.update { rev in rev["owner"] = "someone"; return true }
        queue.sync {}
        XCTAssertEqual(list.loadCount, 1)
        XCTAssertEqual(list.owner, "someone")

        // Setting the database to nil deletes the document (1.x).
        let doc = try XCTUnwrap(list.document)
        list.database = nil
        queue.sync {}
        XCTAssertTrue(doc.isDeleted)
        XCTAssertNil(list.document)
        XCTAssertNil(list.database)
    }

    func testModelForDocumentIsOneObjectAcrossThreads() throws {
        let doc = try XCTUnwrap(db.document(withID: "shared"))
        try doc.putProperties(["type": "task", "title": "t"])
        // The models are kept alive: a document holds its model weakly, so a model nobody holds
        // may go, and the next lookup makes a new one (as in 1.x).
        let found = Locked2<[CBLModel]>([])
        DispatchQueue.concurrentPerform(iterations: 16) { _ in
            let model = CBLModel.modelForDocument(doc)
            nonisolated(unsafe) let keep = model!
            found.withLock { $0.append(keep) }
        }
        let models = found.withLock { $0 }
        XCTAssertEqual(Set(models.map(ObjectIdentifier.init)).count, 1)
        let model = try XCTUnwrap(TodoTask(for: doc))
        XCTAssertTrue(model === models[0])
        XCTAssertEqual(model.awakeCount, 1)

        // Concurrent setters and saves from many threads lose nothing.
        nonisolated(unsafe) let shared = model
        DispatchQueue.concurrentPerform(iterations: 8) { i in
            shared.setValue(i, ofProperty: "k\(i)")
            try? shared.save()
        }
        try model.save()
        for i in 0..<8 { XCTAssertEqual(doc["k\(i)"] as? Int, i) }
    }

    func testIDForNewDocumentAndFailableInitializers() throws {
        let profile = Profile(forNewDocumentIn: db)
        XCTAssertEqual(profile.document?.documentID, "p:anonymous")
        profile.name = "Zed"
        try profile.save()
        XCTAssertNil(profile.type, "no document type is registered for Profile")
        XCTAssertNil(CBLModel(for: profile.document!) as? TodoTask)
        XCTAssertTrue(Profile(for: profile.document!) === profile)

        let untyped = try XCTUnwrap(db.document(withID: "plain"))
        try untyped.putProperties(["x": 1])
        XCTAssertNil(CBLModel.modelForDocument(untyped), "no class for a document without a registered type")
        XCTAssertNotNil(Profile(for: untyped), "a subclass always instantiates itself")

        // A shared factory registration is the fallback of every database's factory.
        final class Note: CBLModel { @CBLProperty var text: String? }
        CBLModelFactory.sharedInstance().registerClass(Note.self, forDocumentType: "note-\(#line)")
        let noteType = try XCTUnwrap(CBLModelFactory.sharedInstance().documentType(for: Note.self))
        let note = Note(forNewDocumentIn: db)
        XCTAssertEqual(note.type, noteType)
        try note.save()
        try reopen()
        XCTAssertTrue(CBLModel.modelForDocument(db.document(withID: note.document!.documentID)!) is Note)
    }
}

/// The model of MIGRATING.md's before/after example, as written there (class names kept in a
/// namespace: a top-level `Task` would hide Swift's in this module).
enum MigratingExample {
    class List: CBLModel {
        @CBLProperty var title: String?
    }

    class Task: CBLModel {
        @CBLProperty var title: String?
        @CBLProperty var checked: Bool
        @CBLProperty var created_at: Date?
        @CBLProperty var list_id: List?
        @CBLProperty var tags: [String]?

        override func awakeFromInitializer() {
            if isNew { created_at = Date() }
        }
    }
}

final class MigratingExampleTests: XCTestCase {
    func testTheMigratingExampleWorksAsWritten() throws {
        let dir = TempDirectory()
        let manager = try CBLManager(directory: dir.url.appendingPathComponent("m").path)
        defer { manager.close() }
        let db = try manager.databaseNamed("example")
        typealias Task = MigratingExample.Task
        let list = MigratingExample.List(forNewDocumentIn: db)
        list.title = "Shopping"
        try list.save()

        db.modelFactory?.registerClass(Task.self, forDocumentType: "task")
        let task = Task(forNewDocumentIn: db)
        task.list_id = list
        try task.save()
        let same = Task(for: task.document!)
        XCTAssertTrue(same === task)

        let json = try XCTUnwrap(task.document?.properties)
        XCTAssertEqual(json["type"] as? String, "task")
        XCTAssertEqual(json["list_id"] as? String, list.document?.documentID)
        let created = try XCTUnwrap(json["created_at"] as? String)
        XCTAssertNotNil(created.range(of: #"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$"#, options: .regularExpression), created)
        XCTAssertNil(json["tags"])
        XCTAssertNil(json["checked"])
        XCTAssertNil(task.tags)
        task.tags = ["x"]
        task.checked = true
        try task.save()
        XCTAssertEqual(task.document?["tags"] as? [String], ["x"])
        XCTAssertEqual(task.document?["checked"] as? Bool, true)
        XCTAssertTrue(task.list_id === list)
    }
}

/// A tiny lock-guarded box for the concurrency test.
final class Locked2<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: T
    init(_ value: T) { self.value = value }
    func withLock<R>(_ body: (inout T) -> R) -> R { lock.lock(); defer { lock.unlock() }; return body(&value) }
}
