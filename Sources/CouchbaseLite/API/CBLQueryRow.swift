import Foundation
import JSONCore

/// A JSON value kept as text until first read.
// @unchecked because `state` is only touched under one of the shared `locks`.
final class LazyJSONValue: @unchecked Sendable {
    private enum State { case text([UInt8]), parsed(Any?) }
    // Only touched with `lock` held: the runtime exclusivity check per access is redundant.
    @exclusivity(unchecked) private var state: State
    /// Values share a few locks instead of each allocating its own: a query makes two values
    /// per row, and a lock per value cost more than the row's SQLite work.
    private static let locks: [NSLock] = (0..<32).map { _ in NSLock() }
    private var lock: NSLock { Self.locks[Int((UInt(bitPattern: ObjectIdentifier(self)) >> 4) & 31)] }

    init(text: [UInt8]) { state = .text(text) }
    init(value: Any?) { state = .parsed(value) }

    var value: Any? {
        let lock = self.lock
        lock.lock(); defer { lock.unlock() }
        return lockedValue()
    }

    /// The value (parsed on first use); called with the lock held.
    private func lockedValue() -> Any? {
        switch state {
        case .parsed(let v): return v
        case .text(let bytes):
            let v = Self.parseSimple(bytes) ?? (try? JSON.parse(bytes))
            state = .parsed(v)
            return v
        }
    }

    /// The value of the two commonest index texts without the general parser: a string of
    /// printable ASCII without escapes, and an integer that fits in `Int` (what `JSON.parse`
    /// returns for them). Nil for anything else.
    static func parseSimple(_ bytes: [UInt8]) -> Any? {
        bytes.withUnsafeBufferPointer { b -> Any? in
            let n = b.count
            guard n > 0 else { return nil }
            if b[0] == UInt8(ascii: "\"") {
                guard n >= 2, b[n - 1] == UInt8(ascii: "\"") else { return nil }
                for i in 1..<(n - 1) {
                    let c = b[i]
                    if c < 0x20 || c > 0x7E || c == UInt8(ascii: "\"") || c == UInt8(ascii: "\\") { return nil }
                }
                return String(decoding: UnsafeBufferPointer(rebasing: b[1..<(n - 1)]), as: UTF8.self)
            }
            let negative = b[0] == UInt8(ascii: "-")
            let start = negative ? 1 : 0
            let digits = n - start
            // At most 18 digits always fits; no leading zero (and no "-0", which JSON.parse may treat specially).
            guard digits >= 1, digits <= 18 else { return nil }
            if b[start] == UInt8(ascii: "0") && (digits > 1 || negative) { return nil }
            var magnitude = 0
            for i in start..<n {
                let d = b[i] &- UInt8(ascii: "0")
                guard d < 10 else { return nil }
                magnitude = magnitude &* 10 &+ Int(d)
            }
            return negative ? -magnitude : magnitude
        }
    }

    /// The value, or `isStar` when the text is `*` (one lock instead of two for a row's value).
    var valueUnlessStar: (isStar: Bool, value: Any?) {
        let lock = self.lock
        lock.lock()
        defer { lock.unlock() }
        if case .text(let bytes) = state, bytes.count == 1, bytes[0] == UInt8(ascii: "*") { return (true, nil) }
        return (false, lockedValue())
    }

    /// Compact JSON text (for equality and the REST API).
    var jsonText: [UInt8] {
        let lock = self.lock
        lock.lock(); defer { lock.unlock() }
        switch state {
        case .text(let bytes): return bytes
        case .parsed(let v): return (try? JSON.data(v ?? NSNull(), sortedKeys: true)) ?? []
        }
    }

    var isStar: Bool {
        let lock = self.lock
        lock.lock(); defer { lock.unlock() }
        if case .text(let bytes) = state { return bytes.count == 1 && bytes[0] == UInt8(ascii: "*") }
        return false
    }
}

