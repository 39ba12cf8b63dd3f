import Foundation

/// An object told when its document changes: a document's `modelObject` (1.x `CBLDocumentModel`).
public protocol CBLDocumentModel {
    /// Called after a change to `document` commits, before the document's listeners and notification.
    func document(_ document: CBLDocument, didChange change: CBLDatabaseChange)
}

/// The lookup behind `X(for: document)`: the document's model, created if it has none.
/// ``CBLModel`` adopts it; you do not need to.
public protocol CBLModelLookup {
    /// The document's model, creating one when the document has none; nil if the document
    /// already has a model of an incompatible class.
    static func modelForDocument(_ document: CBLDocument) -> Self?
}

extension CBLModelLookup {
    /// The document's model: the one it already has (one model object per document), else a new
    /// one. Called on ``CBLModel`` itself, the database's ``CBLModelFactory`` picks the class by
    /// the document's `type`; called on a subclass, that subclass is instantiated. Nil if the
    /// document already has a model of another class, or (on `CBLModel`) no class is registered.
    public init?(for document: CBLDocument) {
        guard let model = Self.modelForDocument(document) else { return nil }
        self = model
    }
}

/// A model object for a document, the 1.x `CBLModel`: subclass it and declare the document's
/// properties with ``CBLProperty`` (where 1.x used `@NSManaged`).
///
/// ```swift
/// final class TodoTask: CBLModel {
///     @CBLProperty var title: String?
///     @CBLProperty var checked = false
///     @CBLProperty("created_at") var createdAt: Date?    // stored as "2016-01-15T23:08:40.803Z"
///     @CBLProperty("list_id") var list: TodoList?        // stored as the list's document ID
/// }
///
/// db.modelFactory?.registerClass(TodoTask.self, forDocumentType: "task")
/// let task = TodoTask(forNewDocumentIn: db)              // type = "task"
/// task.title = "Buy milk"
/// try task.save()
/// let same = TodoTask(for: task.document!)               // the same object
/// ```
///
/// There is one model object per document while it is referenced: `X(for: doc)` returns the
/// document's model if it has one. Property values set on a model are kept until ``save()``
/// (or an autosave, see ``autosaves``) writes them as a new revision; reads see the unsaved
/// values first, then the document's current revision. Changes made to the document elsewhere
/// (another object, a pull replication) show through at once for properties the model has not
/// changed, and ``didLoadFromDocument()`` is called.
///
/// The model's state is guarded by a lock, so a model may be used from any thread; saves of one
/// model are serialised. Overridden hooks (``willSave(_:)``, ``propertiesToSave()``,
/// ``awakeFromInitializer()``…) run on the calling thread and must not save the database from
/// inside ``awakeFromInitializer()`` or ``didLoadFromDocument()``.
///
/// The class is not `Sendable` (so subclasses need not restate it); declare
/// `@unchecked Sendable` on a subclass whose own stored properties are thread-safe to pass
/// models between isolation domains.
open class CBLModel: NSObject, CBLDocumentModel, CBLModelLookup {
    struct State {
        var document: CBLDocument?
        var isNew = false
        var needsSave = false
        var autosaves = false
        /// Unsaved property values, by property name (a changed name absent here was set to nil).
        var values: [String: Any] = [:]
        /// The changed property names, each with the change counter at its last change.
        var changedNames: [String: UInt64] = [:]
        /// Unsaved attachment changes (nil body: removal), with the change counter.
        var changedAttachments: [String: (attachment: PendingAttachment?, version: UInt64)] = [:]
        var changeCounter: UInt64 = 0
        /// True while this model's revisions are being saved (their notifications are echoes).
        var saving = false
        /// Revisions this model saved whose change notification has not arrived yet.
        var ownRevisionIDs: [String] = []
        var changedTime = Date.timeIntervalSinceReferenceDate

        var hasChanges: Bool { !changedNames.isEmpty || !changedAttachments.isEmpty }
    }

    let state = Locked(State())
    /// Serialises saves of this model (taken inside the database's write transaction).
    let saveLock = NSLock()

