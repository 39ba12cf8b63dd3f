import Foundation
import JSONCore
import Synchronization


/// A revision of a document: the common base of ``CBLSavedRevision`` and ``CBLUnsavedRevision``.
///
/// `properties` is declared in ``CBLRevisionProperties`` (a `[String: Any]?` on every revision)
/// rather than here, so that ``CBLUnsavedRevision`` can also offer 1.x's `NSMutableDictionary`
/// under the same name: Swift lets a class member and a protocol-extension member share a name
/// with different types, not an override.
// @unchecked because `document` is a let of a thread-safe class; subclasses guard their own state.
public class CBLRevision: NSObject, CBLRevisionProperties, @unchecked Sendable {
    /// The document this is a revision of.
    public let document: CBLDocument
    /// The database the document belongs to.
    public var database: CBLDatabase { document.database }

    init(document: CBLDocument) {
        self.document = document
    }

    /// The revision ID (nil for an unsaved revision).
    public var revisionID: String? { nil }
    /// True if this revision marks the document as deleted.
    public var isDeletion: Bool { false }
    /// True if this revision is a deletion, or its document was purged (1.x `isGone`).
    public var isGone: Bool { isDeletion }
    /// The properties as a Swift dictionary (what ``CBLRevisionProperties/properties`` reads).
    var propertiesSnapshot: [String: Any]? { nil }
    /// Replaces the properties (unsaved revisions only; a saved revision is immutable).
    func replaceProperties(_ newValue: [String: Any]?) {}
    /// The sequence number of this revision (0 if unsaved).
    public var sequence: Int64 { 0 }

    /// The properties without the special ones whose names start with `_`.
    public var userProperties: [String: Any]? {
        propertiesSnapshot?.filter { !$0.key.hasPrefix("_") }
    }

    /// The value of one property.
    public func property(forKey key: String) -> Any? { propertiesSnapshot?[key] }

    /// Deprecated 1.x spelling of ``property(forKey:)``.
    public func propertyForKey(_ key: String) -> Any? { property(forKey: key) }

    /// Reads one property (`rev["title"]`).
    public subscript(key: String) -> Any? { property(forKey: key) }

    /// The ID of the parent revision.
    public var parentRevisionID: String? { nil }

    /// The parent revision, if it is still in the database.
    public var parentRevision: CBLSavedRevision? {
        guard let parentID = parentRevisionID else { return nil }
        return document.revision(withID: parentID)
    }

    // MARK: Attachments

    var attachmentMetadata: [String: Any]? { propertiesSnapshot?["_attachments"] as? [String: Any] }

    /// The names of all attachments, sorted.
    public var attachmentNames: [String]? {
        attachmentMetadata.map { $0.keys.sorted() }
    }

    /// The attachment with this name, or nil.
    public func attachmentNamed(_ name: String) -> CBLAttachment? {
        guard let meta = attachmentMetadata?[name] as? [String: Any] else { return nil }
        return CBLAttachment(revision: self, name: name, metadata: meta)
    }

    /// All attachments, sorted by name.
    public var attachments: [CBLAttachment]? {
        attachmentNames?.compactMap(attachmentNamed)
    }

    /// The history of this revision, oldest first, ending with this revision (1.x `getRevisionHistory:`).
    public func getHistory() throws -> [CBLSavedRevision] { [] }

    /// Same as ``getHistory()``.
    public func getRevisionHistory() throws -> [CBLSavedRevision] { try getHistory() }
}

/// The data of a stored revision, shared by every `CBLSavedRevision` object for it and cached by
/// its `CBLDocument`. It holds no reference to the document, so caching it creates no cycle.
// @unchecked because the lazily loaded body (`state`) and the lazily made `1-<hex>` string are only touched under its lock; the identity fields are lets.
final class RevisionBody: @unchecked Sendable {
    let docID: String
    let sequence: Int64
    let deleted: Bool

