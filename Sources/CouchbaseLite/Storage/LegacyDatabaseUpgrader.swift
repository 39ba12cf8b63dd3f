import Crypto
import Foundation
import JSONCore
import SQLiteKit

/// Converts a legacy single-file `.cblite` database (1.0.x/1.1.x) into a `.cblite2` directory (spec 10.1).
///
/// * The source is never opened in place: the file and its `-wal`/`-shm`/`-journal` side files are
///   copied to a work directory first, and the copy is opened (read-write, so SQLite can recover a
///   hot journal or a WAL into the copy). With `deleteSource == false` the source stays byte-identical.
/// * The new database is built in a hidden work directory next to the destination and renamed into
///   place at the end, so a failed upgrade leaves nothing behind (and never deletes the source).
/// * Revision IDs are preserved exactly (spec 3.3); only leaf revisions keep their bodies; the
///   history of every leaf is rebuilt from `parent` links.
/// * Attachment metadata comes from the legacy `attachments` table when there is one (schemas ≤ 20),
///   otherwise from the `_attachments` stubs already in the JSON (schema 101 in a single file).
/// * View indexes, legacy `replicators` checkpoints and full-text/geo tables are not migrated.
package struct LegacyDatabaseUpgrader {
    let legacyFile: URL
    let attachmentsDirectory: URL?

    package init(legacyFile: URL, attachmentsDirectory: URL?) {
        self.legacyFile = legacyFile
        self.attachmentsDirectory = attachmentsDirectory
    }

    /// SQLite side files that belong to a database file and must travel with it.
    static let sideFileSuffixes = ["-wal", "-shm", "-journal"]

    private static let logTag = "Database"

    /// The attachments folder a legacy file uses when none is given: `<name> attachments/` (iOS, Java 1.1,
    /// .NET 1.1) or `<name>/attachments/` (Android/.NET 1.0.x), next to the file (spec 1.4). Nil if neither exists.
    package static func defaultAttachmentsDirectory(for legacyFile: URL) -> URL? {
        let base = legacyFile.deletingPathExtension().lastPathComponent
        let parent = legacyFile.deletingLastPathComponent()
        let candidates = [
            parent.appendingPathComponent(base + " attachments", isDirectory: true),
            parent.appendingPathComponent(base, isDirectory: true).appendingPathComponent("attachments", isDirectory: true),
        ]
        return candidates.first { isDirectory($0) }
    }

    // MARK: Upgrade

    /// Builds the new `.cblite2` directory at `destination` (which must not exist, or be an empty
    /// directory). With `deleteSource`, removes the legacy file, its side files and its attachments
    /// folder once the new database is in place.
    package func upgrade(into destination: URL, deleteSource: Bool) throws {
        let fm = FileManager.default
        let name = legacyFile.lastPathComponent

        var isDir: ObjCBool = false
        guard fm.fileExists(atPath: legacyFile.path, isDirectory: &isDir) else {
            throw CBLError.notFound("Legacy database file \(legacyFile.path) not found")
        }
        guard !isDir.boolValue else {
            throw CBLError.badRequest("Legacy database \(legacyFile.path) is a directory, not a .cblite file")
        }
        let attachments: URL?
        if let explicit = attachmentsDirectory {
            guard Self.isDirectory(explicit) else {
                throw CBLError.notFound("Attachments folder \(explicit.path) of legacy database \(name) not found")
            }
            attachments = explicit
        } else {
            attachments = Self.defaultAttachmentsDirectory(for: legacyFile)
        }
        if let attachments,
           fm.fileExists(atPath: attachments.appendingPathComponent("_encryption").path) {
            throw CBLError.unauthorized("Legacy database \(name) has encrypted attachments; encryption is not supported by this build")
        }
        try Self.checkDestinationIsFree(destination)

        let parent = destination.deletingLastPathComponent()
        do {
            try fm.createDirectory(at: parent, withIntermediateDirectories: true)
        } catch {
            throw CBLError.dbError("Cannot create directory \(parent.path): \(error.localizedDescription)")
        }
        // Hidden, and not ending in `.cblite2`, so a manager never lists it as a database.
        let work = parent.appendingPathComponent(".\(destination.lastPathComponent).upgrade-\(UUID().uuidString)",
                                                 isDirectory: true)
        defer { try? fm.removeItem(at: work) }
        let sourceCopyDir = work.appendingPathComponent("source", isDirectory: true)
        let staging = work.appendingPathComponent("db", isDirectory: true)
        do {
            try fm.createDirectory(at: sourceCopyDir, withIntermediateDirectories: true)
        } catch {
            throw CBLError.dbError("Cannot create work directory \(work.path): \(error.localizedDescription)")
        }

        // 1. Copy the source (with its side files) and open the copy.
        let sourceCopy = sourceCopyDir.appendingPathComponent(name)
        try copyWithSideFiles(to: sourceCopy)
        let (source, contents) = try Self.openSource(sourceCopy, displayName: name)
        defer { source.close() }
        let layout = try LegacyLayout(connection: source, contents: contents, displayName: name)

        // 2. Create the new store in the staging directory, with the blobs in its attachments folder.
        let store = try SQLiteStore(directory: staging, create: true, readOnly: false)
        do {
            let blobKeys = try attachments.map {
                try Self.copyBlobs(from: $0, to: staging.appendingPathComponent(SQLiteStore.attachmentsDirectoryName))
            } ?? []
            // 3. Documents, local documents and the info table, all in one transaction.
            try store.inTransaction {
                try copyDocuments(from: source, layout: layout, into: store, availableBlobs: Set(blobKeys))
                try copyLocalDocuments(from: source, layout: layout, into: store)
                try copyInfo(from: source, layout: layout, into: store)
            }
            try? store.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        } catch let e as SQLiteError {
            store.close()
            throw CBLError.dbError("Upgrading legacy database \(name) failed: \(e.description)")
        } catch {
            store.close()
            throw error
        }
        store.close()
        source.close()

        // 4. Move the new database into place (rename(2) replaces an empty destination directory atomically).
        if rename(staging.path, destination.path) != 0 {
            let code = errno
            throw CBLError.dbError("Cannot move upgraded database into \(destination.path): \(String(cString: strerror(code)))")
        }

        // 5. Remove the legacy files. The upgrade has succeeded: failures here are only logged.
        if deleteSource {
            removeSource(attachments: attachments)
        }
    }

    // MARK: Source file

    /// Copies the legacy file and every side file that exists next to it into `destination`'s folder.
    private func copyWithSideFiles(to destination: URL) throws {
        let fm = FileManager.default
        for suffix in [""] + Self.sideFileSuffixes {
            let from = URL(fileURLWithPath: legacyFile.path + suffix)
            guard fm.fileExists(atPath: from.path) else { continue }
            let to = URL(fileURLWithPath: destination.path + suffix)
            do {
                try fm.copyItem(at: from, to: to)
                // The copy may have inherited a read-only mode; SQLite must be able to recover into it.
                try? fm.setAttributes([.posixPermissions: 0o600], ofItemAtPath: to.path)
            } catch {
                throw CBLError.dbError("Cannot copy \(from.path): \(error.localizedDescription)")
            }
        }
    }

    /// Opens the private copy of the legacy file and checks that it is an SQLite database, with the
    /// first read every opener runs (`CouchbaseStorageFormat.contents(of:file:)`).
    private static func openSource(_ url: URL, displayName: String) throws -> (SQLiteConnection, CouchbaseStorageFormat.Contents) {
        let connection: SQLiteConnection
        let subject = "legacy database \(displayName)"
        do {
            connection = try SQLiteConnection(path: url.path, mode: .init(readOnly: false, create: false))
        } catch let e as SQLiteError {
            throw SQLiteStore.openError(CouchbaseStorageFormat.failure(for: e, file: url.path) ?? .unreadable(e.message), subject: subject)
        }
        do {
            try SQLiteStore.registerCollations(on: connection)
            return (connection, try CouchbaseStorageFormat.contents(of: connection, file: url.path))
        } catch {
            connection.close()
            guard let failure = CouchbaseStorageFormat.failure(for: error, file: url.path) else { throw error }
            throw SQLiteStore.openError(failure, subject: subject)
        }
    }

    /// The destination must not exist, or be an empty directory.
    private static func checkDestinationIsFree(_ destination: URL) throws {
        let fm = FileManager.default
        var isDir: ObjCBool = false
        guard fm.fileExists(atPath: destination.path, isDirectory: &isDir) else { return }
        guard isDir.boolValue, (try? fm.contentsOfDirectory(atPath: destination.path))?.isEmpty == true else {
            throw CBLError.preconditionFailed("Cannot upgrade into \(destination.path): it already exists")
        }
    }

    // MARK: Blobs

    /// Copies every `<40 hex>.blob` file into `destination` under its UPPERCASE name, verifying that
    /// the content's SHA-1 equals the name (mismatches are skipped with a warning). Returns the keys copied.
    static func copyBlobs(from source: URL, to destination: URL) throws -> [BlobKey] {
        let fm = FileManager.default
        try fm.createDirectory(at: destination, withIntermediateDirectories: true)
        let names: [String]
        do {
            names = try fm.contentsOfDirectory(atPath: source.path)
        } catch {
            throw CBLError.dbError("Cannot read attachments folder \(source.path): \(error.localizedDescription)")
        }
        var keys: [BlobKey] = []
        for name in names.sorted() {
            guard let key = BlobKey(fileName: name) else { continue }
            let target = destination.appendingPathComponent(key.fileName)
            if fm.fileExists(atPath: target.path) {
                keys.append(key)   // same content under both cases of the name
                continue
            }
            let temp = destination.appendingPathComponent("tmp\(UUID().uuidString).blobtmp")
            let actual = try copyHashing(source.appendingPathComponent(name), to: temp)
            if actual != key.bytes {
                try? fm.removeItem(at: temp)
                CBLLog.warning(logTag, "Skipping attachment file \(name) of legacy database: its SHA-1 is \(hex(actual)), not its name")
                continue
            }
            if rename(temp.path, target.path) != 0 {
                let code = errno
                try? fm.removeItem(at: temp)
                throw CBLError.dbError("Cannot install attachment \(key.fileName): \(String(cString: strerror(code)))")
            }
            keys.append(key)
        }
        return keys
    }

    /// Streams `source` into `destination`, returning the SHA-1 of the bytes copied.
    private static func copyHashing(_ source: URL, to destination: URL) throws -> [UInt8] {
        let fm = FileManager.default
        guard let input = try? FileHandle(forReadingFrom: source) else {
            throw CBLError.dbError("Cannot read attachment file \(source.path)")
        }
        defer { try? input.close() }
        guard fm.createFile(atPath: destination.path, contents: nil),
              let output = try? FileHandle(forWritingTo: destination) else {
            throw CBLError.dbError("Cannot create \(destination.path)")
        }
        var sha1 = Insecure.SHA1()
        do {
            defer { try? output.close() }
            while let chunk = try input.read(upToCount: 256 * 1024), !chunk.isEmpty {
                sha1.update(data: chunk)
                try output.write(contentsOf: chunk)
            }
            try output.synchronize()
        } catch {
            try? fm.removeItem(at: destination)
            throw CBLError.dbError("Cannot copy attachment file \(source.path): \(error.localizedDescription)")
        }
        return Array(sha1.finalize())
    }

    // MARK: Documents

    private struct RevRow {
        let sequence: Int64
        let docNumericID: Int64
        let revID: String
        let parent: Int64?
        let current: Bool
        let deleted: Bool
    }

    private func copyDocuments(from source: SQLiteConnection, layout: LegacyLayout, into store: SQLiteStore,
                               availableBlobs: Set<BlobKey>) throws {
        var docIDs: [Int64: String] = [:]
        try source.prepare("SELECT doc_id, docid FROM docs").forEachRow { row in
            if let docID = row.string(1) { docIDs[row.int64(0)] = docID }
        }
        var nodesByDoc: [Int64: [RevsTableTree.Node]] = [:]
        var leaves: [RevRow] = []
        try source.prepare("SELECT sequence, doc_id, revid, parent, current, deleted FROM revs ORDER BY sequence")
            .forEachRow { row in
                let rev = RevRow(sequence: row.int64(0), docNumericID: row.int64(1), revID: row.string(2) ?? "",
                                 parent: row.isNull(3) ? nil : row.int64(3), current: row.bool(4), deleted: row.bool(5))
                nodesByDoc[rev.docNumericID, default: []].append(
                    RevsTableTree.Node(sequence: rev.sequence, revID: rev.revID, parent: rev.parent,
                                      current: rev.current, deleted: rev.deleted))
                if rev.current { leaves.append(rev) }
            }

        let bodyStmt = try source.prepare("SELECT json FROM revs WHERE sequence=?")
        let attachmentStmt = try layout.attachmentQuery.map { try source.prepare($0) }
        let maxDepth = try Self.maxRevTreeDepth(source: source, layout: layout)
        var missingBlobs = 0
        let trees = nodesByDoc.mapValues(RevsTableTree.init(nodes:))

        for leaf in leaves {
            guard let docID = docIDs[leaf.docNumericID] else {
                CBLLog.warning(Self.logTag, "Legacy database \(legacyFile.lastPathComponent): revision \(leaf.revID) (sequence \(leaf.sequence)) belongs to no document; skipped")
                continue
            }
            guard !leaf.revID.isEmpty else {
                throw CBLError.dbError("Legacy database \(legacyFile.lastPathComponent): document '\(docID)' has a revision with an empty ID")
            }
            // History: the leaf's ancestors through every row of the document.
            let history = trees[leaf.docNumericID]?.history(of: leaf.sequence).map(\.revID) ?? [leaf.revID]

            // Body: the stored JSON (NULL or empty → {}).
            try bodyStmt.bind(leaf.sequence, at: 1)
            let raw: [UInt8]? = try bodyStmt.step() ? bodyStmt.bytes(0) : nil
            bodyStmt.reset()
            var properties: [String: Any] = [:]
            if let raw, !raw.isEmpty {
                do {
                    properties = try JSON.parseObject(raw)
                } catch {
                    throw CBLError.dbError("Legacy database \(legacyFile.lastPathComponent): revision \(leaf.revID) of '\(docID)' has an invalid JSON body")
                }
            }

            // Attachments from the legacy table (schemas ≤ 20); schema 101 keeps the stubs in the JSON.
            if let attachmentStmt {
                var attachments: [String: Any] = [:]
                try attachmentStmt.bind(leaf.sequence, at: 1)
                try attachmentStmt.forEachRow { row in
                    guard let name = row.string(0) else { return }
                    guard let keyBytes = row.bytes(1), let key = BlobKey(bytes: keyBytes) else {
                        CBLLog.warning(Self.logTag, "Legacy database \(legacyFile.lastPathComponent): attachment '\(name)' of '\(docID)' has an invalid blob key; skipped")
                        return
                    }
                    var meta: [String: Any] = [
                        "digest": key.digest,
                        "length": row.int(3),
                        "revpos": row.int(4),
                        "stub": true,
                    ]
                    if let type = row.string(2) { meta["content_type"] = type }
                    if row.int(5) != 0 {
                        meta["encoding"] = "gzip"
                        if !row.isNull(6) { meta["encoded_length"] = row.int(6) }
                    }
                    if !availableBlobs.contains(key) { missingBlobs += 1 }
                    attachments[name] = meta
                }
                if !attachments.isEmpty { properties["_attachments"] = attachments }
            }

            let body = try CBLDatabase.storedBody(properties)
            let hasAttachments = (properties["_attachments"] as? [String: Any]).map { !$0.isEmpty } ?? false
            _ = try store.forceInsert(docID: docID, revID: leaf.revID, history: history, deleted: leaf.deleted,
                                      body: body, hasAttachments: hasAttachments,
                                      docType: properties["type"] as? String, maxDepth: maxDepth)
        }
        if missingBlobs > 0 {
            CBLLog.warning(Self.logTag, "Legacy database \(legacyFile.lastPathComponent): \(missingBlobs) attachment(s) refer to blob files that are missing; their content will be unavailable")
        }
    }

    /// `info.max_revs` of the legacy database, else the default depth.
    private static func maxRevTreeDepth(source: SQLiteConnection, layout: LegacyLayout) throws -> Int {
        guard layout.hasInfo, let text = try source.scalarString("SELECT value FROM info WHERE key='max_revs'"),
              let value = Int(text), value > 0 else { return CBLDatabase.defaultMaxRevTreeDepth }
        return value
    }

    private func copyLocalDocuments(from source: SQLiteConnection, layout: LegacyLayout, into store: SQLiteStore) throws {
        guard layout.hasLocalDocs else { return }
        let stmt = try source.prepare("SELECT docid, json FROM localdocs ORDER BY docid")
        var docs: [(String, [UInt8]?)] = []
        try stmt.forEachRow { row in
            if let id = row.string(0) { docs.append((id, row.bytes(1))) }
        }
        for (id, raw) in docs {
            let fullID = CBLDatabase.localDocID(id)
            var properties: [String: Any] = [:]
            if let raw, !raw.isEmpty {
                guard let parsed = try? JSON.parseObject(raw) else {
                    CBLLog.warning(Self.logTag, "Legacy database \(legacyFile.lastPathComponent): local document '\(id)' has an invalid JSON body; skipped")
                    continue
                }
                properties = parsed
            }
            _ = try store.putLocalDocument(fullID, body: try CBLDatabase.storedBody(properties), prevRevID: nil, checkRev: false)
        }
    }

    private func copyInfo(from source: SQLiteConnection, layout: LegacyLayout, into store: SQLiteStore) throws {
        guard layout.hasInfo else { return }
        var rows: [(String, String)] = []
        try source.prepare("SELECT key, value FROM info").forEachRow { row in
            if let key = row.string(0), let value = row.string(1) { rows.append((key, value)) }
        }
        for (key, value) in rows { try store.setInfo(key, value) }
    }

    // MARK: Cleanup

    private func removeSource(attachments: URL?) {
        let fm = FileManager.default
        for suffix in [""] + Self.sideFileSuffixes {
            let path = legacyFile.path + suffix
            guard fm.fileExists(atPath: path) else { continue }
            do { try fm.removeItem(atPath: path) } catch {
                CBLLog.warning(Self.logTag, "Upgraded \(legacyFile.lastPathComponent) but could not delete \(path): \(error.localizedDescription)")
            }
        }
        guard let attachments, fm.fileExists(atPath: attachments.path) else { return }
        do { try fm.removeItem(at: attachments) } catch {
            CBLLog.warning(Self.logTag, "Upgraded \(legacyFile.lastPathComponent) but could not delete \(attachments.path): \(error.localizedDescription)")
            return
        }
        // Android/.NET 1.0 layout `<name>/attachments/`: remove `<name>/` too when nothing else is in it.
        let container = attachments.deletingLastPathComponent()
        if attachments.lastPathComponent == "attachments",
           container.lastPathComponent == legacyFile.deletingPathExtension().lastPathComponent,
           (try? fm.contentsOfDirectory(atPath: container.path))?.isEmpty == true {
            try? fm.removeItem(at: container)
        }
    }

    private static func isDirectory(_ url: URL) -> Bool {
        var isDir: ObjCBool = false
        return FileManager.default.fileExists(atPath: url.path, isDirectory: &isDir) && isDir.boolValue
    }
}

