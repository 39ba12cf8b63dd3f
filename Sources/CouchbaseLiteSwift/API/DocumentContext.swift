import Fleece
import Foundation

/// What the values of one document share: its Fleece data and the blob store its blobs live in.
// @unchecked because its fields are lets: an immutable Fleece document and a thread-safe blob store.
final class DocumentContext: @unchecked Sendable {
    let fleece: FleeceDocument
    let blobStore: BlobStore?

    init(fleece: FleeceDocument, blobStore: BlobStore?) {
        self.fleece = fleece
        self.blobStore = blobStore
    }

    /// The API value of a Fleece value (2.x rules): dictionaries that are blobs become `Blob`s,
    /// other collections `DictionaryObject`/`ArrayObject`, null `NSNull`.
    func apiValue(_ value: FleeceValue, inAttachments: Bool) -> Any {
        switch value.type {
        case .dict:
            let dict = value.dictValue!
            if let blob = blob(dict, inAttachments: inAttachments) { return blob }
            return DictionaryObject(dict, context: self)
        case .array:
            return ArrayObject(value.arrayValue!, context: self)
        default:
            return Self.scalar(value)
        }
    }

    /// Plain Swift values (`toDictionary()`/`toArray()`), with blobs as `Blob` objects.
    func foundationValue(_ value: FleeceValue, inAttachments: Bool) -> Any {
        switch value.type {
        case .dict:
            let dict = value.dictValue!
            if let blob = blob(dict, inAttachments: inAttachments) { return blob }
            return foundationDictionary(dict, isRoot: false)
        case .array:
            return value.arrayValue!.map { foundationValue($0, inAttachments: false) }
        default:
            return Self.scalar(value)
        }
    }

    /// `isRoot`: the document's root, whose `_attachments` dict holds legacy blobs;
    /// `isAttachments`: this is that `_attachments` dict.
    func foundationDictionary(_ dict: FleeceDict, isRoot: Bool, isAttachments: Bool = false) -> [String: Any] {
        var out: [String: Any] = [:]
        out.reserveCapacity(dict.count)
        for (key, value) in dict {
            if isRoot, key == "_attachments", let attachments = value.dictValue {
                out[key] = foundationDictionary(attachments, isRoot: false, isAttachments: true)
            } else {
                out[key] = foundationValue(value, inAttachments: isAttachments)
            }
        }
        return out
    }

    /// A blob is a dict with `"@type": "blob"`, or (legacy, spec 7) a child of the top-level
    /// `_attachments` dict that has a `digest`.
    func blob(_ dict: FleeceDict, inAttachments: Bool) -> Blob? {
        if dict["@type"]?.stringValue == "blob" || (inAttachments && dict["digest"]?.type == .string) {
            return Blob(properties: foundationDictionary(dict, isRoot: false), blobStore: blobStore)
        }
        return nil
    }

    static func scalar(_ value: FleeceValue) -> Any {
        switch value.type {
        case .null, .undefined: return NSNull()
        case .boolean: return value.boolValue
        case .number:
            if value.isInteger {
                if value.isUnsigned { return value.uintValue <= UInt64(Int.max) ? Int(value.uintValue) : value.uintValue }
                return Int(value.intValue)
            }
            return value.doubleValue
        case .string: return value.stringValue ?? ""
        case .data: return Data(value.dataValue ?? [])
        case .array, .dict: return NSNull()   // not reached: collections are handled by the callers
        }
    }
}

/// Typed accessors shared by `Document`, `DictionaryObject` and `ArrayObject` (2.x conversion rules).
enum ValueCoercion {
    static func int64(_ v: FleeceValue?) -> Int64 {
        guard let v else { return 0 }
        switch v.type {
        case .number: return v.intValue
        case .boolean: return v.boolValue ? 1 : 0
        default: return 0
        }
    }

    static func double(_ v: FleeceValue?) -> Double {
        guard let v else { return 0 }
        switch v.type {
        case .number: return v.doubleValue
        case .boolean: return v.boolValue ? 1 : 0
        default: return 0
        }
    }

    /// Fleece's `asBool`: false for null/false/zero, true for any other value.
    static func boolean(_ v: FleeceValue?) -> Bool {
        guard let v else { return false }
        switch v.type {
        case .null, .undefined: return false
        case .boolean: return v.boolValue
        case .number: return v.isInteger ? v.intValue != 0 || v.uintValue != 0 : v.doubleValue != 0
        default: return true
        }
    }

    static func number(_ v: FleeceValue?) -> NSNumber? {
        guard let v else { return nil }
        switch v.type {
        case .number:
            if v.isInteger { return v.isUnsigned ? NSNumber(value: v.uintValue) : NSNumber(value: v.intValue) }
            return NSNumber(value: v.doubleValue)
        case .boolean: return NSNumber(value: v.boolValue)
        default: return nil
        }
    }

    /// ISO-8601 strings (what 2.x stores dates as), with or without fractional seconds.
    static func date(_ v: FleeceValue?) -> Date? {
        guard let s = v?.stringValue else { return nil }
        return ISO8601.parse(s)
    }
}
