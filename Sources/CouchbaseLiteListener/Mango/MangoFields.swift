import Foundation
import JSONCore

/// The `fields` of a Mango request: the parts of each document to return, as CouchDB's
/// `mango_fields` extracts them (each field path copied where present, others left out).
struct MangoFields: Sendable {
    /// Parsed field paths; empty means the whole document.
    let paths: [[String]]

    /// Parses a `fields` array of field names (`a.b` paths); CouchDB's errors when malformed.
    init(_ json: JSONValue) throws {
        guard case .array(let list) = json else {
            throw MangoError("invalid_fields_json", "Selector error: fields must be JSON array")
        }
        paths = try list.map { item in
            guard case .string(let name) = item else {
                throw MangoError("invalid_field_json", "Invalid JSON for field spec: \((try? JSON.string(item, sortedKeys: false)) ?? "")")
            }
            return try MangoSelector.parseFieldName(name)
        }
    }

    /// The document reduced to the fields (the whole document when none are named).
    func extract(from document: JSONObject) -> JSONObject {
        guard !paths.isEmpty else { return document }
        var out = JSONObject()
        for path in paths {
            guard let value = Self.value(in: .object(document), at: path) else { continue }
            Self.set(value, at: path[...], in: &out)
        }
        return out
    }

    private static func value(in document: JSONValue, at path: [String]) -> JSONValue? {
        var current = document
        for name in path {
            switch current {
            case .object(let object):
                guard let next = object[name] else { return nil }
                current = next
            case .array(let array):
                guard let index = Int(name), index >= 0, index < array.count else { return nil }
                current = array[index]
            default:
                return nil
            }
        }
        return current
    }

    private static func set(_ value: JSONValue, at path: ArraySlice<String>, in object: inout JSONObject) {
        guard let name = path.first else { return }
        if path.count == 1 {
            object[name] = value
            return
        }
        var child = object[name]?.objectValue ?? JSONObject()
        set(value, at: path.dropFirst(), in: &child)
        object[name] = .object(child)
    }
}
