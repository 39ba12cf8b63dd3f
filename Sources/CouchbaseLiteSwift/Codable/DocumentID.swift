import Foundation

/// A model class that can be saved as a document (3.2.3 `DocumentEncodable`): it is `Encodable`
/// and has an `@DocumentID` property. Models are classes so that saving can assign the ID and
/// revision back to the very object the app holds.
public typealias DocumentEncodable = Encodable & AnyObject
/// A model class that can be read from a document (3.2.3 `DocumentDecodable`).
public typealias DocumentDecodable = Decodable & AnyObject
/// A model class that can be saved and read (3.2.3 `DocumentCodable`).
public typealias DocumentCodable = Codable & AnyObject

/// Marks the property of a model class that holds its document ID (3.2.3 `@DocumentID`):
///
///     class Task: Codable {
///         @DocumentID var id: String?
///         var title: String
///     }
///
/// The ID is not stored in the document's body. A model read with `Collection.document(id:as:)`
/// gets the document's ID and remembers the revision it was read at; `Collection.save(from:)`
/// generates an ID when it is nil and assigns the ID and the new revision back. The remembered
/// revision is what `save(from:concurrencyControl: .failOnConflict)` and the conflict handler
/// check; a model without one (new, or decoded from a query row) is saved over whatever revision
/// is current when it is saved.
///
/// Other coders (`JSONEncoder`, `JSONDecoder`) see the ID as an optional string; a missing key
/// decodes as nil.
@propertyWrapper
// @unchecked because `id`, `revision` and `refusedID` are only touched under `lock`.
public final class DocumentID: Codable, @unchecked Sendable {
    // The model may be saved on one thread and read on another; the lock keeps ID and revision
    // consistent with each other.
    private let lock = NSLock()
    private var id: String?
    private var revision: String?
    /// An ID set while the model was tied to a saved revision: refused (2.x/3.x trap there, and
    /// a setter cannot throw), and reported by the next save or delete through this model.
    private var refusedID: String??

    /// The document ID, nil until the model is first saved. Once the model is tied to a stored
    /// revision the ID cannot change (as in Couchbase Lite: a document's ID is fixed): a new one
    /// is ignored, and the next save or delete of the model throws `invalidParameter`.
    public var wrappedValue: String? {
        get { withLock { id } }
        set {
            withLock {
                guard revision == nil || newValue == id else {
                    refusedID = .some(newValue)
                    return
                }
                refusedID = nil
                id = newValue
            }
        }
    }

    /// `$id`: the wrapper itself, for its ``revisionID``.
    public var projectedValue: DocumentID { self }

    /// The revision the model was read at or last saved as; nil for a model not tied to one.
    public var revisionID: String? { withLock { revision } }

    /// A model with document ID `wrappedValue` (nil: generated when first saved).
    public init(wrappedValue: String?) {
        id = wrappedValue
    }

    init(id: String?, revisionID: String?) {
        self.id = id
        self.revision = revisionID
    }

    /// Outside the document coders: the ID as an optional string.
    public convenience init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        self.init(wrappedValue: container.decodeNil() ? nil : try container.decode(String.self))
    }

    /// Outside the document coders: the ID as an optional string.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let id = wrappedValue { try container.encode(id) } else { try container.encodeNil() }
    }

    /// Ties the model to `revisionID` of document `id` (after a save, delete or purge).
    func assign(id: String, revisionID: String?) {
        withLock {
            self.id = id
            self.revision = revisionID
            self.refusedID = nil
        }
    }

    /// The ID and revision, read together; throws when an ID change was refused (see `wrappedValue`).
    var snapshot: (id: String?, revisionID: String?) {
        get throws {
            try withLock {
                if let refused = refusedID {
                    throw CouchbaseLiteError(.invalidParameter, "Cannot change the document ID of a model tied to "
                                             + "saved document '\(id ?? "")' (to \(refused.map { "'\($0)'" } ?? "nil"))")
                }
                return (id, revision)
            }
        }
    }

    private func withLock<R>(_ body: () throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    /// The `@DocumentID` of `object` (its class or a superclass), found by reflection as 3.2.3 does.
    static func of(_ object: AnyObject) throws -> DocumentID {
        var mirror: Mirror? = Mirror(reflecting: object)
        while let current = mirror {
            for child in current.children {
                if let documentID = child.value as? DocumentID { return documentID }
            }
            mirror = current.superclassMirror
        }
        throw CouchbaseLiteError(.invalidParameter, "\(type(of: object)) has no @DocumentID property")
    }
}

extension KeyedDecodingContainer {
    /// Lets a synthesized `init(from:)` accept a missing ID key (a document body never has it).
    public func decode(_ type: DocumentID.Type, forKey key: Key) throws -> DocumentID {
        try decodeIfPresent(type, forKey: key) ?? DocumentID(wrappedValue: nil)
    }
}
