import Foundation
import JSONCore

extension MangoSelector {
    /// True when the document (or any JSON value) satisfies the selector, as CouchDB's
    /// `mango_selector:match` decides.
    func matches(_ document: JSONValue) -> Bool {
        Self.match(root, document)
    }

    private enum Lookup {
        case found(JSONValue)
        /// An object lacks the member: only `$exists: false` matches.
        case notFound
        /// The path goes through a scalar, or past an array's end: nothing matches.
        case badPath
    }

    private static func match(_ node: Node, _ value: JSONValue) -> Bool {
        switch node {
        case .always: return true
        case .and(let nodes): return nodes.allSatisfy { match($0, value) }
        // An empty `$or` matches, as CouchDB's does.
        case .or(let nodes): return nodes.isEmpty || nodes.contains { match($0, value) }
        case .not(let inner): return !match(inner, value)
        case .nor(let nodes): return !nodes.contains { match($0, value) }
        case .field(let path, let condition):
            switch lookup(value, path) {
            case .notFound:
                if case .exists(false) = condition { return true }
                return false
            case .badPath:
                return false
            case .found(let sub):
                // `_id` compares by bytes (CouchDB's `cmp_raw`), everything else by collation.
                let raw = path == ["_id"]
                return matches(condition, sub, compare: raw ? MangoCollation.compareRaw : MangoCollation.compare)
            }
        }
    }

    private static func lookup(_ value: JSONValue, _ path: [String]) -> Lookup {
        var current = value
        for name in path {
            switch current {
            case .object(let object):
                guard let next = object[name] else { return .notFound }
                current = next
            case .array(let array):
                // A numeric component indexes an array.
                guard let index = Int(name), index >= 0, index < array.count else { return .badPath }
                current = array[index]
            default:
                return .badPath
            }
        }
        return .found(current)
    }

    private static func matches(_ condition: Condition, _ value: JSONValue, compare: (JSONValue, JSONValue) -> Int) -> Bool {
        switch condition {
        case .eq(let arg): return compare(value, arg) == 0
        case .ne(let arg): return compare(value, arg) != 0
        case .lt(let arg): return compare(value, arg) < 0
        case .lte(let arg): return compare(value, arg) <= 0
        case .gt(let arg): return compare(value, arg) > 0
        case .gte(let arg): return compare(value, arg) >= 0
        case .in(let args):
            // An array value matches when any of its elements is one of the arguments.
            if case .array(let elements) = value {
                return args.contains { arg in elements.contains { compare($0, arg) == 0 } }
            }
            return args.contains { compare(value, $0) == 0 }
        case .nin(let args):
            if args.isEmpty { return true }
            return !matches(.in(args), value, compare: compare)
        case .exists(let flag):
            return flag
        case .type(let name):
            return MangoCollation.kind(value).name == name
        case .regex(let regex):
            guard case .string(let string) = value else { return false }
            return regex.matches(string)
        case .all(let args):
            guard !args.isEmpty, case .array(let elements) = value else { return false }
            if args.allSatisfy({ arg in elements.contains { compare($0, arg) == 0 } }) { return true }
            // `{"$all": [[1, 2]]}` also matches the array `[1, 2]` itself.
            if args.count == 1, case .array = args[0] { return compare(args[0], value) == 0 }
            return false
        case .elemMatch(let node):
            guard case .array(let elements) = value else { return false }
            return elements.contains { match(node, $0) }
        case .allMatch(let node):
            guard case .array(let elements) = value, !elements.isEmpty else { return false }
            return elements.allSatisfy { match(node, $0) }
        case .keyMapMatch(let node):
            guard case .object(let object) = value else { return false }
            return object.keys.contains { match(node, .string($0)) }
        case .size(let n):
            guard case .array(let elements) = value else { return false }
            return elements.count == n
        case .mod(let divisor, let remainder):
            // Integers only; the remainder takes the dividend's sign, as Erlang's `rem`.
            guard case .int(let n) = value else { return false }
            return n % divisor == remainder
        case .beginsWith(let prefix):
            guard case .string(let string) = value else { return false }
            return string.utf8.starts(with: prefix.utf8)
        case .not(let inner):
            return !matches(inner, value, compare: compare)
        }
    }
}