    /// The revision ID. A new document's first revision (what a bulk insert makes) keeps only its
    /// digest; its 34-character `1-<hex>` string is made on first use (most are never asked for).
    var revID: String {
        switch identity {
        case .known(let revID):
            return revID
        case .firstGeneration:
            return lock.withLock { _ in revIDHoldingLock() }
        }
    }

    /// ``revID`` for callers already holding `lock`.
    private func revIDHoldingLock() -> String {
        switch identity {
        case .known(let revID):
            return revID
        case .firstGeneration(let digest):
            if let firstGenerationText { return firstGenerationText }
            let text = digest.firstGenerationID
            firstGenerationText = text
            return text
        }
    }
    private enum Identity {
        case known(String)
        case firstGeneration(RevisionDigest)
    }
    private let identity: Identity
    /// `1-<hex>` once made (guarded by `lock`).
    private var firstGenerationText: String?

    private enum State {
        case unloaded
        case missing
        case bytes([UInt8])
        /// The properties the app saved, before `_id`/`_rev`/`_deleted` are added (done on first read).
        case saved([String: Any])
        case parsed([String: Any])
    }
    /// Guards `state` (inline, no separate allocation: one body is made per save and per read).
    private let lock = Mutex(())
    private var state: State

    init(docID: String, revID: String, sequence: Int64, deleted: Bool, body: [UInt8]?, properties: [String: Any]?,
         propertiesNeedSpecialKeys: Bool = false, bodyMissing: Bool = false) {
        self.docID = docID
        self.identity = .known(revID)
        self.sequence = sequence
        self.deleted = deleted
        if let properties {
            state = propertiesNeedSpecialKeys ? .saved(properties) : .parsed(properties)
        } else if let body {
            state = .bytes(body)
        } else {
            state = bodyMissing ? .missing : .unloaded
        }
    }

    /// A new document's first revision, just saved: live, its ID `1-<digest>`, its properties
    /// those the app saved (`_id`/`_rev` are added on first read).
    init(docID: String, firstGenerationDigest digest: RevisionDigest, sequence: Int64, savedProperties: [String: Any]) {
        self.docID = docID
        self.identity = .firstGeneration(digest)
        self.sequence = sequence
        self.deleted = false
        state = .saved(savedProperties)
    }

    convenience init(_ stored: StoredRevision, bodyMissing: Bool = false) {
        self.init(docID: stored.docID, revID: stored.revID, sequence: stored.sequence, deleted: stored.deleted,
                  body: stored.body, properties: nil, bodyMissing: bodyMissing)
    }

    /// The public properties; `load` fetches the stored bytes when they were not loaded yet.
    func properties(load: () -> [UInt8]?) -> [String: Any]? {
        var result: [String: Any]?
        lock.withLock { _ in result = loadProperties(load: load) }
        return result
    }

    private func loadProperties(load: () -> [UInt8]?) -> [String: Any]? {
        switch state {
        case .parsed(let props):
            return props
        case .saved(let saved):
            let props = addSpecialKeys(saved)
            state = .parsed(props)
            return props
        case .missing:
            return nil
        case .bytes(let bytes):
            return parse(bytes)
        case .unloaded:
            guard let bytes = load() else {
                state = .missing
                return nil
            }
            return parse(bytes)
        }
    }

    private func parse(_ bytes: [UInt8]) -> [String: Any]? {
        let props: [String: Any]?
        if bytes.isEmpty {
            props = addSpecialKeys([:])
        } else {
            props = (try? JSON.parseObject(bytes, extraCapacity: 3)).map(addSpecialKeys)
        }
        state = props.map(State.parsed) ?? .missing
        return props
    }

    /// Rebuilds public properties from a stored body: add `_id`, `_rev`, `_deleted` (spec 2.6).
    private func addSpecialKeys(_ body: [String: Any]) -> [String: Any] {
        var props = body
        // Stored bodies have none of these (spec 2.6); only look when some key starts with `_`.
        if CBLDatabase.hasSpecialKeys(props) {
            for key in CBLDatabase.strippedSpecialKeys where props[key] != nil { props[key] = nil }
        }
        props["_id"] = docID
        props["_rev"] = revIDHoldingLock()
        if deleted { props["_deleted"] = true }
        return props
    }
}

