import Fleece
import Foundation
import SQLiteKit

/// One document row of a collection, as stored (spec 2.2, 3.3, 3.4).
package struct DocumentRecord: Sendable {
    package var docID: String
    package var sequence: UInt64
    package var flags: DocumentFlags
    /// Binary revision ID of the current revision (spec 3.2).
    package var version: [UInt8]
    /// The whole rev tree; revision 0 is the current one.
    package var tree: LiteCoreRevTree
    /// Fleece properties of the current revision (nil when it kept no body).
    package var body: [UInt8]?
    /// Absolute expiry time in milliseconds since 1970 (C4Timestamp), when set.
    package var expiration: Int64?

    package var isDeleted: Bool { flags.contains(.deleted) }
    package var revisionID: String? { BinaryRevisionID.decode(version) }
}

/// The SQLite file of a 2.x/3.x database bundle (LiteCore's `SQLiteDataFile`): reads every layout
/// from 2.0 (user_version 201) to 3.3 (503), and writes the 2.8 layout (302, spec 4) until the
/// first collection other than the default one needs the 3.1 schema (500, `DataFile+KeyStores`).
/// Not thread-safe: `Database` keeps one writer instance and one per reader connection
/// (`DataFilePool`), each used by one thread at a time; the upgrader owns its own instance.
// @unchecked because each instance is used by one thread at a time: the one holding its connection (see the type's comment).
package final class DataFile: @unchecked Sendable {
    package let directory: URL
    package let connection: SQLiteConnection
    package internal(set) var schemaVersion: Int
    package internal(set) var sharedKeys: SharedKeys
    package let blobStore: BlobStore
    /// Rev-tree (0), 3.x rev-tree (1) or version-vector (2) storage (kv_info `versioning`, spec 2.4).
    package internal(set) var versioning: UInt64 = 0
    /// Each key-store's columns and tables as read from the schema; emptied whenever DDL (a new
    /// collection, an added column, a rolled-back transaction) may have changed them.
    var layouts: [String: KeyStoreLayout] = [:]
    /// 3.x rows in the default collection: current body in `body`, tree in `extra` (spec 3.4).
    package var hasExtraColumn: Bool { defaultLayout.hasExtraColumn }
    package var hasExpirationColumn: Bool { defaultLayout.hasExpirationColumn }
    /// 3.1+ keep deleted documents of the default collection in `kv_del_default` too.
    package var hasDeletedTable: Bool { defaultLayout.hasDeletedTable }
    /// Internal: a rolled-back write sets it to -1 so the next one stores the table again.
    var sharedKeysCountSaved = 0
    /// Opened read-only (`DatabaseConfiguration.readOnly`, tools): readers open the same way.
    package let isReadOnly: Bool
    /// Reader state (`DataFile+Readers`): what the last read transaction saw of the file.
    var readerState = ReaderState()
    /// Collations registered on this connection by queries (saves a lookup per run).
    var registeredCollations: Set<String> = []

    package static func databasePath(in directory: URL) -> String {
        directory.appendingPathComponent(Schema2.databaseFileName).path
    }

    // MARK: Opening

    /// Opens an existing bundle; with `create`, creates an empty 2.8-layout database when absent.
    /// `readOnly` opens without writing anything (no pragmas, no schema creation).
    package init(directory: URL, create: Bool, readOnly: Bool = false) throws {
        self.directory = directory
        self.isReadOnly = readOnly
        let fm = FileManager.default
        let dbPath = Self.databasePath(in: directory)
        try Self.checkBundle(directory)
        let exists = fm.fileExists(atPath: dbPath)
        if !exists {
            guard create, !readOnly else { throw CouchbaseLiteError(.notFound, "No database at \(directory.path)") }
            try fm.createDirectory(at: directory, withIntermediateDirectories: true)
        }
        do {
            // A read-only look at a checkpointed file must not even create `-shm`/`-wal` beside it.
            connection = readOnly && exists
                ? try SQLiteConnection.openReadOnly(path: dbPath)
                : try SQLiteConnection(path: dbPath, mode: .init(readOnly: readOnly, create: !exists))
        } catch let e as SQLiteError {
            throw Self.openError(e, path: dbPath)
        }
        sharedKeys = SharedKeys()
        blobStore = BlobStore(directory: directory.appendingPathComponent(Schema2.attachmentsDirectoryName))
        schemaVersion = 0
        do {
            // The one detection's first read (the 1.x store, the upgrader and `cbl` run it too)
            // tells a database from an encrypted or garbage file before any pragma writes.
            let contents = try CouchbaseStorageFormat.contents(of: connection, file: dbPath)
            schemaVersion = contents.schemaVersion
            if contents.tables.isEmpty && schemaVersion == 0 {
                guard create, !readOnly else { throw CouchbaseLiteError(.wrongFormat, "\(dbPath) is an empty file, not a database") }
                try createSchema(bulkLoad: false)
            } else {
                try checkSchemaVersion(contents, path: dbPath)
                if !readOnly {
                    try connection.execute("PRAGMA journal_mode=WAL")
                    try connection.execute("PRAGMA synchronous=NORMAL")
                }
                try loadLayout()
            }
            try connection.execute(Self.connectionSettings)
        } catch let failure as CouchbaseStorageFormat.Failure {
            connection.close()
            throw Self.openError(failure, path: dbPath)
        } catch let e as SQLiteError {
            connection.close()
            throw Self.openError(e, path: dbPath)
        } catch {
            connection.close()
            throw error
        }
    }

    /// Creates a new bundle at `directory` (which must not contain a database) for a bulk import:
    /// no journal syncing while it is built, since the converter builds in a temporary directory
    /// and renames it into place only after `finishBulkLoad()`.
    package init(creatingForBulkLoadAt directory: URL) throws {
        self.directory = directory
        self.isReadOnly = false
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let dbPath = Self.databasePath(in: directory)
        guard !FileManager.default.fileExists(atPath: dbPath) else {
            throw CouchbaseLiteError(.invalidParameter, "A database already exists at \(directory.path)")
        }
        connection = try SQLiteConnection(path: dbPath, mode: .init(readOnly: false, create: true))
        sharedKeys = SharedKeys()
        blobStore = BlobStore(directory: directory.appendingPathComponent(Schema2.attachmentsDirectoryName))
        schemaVersion = Schema2.version302
        try createSchema(bulkLoad: true)
    }

    /// LiteCore's per-connection settings (SQLiteDataFile::reopen): 10 MB page cache, 50 MB mmap,
    /// case-sensitive LIKE (N1QL's; the translator writes SQLite's LIKE, see QueryTranslator).
    /// Every connection, writer or reader, gets them.
    static let connectionSettings = "PRAGMA cache_size=-10240; PRAGMA mmap_size=52428800; PRAGMA case_sensitive_like=true"

    /// A reader on `connection`, another connection to `writer`'s file (see `DataFilePool`):
    /// it only reads, sharing the writer's blob store, and follows the writer's commits with
    /// ``refreshForRead()``.
    package init(readerOn connection: SQLiteConnection, of writer: DataFile) throws {
        directory = writer.directory
        self.connection = connection
        isReadOnly = true
        blobStore = writer.blobStore
        sharedKeys = SharedKeys()
        schemaVersion = connection.userVersion
        try connection.execute(Self.connectionSettings)
        // Noted before anything is read, so a commit made meanwhile is caught by the first refresh.
        readerState = try ReaderState(connection)
        try loadLayout()
        readerState.sharedKeysState = try info(Schema2.InfoKey.sharedKeys)
    }

    package func close() {
        insertStatement = nil
        connection.close()
    }

    /// A file where the bundle should be and ForestDB bundles are refused (spec 1), through the
    /// one bundle check; a missing `db.sqlite3` is the caller's call (create or "not found"). A 1.x
    /// encrypted blob store is no concern here: its 1.x file is refused by its schema or by SQLite.
    static func checkBundle(_ directory: URL) throws {
        var isDir: ObjCBool = false
        if FileManager.default.fileExists(atPath: directory.path, isDirectory: &isDir), !isDir.boolValue {
            throw CouchbaseLiteError(.wrongFormat, "\(directory.path) is a file; a database is a .cblite2 directory")
        }
        do {
            try CouchbaseStorageFormat.checkBundle(directory, keyGiven: true, requireDatabaseFile: false)
        } catch let failure as CouchbaseStorageFormat.Failure {
            throw openError(failure, path: directory.path)
        }
    }

    static func openError(_ e: SQLiteError, path: String) -> CouchbaseLiteError {
        openError(CouchbaseStorageFormat.failure(for: e, file: path) ?? .unreadable(e.message), path: path)
    }

    /// The 2.x error for what the detection found instead of a database; `path` is the file
    /// (the bundle for ForestDB).
    static func openError(_ failure: CouchbaseStorageFormat.Failure, path: String) -> CouchbaseLiteError {
        switch failure {
        case .forestDB:
            let name = URL(fileURLWithPath: path).lastPathComponent
            return CouchbaseLiteError(.wrongFormat, "\(name) is a Couchbase Lite 1.x ForestDB database, which cannot be opened or upgraded")
        case .notADatabase, .encryptedWithoutKey:
            return CouchbaseLiteError(.notADatabaseFile, "\(path) is encrypted or is not a database")
        case .corrupt:
            return CouchbaseLiteError(.corruptData, "\(path) is corrupt or truncated")
        case .unreadable(let message), .sqlCipherUnavailable(let message):
            return CouchbaseLiteError(.cantOpenFile, "Cannot open \(path): \(message)")
        case .noDatabaseFile:
            return CouchbaseLiteError(.notFound, "No database at \(path)")
        case .unknownFormat(let version, _):
            return CouchbaseLiteError(.wrongFormat, "Database schema \(version) of \(path) is not a Couchbase Lite database")
        }
    }

    /// The 2.x reader's decision on what the detection found: 1.x files go to the upgrader,
    /// versions outside 201…599 are refused.
    private func checkSchemaVersion(_ contents: CouchbaseStorageFormat.Contents, path: String) throws {
        let v = contents.schemaVersion
        if Schema2.legacyRange.contains(v) || contents.format == .sqlite1x {
            throw CouchbaseLiteError(.databaseTooOld,
                "\(directory.lastPathComponent) is a Couchbase Lite 1.x database (schema \(v)); convert it with `cbl upgrade`")
        }
        if v < Schema2.oldestReadable {
            throw CouchbaseLiteError(.databaseTooOld, "Database schema \(v) of \(path) is too old")
        }
        if v > Schema2.newestReadable {
            throw CouchbaseLiteError(.databaseTooNew, "Database schema \(v) of \(path) is newer than this reader understands")
        }
    }

    func loadLayout() throws {
        guard try connection.tableExists(Schema2.defaultTable), try connection.tableExists(Schema2.infoTable) else {
            throw CouchbaseLiteError(.wrongFormat, "\(directory.lastPathComponent) has no kv_default/kv_info tables")
        }
        layouts = [:]
        _ = try layout(of: .default)
        guard let versioningBytes = try info(Schema2.InfoKey.versioning), versioningBytes.count == 8 else {
            throw CouchbaseLiteError(.wrongFormat, "\(directory.lastPathComponent) has no 'versioning' record")
        }
        versioning = versioningBytes.reduce(0) { $0 << 8 | UInt64($1) }
        if let state = try info(Schema2.InfoKey.sharedKeys) {
            do {
                sharedKeys = try SharedKeys(stateData: state)
            } catch {
                throw CouchbaseLiteError(.corruptData, "The SharedKeys record of \(directory.lastPathComponent) is corrupt: \(error)")
            }
        }
        sharedKeysCountSaved = sharedKeys.count
    }

    // MARK: Creating (spec 4)

    private func createSchema(bulkLoad: Bool) throws {
        // auto_vacuum must precede the first write (spec 2.1).
        try connection.execute("PRAGMA auto_vacuum=incremental")
        if bulkLoad {
            // The file is private until renamed into place; a crash just leaves a temp directory.
            try connection.execute("PRAGMA journal_mode=MEMORY")
            try connection.execute("PRAGMA synchronous=OFF")
            try connection.execute("PRAGMA cache_size=-65536")
        } else {
            try connection.execute("PRAGMA journal_mode=WAL")
            try connection.execute("PRAGMA synchronous=NORMAL")
        }
        try connection.begin()
        do {
            try connection.execute(Schema2.kvmeta302)
            try connection.execute(Schema2.keyStoreTable(Schema2.defaultTable))
            try connection.execute(Schema2.keyStoreTable(Schema2.infoTable))
            try setInfo(Schema2.InfoKey.versioning, [0, 0, 0, 0, 0, 0, 0, 0], sequence: 1)
            try setInfo(Schema2.InfoKey.publicUUID, Self.randomUUIDBytes(), sequence: 2)
            try setInfo(Schema2.InfoKey.privateUUID, Self.randomUUIDBytes(), sequence: 3)
            try connection.run("INSERT INTO kvmeta (name, lastSeq, purgeCnt) VALUES ('default', 0, 0), ('info', 3, 0)")
            try connection.setUserVersion(Schema2.version302)
            if !bulkLoad { try connection.commit() }
        } catch {
            try? connection.rollback()
            throw error
        }
        schemaVersion = Schema2.version302
        versioning = 0
    }

    private static func randomUUIDBytes() -> [UInt8] {
        let u = UUID().uuid
        return [u.0, u.1, u.2, u.3, u.4, u.5, u.6, u.7, u.8, u.9, u.10, u.11, u.12, u.13, u.14, u.15]
    }

    // MARK: kv_info

    package func info(_ key: String) throws -> [UInt8]? {
        let stmt = try connection.cached("SELECT body FROM kv_info WHERE key=?")
        defer { stmt.reset() }
        try stmt.bind(key, at: 1)
        guard try stmt.step() else { return nil }
        return stmt.bytes(0) ?? []
    }

    /// Writes a `kv_info` record. 2.x files give these rows sequences from the `info` kvmeta row;
    /// 3.x ones leave them NULL (spec 2.4): both layouts are respected.
    package func setInfo(_ key: String, _ value: [UInt8], sequence: Int64? = nil) throws {
        var seq = sequence
        if seq == nil, schemaVersion < 400 {
            let existing = try connection.scalarInt("SELECT sequence FROM kv_info WHERE key=?", [.text(key)])
            if let existing {
                seq = existing
            } else {
                let last = try connection.scalarInt("SELECT lastSeq FROM kvmeta WHERE name='info'") ?? 0
                seq = last + 1
                try connection.run("INSERT OR REPLACE INTO kvmeta (name, lastSeq) VALUES ('info', ?)", [.integer(last + 1)])
            }
        }
        let stmt = try connection.cached("INSERT OR REPLACE INTO kv_info (key, sequence, flags, version, body) VALUES (?, ?, 0, NULL, ?)")
        defer { stmt.reset() }
        try stmt.bind(key, at: 1)
        try stmt.bind(seq, at: 2)
        try stmt.bindBlob(value, at: 3)
        _ = try stmt.step()
    }

    /// Persists the shared-keys table when encoding added keys (spec 6.7: bodies and the table must agree).
    package func saveSharedKeysIfChanged() throws {
        guard sharedKeys.count != sharedKeysCountSaved else { return }
        try setInfo(Schema2.InfoKey.sharedKeys, sharedKeys.stateData())
        sharedKeysCountSaved = sharedKeys.count
    }

    // MARK: Reading documents

    /// The columns `makeRecord` reads, NULL where the key-store's table lacks one.
    private func selectColumns(_ layout: KeyStoreLayout, deleted: Bool = false) -> String {
        let expiration = deleted ? layout.deletedHasExpirationColumn : layout.hasExpirationColumn
        return "sequence, flags, version, body, " + (layout.hasExtraColumn ? "extra" : "NULL") + ", "
            + (expiration ? "expiration" : "NULL")
    }

    /// The layout of `keyStore`, throwing `.notOpen` (as 3.x does for a deleted collection) when
    /// it has no table.
    package func existingLayout(of keyStore: KeyStore) throws -> KeyStoreLayout {
        guard let layout = try layout(of: keyStore) else {
            let name = keyStore.collectionSpec.map { "\($0.scope).\($0.collection)" } ?? keyStore.name
            throw CouchbaseLiteError(.notOpen, "The collection \(name) does not exist in \(directory.lastPathComponent) (it was deleted, or never created)")
        }
        return layout
    }

    /// The record of `docID` (live or deleted) in `keyStore`, or nil.
    package func record(forDocumentID docID: String, in keyStore: KeyStore = .default) throws -> DocumentRecord? {
        let layout = try existingLayout(of: keyStore)
        var tables = [(keyStore.table, false)]
        if layout.hasDeletedTable { tables.append((keyStore.deletedTable, true)) }
        for (table, deleted) in tables {
            let stmt = try connection.cached("SELECT \(selectColumns(layout, deleted: deleted)) FROM \(KeyStore.quoted(table)) WHERE key=?")
            defer { stmt.reset() }
            try stmt.bind(docID, at: 1)
            if try stmt.step() {
                return try makeRecord(docID: docID, stmt, offset: 0)
            }
        }
        return nil
    }

    /// Every record of `keyStore` (deleted ones only with `includeDeleted`), in document-ID order.
    package func forEachRecord(in keyStore: KeyStore = .default, includeDeleted: Bool,
                               _ body: (DocumentRecord) throws -> Void) throws {
        let layout = try existingLayout(of: keyStore)
        var sql = "SELECT key, \(selectColumns(layout)) FROM \(KeyStore.quoted(keyStore.table))"
        if !includeDeleted { sql += " WHERE (flags & 1) = 0" }
        if includeDeleted && layout.hasDeletedTable {
            sql += " UNION ALL SELECT key, \(selectColumns(layout, deleted: true)) FROM \(KeyStore.quoted(keyStore.deletedTable))"
        }
        sql += " ORDER BY key"
        let stmt = try connection.prepare(sql)
        while try stmt.step() {
            try body(try makeRecord(docID: stmt.string(0) ?? "", stmt, offset: 1))
        }
    }

    /// Number of live documents in `keyStore` (LiteCore's `documentCount`).
    package func liveDocumentCount(in keyStore: KeyStore = .default) throws -> UInt64 {
        _ = try existingLayout(of: keyStore)
        return UInt64(try connection.scalarInt("SELECT count(*) FROM \(KeyStore.quoted(keyStore.table)) WHERE (flags & 1) = 0") ?? 0)
    }

    /// Re-reads `PRAGMA user_version` after a schema step (the first index, spec 2.1).
    func refreshSchemaVersion() {
        schemaVersion = connection.userVersion
    }

    /// `kvmeta.lastSeq` of `keyStore`: every collection numbers its own documents (spec 2.2); a
    /// key-store nothing was written to yet has no row.
    package func lastSequence(of keyStore: KeyStore = .default) throws -> UInt64 {
        UInt64(try connection.scalarInt("SELECT lastSeq FROM kvmeta WHERE name=?", [.text(keyStore.name)]) ?? 0)
    }

    private func makeRecord(docID: String, _ stmt: SQLiteStatement, offset c: Int32) throws -> DocumentRecord {
        let sequence = UInt64(bitPattern: stmt.int64(c))
        let flags = DocumentFlags(rawValue: stmt.int64(c + 1) & 0xFFFF)
        let version = stmt.bytes(c + 2) ?? []
        let rawBody = stmt.bytes(c + 3)
        let extra = stmt.isNull(c + 4) ? nil : stmt.bytes(c + 4)
        let expiration = stmt.isNull(c + 5) ? nil : stmt.int64(c + 5)
        var tree: LiteCoreRevTree
        var body: [UInt8]?
        do {
            if let extra {
                // 3.x row (spec 3.4): current body in `body`, the rest of the tree in `extra`.
                tree = try LiteCoreRevTree.decode(extra)
                body = rawBody
            } else if let rawBody, rawBody.withUnsafeBytes({ LiteCoreRevTree.looksLikeRevisionTree($0) }) {
                tree = try LiteCoreRevTree.decode(rawBody)
                body = tree.current?.body
            } else {
                // A 3.x row saved without tree (or a VV row): only the current revision is known.
                tree = LiteCoreRevTree(revisions: [TreeRevision(revID: version, parentIndex: nil,
                                                             flags: flags.contains(.deleted) ? [.leaf, .deleted] : [.leaf])])
                body = rawBody
            }
        } catch let e as CouchbaseLiteError {
            throw CouchbaseLiteError(e.code, "\(e.message) (document '\(docID)')")
        }
        return DocumentRecord(docID: docID, sequence: sequence, flags: flags, version: version,
                              tree: tree, body: body, expiration: expiration)
    }

    // MARK: Writing (2.8 layout, spec 3.5)

    private var nextSequence: UInt64 = 0
    /// Kept prepared: bulk loads insert one row per document.
    private var insertStatement: SQLiteStatement?

    /// Inserts a document row with an already serialized rev tree and the next sequence.
    @discardableResult
    package func insertRecord(docID: UnsafeRawBufferPointer, flags: DocumentFlags, version: UnsafeRawBufferPointer,
                              tree: UnsafeRawBufferPointer) throws -> UInt64 {
        if nextSequence == 0 { nextSequence = try lastSequence() + 1 }
        let sequence = nextSequence
        let stmt: SQLiteStatement
        if let prepared = insertStatement {
            stmt = prepared
        } else {
            stmt = try connection.prepare("INSERT INTO kv_default (key, sequence, flags, version, body) VALUES (?, ?, ?, ?, ?)")
            insertStatement = stmt
        }
        defer { stmt.reset() }
        // The buffers outlive the step below, so SQLite need not copy them.
        try stmt.bindTextNoCopy(docID, at: 1)
        try stmt.bind(Int64(sequence), at: 2)
        try stmt.bind(flags.rawValue, at: 3)
        try stmt.bindBlobNoCopy(version, at: 4)
        try stmt.bindBlobNoCopy(tree, at: 5)
        do {
            _ = try stmt.step()
        } catch let e as SQLiteError where e.isConstraintViolation {
            throw CouchbaseLiteError(.conflict, "Document '\(String(decoding: docID, as: UTF8.self))' already exists")
        }
        nextSequence += 1
        return sequence
    }

    /// Stores a non-versioned ("raw") record in the key-store `store` (table `kv_<store>`, created
    /// on first use with the 2.x key-store DDL), as LiteCore keeps local/raw documents.
    package func putRawRecord(store: String, key: String, version: [UInt8], body: [UInt8]) throws {
        let table = "kv_" + store
        if !(try connection.tableExists(table)) {
            try connection.execute(Schema2.keyStoreTable(table))
        }
        try connection.run("INSERT OR REPLACE INTO \(table) (key, sequence, flags, version, body) VALUES (?, NULL, 0, ?, ?)",
                           [.text(key), .blob(version), .blob(body)])
    }

    /// A raw record of the key-store `store`, or nil.
    package func rawRecord(store: String, key: String) throws -> (version: [UInt8], body: [UInt8])? {
        let table = "kv_" + store
        guard try connection.tableExists(table) else { return nil }
        let stmt = try connection.prepare("SELECT version, body FROM \(table) WHERE key=?")
        try stmt.bind(key, at: 1)
        guard try stmt.step() else { return nil }
        return (stmt.bytes(0) ?? [], stmt.bytes(1) ?? [])
    }

    /// Stores `milliseconds` as `docID`'s expiration, adding the column first if needed.
    package func setExpiration(docID: String, milliseconds: Int64, in keyStore: KeyStore = .default) throws {
        try addExpirationColumn(to: keyStore)
        try connection.run("UPDATE \(KeyStore.quoted(keyStore.table)) SET expiration=? WHERE key=?",
                           [.integer(milliseconds), .text(docID)])
    }

    /// Adds the `expiration` column and its partial index the way 2.x does (spec 5): when the
    /// first expiration is set, or when a query reads `meta().expiration` (as LiteCore's
    /// SQLiteQuery does), so such a query runs on a file that never had one.
    package func addExpirationColumn(to keyStore: KeyStore = .default) throws {
        guard let layout = try layout(of: keyStore), !layout.hasExpirationColumn else { return }
        try addExpirationColumn(table: keyStore.table)
    }

    /// Ends a bulk load: stores the shared keys and `kvmeta.lastSeq`, commits, switches to WAL
    /// and checkpoints so no side file is needed (spec 4).
    package func finishBulkLoad() throws {
        try saveSharedKeysIfChanged()
        let last = nextSequence == 0 ? try lastSequence() : nextSequence - 1
        try setLastSequence(last, of: .default)
        insertStatement = nil
        try connection.commit()
        try connection.execute("PRAGMA journal_mode=WAL")
        try connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    }

    /// Abandons a bulk load (the caller deletes the directory).
    package func abandonBulkLoad() {
        insertStatement = nil
        if connection.transactionDepth > 0 { try? connection.rollback() }
        connection.close()
    }
}
