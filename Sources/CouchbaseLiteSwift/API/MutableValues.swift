import Fleece
import Foundation
import JSONCore

/// The values mutable documents hold, and how they become Fleece. Everything set is normalized
/// once: integers to `Int64` (or `UInt64` above `Int64.max`), `Date` to its ISO-8601 string
/// (what 2.x stores), nil to `NSNull`, plain or read-only collections to mutable ones.
///
/// A value of a type documents cannot hold is kept as an ``InvalidDocumentValue``: 2.x raises an
/// invalid-argument exception from the (non-throwing) setter, which Swift cannot catch, so here the
/// setter records it and saving the document throws `invalidParameter` naming the key.
enum MutableValues {
    static func normalize(_ value: Any?) -> Any {
        guard let value else { return NSNull() }
        return normalize(nonNil: value)
    }

    static func normalize(nonNil value: Any) -> Any {
        // The usual types by identity first, before any cast (so each `as!` cannot fail).
        let t = type(of: value)
        if t == String.self || t == Double.self || t == Bool.self || t == Int64.self { return value }
        if t == Int.self { return Int64(value as! Int) }
        if t == [String: Any].self { return MutableDictionaryObject(data: (value as! [String: Any])) }
        if t == [Any].self { return MutableArrayObject(data: (value as! [Any])) }
        if t == [String].self { return MutableArrayObject(data: (value as! [String])) }
        // An NSNumber would also answer `as? Bool`/`as? Int`: take its stored type instead.
        if type(of: value) is NSNumber.Type, let n = value as? NSNumber { return number(n) }
        // Class targets are tried on objects only: casting a Swift string, array or dictionary to
        // a class makes Foundation bridge it (a whole collection, recursively) just to say no.
        if type(of: value) is AnyClass {
            switch value {
            case let v as MutableDictionaryObject: return v
            case let v as MutableArrayObject: return v
            case let v as DictionaryObject: return MutableDictionaryObject(data: v.toDictionary())
            case let v as ArrayObject: return MutableArrayObject(data: v.toArray())
            case let v as Blob: return v
            case let v as NSNull: return v
            case let v as InvalidDocumentValue: return v   // copied from another object: still reported
            default: break   // Foundation objects (NSString, NSArray, …): as their Swift values below
            }
        }
        switch value {
        case let v as String: return v
        case let v as Substring: return String(v)
        case let v as Bool: return v
        case let v as Int: return Int64(v)
        case let v as Int64: return v
        case let v as Int32: return Int64(v)
        case let v as Int16: return Int64(v)
        case let v as Int8: return Int64(v)
        case let v as UInt: return unsigned(UInt64(v))
        case let v as UInt64: return unsigned(v)
        case let v as UInt32: return Int64(v)
        case let v as UInt16: return Int64(v)
        case let v as UInt8: return Int64(v)
        case let v as Double: return v
        case let v as Float: return v
        case let v as Date: return ISO8601.string(from: v)
        case let v as Data: return v
        // Only a real [UInt8]: any empty array would also cast to it (and be stored as data).
        case let v as [UInt8] where type(of: value) == [UInt8].self: return Data(v)
        case let v as [String: Any]: return MutableDictionaryObject(data: v)
        case let v as [Any]: return MutableArrayObject(data: v)
        default:
            // Couchbase Lite raises for unsupported types; a silent drop would lose data, a trap
            // would end the app: the save reports it instead (see `encodeDocument`).
            return InvalidDocumentValue(type(of: value))
        }
    }

    private static func unsigned(_ v: UInt64) -> Any { v <= UInt64(Int64.max) ? Int64(v) : v }

    /// An NSNumber as JSONCore classifies it (booleans by class, then by objCType).
    private static func number(_ n: NSNumber) -> Any {
        switch ValueClassifier.classify(number: n) {
        case .bool(let b): return b
        case .double(let d): return d
        case .float(let f): return f
        case .uint(let u): return unsigned(u)
        case .int(let i): return i
        default: return n.int64Value   // kept for exhaustiveness: classify(number:) answers only the cases above
        }
    }

    // MARK: Typed reads (2.x conversion rules, as `ValueCoercion` applies them to Fleece)

    static func int64(_ v: Any?) -> Int64 {
        switch v {
        case let n as Int64: return n
        case let n as Int: return Int64(n)
        case let n as UInt64: return Int64(truncatingIfNeeded: n)
        case let d as Double: return d.isFinite ? Int64(exactly: d.rounded(.towardZero)) ?? 0 : 0
        case let f as Float: return f.isFinite ? Int64(exactly: Double(f).rounded(.towardZero)) ?? 0 : 0
        case let b as Bool: return b ? 1 : 0
        default: return 0
        }
    }

    static func double(_ v: Any?) -> Double {
        switch v {
        case let n as Int64: return Double(n)
        case let n as Int: return Double(n)
        case let n as UInt64: return Double(n)
        case let d as Double: return d
        case let f as Float: return Double(f)
        case let b as Bool: return b ? 1 : 0
        default: return 0
        }
    }