/// A revision stored in the database (immutable).
// @unchecked because it adds only `data`, a let of the thread-safe `RevisionBody`.
public final class CBLSavedRevision: CBLRevision, @unchecked Sendable {
    let data: RevisionBody
    private var revID: String { data.revID }
    private var seq: Int64 { data.sequence }

    init(document: CBLDocument, data: RevisionBody) {
        self.data = data
        super.init(document: document)
    }

    convenience init(document: CBLDocument, revID: String, sequence: Int64, deleted: Bool, body: [UInt8]?,
                     properties: [String: Any]?, propertiesNeedSpecialKeys: Bool = false) {
        self.init(document: document, data: RevisionBody(
            docID: document.documentID, revID: revID, sequence: sequence, deleted: deleted, body: body,
            properties: properties, propertiesNeedSpecialKeys: propertiesNeedSpecialKeys))
    }

    /// From a stored row; `stored.body == nil` means "not loaded" unless `bodyMissing`.
    convenience init(document: CBLDocument, stored: StoredRevision, bodyMissing: Bool = false) {
        self.init(document: document, data: RevisionBody(stored, bodyMissing: bodyMissing))
    }

    public override var revisionID: String? { revID }
    public override var isDeletion: Bool { data.deleted }
    public override var sequence: Int64 { seq }

    /// True if the body is still available (not pruned or compacted away).
    public var propertiesAvailable: Bool { propertiesSnapshot != nil }

    override var propertiesSnapshot: [String: Any]? {
        data.properties { [database, seq] in
            guard seq > 0 else { return nil }
            return (try? database.read { try $0.body(sequence: seq) }) ?? nil
        }
    }

    /// Two objects for the same revision of the same document are equal.
    public override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? CBLSavedRevision else { return false }
        return other.data.revID == data.revID && other.document.documentID == document.documentID
            && other.database === database
    }

    public override var hash: Int { data.revID.hashValue ^ document.documentID.hashValue }

    public override var parentRevisionID: String? {
        let history = try? database.read { store -> [String] in
            guard let numericID = try store.numericID(of: document.documentID),
                  let sequence = try sequenceInStore(store, numericID: numericID) else { return [] }
            return try store.historyRevIDs(docID: document.documentID, numericID: numericID, sequence: sequence)
        }
        guard let history, history.count > 1 else { return nil }
        return history[1]
    }

    private func sequenceInStore(_ store: SQLiteStore, numericID: Int64) throws -> Int64? {
        if seq > 0 { return seq }
        return try store.revision(docID: document.documentID, numericID: numericID, revID: revID, withBody: false)?.sequence
    }

    public override func getHistory() throws -> [CBLSavedRevision] {
        let stored = try database.read { store -> [StoredRevision] in
            guard let numericID = try store.numericID(of: document.documentID),
                  let sequence = try sequenceInStore(store, numericID: numericID) else { return [] }
            return try store.history(docID: document.documentID, numericID: numericID, sequence: sequence)
        }
        return stored.reversed().map { $0.revID == revID ? self : CBLSavedRevision(document: document, stored: $0) }
    }

    /// A new unsaved revision whose parent is this one, with a copy of its properties.
    public func createRevision() -> CBLUnsavedRevision {
        CBLUnsavedRevision(document: document, parent: self)
    }

    /// Saves a new revision with these properties, child of this one.
    @discardableResult
    public func createRevision(withProperties properties: [String: Any]?) throws -> CBLSavedRevision {
        try document.putProperties(properties ?? [:], prevRevID: revID, allowConflict: false)
    }

    /// Deletes the document by saving a tombstone child of this revision.
    @discardableResult
    public func deleteDocument() throws -> CBLSavedRevision {
        try database.putRevision(docID: document.documentID, prevRevID: revID, properties: [:], deleting: true,
                                 allowConflict: false, document: document)
    }

    public override var description: String { "CBLSavedRevision[\(document.documentID)/\(revID)]" }
}