    /// Designated initializer, called by ``CBLModelLookup/init(for:)`` and
    /// ``init(forNewDocumentIn:)``: do not call it directly (it would bypass the one model per
    /// document rule). A subclass that declares its own designated initializer must also
    /// implement this one, calling `super.init(document:orDatabase:)`.
    ///
    /// - Parameters:
    ///   - document: the document to model, or nil for a new document in `database`.
    ///   - database: where to create the new document when `document` is nil (with neither, the
    ///     model has no document and saving it throws 404).
    public required init(document: CBLDocument?, orDatabase database: CBLDatabase?) {
        super.init()
        if let document {
            attach(to: document)
            didLoadFromDocument()
        } else if let database {
            state.withLock { $0.isNew = true }
            attachNewDocument(in: database)
        }
        // Neither (1.x asserts): the model stays detached, reads its defaults, and `save()`
        // throws 404 (no document) instead of ending the app.
        awakeFromInitializer()
    }

    /// A model for a new, unsaved document in `database` (1.x `modelForNewDocumentInDatabase:`).
    /// The document is written by the first ``save()``; its ID comes from
    /// ``idForNewDocument(in:)``. If the database's factory has exactly one document type
    /// registered for this class, the model's `type` is set to it.
    public convenience init(forNewDocumentIn database: CBLDatabase) {
        self.init(document: nil, orDatabase: database)
        if let type = database.modelFactory?.documentType(for: Swift.type(of: self))
            ?? CBLModelFactory.sharedInstance().documentType(for: Swift.type(of: self)) {
            self.type = type
        }
    }

    /// The document's model, creating one if it has none (1.x `+modelForDocument:`). On `CBLModel`
    /// itself the database's ``CBLModelFactory`` picks the class from the document's `type`; on a
    /// subclass that subclass is instantiated. Nil if the document already has a model that is
    /// not of this class, or no class is registered for its type.
    public class func modelForDocument(_ document: CBLDocument) -> Self? {
        document.database.modelRegistry.withLock { () -> Self? in
            if let existing = document.modelObject {
                guard let model = existing as? Self else {
                    CBLLog.warning("Model", "\(self): \(document) already has the model \(existing) of another class")
                    return nil
                }
                return model
            }
            if ObjectIdentifier(self) == ObjectIdentifier(CBLModel.self) {
                guard let modelClass = document.database.modelClass(for: document) else {
                    CBLLog.warning("Model", "No model class registered for the type of \(document)")
                    return nil
                }
                return modelClass.init(document: document, orDatabase: nil) as? Self
            }
            return self.init(document: document, orDatabase: nil)
        }
    }

    deinit {
        if state.withLock({ $0.needsSave }) {
            CBLLog.warning("Model", "\(Swift.type(of: self)) deallocated with unsaved changes")
        }
    }

    // MARK: Document and database

    private func attach(to document: CBLDocument) {
        if let other = document.modelObject, other !== self {
            CBLLog.warning("Model", "\(document) already has the model \(other); replacing it")
        }
        state.withLock { $0.document = document }
        document.modelObject = self
    }

    private func attachNewDocument(in database: CBLDatabase) {
        let document = idForNewDocument(in: database).flatMap(database.document(withID:)) ?? database.createDocument()
        database.modelRegistry.withLock { attach(to: document) }
    }

    private func detachFromDocument() {
        let document = state.withLock { s -> CBLDocument? in
            defer { s.document = nil }
            return s.document
        }
        if let document, document.modelObject === self { document.modelObject = nil }
    }

    /// The document this model reads and writes; nil after the document was deleted.
    public var document: CBLDocument? { state.withLock { $0.document } }

    /// The database of the model's document. Setting a database on a model without a document
    /// gives it a new one there; setting nil deletes the document (1.x behaviour).
    public var database: CBLDatabase? {
        get { document?.database }
        set {
            if let newValue {
                guard document == nil else {
                    CBLLog.warning("Model", "\(self) already has a document; database not changed")
                    return
                }
                attachNewDocument(in: newValue)
            } else {
                do { try deleteDocument() } catch { CBLLog.warning("Model", "\(self): deleting its document failed: \(error)") }
                detachFromDocument()
            }
        }
    }

    /// True until the model's new document is first saved (or changed elsewhere).
    public var isNew: Bool { state.withLock { $0.isNew } }

    /// Seconds since the document was last changed by someone else (a pull replication, another
    /// object), or since the model was created.
    public var timeSinceExternallyChanged: TimeInterval {
        Date.timeIntervalSinceReferenceDate - state.withLock { $0.changedTime }
    }

    /// Resets ``timeSinceExternallyChanged`` to zero.
    public func markExternallyChanged() {
        state.withLock { $0.changedTime = Date.timeIntervalSinceReferenceDate }
    }

