import CouchbaseLite
import Foundation
import JSONCore

extension SuggestionWriter {
    /// The suggested query as 2.x QueryBuilder code in Swift, or a comment saying why the N1QL
    /// string is the only form (UNNEST, array keys, object values and IS NOT MISSING have no
    /// QueryBuilder counterpart).
    static func queryBuilderSwift(description d: MapDescription, options: ViewQueryOptions, n1ql: String) -> String {
        let reduced = !options.mapOnly && (options.reduce != nil || options.group || options.groupLevel > 0)
        var missing: [String] = []
        if d.unnestPath != nil { missing.append("UNNEST") }
        if d.keyPaths.count > 1 { missing.append("array keys") }
        if d.keyPaths.isEmpty && d.unnestPath == nil { missing.append("a key expression") }
        if n1ql.contains("IS NOT MISSING") { missing.append("IS NOT MISSING") }
        if options.keys != nil || options.startKey != nil || options.endKey != nil { missing.append("key ranges") }
        if reduced, options.reduce == .stats || options.reduce == .approxCountDistinct { missing.append("the \(options.reduce!.rawValue) result") }
        if reduced, options.reduce == .sum, d.valuePath == nil { missing.append("the summed value") }
        guard missing.isEmpty else {
            return "// No QueryBuilder form (\(missing.joined(separator: ", "))): use the N1QL string\n"
                + "let query = try database.createQuery(\(swiftString(n1ql)))"
        }
        func property(_ path: String) -> String {
            path == "meta().id" ? "Meta.id" : "Expression.property(\(swiftString(path)))"
        }
        let key = d.keyPaths[0]
        let collated = n1ql.contains("\(expression(key)) COLLATE UNICODE")
        let direction = options.descending ? ".descending()" : ""
        let ordering = "Ordering.expression(\(property(key))\(collated ? ".collate(Collation.unicode())" : ""))\(direction)"
        var conditions = d.filters.map { "\(property($0.path)).equalTo(Expression.value(\(swiftLiteral($0.value))))" }
        conditions += d.keyPaths.filter { $0 != "meta().id" }.map { "\(property($0)).isValued()" }
        var lines: [String] = []
        if reduced {
            let grouped = options.group || options.groupLevel > 0
            let aggregate = options.reduce == .sum ? "Function.sum(\(property(d.valuePath!)))" : "Function.count(Expression.all())"
            lines.append("let query = QueryBuilder")
            lines.append("    .select(SelectResult.expression(\(grouped ? property(key) : "Expression.value(nil)")).as(\"key\"),")
            lines.append("            SelectResult.expression(\(aggregate)).as(\"value\"))")
            lines.append("    .from(DataSource.database(database))")
            if !conditions.isEmpty { lines.append("    .where(\(conditions.joined(separator: "\n        .and("))\(String(repeating: ")", count: conditions.count - 1)))") }
            if grouped {
                lines.append("    .groupBy(\(property(key)))")
                lines.append("    .orderBy(\(ordering))")
            }
        } else {
            lines.append("let query = QueryBuilder")
            lines.append("    .select(SelectResult.expression(Meta.id).as(\"id\"),")
            if let v = d.valuePath {
                lines.append("            SelectResult.expression(\(property(key))).as(\"key\"),")
                lines.append("            SelectResult.expression(\(property(v))).as(\"value\"))")
            } else {
                lines.append("            SelectResult.expression(\(property(key))).as(\"key\"))")
            }
            lines.append("    .from(DataSource.database(database))")
            if !conditions.isEmpty { lines.append("    .where(\(conditions.joined(separator: "\n        .and("))\(String(repeating: ")", count: conditions.count - 1)))") }
            lines.append("    .orderBy(\(ordering), Ordering.expression(Meta.id)\(direction))")
            if let limit = options.limit {
                lines.append(options.skip > 0 ? "    .limit(Expression.int(\(limit)), offset: Expression.int(\(options.skip)))" : "    .limit(Expression.int(\(limit)))")
            }
        }
        return lines.joined(separator: "\n")
    }

    /// A Swift string literal.
    static func swiftString(_ s: String) -> String {
        "\"" + s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n") + "\""
    }

    /// A Swift literal for a filter's JSON value (strings quoted, numbers and booleans as written).
    static func swiftLiteral(_ v: JSONValue) -> String {
        if case .string(let s) = v { return swiftString(s) }
        if case .null = v { return "nil" }
        return ComparedValue.value(v).json
    }
}