/// A new revision being built; `save()` stores it.
// @unchecked because its state is in `Locked`; `properties` is 1.x's mutable dictionary, which (as in 1.x) one thread edits at a time.
public final class CBLUnsavedRevision: CBLRevision, @unchecked Sendable {
    private struct State {
        var isDeletion = false
        var pendingAttachments: [String: PendingAttachment?] = [:]
    }
    private let state: Locked<State>
    private let parentID: String?
    /// The properties, owned by the revision and handed out as is (1.x's `NSMutableDictionary`):
    /// edits through any reference to it are what `save()` stores. Guarded by `state`'s lock
    /// for the revision's own accesses.
    private let storage: NSMutableDictionary
    /// False after `properties = nil` (the storage is then empty and reads as nil).
    private var hasProperties = true

    init(document: CBLDocument, parent: CBLSavedRevision?) {
        parentID = parent?.revisionID
        var initial = State()
        initial.isDeletion = parent?.isDeletion ?? false
        state = Locked(initial)
        storage = NSMutableDictionary()
        storage.addEntries(from: parent?.properties ?? ["_id": document.documentID])
        super.init(document: document)
    }

    public override var parentRevisionID: String? { parentID }

    /// Whether saving this revision deletes the document.
    public override var isDeletion: Bool {
        get { state.withLock { $0.isDeletion } }
        set { state.withLock { $0.isDeletion = newValue } }
    }

    /// The properties to save (special `_` keys included) as the mutable dictionary the
    /// revision owns, as in 1.x: `let p = rev.properties; p?.setValue(x, forKey: "k")` edits
    /// what `save()` stores. Read or assigned as a `[String: Any]`, the same name is
    /// ``CBLRevisionProperties/properties`` (a copy; assigning replaces the contents).
    public var properties: NSMutableDictionary? {
        state.withLock { _ in hasProperties ? storage : nil }
    }

    override var propertiesSnapshot: [String: Any]? {
        state.withLock { _ in hasProperties ? Self.dictionary(storage) : nil }
    }

    override func replaceProperties(_ newValue: [String: Any]?) {
        state.withLock { _ in
            storage.removeAllObjects()
            if let newValue { storage.addEntries(from: newValue) }
            hasProperties = newValue != nil
        }
    }

    /// The storage as a Swift dictionary (values come back as Foundation bridges them:
    /// numbers as `NSNumber`, which JSONCore writes by their type and `as? Int` reads).
    private static func dictionary(_ storage: NSMutableDictionary) -> [String: Any] {
        // The bridging cast also turns nested NSDictionary/NSArray values back into Swift ones.
        if let bridged = storage as? [String: Any] { return bridged }
        var out: [String: Any] = [:]
        out.reserveCapacity(storage.count)
        for (key, value) in storage {
            guard let key = key as? String else { continue }
            out[key] = value
        }
        return out
    }

    /// The properties without `_`-prefixed keys; setting keeps the special ones already present.
    public override var userProperties: [String: Any]? {
        get { propertiesSnapshot?.filter { !$0.key.hasPrefix("_") } }
        set {
            state.withLock { _ in
                for key in storage.allKeys {
                    if let name = key as? String, !name.hasPrefix("_") { storage.removeObject(forKey: name) }
                }
                if let newValue { storage.addEntries(from: newValue) }
                hasProperties = true
            }
        }
    }

    /// Reads or writes one property (`rev["title"] = "x"`); assigning nil removes it.
    public override subscript(key: String) -> Any? {
        get { propertiesSnapshot?[key] }
        set { setValue(newValue, ofProperty: key) }
    }

    /// Sets (or with nil, removes) one property.
    public func setValue(_ value: Any?, ofProperty key: String) {
        state.withLock { _ in
            if let value { storage[key] = value } else { storage.removeObject(forKey: key) }
            hasProperties = true
        }
    }

    /// 1.x `setObject:forKeyedSubscript:` spelling.
    public func setObject(_ value: Any?, forKeyedSubscript key: String) { setValue(value, ofProperty: key) }

