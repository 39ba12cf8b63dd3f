import Fleece
import Foundation
import JSONCore

/// Record bodies as Foundation values, for tools that print documents (`cbl dump`) without going
/// through the document API.
extension DataFile {
    /// A document body's properties (shared keys resolved with this file's; Fleece `data` values
    /// as `Data`); `[:]` for an empty body or one whose root is not a dictionary. Throws when the
    /// body is not valid Fleece.
    package func properties(ofBody body: [UInt8]) throws -> [String: Any] {
        guard !body.isEmpty else { return [:] }
        return try FleeceDocument(bytes: body, sharedKeys: sharedKeys).root.toFoundation() as? [String: Any] ?? [:]
    }

    /// The properties of a raw record (``rawRecords(store:)``, e.g. a `local` document): Fleece
    /// without shared keys as LiteCore writes it, or JSON as older writers stored it; `[:]` when neither.
    package static func properties(ofRawBody body: [UInt8]) -> [String: Any] {
        (try? FleeceDocument(bytes: body).root.toFoundation() as? [String: Any]) ?? (try? JSON.parseObject(body)) ?? [:]
    }
}