    static func number(_ v: Any?) -> NSNumber? {
        switch v {
        case let n as Int64: return NSNumber(value: n)
        case let n as Int: return NSNumber(value: n)
        case let n as UInt64: return NSNumber(value: n)
        case let d as Double: return NSNumber(value: d)
        case let f as Float: return NSNumber(value: f)
        case let b as Bool: return NSNumber(value: b)
        default: return nil
        }
    }

    static func boolean(_ v: Any?) -> Bool {
        switch v {
        case nil, is NSNull: return false
        case let b as Bool: return b
        case let n as Int64: return n != 0
        case let n as Int: return n != 0
        case let n as UInt64: return n != 0
        case let d as Double: return d != 0
        case let f as Float: return f != 0
        default: return true
        }
    }

    static func date(_ v: Any?) -> Date? { (v as? String).flatMap(ISO8601.parse) }

    /// Plain Swift values (`toDictionary()`/`toArray()`): numbers as `Int`/`UInt64`/`Double`,
    /// blobs as `Blob`, as the read-only objects return them.
    static func plain(_ v: Any) -> Any {
        switch v {
        case let d as MutableDictionaryObject: return d.toDictionary()
        case let a as MutableArrayObject: return a.toArray()
        case let n as Int64: return Int(truncatingIfNeeded: n)
        case let f as Float: return Double(f)
        default: return v
        }
    }

    // MARK: Fleece

    /// What encoding found: the revision carries HasAttachments when the body holds a blob
    /// (`@type: blob`) or a non-empty top-level `_attachments` dict (spec 7).
    struct EncodingResult {
        var body: [UInt8]
        var hasAttachments: Bool
        var newBlobs: [Blob]
    }

    /// Encodes a document's properties with the file's shared keys. Rejects the top-level keys
    /// LiteCore refuses (`_id`, `_rev`, `_deleted`: "Illegal top-level key", spec 3.5), and any
    /// value a setter could not store (`invalidParameter`, naming its key path).
    static func encodeDocument(_ root: MutableDictionaryObject, sharedKeys: SharedKeys) throws -> EncodingResult {
        for key in ["_id", "_rev", "_deleted"] where root.contains(key: key) {
            throw CouchbaseLiteError(.corruptRevisionData, "Illegal top-level key '\(key)' in document")
        }
        var encoder = FleeceEncoder(sharedKeys: sharedKeys)
        var result = EncodingResult(body: [], hasAttachments: false, newBlobs: [])
        if let attachments = root.storage["_attachments"] as? MutableDictionaryObject, attachments.count > 0 {
            result.hasAttachments = true
        }
        do {
            try encode(root, into: &encoder, result: &result)
            result.body = try encoder.finish()
        } catch let e as CouchbaseLiteError {
            throw e
        } catch let bad as InvalidValueFound {
            throw CouchbaseLiteError(.invalidParameter, "\(bad.reason) (key '\(bad.path)')")
        } catch {
            throw CouchbaseLiteError(.invalidParameter, "Cannot encode document: \(error)")
        }
        return result
    }

    /// An ``InvalidDocumentValue`` or a rejected array edit met while encoding, with the key path
    /// down to it (built on the way out, so valid documents pay nothing for it).
    struct InvalidValueFound: Error {
        let reason: String
        var path: String

        func inside(_ step: String) -> InvalidValueFound {
            InvalidValueFound(reason: reason, path: path.isEmpty || path.hasPrefix("[") ? step + path : step + "." + path)
        }
    }

    private static func encode(_ value: Any, into encoder: inout FleeceEncoder, result: inout EncodingResult) throws {
        // Scalars are never objects here (normalize made them Swift values): no class casts for them.
        guard type(of: value) is AnyClass else { return try encoder.write(value) }
        switch value {
        case let dict as MutableDictionaryObject:
            encoder.beginDict(reserve: dict.storage.count)
            for (key, v) in dict.storage {
                encoder.writeKey(key)
                do {
                    try encode(v, into: &encoder, result: &result)
                } catch let bad as InvalidValueFound {
                    throw bad.inside(key)
                }
            }
            encoder.endDict()
        case let array as MutableArrayObject:
            if let edit = array.rejectedEdit { throw InvalidValueFound(reason: edit, path: "") }
            encoder.beginArray(reserve: array.storage.count)
            for (i, v) in array.storage.enumerated() {
                do {
                    try encode(v, into: &encoder, result: &result)
                } catch let bad as InvalidValueFound {
                    throw bad.inside("[\(i)]")
                }
            }
            encoder.endArray()
        case let blob as Blob:
            result.hasAttachments = true
            if blob.isNew { result.newBlobs.append(blob) }
            try encoder.write(blob.properties)
        case let bad as InvalidDocumentValue:
            throw InvalidValueFound(reason: "\(bad.typeName) is not a valid document value", path: "")
        default:
            try encoder.write(value)
        }
    }
}

/// What a mutable setter stores for a value of a type documents cannot hold (2.x raises
/// invalid-argument there); saving the document then throws `invalidParameter` naming the key.
/// A class, so the encoder's object switch meets it.
final class InvalidDocumentValue: CustomStringConvertible {
    let typeName: String
    init(_ type: Any.Type) { typeName = String(describing: type) }
    var description: String { "<invalid document value: \(typeName)>" }
}
