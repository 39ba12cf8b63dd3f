import BlobDigest
import Foundation
import SQLiteKit

extension DataFile {
    /// Calls `body` with the blob digests each document row mentions, for every key-store table
    /// (every collection, live and deleted rows), in table then key order. A blob is referenced by
    /// its `sha1-…` digest string, which Fleece stores as plain UTF-8 in the current body and in
    /// the rev tree's (or 3.x `extra` column's) older bodies, so the scan reads raw bytes: it may
    /// find a digest that is only text, never miss one a document names.
    package func forEachBlobReference(_ body: (_ table: String, _ documentID: String, _ digests: Set<String>) throws -> Void) throws {
        var tables: [(name: String, hasExtra: Bool)] = []
        try connection.prepare("""
            SELECT name, (SELECT count(*) FROM pragma_table_info(m.name) WHERE name='extra') FROM sqlite_master m
            WHERE type='table' AND name LIKE 'kv\\_%' ESCAPE '\\' AND name <> 'kv_info' AND name NOT LIKE '%::%'
            ORDER BY name
            """).forEachRow { if let t = $0.string(0) { tables.append((t, $0.int64(1) > 0)) } }
        for table in tables {
            let stmt = try connection.prepare("SELECT key, body\(table.hasExtra ? ", extra" : "") FROM \(Self.quoted(table.name)) ORDER BY key")
            try stmt.forEachRow { row in
                var digests = Set<String>()
                for column in 1...(table.hasExtra ? 2 : 1) {
                    row.withBytes(Int32(column)) { if let b = $0 { Self.collectDigests(in: b, into: &digests) } }
                }
                if !digests.isEmpty { try body(table.name, row.string(0) ?? "", digests) }
            }
        }
    }

    /// Every `sha1-` followed by 28 Base64 characters in `bytes`.
    static func collectDigests(in bytes: UnsafeRawBufferPointer, into out: inout Set<String>) {
        let n = bytes.count
        guard n >= 33 else { return }
        let prefix: [UInt8] = Array(SHA1BlobDigest.prefix.utf8)
        var i = 0
        while i + 33 <= n {
            if bytes[i] == prefix[0], bytes[i + 1] == prefix[1], bytes[i + 2] == prefix[2],
               bytes[i + 3] == prefix[3], bytes[i + 4] == prefix[4] {
                let start = i + 5
                var ok = true
                for k in start..<(start + 28) {
                    let c = bytes[k]
                    let isB64 = (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || (c >= 48 && c <= 57)
                        || c == 43 || c == 47 || (c == 61 && k >= start + 27)
                    if !isB64 { ok = false; break }
                }
                if ok {
                    out.insert(SHA1BlobDigest.prefix + String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<(start + 28)]), as: UTF8.self))
                    i = start + 28
                    continue
                }
            }
            i += 1
        }
    }
}