/// One row of a query result: key, value, and the document it came from.
// @unchecked because its fields are lets; the lazily parsed key and value are `LazyJSONValue`s, which lock.
public class CBLQueryRow: NSObject, @unchecked Sendable {
    /// The database the row came from.
    public let database: CBLDatabase
    let keyStorage: LazyJSONValue
    let valueStorage: LazyJSONValue?
    /// The ID of the document that emitted this row (nil for reduced rows).
    public let sourceDocumentID: String?
    /// The sequence of the revision that emitted the row (0 for reduced rows).
    public let sequenceNumber: UInt64
    let emittingRevisionID: String?
    /// Prefetched body of the emitting revision (`prefetch` / include_docs).
    let prefetchedBody: [UInt8]?
    let conflicts: [String]?
    /// Why a reduced row has no value: its reduce function's output overflowed (CouchDB answers
    /// such a group as a row with `error` and `reason` instead of failing the query).
    public let reduceError: CBLDesignFunctionError?

    init(database: CBLDatabase, key: LazyJSONValue, value: LazyJSONValue?, sourceDocumentID: String?, sequence: Int64,
         revisionID: String? = nil, prefetchedBody: [UInt8]? = nil, conflicts: [String]? = nil,
         reduceError: CBLDesignFunctionError? = nil) {
        self.database = database
        self.keyStorage = key
        self.valueStorage = value
        self.sourceDocumentID = sourceDocumentID
        self.sequenceNumber = UInt64(max(sequence, 0))
        self.emittingRevisionID = revisionID
        self.prefetchedBody = prefetchedBody
        self.conflicts = conflicts
        self.reduceError = reduceError
    }

    /// The row's key.
    public var key: Any? { keyStorage.value }

    /// The key's JSON text as the index holds it (object members in their emitted order).
    package var keyJSON: [UInt8] { keyStorage.jsonText }

    /// The value's JSON text as the index holds it; nil for a row without a value or whose value
    /// is the whole document (`*`, expanded by ``value``).
    package var valueJSON: [UInt8]? {
        guard let valueStorage, !valueStorage.isStar else { return nil }
        return valueStorage.jsonText
    }

    /// The row's value; a value stored as `*` (the whole document) is expanded.
    public var value: Any? {
        guard let valueStorage else { return nil }
        let (isStar, value) = valueStorage.valueUnlessStar
        return isStar ? emittingRevisionProperties : value
    }

    /// The element at `index` of an array key; for a key that is not an array, the key itself at
    /// index 0 (as 1.x `keyAtIndex:`).
    public func key(at index: UInt) -> Any? {
        guard let array = key as? [Any] else { return index == 0 ? key : nil }
        guard index < array.count else { return nil }
        return array[Int(index)]
    }

    /// Deprecated 1.x spelling of ``key(at:)``.
    public func keyAtIndex(_ index: UInt) -> Any? { key(at: index) }

    /// The ID of the document this row describes: the `_id` in the value for linked documents
    /// (`emit(key, ["_id": otherID])`), else the emitting document.
    public var documentID: String? {
        if let linked = (valueStorage?.isStar == false ? value : nil) as? [String: Any], let id = linked["_id"] as? String {
            return id
        }
        return sourceDocumentID
    }

    /// The document this row describes.
    public var document: CBLDocument? {
        documentID.flatMap(database.document(withID:))
    }

    /// A linked document named by an object value (CouchDB's rule): `_id` names another document
    /// (its current revision, or `_rev`'s), `_rev` alone a revision of the emitting document.
    private var link: (documentID: String, revisionID: String?)? {
        guard valueStorage?.isStar == false, let linked = value as? [String: Any] else { return nil }
        let id = linked["_id"] as? String
        let rev = linked["_rev"] as? String
        guard id != nil || rev != nil, let documentID = id ?? sourceDocumentID else { return nil }
        return (documentID, rev)
    }

    /// The described document's revision ID.
    public var documentRevisionID: String? {
        if let link {
            return link.revisionID ?? database.document(withID: link.documentID)?.currentRevisionID
        }
        return emittingRevisionID ?? documentProperties?["_rev"] as? String
    }

