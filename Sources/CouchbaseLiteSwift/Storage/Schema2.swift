/// The 2.x/3.x SQLite schema facts (spec 2): `PRAGMA user_version` values and the exact DDL of the
/// 2.8 layout this package writes (byte-identical to a real Couchbase Lite 2.8 file).
import SQLiteKit

package enum Schema2 {
    /// What real Couchbase Lite 2.7/2.8 create: 3-column `kvmeta` (spec 2.1, 4).
    package static let version302 = 302
    /// What Couchbase Lite 2.0–2.6 create (2-column `kvmeta`); every later version upgrades it.
    package static let version201 = 201
    /// Lowest and highest `user_version` this reader understands (2.0 … 3.3/4.x files).
    package static let oldestReadable = CouchbaseStorageFormat.liteCoreSchemaVersions.lowerBound
    package static let newestReadable = CouchbaseStorageFormat.liteCoreSchemaVersions.upperBound
    /// Couchbase Lite 1.x SQLite files use 100…149 (spec 2.1): they need the upgrader.
    package static let legacyRange = CouchbaseStorageFormat.legacySchemaVersions

    package static let kvmeta302 =
        "CREATE TABLE kvmeta (name TEXT PRIMARY KEY, lastSeq INTEGER DEFAULT 0, purgeCnt INTEGER DEFAULT 0) WITHOUT ROWID"
    package static let kvmeta201 =
        "CREATE TABLE kvmeta (name TEXT PRIMARY KEY, lastSeq INTEGER DEFAULT 0) WITHOUT ROWID"

    /// A 2.x key-store table (`kv_default`, `kv_info`), whitespace exactly as LiteCore 2.x writes it.
    package static func keyStoreTable(_ table: String) -> String {
        "CREATE TABLE \(table) (  key TEXT PRIMARY KEY,  sequence INTEGER,  flags INTEGER DEFAULT 0,  version BLOB,  body BLOB)"
    }

    /// `kv_info` record keys (spec 2.4).
    package enum InfoKey {
        package static let versioning = "versioning"
        package static let publicUUID = "publicUUID"
        package static let privateUUID = "privateUUID"
        package static let sharedKeys = "SharedKeys"
        package static let maxRevTreeDepth = "maxRevTreeDepth"
    }

    /// The default collection's key-store and table (spec 2.3).
    package static let defaultKeyStore = "default"
    package static let defaultTable = "kv_default"
    package static let deletedDefaultTable = "kv_del_default"
    package static let infoTable = "kv_info"

    /// LiteCore's default maximum rev-tree depth for 2.x files (spec 2.4).
    package static let defaultMaxRevTreeDepth = 20

    package static let databaseFileName = "db.sqlite3"
    package static let attachmentsDirectoryName = "Attachments"
    package static let bundleExtension = "cblite2"
}
