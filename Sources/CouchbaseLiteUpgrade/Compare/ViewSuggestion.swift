import CouchbaseLite
import CouchbaseLiteSwift
import Foundation
import JSONCore

/// What a map function does, said declaratively: which documents it emits for, which
/// properties make the key and the value. Given (from the app's code) or inferred from the
/// view's stored rows.
public struct MapDescription: Codable, Sendable, Equatable {
    /// A property that must have a value for the document to be emitted (`type == "task"`).
    public struct Filter: Codable, Sendable, Equatable {
        public var path: String
        public var value: JSONValue
        public init(path: String, value: JSONValue) { self.path = path; self.value = value }

        enum CodingKeys: String, CodingKey { case path, value }

        public init(from decoder: Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            path = try c.decode(String.self, forKey: .path)
            value = try c.decode(CodableJSON.self, forKey: .value).value
        }

        public func encode(to encoder: Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(path, forKey: .path)
            try c.encode(CodableJSON(value), forKey: .value)
        }
    }

    public var filters: [Filter]
    /// The key's property paths: one → a scalar key, several → an array key. `meta().id` is the document ID.
    public var keyPaths: [String]
    /// Emits one row per element of this array property (the key is the element).
    public var unnestPath: String?
    /// The value's property path, nil when the view emits no value.
    public var valuePath: String?

    public init(filters: [Filter] = [], keyPaths: [String] = [], unnestPath: String? = nil, valuePath: String? = nil) {
        self.filters = filters
        self.keyPaths = keyPaths
        self.unnestPath = unnestPath
        self.valuePath = valuePath
    }
}

/// A N1QL query and value index proposed to replace a view, with the comparison that verifies it.
public struct ViewSuggestion: Sendable {
    /// The map description the suggestion was built from (given or inferred).
    public var description: MapDescription
    public var n1ql: String
    /// The value index that serves the query: its name and expressions.
    public var indexName: String
    public var indexExpressions: [String]
    /// The view compared with the suggested query.
    public var report: ComparisonReport
    /// What the suggestion could not reproduce, and why.
    public var notes: [String]

    /// True when the suggested query gives exactly the view's rows, in the view's order.
    public var verified: Bool { report.isEqual }

    /// The index as 2.x/3.x Swift code.
    public var indexSwift: String {
        "try database.createIndex(ValueIndexConfiguration([\(indexExpressions.map { "\"\($0)\"" }.joined(separator: ", "))]), name: \"\(indexName)\")"
    }
}

extension ViewComparison {
    /// Proposes the N1QL query (and value index) that reproduces `view` queried with `options`,
    /// from `description` or, when nil, from what the view's stored rows show about the documents;
    /// then verifies it by running the comparison.
    public func suggest(view name: String, options: ViewQueryOptions = ViewQueryOptions(),
                        description given: MapDescription? = nil) throws -> ViewSuggestion {
        try withDatabases { legacy, converted in
            try suggest(view: name, options: options, description: given, legacy: legacy, converted: converted)
        }
    }

    /// `suggest(view:options:description:)` over databases already opened (one conversion for many views).
    func suggest(view name: String, options: ViewQueryOptions, description given: MapDescription?,
                 legacy: CBLDatabase, converted: Database) throws -> ViewSuggestion {
        do {
            var notes: [String] = []
            let description: MapDescription
            var mapRows = ViewQueryOptions()
            mapRows.mapOnly = true
            let rows = try runView(.stored(name: name), options: mapRows, on: legacy).rows
            if let given {
                description = given
            } else {
                description = try SuggestionInference(rows: rows, database: converted).infer(notes: &notes)
            }
            let built = SuggestionWriter(description: description, options: options, rows: rows).write(notes: &notes)
            let report = try self.report(view: .stored(name: name), options: options, n1ql: built.n1ql, parameters: [:],
                                         legacy: legacy, converted: converted)
            for (rule, count) in report.countsByRule {
                notes.append("still \(count)× \(rule.rawValue): \(rule.explanation)")
            }
            let indexName = "idx_" + String(name.map { $0.isLetter || $0.isNumber ? $0 : "_" })
            return ViewSuggestion(description: description, n1ql: built.n1ql, indexName: indexName,
                                  indexExpressions: built.indexExpressions, report: report, notes: notes)
        }
    }
}