    /// The described document's properties (prefetched when the query had `prefetch`): the
    /// emitting revision's, or a linked document's (see ``documentID``).
    public var documentProperties: [String: Any]? {
        if let link {
            guard let document = database.document(withID: link.documentID) else { return nil }
            if let rev = link.revisionID { return document.revision(withID: rev)?.properties }
            if link.documentID != sourceDocumentID { return document.properties }
        }
        if let body = prefetchedBody, let props = emittingRevisionProperties(body: body) { return props }
        return document?.properties
    }

    private var emittingRevisionProperties: [String: Any]? {
        if let body = prefetchedBody { return emittingRevisionProperties(body: body) }
        guard sequenceNumber > 0,
              let body = try? database.read({ try $0.body(sequence: Int64(sequenceNumber)) }) ?? nil else {
            return nil
        }
        return emittingRevisionProperties(body: body)
    }

    private func emittingRevisionProperties(body: [UInt8]) -> [String: Any]? {
        var props: [String: Any] = body.isEmpty ? [:] : ((try? JSON.parseObject(body)) ?? [:])
        props["_id"] = sourceDocumentID
        if let rev = emittingRevisionID { props["_rev"] = rev }
        return props
    }

    /// Other live leaf revisions of the document, if it is in conflict.
    public var conflictingRevisions: [CBLSavedRevision]? {
        guard let doc = document, let revs = try? doc.getConflictingRevisions(), revs.count > 1 else { return nil }
        return revs
    }

    /// The first element of an array key, or the key itself if it is not an array (1.x `key0`,
    /// for predicates).
    public var key0: Any? { key(at: 0) }
    /// The second element of an array key.
    public var key1: Any? { key(at: 1) }
    /// The third element of an array key.
    public var key2: Any? { key(at: 2) }
    /// The fourth element of an array key.
    public var key3: Any? { key(at: 3) }

    /// Key-value-coding style access for the properties apps and predicates read that way
    /// (`row.value(forKey: "key")`, `NSPredicate(format: "key2 CONTAINS[cd] %@", text)`).
    public func value(forKey key: String) -> Any? {
        switch key {
        case "key": return self.key
        case "value": return value
        case "key0": return key0
        case "key1": return key1
        case "key2": return key2
        case "key3": return key3
        case "documentID": return documentID
        case "sourceDocumentID": return sourceDocumentID
        case "document": return document
        case "documentProperties": return documentProperties
        case "documentRevisionID": return documentRevisionID
        case "sequenceNumber": return Int(clamping: sequenceNumber)
        case "conflictingRevisions": return conflictingRevisions
        default: return nil
        }
    }

    /// Rows are equal when key, value, document and sequence are (used to detect unchanged results).
    public override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? CBLQueryRow else { return false }
        if other === self { return true }
        return sourceDocumentID == other.sourceDocumentID && sequenceNumber == other.sequenceNumber
            && keyStorage.jsonText == other.keyStorage.jsonText
            && valueStorage?.jsonText == other.valueStorage?.jsonText
    }

    public override var hash: Int {
        var h = Hasher()
        h.combine(sourceDocumentID)
        h.combine(sequenceNumber)
        h.combine(keyStorage.jsonText)
        return h.finalize()
    }

    /// The row as CouchDB's REST API writes it.
    public var asJSONDictionary: [String: Any] {
        var d: [String: Any] = ["key": key ?? NSNull(), "value": value ?? NSNull()]
        if let id = sourceDocumentID { d["id"] = id }
        return d
    }

    public override var description: String {
        let k = String(decoding: keyStorage.jsonText, as: UTF8.self)
        let v = valueStorage.map { String(decoding: $0.jsonText, as: UTF8.self) } ?? "null"
        return "CBLQueryRow[key=\(k) value=\(v) id=\(sourceDocumentID ?? "-")]"
    }
}
