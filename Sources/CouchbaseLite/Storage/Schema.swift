/// The 1.x SQLite schema (spec section 2), with the DDL text exactly as real 1.4 files hold it,
/// so `sqlite_master` of a database we create matches one made by Couchbase Lite itself.
enum Schema {
    /// The schema version new databases get (`PRAGMA user_version`).
    static let currentVersion = 102
    /// The oldest `.cblite2` schema we open directly (older files go through the legacy upgrader).
    static let oldestSupportedVersion = 17
    /// `user_version` at or above this is a Couchbase Lite 2.x (LiteCore) database.
    static let firstIncompatibleVersion = 200

    private static let gap = String(repeating: " ", count: 16)

    static let createDocs = "CREATE TABLE docs (\(gap)doc_id INTEGER PRIMARY KEY,\(gap)docid TEXT UNIQUE NOT NULL, expiry_timestamp INTEGER)"
    static let createDocsIndex = "CREATE INDEX docs_docid ON docs(docid)"
    static let createRevs = "CREATE TABLE revs (\(gap)sequence INTEGER PRIMARY KEY AUTOINCREMENT,\(gap)doc_id INTEGER NOT NULL REFERENCES docs(doc_id) ON DELETE CASCADE,\(gap)revid TEXT NOT NULL COLLATE REVID,\(gap)parent INTEGER REFERENCES revs(sequence) ON DELETE SET NULL,\(gap)current BOOLEAN,\(gap)deleted BOOLEAN DEFAULT 0,\(gap)json BLOB,\(gap)no_attachments BOOLEAN, doc_type TEXT,\(gap)UNIQUE (doc_id, revid))"
    static let createRevsIndexes = [
        "CREATE INDEX revs_parent ON revs(parent)",
        "CREATE INDEX revs_by_docid_revid ON revs(doc_id, revid desc, current, deleted)",
        "CREATE INDEX revs_current ON revs(doc_id, current desc, deleted, revid desc)",
    ]
    static let createLocalDocs = "CREATE TABLE localdocs (\(gap)docid TEXT UNIQUE NOT NULL,\(gap)revid TEXT NOT NULL COLLATE REVID,\(gap)json BLOB)"
    static let createLocalDocsIndex = "CREATE INDEX localdocs_by_docid ON localdocs(docid)"
    static let createViews = "CREATE TABLE views (\(gap)view_id INTEGER PRIMARY KEY,\(gap)name TEXT UNIQUE NOT NULL,\(gap)version TEXT,\(gap)lastsequence INTEGER DEFAULT 0,\(gap)total_docs INTEGER DEFAULT -1)"
    static let createViewsIndex = "CREATE INDEX views_by_name ON views(name)"
    static let createInfo = "CREATE TABLE info (\(gap)key TEXT PRIMARY KEY,\(gap)value TEXT)"
    static let createExpiryIndex = "CREATE INDEX docs_expiry ON docs(expiry_timestamp)\(gap)WHERE expiry_timestamp not null"

    /// Every statement that creates a current-version database, in the order 1.4 files list them.
    static var createStatements: [String] {
        [createDocs, createDocsIndex, createRevs] + createRevsIndexes
            + [createLocalDocs, createLocalDocsIndex, createViews, createViewsIndex, createInfo, createExpiryIndex]
    }

    /// The per-view index table (iOS superset layout, spec 2.2).
    static func createMapsTable(viewID: Int64) -> String {
        "CREATE TABLE IF NOT EXISTS 'maps_\(viewID)' (\(gap)sequence INTEGER NOT NULL REFERENCES revs(sequence) ON DELETE CASCADE,\(gap)key TEXT NOT NULL COLLATE JSON,\(gap)value TEXT,\(gap)fulltext_id INTEGER,\(gap)bbox_id INTEGER,\(gap)geokey BLOB)"
    }

    static func createMapsIndexes(viewID: Int64) -> [String] {
        ["CREATE INDEX IF NOT EXISTS 'maps_\(viewID)_keys' on 'maps_\(viewID)'(key COLLATE JSON)",
         "CREATE INDEX IF NOT EXISTS 'maps_\(viewID)_sequence' ON 'maps_\(viewID)'(sequence)"]
    }

    /// The names of the indexes `createMapsIndexes` creates.
    static func mapsIndexNames(viewID: Int64) -> [String] {
        ["maps_\(viewID)_keys", "maps_\(viewID)_sequence"]
    }
}
