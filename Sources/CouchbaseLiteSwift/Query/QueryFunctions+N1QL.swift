import Fleece
import SQLiteKit

/// The N1QL function library (`n1ql_<name>`, N1QLFunctionTable), `array_agg` and `fl_like`.
extension QueryFunctions {
    static func registerN1QL(on connection: SQLiteConnection, decoder: FleeceBodyDecoder) throws {
        for (name, f) in N1QLFunctionTable.functions {
            try connection.createFunction("n1ql_" + name, argumentCount: -1, readsSubtypes: true) { a, r in
                var args: [QueryValue] = []
                args.reserveCapacity(a.count)
                for i in 0..<a.count { args.append(QueryValue.argument(a, i, decoder)) }
                f.body(args).set(r)
            }
        }
        // array_agg(x): the group's values as an array (MISSING skipped, as LiteCore does).
        try connection.createAggregate("n1ql_array_agg", argumentCount: 1, readsSubtypes: true) {
            ArrayAggregate(decoder: decoder)
        }
        // fl_like(string, pattern, collation flags)
        try connection.createFunction("fl_like", argumentCount: 3, readsSubtypes: true) { a, r in
            let s = QueryValue.argument(a, 0, decoder), p = QueryValue.argument(a, 1, decoder)
            if s.isMissing || p.isMissing { return r.setNull() }
            guard case .string(let str) = s, case .string(let pat) = p else { return QueryValue.null.set(r) }
            QueryValue.bool(LikeMatcher.matches(str, pattern: pat, flags: Int(a.int64(2)))).set(r)
        }
    }
}

/// The state of one group of `array_agg`.
private final class ArrayAggregate: SQLiteAggregateState {
    let decoder: FleeceBodyDecoder
    var values: [QueryValue] = []

    init(decoder: FleeceBodyDecoder) { self.decoder = decoder }

    func step(_ a: SQLiteArguments) {
        let v = QueryValue.argument(a, 0, decoder)
        if !v.isMissing { values.append(v) }
    }

    func finish(_ r: SQLiteFunctionResult) {
        var enc = FleeceEncoder()
        enc.beginArray(reserve: values.count)
        for v in values { v.write(to: &enc) }
        enc.endArray()
        guard let bytes = try? enc.finish(), let doc = try? FleeceDocument(bytes: bytes) else { return r.setNull() }
        QueryValue.fleece(doc.root).set(r)
    }
}
