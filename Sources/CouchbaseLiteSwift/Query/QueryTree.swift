import JSONCore

/// A query, or one of its expressions, in LiteCore's JSON query language (spec 9.1): JSONCore's
/// `JSONValue`, built directly by the N1QL parser, the JSON query reader and the QueryBuilder,
/// then translated from there. A value type, so a compiled query can be shared across threads.
///
/// The language's shapes, read by the accessors below:
/// - `["op", operands…]` (an array whose first item is a string): an operator (`=`, `AND`, `ANY`…),
///   a function call (`name()`), a property (`.a.b`), a parameter (`$x`) or an ANY/EVERY
///   variable (`?v`), as written;
/// - any other array: `[0]` in a path, a literal list;
/// - an object: the query itself, a FROM item, COLLATE's options, a dictionary literal.
typealias QueryTree = JSONValue

extension JSONValue {
    /// The tree of a JSON query's text, read by JSONCore (objects keep their member order).
    init(queryJSON json: String) throws {
        do {
            self = try JSON.value(json)
        } catch {
            throw CouchbaseLiteError(.invalidQuery, "The JSON query is not valid JSON")
        }
    }

    /// The tree of a Foundation value (a `QueryBuilder` literal, a parsed fixture): the public API's
    /// edge, where JSONCore classifies numbers once; throws `.invalidQuery` for anything JSON has no
    /// place for.
    init(queryValue value: Any) throws {
        do {
            try self.init(foundation: value)
        } catch {
            throw CouchbaseLiteError(.invalidQuery, "Unsupported value in query: \(error)")
        }
    }

    /// `["op", operands…]` split into the operator (as written) and its operands; nil for anything
    /// that is not an array starting with a string.
    @inline(__always)
    var operation: (op: String, args: [JSONValue])? {
        guard case .array(let items) = self, case .string(let op)? = items.first else { return nil }
        return (op, Array(items.dropFirst()))
    }

    /// The operator of an operation, as written (no operands copied).
    @inline(__always)
    var operatorName: String? {
        guard case .array(let items) = self, case .string(let op)? = items.first else { return nil }
        return op
    }

    /// The items of an array, operation or not (`[".a", ".b"]` reads as the operation `.a` but
    /// is a list of two properties where a list is expected).
    var items: [JSONValue]? { arrayValue }

    /// The operator of an operation, upper-cased.
    var upperOperator: String? { operatorName?.uppercased() }

    /// `["op", …]` with the operator starting with `prefix` (`.` a property, `?` a variable).
    func isOperation(prefixed prefix: String) -> Bool {
        operatorName?.hasPrefix(prefix) ?? false
    }

    /// An operation node: `["op", operands…]`.
    static func operationNode(_ op: String, _ args: [JSONValue] = []) -> JSONValue {
        var items: [JSONValue] = [.string(op)]
        items.reserveCapacity(args.count + 1)
        items.append(contentsOf: args)
        return .array(items)
    }

    /// Compact JSON text, members sorted (error messages, `explain()`).
    var jsonText: String {
        (try? JSON.string(self, sortedKeys: true)) ?? "\(self)"
    }
}
