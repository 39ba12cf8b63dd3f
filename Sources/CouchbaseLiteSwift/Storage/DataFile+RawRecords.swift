import Foundation
import SQLiteKit

extension DataFile {
    /// Every record of the raw key-store `store` (table `kv_<store>`, e.g. `local` for `_local`
    /// documents) in key order, for tools (`cbl dump --local`); empty when the store does not exist.
    package func rawRecords(store: String) throws -> [(key: String, version: [UInt8], body: [UInt8])] {
        let table = "kv_" + store
        guard try connection.tableExists(table) else { return [] }
        var out: [(key: String, version: [UInt8], body: [UInt8])] = []
        try connection.prepare("SELECT key, version, body FROM \(quoteIdentifier(table)) ORDER BY key").forEachRow {
            out.append(($0.string(0) ?? "", $0.bytes(1) ?? [], $0.bytes(2) ?? []))
        }
        return out
    }

    /// Removes the record `key` of the raw key-store `store`, if both exist.
    package func deleteRawRecord(store: String, key: String) throws {
        let table = "kv_" + store
        guard try connection.tableExists(table) else { return }
        try connection.run("DELETE FROM \(quoteIdentifier(table)) WHERE key=?", [.text(key)])
    }
}