/// Infers a `MapDescription` from a view's map rows and the converted documents.
struct SuggestionInference {
    let rows: [ComparedRow]
    let database: Database

    func infer(notes: inout [String]) throws -> MapDescription {
        var out = MapDescription()
        let emitting = Dictionary(grouping: rows.filter { $0.documentID != nil }, by: { $0.documentID! })
        var docs: [String: JSONObject] = [:]
        for doc in try database.allDocuments() {
            if case .object(let o) = ComparedValue.lenient(doc.toDictionary()) { docs[doc.id] = o }
        }
        guard !emitting.isEmpty else {
            notes.append("the view has no rows: nothing to infer from")
            return out
        }
        let bodies = emitting.keys.compactMap { id in docs[id].map { (id, $0) } }

        // Several rows per document: the keys are the elements of an array property.
        if emitting.values.contains(where: { $0.count > 1 }) {
            let candidates = bodies.map { id, body in
                Set(Self.leaves(body).filter { _, v in
                    guard case .array(let items) = v else { return false }
                    return emitting[id]!.allSatisfy { $0.key.jsonValue.map(items.contains) ?? false }
                }.map(\.path))
            }
            if let path = Self.best(candidates) {
                out.unnestPath = path
            } else {
                notes.append("the view emits several rows per document, but no array property holds the keys")
            }
        } else {
            // One key: a property (or the document ID), or an array of properties.
            let sample = rows.first { $0.documentID != nil }!.key
            if case .value(.array(let first)) = sample {
                var paths: [String] = []
                for i in first.indices {
                    let candidates = bodies.map { id, body in
                        Set(Self.leaves(body).filter { _, v in
                            guard case .value(.array(let k)) = emitting[id]![0].key, i < k.count else { return false }
                            return v == k[i]
                        }.map(\.path))
                    }
                    guard let p = Self.best(candidates) else { paths = []; break }
                    paths.append(p)
                }
                if paths.isEmpty {
                    let whole = bodies.map { id, body in Set(Self.leaves(body).filter { .value($0.value) == emitting[id]![0].key }.map(\.path)) }
                    if let p = Self.best(whole) { out.keyPaths = [p] } else { notes.append("no properties make up the array keys") }
                } else {
                    out.keyPaths = paths
                }
            } else if emitting.allSatisfy({ id, r in r[0].key == .value(.string(id)) }) {
                out.keyPaths = ["meta().id"]
            } else {
                let candidates = bodies.map { id, body in Set(Self.leaves(body).filter { .value($0.value) == emitting[id]![0].key }.map(\.path)) }
                if let p = Self.best(candidates) { out.keyPaths = [p] } else { notes.append("no property holds the keys") }
            }
        }

        // The value: a property, or nothing.
        if !rows.allSatisfy({ $0.value == .value(.null) }) {
            let candidates = bodies.map { id, body in Set(Self.leaves(body).filter { .value($0.value) == emitting[id]![0].value }.map(\.path)) }
            if emitting.values.allSatisfy({ $0.count == 1 }), let p = Self.best(candidates) {
                out.valuePath = p
            } else {
                notes.append("no property holds the values (computed or whole-document values): compare keys only")
            }
        }

        // Which documents: a property whose value all emitting documents share and that no other
        // document with the key property has.
        let keyPaths = out.unnestPath.map { [$0] } ?? out.keyPaths.filter { $0 != "meta().id" }
        let others = docs.filter { id, body in
            emitting[id] == nil && keyPaths.allSatisfy { Self.value(at: $0, in: body).map { $0 != .null } ?? false }
        }
        if !others.isEmpty {
            var shared: [(String, JSONValue)]? = nil
            for (_, body) in bodies {
                let scalars = Self.leaves(body).filter { if case .array = $0.value { return false }; if case .object = $0.value { return false }; return true }
                let here = Dictionary(scalars.map { ($0.path, $0.value) }, uniquingKeysWith: { a, _ in a })
                shared = (shared ?? here.map { ($0.key, $0.value) }).filter { here[$0.0] == $0.1 }
            }
            let excluding = (shared ?? []).filter { path, value in others.values.allSatisfy { Self.value(at: path, in: $0) != value } }
                .sorted { ($0.0.count, $0.0) < ($1.0.count, $1.0) }
            if let f = excluding.first {
                out.filters = [MapDescription.Filter(path: f.0, value: f.1)]
            } else {
                notes.append("\(others.count) documents have the key property but no row, and no shared property tells them apart")
            }
        }
        return out
    }