    // MARK: Hooks for subclasses

    /// Called at the end of every initialization, after the document is attached (and, for a
    /// model of an existing document, after ``didLoadFromDocument()``). Override to set up
    /// instance state; `isNew` tells a new document from an existing one.
    open func awakeFromInitializer() {}

    /// Called when the model is created for an existing document and after the document changed
    /// elsewhere. Override to refresh derived state.
    open func didLoadFromDocument() {}

    /// The ID for a new model's document; nil (the default) generates one.
    open func idForNewDocument(in database: CBLDatabase) -> String? { nil }

    /// The database in which a model-valued property's document ID is looked up (default: the
    /// model's own). Override when a property refers to a document of another database.
    open func databaseForModelProperty(_ propertyName: String) -> CBLDatabase? { database }

    /// Called before the model's changes are saved, with the names of the changed properties
    /// (nil when the document is being deleted). May set more properties.
    open func willSave(_ changedPropertyNames: Set<AnyHashable>?) {}

    // MARK: Change notifications

    /// Called when the model's document changes. A change saved by this model is ignored; any
    /// other makes the model not new, and then either detaches the model (the document was deleted
    /// or purged: unsaved changes are dropped and ``document`` becomes nil) or calls
    /// ``didLoadFromDocument()``. Unsaved changes to other properties are kept.
    open func document(_ document: CBLDocument, didChange change: CBLDatabaseChange) {
        let isEcho = state.withLock { s -> Bool in
            guard s.document === document else { return true }
            if let index = s.ownRevisionIDs.firstIndex(of: change.revisionID) {
                s.ownRevisionIDs.remove(at: index)
                return true
            }
            return s.saving
        }
        if isEcho { return }
        let gone = change.isPurge || (change.isCurrentRevision && change.isDeletion)
        let wasUnsaved = state.withLock { s -> Bool in
            s.isNew = false
            s.changedTime = Date.timeIntervalSinceReferenceDate
            guard gone else { return false }
            let wasUnsaved = s.needsSave
            s.values = [:]
            s.changedNames = [:]
            s.changedAttachments = [:]
            s.needsSave = false
            return wasUnsaved
        }
        if gone {
            if wasUnsaved { document.database.modelRegistry.setUnsaved(self, false) }
            detachFromDocument()
        } else {
            didLoadFromDocument()
        }
    }

    // MARK: Reading and writing properties

    /// A property's value: the unsaved value if the model changed it, else the document's
    /// (for a new model, nil until set). The value is as stored, not converted (a date is its
    /// ISO-8601 string), except values set with ``setValue(_:ofProperty:)`` and not yet saved.
    open func getValueOfProperty(_ property: String) -> Any? {
        currentValue(ofProperty: property)
    }

    /// Sets a property (nil removes it), marking the model as needing a save if the value differs.
    /// Values need not be JSON: dates, data, URLs, decimals, models and `Encodable` values are
    /// converted as ``CBLProperty`` converts them when the model is saved. Always returns true (1.x
    /// returned a BOOL).
    @discardableResult
    open func setValue(_ value: Any?, ofProperty property: String) -> Bool {
        let newValue = value.flatMap(PropertyCoding.unwrapped)
        if PropertyCoding.same(newValue, getValueOfProperty(property)) { return true }
        state.withLock { s in
            s.changeCounter += 1
            s.changedNames[property] = s.changeCounter
            s.values[property] = newValue
        }
        markNeedsSave()
        return true
    }

    /// The value a ``CBLProperty`` reads: as ``getValueOfProperty(_:)``, without dynamic dispatch.
    func currentValue(ofProperty property: String) -> Any? {
        let (value, document) = state.withLock { s -> (Any?, CBLDocument?) in
            if let value = s.values[property] { return (value, nil) }
            if s.isNew || s.changedNames[property] != nil { return (nil, nil) }
            return (nil, s.document)
        }
        return value ?? document?.property(forKey: property)
    }

    // MARK: Saving state

    /// True if the model has changes not saved yet.
    public var needsSave: Bool { state.withLock { $0.needsSave } }

