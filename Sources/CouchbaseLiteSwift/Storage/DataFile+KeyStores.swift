import Foundation
import SQLiteKit

/// What one key-store's tables look like in this file (spec 2.2): which optional columns its
/// table has, and whether a 3.1+ `kv_del_` twin holds its deleted documents.
package struct KeyStoreLayout: Sendable, Equatable {
    /// 3.x rows: current body in `body`, tree in `extra` (spec 3.4).
    package var hasExtraColumn: Bool
    package var hasExpirationColumn: Bool
    package var hasDeletedTable: Bool
    package var deletedHasExpirationColumn: Bool
}

/// Collections as LiteCore 3.x stores them (spec 2.2, 2.3): one key-store per collection, named
/// `.name` / `.scope.name`, with its own table, its own `kvmeta` sequence row and (3.1+) its own
/// `kv_del_` table. Collections need the 3.1 schema, so creating the first one upgrades an older
/// file the way LiteCore 3.1 upgrades any file it opens (spec 2.1).
extension DataFile {
    /// `user_version` 400: `extra` column in every key-store table (3.0).
    static let newDocsSchemaVersion = 400
    /// `user_version` 500: `kv_del_` tables for deleted documents (3.1, 3.2); the schema collections need.
    static let deletedTableSchemaVersion = 500
    /// `user_version` 502: `expiration` in every key-store table's CREATE statement (3.3).
    static let expirationColumnSchemaVersion = 502

    /// The default collection's layout; the default key-store always exists (checked on open).
    var defaultLayout: KeyStoreLayout {
        (try? layout(of: .default))
            ?? KeyStoreLayout(hasExtraColumn: false, hasExpirationColumn: false, hasDeletedTable: false,
                              deletedHasExpirationColumn: false)
    }

    /// The tables of `keyStore`, or nil when it has none (a collection never created or deleted).
    package func layout(of keyStore: KeyStore) throws -> KeyStoreLayout? {
        if let cached = layouts[keyStore.name] { return cached }
        let columns = try connection.columns(of: keyStore.table)
        guard !columns.isEmpty else { return nil }
        let deletedColumns = try connection.columns(of: keyStore.deletedTable)
        let layout = KeyStoreLayout(hasExtraColumn: columns.contains("extra"),
                                    hasExpirationColumn: columns.contains("expiration"),
                                    hasDeletedTable: !deletedColumns.isEmpty,
                                    deletedHasExpirationColumn: deletedColumns.contains("expiration"))
        layouts[keyStore.name] = layout
        return layout
    }

    /// Forgets the cached layouts and re-reads the schema version (after DDL, or a rollback that
    /// may have undone some).
    func schemaDidChange() {
        layouts = [:]
        refreshSchemaVersion()
    }

    /// Sets `kvmeta.lastSeq` of `keyStore`, adding its row on the first write (as LiteCore's
    /// `setLastSequence` does: a new collection has no row until then).
    package func setLastSequence(_ sequence: UInt64, of keyStore: KeyStore) throws {
        let stmt = try connection.cached(
            "INSERT INTO kvmeta (name, lastSeq) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET lastSeq = excluded.lastSeq")
        defer { stmt.reset() }
        try stmt.bind(keyStore.name, at: 1)
        try stmt.bind(Int64(sequence), at: 2)
        _ = try stmt.step()
    }

    /// Counts a purge in `kvmeta.purgeCnt` of `keyStore` where the file has that column (302+).
    func incrementPurgeCount(of keyStore: KeyStore) throws {
        guard try connection.columns(of: "kvmeta").contains("purgeCnt") else { return }
        try connection.run("INSERT INTO kvmeta (name, purgeCnt) VALUES (?, 1) ON CONFLICT (name) DO UPDATE SET purgeCnt = purgeCnt + 1",
                           [.text(keyStore.name)])
    }

    // MARK: Listing

