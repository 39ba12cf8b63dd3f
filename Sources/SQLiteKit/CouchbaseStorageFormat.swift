import Foundation

/// What a Couchbase Lite `NAME.cblite2` directory holds, told from its files and its schema
/// version alone (1.x spec 1.3, 1.5; cbl2-format 2.1): the one format detection both database
/// types, the upgrader and `cbl` share. Each caller words its own error for what it cannot open.
package enum CouchbaseStorageFormat: Sendable, Equatable {
    /// Couchbase Lite 1.x SQLite storage: `docs` and `revs` tables, schema below 201 (17…102 in practice).
    case sqlite1x
    /// Couchbase Lite 2.x/3.x LiteCore storage (schema 201…599).
    case liteCore
    /// Neither: an unknown schema version or tables.
    case unknown

    /// The SQLite file inside a bundle, in both generations.
    package static let databaseFileName = "db.sqlite3"
    /// The schema versions of 1.x files LiteCore upgrades (spec 8.2 step 3).
    package static let legacySchemaVersions = 100...149
    /// The schema versions of 2.x/3.x files this package reads.
    package static let liteCoreSchemaVersions = 201...599

    /// The format of a database file whose `PRAGMA user_version` is `schemaVersion`; `hasDocsAndRevs`
    /// tells whether it has the 1.x `docs` and `revs` tables (a 1.x file before schema 17 has no
    /// version yet).
    package init(schemaVersion: Int, hasDocsAndRevs: Bool) {
        if Self.liteCoreSchemaVersions.contains(schemaVersion) {
            self = .liteCore
        } else if schemaVersion < Self.liteCoreSchemaVersions.lowerBound && hasDocsAndRevs {
            self = .sqlite1x
        } else {
            self = .unknown
        }
    }

    /// True when `directory` holds a 1.x ForestDB database (`db.forest*` files, no `db.sqlite3`),
    /// which nothing here can read.
    package static func isForestDB(_ directory: URL) -> Bool {
        let fm = FileManager.default
        guard !fm.fileExists(atPath: directory.appendingPathComponent(databaseFileName).path),
              let entries = try? fm.contentsOfDirectory(atPath: directory.path) else { return false }
        return entries.contains { $0.hasPrefix("db.forest") }
    }

    /// True when the 1.x blob store of `directory` is encrypted (`attachments/_encryption`, spec 1.7):
    /// the database cannot be read without its key.
    package static func hasEncryptedBlobStore(_ directory: URL) -> Bool {
        FileManager.default.fileExists(atPath: directory.appendingPathComponent("attachments/_encryption").path)
    }
}
