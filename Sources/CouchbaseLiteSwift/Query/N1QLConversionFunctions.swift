import Fleece

/// `to_array`, `to_atom`, `to_object` (and their `toX` spellings), as N1QL defines them:
/// MISSING and null pass through; anything else converts.
enum N1QLConversionFunctions {
    typealias Function = N1QLFunctionTable.Function

    static func add(to t: inout [String: Function]) {
        let toArray = Function { a in
            switch a[0] {
            case .missing, .null: return a[0]
            case .fleece(let f) where f.type == .array: return a[0]
            default: return encoded { enc in enc.beginArray(reserve: 1); a[0].write(to: &enc); enc.endArray() }
            }
        }
        let toAtom = Function { a in atom(a[0]) }
        let toObject = Function { a in
            switch a[0] {
            case .missing, .null: return a[0]
            case .fleece(let f) where f.type == .dict: return a[0]
            default: return encoded { enc in enc.beginDict(reserve: 0); enc.endDict() }
            }
        }
        for (name, f) in [("array", toArray), ("atom", toAtom), ("object", toObject)] {
            t["to" + name] = f
            t["to_" + name] = f
        }
    }

    /// A one-element array or one-key object gives its element's atom; scalars are themselves.
    private static func atom(_ v: QueryValue) -> QueryValue {
        switch v {
        case .missing, .null, .bool, .int, .double, .string: return v
        case .data: return .null
        case .fleece(let f):
            if let arr = f.arrayValue, arr.count == 1, let first = arr.first { return atom(QueryValue(first)) }
            if let dict = f.dictValue, dict.count == 1 {
                var it = dict.makeIterator()
                if let only = it.next() { return atom(QueryValue(only.value)) }
            }
            return .null
        }
    }

    private static func encoded(_ body: (inout FleeceEncoder) -> Void) -> QueryValue {
        var enc = FleeceEncoder()
        body(&enc)
        guard let bytes = try? enc.finish(), let doc = try? FleeceDocument(bytes: bytes) else { return .null }
        return .fleece(doc.root)
    }
}