    /// The key-stores that are collections (the default one first), from the tables in the file.
    package func collectionKeyStores() throws -> [KeyStore] {
        let stmt = try connection.prepare(
            "SELECT name FROM sqlite_master WHERE type='table' AND name GLOB 'kv_*' AND NOT name GLOB 'kv_del_*'")
        var out: [KeyStore] = []
        while try stmt.step() {
            if let keyStore = KeyStore(table: stmt.string(0) ?? ""), keyStore.collectionSpec != nil {
                out.append(keyStore)
            }
        }
        return out.sorted { a, b in
            if a.isDefault != b.isDefault { return a.isDefault }
            let (sa, ca) = a.collectionSpec!, (sb, cb) = b.collectionSpec!   // kept: nil ones were left out above
            return sa != sb ? sa < sb : ca < cb
        }
    }

    // MARK: Creating and deleting

    /// Creates the tables of `keyStore` as the file's LiteCore generation does (spec 2.2), first
    /// upgrading a pre-3.1 file to the 3.1 schema. Returns false when it already existed.
    @discardableResult
    package func createKeyStore(_ keyStore: KeyStore) throws -> Bool {
        if try layout(of: keyStore) != nil { return false }
        defer { schemaDidChange() }
        try inTransaction {
            try upgradeToCollectionSchema()
            try createKeyStoreTable(keyStore.table)
            try createKeyStoreTable(keyStore.deletedTable)
        }
        return true
    }

    /// Drops the tables of `keyStore` (LiteCore's `deleteKeyStore`) and the records of the
    /// indexes on them; its `kvmeta` row stays, as in LiteCore. Returns false when there was none.
    @discardableResult
    package func deleteKeyStore(_ keyStore: KeyStore) throws -> Bool {
        guard try layout(of: keyStore) != nil else { return false }
        defer { schemaDidChange() }
        try inTransaction {
            // Its full-text indexes' FTS tables are separate tables (their triggers go with the table).
            for record in try indexRecords(keyStore: keyStore) where record.type == IndexRecord.Kind.fullText.rawValue {
                try dropIndex(record)
            }
            try connection.execute("DROP TABLE IF EXISTS \(KeyStore.quoted(keyStore.table))")
            try connection.execute("DROP TABLE IF EXISTS \(KeyStore.quoted(keyStore.deletedTable))")
            // Dropping a table drops its SQLite indexes; their records must not outlive them.
            if try connection.tableExists("indexes") {
                try connection.run("DELETE FROM indexes WHERE keyStore=?", [.text(keyStore.name)])
            }
        }
        return true
    }

    /// One key-store table in the DDL of the file's generation: 3.3+ (502) lists `expiration` in
    /// the CREATE; 3.1/3.2 create the 3.0 table and then add it, as `BothKeyStore` does.
    private func createKeyStoreTable(_ table: String) throws {
        let name = KeyStore.quoted(table)
        if schemaVersion >= Self.expirationColumnSchemaVersion {
            try connection.execute("CREATE TABLE IF NOT EXISTS \(name) (  key TEXT PRIMARY KEY,  sequence INTEGER,  flags INTEGER DEFAULT 0,  version BLOB,  body BLOB,  expiration INTEGER,  extra BLOB)")
            try connection.execute("CREATE INDEX IF NOT EXISTS \(KeyStore.quoted(table + "_expiration")) ON \(name) (expiration) WHERE expiration not null")
        } else {
            try connection.execute("CREATE TABLE IF NOT EXISTS \(name) (  key TEXT PRIMARY KEY,  sequence INTEGER,  flags INTEGER DEFAULT 0,  version BLOB,  body BLOB,  extra BLOB)")
            try addExpirationColumn(table: table)
        }
    }

