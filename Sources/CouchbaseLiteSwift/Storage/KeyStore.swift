/// A collection's key-store as LiteCore 3.x names it (spec 2.3): the key-store name (`default`,
/// `.tasks`, `.S.name`), which is also its `kvmeta` row, and the tables holding its live and (3.1+)
/// deleted documents (`kv_.tasks`, `kv_del_.tasks`), upper-case letters escaped with a backslash
/// because SQLite table names ignore case while collection names do not.
package struct KeyStore: Sendable, Hashable, CustomStringConvertible {
    /// LiteCore's key-store name: `default`, or `.` + [scope + `.`] + collection.
    package let name: String

    /// The default collection `_default._default` (key-store `default`, table `kv_default`).
    package static let `default` = KeyStore(name: Schema2.defaultKeyStore)

    package static let defaultScopeName = "_default"
    package static let defaultCollectionName = "_default"

    package init(name: String) {
        self.name = name
    }

    /// The key-store of collection `collection` in scope `scope` (nil: the default scope). The
    /// names must already be valid (see ``validate(collection:scope:)``).
    package init(collection: String, scope: String?) {
        let scope = scope ?? Self.defaultScopeName
        if collection == Self.defaultCollectionName && scope == Self.defaultScopeName {
            self = .default
        } else if scope == Self.defaultScopeName {
            self.init(name: "." + collection)
        } else {
            self.init(name: "." + scope + "." + collection)
        }
    }

    /// The key-store whose live table is `table` (`kv_…`), or nil for other tables.
    package init?(table: String) {
        guard table.hasPrefix("kv_"), !table.hasPrefix("kv_del_") else { return nil }
        self.init(name: Self.unescaped(String(table.dropFirst(3))))
    }

    package var isDefault: Bool { name == Schema2.defaultKeyStore }

    /// The table of its live (3.1+) or all (2.x, 3.0) documents.
    package var table: String { "kv_" + Self.escaped(name) }
    /// The 3.1+ table of its deleted documents.
    package var deletedTable: String { "kv_del_" + Self.escaped(name) }

    /// The scope and collection names, or nil when this key-store is not a collection
    /// (`info`, `peerCheckpoints`, an FTS table's `default::index`…).
    package var collectionSpec: (scope: String, collection: String)? {
        if isDefault { return (Self.defaultScopeName, Self.defaultCollectionName) }
        guard name.hasPrefix(".") else { return nil }
        let parts = name.dropFirst().split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        switch parts.count {
        case 1 where Self.isValidName(parts[0]):
            return (Self.defaultScopeName, parts[0])
        case 2 where Self.isValidName(parts[0]) && Self.isValidName(parts[1]):
            return (parts[0], parts[1])
        default:
            return nil
        }
    }

    package var description: String { name }

    // MARK: Names

    /// LiteCore's `transformCollectionName(…, mangle: true)`: a backslash before each upper-case
    /// ASCII letter (existing backslashes dropped, so escaping twice changes nothing).
    package static func escaped(_ name: String) -> String {
        var out = ""
        out.reserveCapacity(name.utf8.count + 4)
        for c in name.unicodeScalars where c != "\\" {
            if c.value >= 0x41 && c.value <= 0x5A { out.unicodeScalars.append("\\") }
            out.unicodeScalars.append(c)
        }
        return out
    }

    /// The inverse of ``escaped(_:)``: backslashes removed.
    package static func unescaped(_ name: String) -> String {
        name.replacingOccurrences(of: "\\", with: "")
    }

    /// A table name as an SQL identifier (double quotes; a backslash needs no escaping there).
    package static func quoted(_ table: String) -> String {
        "\"" + table.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// The Couchbase Server rule LiteCore enforces for collection and scope names (spec 2.3,
    /// `KeyStore::isValidCollectionName`): 1–251 of `A-Z a-z 0-9 _ - %`, not starting with `_` or `%`.
    package static func isValidName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard (1...251).contains(bytes.count), bytes[0] != UInt8(ascii: "_"), bytes[0] != UInt8(ascii: "%") else {
            return false
        }
        return bytes.allSatisfy { b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
                || b == UInt8(ascii: "_") || b == UInt8(ascii: "-") || b == UInt8(ascii: "%")
        }
    }

    /// Throws `.invalidParameter` unless `collection` in `scope` (nil: `_default`) is a valid
    /// collection spec: `_default` is allowed as the scope, and as the collection only in `_default`.
    package static func validate(collection: String, scope: String?) throws {
        let scope = scope ?? defaultScopeName
        if scope != defaultScopeName && !isValidName(scope) {
            throw CouchbaseLiteError(.invalidParameter, "Invalid scope name '\(scope)': \(nameRule)")
        }
        if collection == defaultCollectionName && scope == defaultScopeName { return }
        if !isValidName(collection) {
            throw CouchbaseLiteError(.invalidParameter, "Invalid collection name '\(collection)' in scope '\(scope)': \(nameRule)")
        }
    }

    static let nameRule = "a name has 1 to 251 characters from A-Z, a-z, 0-9, '_', '-' and '%', and cannot start with '_' or '%'"
}