    // MARK: Attachments

    override var attachmentMetadata: [String: Any]? {
        let stored = propertiesSnapshot?["_attachments"] as? [String: Any]
        return state.withLock { state in
            var meta = stored ?? [:]
            for (name, pending) in state.pendingAttachments {
                if let pending {
                    var m: [String: Any] = ["follows": true]
                    if let type = pending.contentType { m["content_type"] = type }
                    if case .data(let d) = pending.body { m["length"] = d.count }
                    meta[name] = m
                } else {
                    meta[name] = nil
                }
            }
            return meta.isEmpty ? nil : meta
        }
    }

    public override func attachmentNamed(_ name: String) -> CBLAttachment? {
        let pending = state.withLock { $0.pendingAttachments[name] }
        if let pending {
            guard let pending else { return nil }
            return CBLAttachment(revision: self, name: name, pending: pending)
        }
        return super.attachmentNamed(name)
    }

    /// Adds or replaces an attachment with in-memory content (nil content removes it).
    public func setAttachmentNamed(_ name: String, withContentType contentType: String?, content: Data?) {
        state.withLock { state in
            state.pendingAttachments[name] = content.map { PendingAttachment(contentType: contentType, body: .data($0)) }
        }
    }

    /// Adds or replaces an attachment whose content is read from a file when the revision is saved.
    public func setAttachmentNamed(_ name: String, withContentType contentType: String?, contentURL: URL) {
        state.withLock { state in
            state.pendingAttachments[name] = PendingAttachment(contentType: contentType, body: .file(contentURL))
        }
    }

    /// Removes an attachment.
    public func removeAttachmentNamed(_ name: String) {
        state.withLock { state in
            state.pendingAttachments[name] = .some(nil)
        }
    }

    /// Saves the revision; throws 409 if its parent is no longer the current revision.
    @discardableResult
    public func save() throws -> CBLSavedRevision {
        try save(allowConflict: false)
    }

    /// Saves the revision even if that creates a conflict.
    @discardableResult
    public func saveAllowingConflict() throws -> CBLSavedRevision {
        try save(allowConflict: true)
    }

    private func save(allowConflict: Bool) throws -> CBLSavedRevision {
        let snapshot = state.withLock { $0 }
        var props = propertiesSnapshot ?? [:]
        props["_rev"] = nil
        if snapshot.isDeletion { props["_deleted"] = true }
        return try database.putRevision(docID: document.documentID, prevRevID: parentID, properties: props,
                                        deleting: snapshot.isDeletion, allowConflict: allowConflict,
                                        pendingAttachments: snapshot.pendingAttachments, document: document)
    }

    public override var description: String { "CBLUnsavedRevision[\(document.documentID) parent \(parentID ?? "-")]" }
}

/// Where every revision's `properties` is declared, as a Swift dictionary: the properties
/// including `_id`, `_rev` and `_attachments`, nil if unavailable. On a ``CBLUnsavedRevision``
/// a class member of the same name also offers them as 1.x's `NSMutableDictionary`; Swift
/// picks whichever the expression needs, and both read and write the same storage.
public protocol CBLRevisionProperties: AnyObject {}

extension CBLRevisionProperties where Self: CBLRevision {
    /// The revision's properties, including `_id`, `_rev` and `_attachments`; nil if unavailable.
    /// Assigning replaces an unsaved revision's properties (a saved revision ignores it).
    public var properties: [String: Any]? {
        get { propertiesSnapshot }
        set { replaceProperties(newValue) }
    }
}

#if !canImport(ObjectiveC)
extension NSMutableDictionary {
    /// Sets (or with nil, removes) a value, as Apple's `NSMutableDictionary.setValue(_:forKey:)`
    /// does (swift-corelibs-foundation has no key-value coding): 1.x code edits an unsaved
    /// revision's properties this way.
    public func setValue(_ value: Any?, forKey key: String) {
        if let value { self[key] = value } else { removeObject(forKey: key) }
    }
}
#endif