    /// Adds the `expiration` column and its partial index to `table` (spec 5), when missing.
    /// A 2.x file gets 2.x's unquoted statement; 3.x quotes the names (`"kv_.tasks_expiration"`).
    func addExpirationColumn(table: String) throws {
        guard !(try connection.columns(of: table).contains("expiration")) else { return }
        let quoted = KeyStore.quoted(table)
        try connection.execute("ALTER TABLE \(quoted) ADD COLUMN expiration INTEGER")
        if schemaVersion < Self.newDocsSchemaVersion && table == Schema2.defaultTable {
            try connection.execute("CREATE INDEX kv_default_expiration ON kv_default (expiration) WHERE expiration not null")
        } else {
            try connection.execute("CREATE INDEX IF NOT EXISTS \(KeyStore.quoted(table + "_expiration")) ON \(quoted) (expiration) WHERE expiration not null")
        }
        schemaDidChange()
    }

    // MARK: Upgrading to the 3.1 schema

    /// What LiteCore 3.1 does to an older file it opens (spec 2.1, `SQLiteDataFile::reopen`), in
    /// one transaction: `kvmeta.purgeCnt` (302), an `extra` column in every key-store table (400),
    /// a `kv_del_` table with `expiration` for every collection, deleted documents of other
    /// collections moved there (500; the default collection's stay where they are, as 3.1 leaves
    /// them for its background migration), and `versioning` 1 (spec 2.4). Documents are not
    /// rewritten: 2.x rows stay readable and take the 3.x shape when next saved. After this, real
    /// Couchbase Lite 2.x can no longer open the file; 3.1+ (and this package) can.
    func upgradeToCollectionSchema() throws {
        guard schemaVersion < Self.deletedTableSchemaVersion else { return }
        try checkWritable()
        let versioningBefore = versioning
        defer { schemaDidChange() }
        do {
            try upgradeSteps()
        } catch {
            versioning = versioningBefore
            throw error
        }
    }

    private func upgradeSteps() throws {
        try inTransaction {
            if !(try connection.columns(of: "kvmeta").contains("purgeCnt")) {
                try connection.execute("ALTER TABLE kvmeta ADD COLUMN purgeCnt INTEGER DEFAULT 0")
            }
            let stmt = try connection.prepare(
                "SELECT name FROM sqlite_master WHERE type='table' AND name GLOB 'kv_*' AND NOT name GLOB 'kv_del_*'")
            var tables: [String] = []
            while try stmt.step() { tables.append(stmt.string(0) ?? "") }
            // FTS tables (`kv_default::index`) are left alone (LiteCore CBL-1741).
            for table in tables where !table.contains("::") {
                if !(try connection.columns(of: table).contains("extra")) {
                    try connection.execute("ALTER TABLE \(KeyStore.quoted(table)) ADD COLUMN extra BLOB")
                }
            }
            if schemaVersion < Self.newDocsSchemaVersion {
                try connection.setUserVersion(Self.newDocsSchemaVersion)
                refreshSchemaVersion()
            }
            for table in tables {
                guard let keyStore = KeyStore(table: table), keyStore.collectionSpec != nil else { continue }
                try createKeyStoreTable(keyStore.deletedTable)
                try addExpirationColumn(table: keyStore.table)
                if !keyStore.isDefault {
                    let live = KeyStore.quoted(keyStore.table), deleted = KeyStore.quoted(keyStore.deletedTable)
                    try connection.execute("INSERT INTO \(deleted) (key, sequence, flags, version, body, extra, expiration) "
                        + "SELECT key, sequence, flags, version, body, extra, expiration FROM \(live) WHERE (flags&1)!=0")
                    try connection.execute("DELETE FROM \(live) WHERE (flags&1)!=0")
                }
            }
            try connection.setUserVersion(Self.deletedTableSchemaVersion)
            refreshSchemaVersion()
            if versioning == 0 {
                // 3.x marks a rev-tree file it has opened (spec 2.4); documents migrate lazily.
                try setInfo(Schema2.InfoKey.versioning, [0, 0, 0, 0, 0, 0, 0, 1])
                versioning = 1
            }
        }
    }
}
