import Foundation

/// The `fields` of a Mango request: the parts of each document to return, as CouchDB's
/// `mango_fields` extracts them (each field path copied where present, others left out).
struct MangoFields: Sendable {
    /// Parsed field paths; empty means the whole document.
    let paths: [[String]]

    /// Parses a `fields` array of field names (`a.b` paths); CouchDB's errors when malformed.
    init(_ json: Any) throws {
        guard let list = json as? [Any] else {
            throw MangoError("invalid_fields_json", "Selector error: fields must be JSON array")
        }
        paths = try list.map { item in
            guard let name = item as? String else {
                throw MangoError("invalid_field_json", "Invalid JSON for field spec: \(JSONText.string(item))")
            }
            return try MangoSelector.parseFieldName(name)
        }
    }

    /// The document reduced to the fields (the whole document when none are named).
    func extract(from document: [String: Any]) -> [String: Any] {
        guard !paths.isEmpty else { return document }
        var out: [String: Any] = [:]
        for path in paths {
            guard let value = Self.value(in: document, at: path) else { continue }
            Self.set(value, at: path[...], in: &out)
        }
        return out
    }

    private static func value(in document: [String: Any], at path: [String]) -> Any? {
        var current: Any = document
        for name in path {
            if let object = current as? [String: Any], let next = object[name] {
                current = next
            } else if let array = current as? [Any], let index = Int(name), index >= 0, index < array.count {
                current = array[index]
            } else {
                return nil
            }
        }
        return current
    }

    private static func set(_ value: Any, at path: ArraySlice<String>, in object: inout [String: Any]) {
        guard let name = path.first else { return }
        if path.count == 1 {
            object[name] = value
            return
        }
        var child = object[name] as? [String: Any] ?? [:]
        set(value, at: path.dropFirst(), in: &child)
        object[name] = child
    }
}
