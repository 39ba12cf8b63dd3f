import Foundation

// `Codable` on the 1.x side: documents, revisions and query rows decode into Swift types, and
// `Encodable` values are saved as document properties. Dates are ISO-8601 strings, `Data` is
// base64, as `CBLModel` stored them (see `CBLJSON.jsonObject(fromEncodable:)`).

extension CBLDocument {
    /// The current revision's properties decoded as `type` (`_id`, `_rev` and `_attachments` are
    /// there for types that declare them). Throws 404 if the document does not exist or is deleted.
    public func decode<T: Decodable>(as type: T.Type = T.self) throws -> T {
        guard let properties else { throw CBLError.notFound("Document '\(documentID)' has no current revision") }
        return try JSONValueDecoder().decode(type, from: properties)
    }

    /// Saves `value`, encoded as a JSON object, as the document's new properties (all other
    /// properties are replaced; attachments are kept). Retries on conflict, as `update` does.
    @discardableResult
    public func putProperties<T: Encodable>(from value: T) throws -> CBLSavedRevision {
        let properties = try CBLJSON.encodeObject(value)
        return try update { revision in
            revision.userProperties = properties
            return true
        }
    }
}

extension CBLRevision {
    /// The revision's properties decoded as `type`. Throws 404 if its body is not available.
    public func decode<T: Decodable>(as type: T.Type = T.self) throws -> T {
        guard let properties else { throw CBLError.notFound("Revision \(revisionID ?? "(unsaved)") has no properties") }
        return try JSONValueDecoder().decode(type, from: properties)
    }
}

extension CBLUnsavedRevision {
    /// Replaces the revision's user properties with `value` encoded as a JSON object (the `_`
    /// properties and attachments are kept).
    public func setUserProperties<T: Encodable>(from value: T) throws {
        userProperties = try CBLJSON.encodeObject(value)
    }
}

extension CBLQueryRow {
    /// The properties of the document the row describes (``documentProperties``: prefetched when
    /// the query had `prefetch`), decoded as `type`.
    public func decode<T: Decodable>(as type: T.Type = T.self) throws -> T {
        guard let properties = documentProperties else {
            throw CBLError.notFound("Row has no document (\(documentID ?? "reduced row"))")
        }
        return try JSONValueDecoder().decode(type, from: properties)
    }

    /// The row's value (what the map function emitted) decoded as `type`.
    public func decodeValue<T: Decodable>(as type: T.Type = T.self) throws -> T {
        try JSONValueDecoder().decode(type, from: value ?? NSNull())
    }

    /// The row's key decoded as `type`.
    public func decodeKey<T: Decodable>(as type: T.Type = T.self) throws -> T {
        try JSONValueDecoder().decode(type, from: key ?? NSNull())
    }
}

extension CBLQueryEnumerator {
    /// Every row's document properties decoded as `type` (see ``CBLQueryRow/decode(as:)``).
    public func decode<T: Decodable>(as type: T.Type = T.self) throws -> [T] {
        try allObjects.map { try $0.decode(as: type) }
    }
}

extension CBLJSON {
    /// `value` encoded as a JSON value (`[String: Any]`, `[Any]`, `String`, numbers, `Bool`,
    /// `NSNull`) with 1.x's mappings: `Date` as an ISO-8601 string, `Data` as base64, `URL` and
    /// `Decimal` as strings; nil optionals are left out of objects.
    public class func jsonObject<T: Encodable>(fromEncodable value: T) throws -> Any {
        try JSONValueEncoder().encode(value)
    }

    /// A `Decodable` value from a JSON value, reading dates from ISO-8601 strings and data from base64.
    public class func decode<T: Decodable>(_ type: T.Type, fromJSONObject jsonObject: Any) throws -> T {
        try JSONValueDecoder().decode(type, from: jsonObject)
    }

    static func encodeObject<T: Encodable>(_ value: T) throws -> [String: Any] {
        guard let object = try JSONValueEncoder().encode(value) as? [String: Any] else {
            throw CBLError.badRequest("\(T.self) does not encode as a JSON object")
        }
        return object
    }
}