    /// The most specific common candidate: shortest path present for every document.
    static func best(_ candidates: [Set<String>]) -> String? {
        guard var common = candidates.first else { return nil }
        for c in candidates.dropFirst() { common.formIntersection(c) }
        return common.min { ($0.count, $0) < ($1.count, $1) }
    }

    /// Every property path of a body (dotted; arrays are values, not descended into).
    static func leaves(_ body: JSONObject, prefix: String = "") -> [(path: String, value: JSONValue)] {
        var out: [(String, JSONValue)] = []
        for (k, v) in body where !k.contains(".") && !k.hasPrefix("_") {
            let path = prefix.isEmpty ? k : prefix + "." + k
            out.append((path, v))
            if case .object(let o) = v { out += leaves(o, prefix: path) }
        }
        return out
    }

    static func value(at path: String, in body: JSONObject) -> JSONValue? {
        var current: JSONValue = .object(body)
        for part in path.split(separator: ".") {
            guard case .object(let o) = current, let next = o[String(part)] else { return nil }
            current = next
        }
        return current
    }
}

/// Writes the N1QL text (and index expressions) for a map description and view options.
struct SuggestionWriter {
    let description: MapDescription
    let options: ViewQueryOptions
    let rows: [ComparedRow]

    static func expression(_ path: String) -> String {
        path == "meta().id" ? path : N1QLIdentifiers.path(path.split(separator: ".").map(String.init))
    }

    static func literal(_ v: ComparedValue) -> String {
        switch v {
        case .value(.string(let s)): return "'" + s.replacingOccurrences(of: "'", with: "''") + "'"
        default: return v.json
        }
    }

