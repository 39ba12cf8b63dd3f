import Fleece
import Foundation
import SQLiteKit

/// The SQL pieces full-text indexes and queries use, as LiteCore registers them: the `unicodesn`
/// tokenizer, `fl_fts_value(body, path)` (a property as the text FTS indexes) and
/// `rank(matchinfo(…))` (relevance of a match).
extension QueryFunctions {
    static func registerFullText(on connection: SQLiteConnection, lookup: @escaping (SQLiteArguments, SQLiteFunctionResult?) -> FleeceValue?) throws {
        try DataFile.registerFullTextTokenizer(on: connection)
        // fl_fts_value: every scalar under the property, in document order, joined by spaces:
        // strings as is, numbers in decimal, booleans `T`/`F`; MISSING gives NULL (nothing indexed).
        try connection.createFunction("fl_fts_value", argumentCount: 2, readsSubtypes: true) { a, r in
            guard let value = lookup(a, r) else { return r.setNull() }
            r.set(ftsText(value))
        }
        try connection.createFunction("rank", argumentCount: 1) { a, r in
            guard a.storageClass(0) == .blob else { return r.setError("nothing for rank() to match") }
            r.set(a.withBlob(0) { rank(matchinfo: $0) })
        }
    }

    /// LiteCore's text of a value for FTS: each value of a depth-first walk contributes its text
    /// (empty for containers and null) followed by a space; the last space is dropped.
    static func ftsText(_ root: FleeceValue) -> String {
        var pieces: [String] = []
        func visit(_ v: FleeceValue) {
            switch v.type {
            case .boolean: pieces.append(v.boolValue ? "T" : "F")
            case .number:
                if v.isInteger { pieces.append(v.isUnsigned ? String(v.uintValue) : String(v.intValue)) }
                else {
                    let d = v.doubleValue
                    pieces.append(d == d.rounded() && abs(d) < 1e15 ? String(Int64(d)) : String(d))
                }
            case .string: pieces.append(v.stringValue ?? "")
            case .array:
                pieces.append("")
                for item in v.arrayValue! { visit(item) }
            case .dict:
                pieces.append("")
                for (_, item) in v.dictValue! { visit(item) }
            case .null, .undefined, .data: pieces.append("")
            }
        }
        visit(root)
        return pieces.joined(separator: " ")
    }

    /// LiteCore's relevance of an FTS row (`SQLiteFTSRankFunction`): for each query phrase and
    /// table column, hits in this row divided by hits in all rows, summed. `matchinfo` is the
    /// default "pcx" blob: phrase count, column count, then 3 unsigned 32-bit counts per pair.
    static func rank(matchinfo bytes: UnsafeRawBufferPointer) -> Double {
        let count = bytes.count / 4
        guard count >= 2 else { return 0 }
        func value(_ i: Int) -> Int { Int(bytes.loadUnaligned(fromByteOffset: i * 4, as: UInt32.self)) }
        let phrases = value(0), columns = value(1)
        guard 2 + phrases * columns * 3 <= count else { return 0 }
        var score = 0.0
        for phrase in 0..<phrases {
            for column in 0..<columns {
                let base = 2 + (phrase * columns + column) * 3
                let hits = value(base), globalHits = value(base + 1)
                if hits > 0 && globalHits > 0 { score += Double(hits) / Double(globalHits) }
            }
        }
        return score
    }
}