    /// Whether changes are saved automatically, shortly after the first one (default false).
    ///
    /// 1.x saved on the run loop after the current event; here the save runs on a serial queue
    /// of the database after ``autosaveDelay`` (at least 50 ms, so changes made together are saved
    /// together). ``CBLDatabase/autosaveAllModels()`` runs pending autosaves at once; call it
    /// before closing the database.
    public var autosaves: Bool {
        get { state.withLock { $0.autosaves } }
        set {
            let schedule = state.withLock { s -> Bool in
                defer { s.autosaves = newValue }
                return newValue && !s.autosaves && s.needsSave
            }
            if schedule { scheduleAutosave() }
        }
    }

    /// How long after the first change an autosave waits (default 0: the next turn of the
    /// autosave queue, at least 50 ms later). Override to batch more changes.
    open var autosaveDelay: TimeInterval { 0 }

    /// Marks the model as having unsaved changes: it joins the database's unsaved models and,
    /// if ``autosaves``, an autosave is scheduled. Property setters call it; call it yourself
    /// when ``propertiesToSave()`` depends on state of your own.
    open func markNeedsSave() {
        let (wasNeeded, autosaves, document) = state.withLock { s -> (Bool, Bool, CBLDocument?) in
            defer { s.needsSave = true }
            return (s.needsSave, s.autosaves, s.document)
        }
        guard !wasNeeded, let document else { return }
        document.database.modelRegistry.setUnsaved(self, true)
        if autosaves { scheduleAutosave() }
    }

    /// The minimum autosave delay (Linux has no run loop turn to wait for).
    static let minimumAutosaveDelay: TimeInterval = 0.05

    func scheduleAutosave() {
        guard let database else { return }
        let delay = max(autosaveDelay, CBLModel.minimumAutosaveDelay)
        nonisolated(unsafe) let model = self
        database.modelRegistry.autosaveQueue.asyncAfter(deadline: .now() + delay) {
            guard model.autosaves, model.needsSave else { return }
            do {
                try model.save()
            } catch {
                CBLLog.warning("Model", "\(model): autosave failed: \(error)")
            }
        }
    }

    // MARK: What is saved

    /// The properties the next save writes: the document's current properties (with `_id`,
    /// `_rev`, `_attachments`) with the model's changes applied, values converted to JSON
    /// (dates as ISO-8601 strings, data as base64, models as document IDs). Override to add or
    /// adjust properties, starting from `super.propertiesToSave()`.
    open func propertiesToSave() -> [AnyHashable: Any] {
        let (document, values, names, attachments) = state.withLock { s in
            (s.document, s.values, s.changedNames, s.changedAttachments)
        }
        var properties: [String: Any] = document?.properties ?? [:]
        if properties.isEmpty, let document { properties["_id"] = document.documentID }
        for name in names.keys {
            properties[name] = values[name].map(PropertyCoding.externalize)
        }
        var stubs = properties["_attachments"] as? [String: Any] ?? [:]
        for (name, change) in attachments {
            guard let pending = change.attachment else {
                stubs[name] = nil
                continue
            }
            var meta: [String: Any] = ["follows": true]
            if let type = pending.contentType { meta["content_type"] = type }
            if case .data(let data) = pending.body { meta["length"] = data.count }
            stubs[name] = meta
        }
        properties["_attachments"] = stubs.isEmpty ? nil : stubs
        return properties
    }

    /// The properties of the tombstone ``deleteDocument()`` saves: by default `_deleted` and the
    /// current `_rev`. Override to keep properties in the tombstone (a `type` for sync filters).
    open func propertiesToSaveForDeletion() -> [AnyHashable: Any] {
        var properties: [String: Any] = ["_deleted": true]
        properties["_rev"] = document?.currentRevisionID
        return properties
    }

    // MARK: Key-value coding

    /// Key-value coding as predicates and 1.x code use it: `document`, `database`, `isNew`,
    /// `needsSave`, `type`, else the document property of that name (``getValueOfProperty(_:)``).
    open func value(forKey key: String) -> Any? {
        switch key {
        case "document": return document
        case "database": return database
        case "isNew": return isNew
        case "needsSave": return needsSave
        case "autosaves": return autosaves
        case "attachmentNames": return attachmentNames
        default: return getValueOfProperty(key)
        }
    }

    /// Key-value coding setter: sets the document property of that name (``setValue(_:ofProperty:)``).
    open func setValue(_ value: Any?, forKey key: String) {
        setValue(value, ofProperty: key)
    }

    // MARK: Description

    open override var description: String {
        let id = document?.abbreviatedID ?? "no document"
        return "\(Swift.type(of: self))[\(id)]"
    }
}