/// What a legacy file's schema holds, read from `sqlite_master` and `PRAGMA table_info`
/// rather than trusted from `user_version` (which different platforms numbered differently, spec 2.4).
private struct LegacyLayout {
    let userVersion: Int
    let hasLocalDocs: Bool
    let hasInfo: Bool
    /// The statement reading one revision's rows of the legacy `attachments` table, or nil when
    /// the file has no such table (schema 101 in a single file).
    let attachmentQuery: String?

    init(connection: SQLiteConnection, contents: CouchbaseStorageFormat.Contents, displayName: String) throws {
        do {
            userVersion = contents.schemaVersion
            if contents.format == .liteCore || userVersion >= Schema.firstIncompatibleVersion {
                throw CBLError.notAcceptable("Cannot upgrade \(displayName): schema \(userVersion) is a Couchbase Lite 2.x database")
            }
            guard contents.tables.contains("docs"), contents.tables.contains("revs") else {
                throw CBLError.notAcceptable("Cannot upgrade \(displayName): not a Couchbase Lite database (no docs/revs tables)")
            }
            let docColumns = Set(try connection.columns(of: "docs"))
            let revColumns = Set(try connection.columns(of: "revs"))
            let missing = (["doc_id", "docid"].filter { !docColumns.contains($0) }.map { "docs." + $0 })
                + (["sequence", "doc_id", "revid", "parent", "current", "deleted", "json"]
                    .filter { !revColumns.contains($0) }.map { "revs." + $0 })
            guard missing.isEmpty else {
                throw CBLError.notAcceptable("Cannot upgrade \(displayName) (schema \(userVersion)): unsupported layout, missing \(missing.joined(separator: ", "))")
            }
            hasLocalDocs = try connection.tableExists("localdocs")
                && Set(try connection.columns(of: "localdocs")).isSuperset(of: ["docid", "json"])
            hasInfo = try connection.tableExists("info")
                && Set(try connection.columns(of: "info")).isSuperset(of: ["key", "value"])
            if try connection.tableExists("attachments") {
                let columns = Set(try connection.columns(of: "attachments"))
                guard columns.isSuperset(of: ["sequence", "filename", "key"]) else {
                    throw CBLError.notAcceptable("Cannot upgrade \(displayName) (schema \(userVersion)): unsupported attachments table")
                }
                // Columns added by later legacy versions (revpos v2, encoding/encoded_length v5) default sensibly.
                func column(_ name: String, or fallback: String) -> String { columns.contains(name) ? name : fallback }
                attachmentQuery = "SELECT filename, key, \(column("type", or: "NULL")), \(column("length", or: "0")), "
                    + "\(column("revpos", or: "0")), \(column("encoding", or: "0")), \(column("encoded_length", or: "NULL")) "
                    + "FROM attachments WHERE sequence=? ORDER BY filename"
            } else {
                attachmentQuery = nil
            }
        } catch let e as SQLiteError {
            throw CBLError.dbError("Cannot read legacy database \(displayName): \(e.message)")
        }
    }
}