    func write(notes: inout [String]) -> (n1ql: String, indexExpressions: [String]) {
        let d = description
        var components: [String]
        var from = "_"
        if let unnest = d.unnestPath {
            from = "_ UNNEST \(Self.expression(unnest)) AS e"
            components = ["e"]
        } else {
            components = d.keyPaths.map(Self.expression)
        }
        if components.isEmpty {
            components = ["null"]
            notes.append("no key expression: the suggestion selects null keys")
        }
        let keyExpr = components.count == 1 ? components[0] : "[" + components.joined(separator: ", ") + "]"
        // Strings order Unicode-aware in views: COLLATE UNICODE where a key component holds strings.
        func hasStrings(_ i: Int) -> Bool {
            rows.contains { r in
                if components.count == 1 { if case .value(.string) = r.key { return true }; return false }
                if case .value(.array(let k)) = r.key, i < k.count, case .string = k[i] { return true }
                return false
            }
        }
        var conditions = d.filters.map { "\(Self.expression($0.path)) = \(Self.literal(.value($0.value)))" }
        // The map emits for documents that have the key properties: IS VALUED, or IS NOT MISSING
        // when it emits null keys too.
        let emitsNull = rows.contains { $0.key == .value(.null) }
        if d.unnestPath == nil {
            let test = emitsNull ? "IS NOT MISSING" : "IS VALUED"
            conditions += d.keyPaths.filter { $0 != "meta().id" }.map { "\(Self.expression($0)) \(test)" }
        }
        let direction = options.descending ? " DESC" : ""
        let reduced = !options.mapOnly && (options.reduce != nil || options.group || options.groupLevel > 0)
        var sql: String
        if reduced {
            var groupComponents = components
            if !options.group, options.groupLevel > 0, components.count > 1 {
                groupComponents = Array(components.prefix(Int(options.groupLevel)))
            } else if !options.group, options.groupLevel == 0 {
                groupComponents = []
            }
            let groupKey = groupComponents.isEmpty ? "null" : groupComponents.count == 1 && components.count == 1
                ? groupComponents[0] : "[" + groupComponents.joined(separator: ", ") + "]"
            let aggregate: String
            switch options.reduce {
            case .count?, nil: aggregate = "count(*)"
            case .sum?:
                aggregate = d.valuePath.map { "sum(\(Self.expression($0)))" } ?? "count(*)"
                if d.valuePath == nil { notes.append("sum needs the value's property; counting instead") }
            case .stats?:
                let v = d.valuePath.map(Self.expression) ?? "0"
                aggregate = "{'sum': sum(\(v)), 'count': count(\(v)), 'min': min(\(v)), 'max': max(\(v)), 'sumsqr': sum(\(v) * \(v))}"
            case .approxCountDistinct?:
                aggregate = "count(DISTINCT \(keyExpr))"
            }
            sql = "SELECT \(groupKey) AS key, \(aggregate) AS value FROM \(from)"
            if !conditions.isEmpty { sql += " WHERE " + conditions.joined(separator: " AND ") }
            if !groupComponents.isEmpty {
                sql += " GROUP BY " + groupComponents.joined(separator: ", ")
                sql += " ORDER BY " + groupComponents.enumerated().map { i, c in c + (hasStrings(i) ? " COLLATE UNICODE" : "") + direction }.joined(separator: ", ")
            }
        } else {
            let value = d.valuePath.map { ", \(Self.expression($0)) AS value" } ?? ""
            sql = "SELECT meta().id AS id, \(keyExpr) AS key\(value) FROM \(from)"
            if let keys = options.keys {
                conditions.append("\(keyExpr) IN [\(keys.map { Self.literal(ComparedValue(foundation: $0)) }.joined(separator: ", "))]")
                notes.append("keys: N1QL returns them in key order, not in the order the keys were given")
            }
            if let start = options.startKey {
                let op = options.descending ? "<=" : ">="
                conditions.append("\(keyExpr)\(hasStrings(0) ? " COLLATE UNICODE" : "") \(op) \(Self.literal(ComparedValue(foundation: start)))")
            }
            if let end = options.endKey {
                let op = options.descending ? (options.inclusiveEnd ? ">=" : ">") : (options.inclusiveEnd ? "<=" : "<")
                conditions.append("\(keyExpr)\(hasStrings(0) ? " COLLATE UNICODE" : "") \(op) \(Self.literal(ComparedValue(foundation: end)))")
            }
            if !conditions.isEmpty { sql += " WHERE " + conditions.joined(separator: " AND ") }
            sql += " ORDER BY " + components.enumerated().map { i, c in c + (hasStrings(i) ? " COLLATE UNICODE" : "") + direction }.joined(separator: ", ")
            sql += ", meta().id" + direction
            if let limit = options.limit { sql += " LIMIT \(limit)" }
            if options.skip > 0 { sql += (options.limit == nil ? " LIMIT -1" : "") + " OFFSET \(options.skip)" }
        }
        let index = d.filters.map { Self.expression($0.path) } + (d.unnestPath == nil ? d.keyPaths.filter { $0 != "meta().id" }.map(Self.expression) : [])
        return (sql, index)
    }
}
