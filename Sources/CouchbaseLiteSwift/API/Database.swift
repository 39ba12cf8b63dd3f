import Fleece
import Foundation
import SQLiteKit

/// A Couchbase Lite database: a `NAME.cblite2` directory in the 2.x/3.x file format, holding
/// collections grouped in scopes (3.x); the 2.x document calls act on the default collection.
/// Safe to use from any thread or task.
// @unchecked because `files` is only touched under `stateLock`; the pool serialises connections.
public final class Database: @unchecked Sendable {
    /// The database name (the bundle name without `.cblite2`).
    public let name: String
    /// The configuration it was opened with.
    public let config: DatabaseConfiguration
    /// Guards `files` (only the reference: the pool serialises writes itself).
    private let stateLock = NSLock()
    /// The writer and reader connections; nil once closed.
    private var files: DataFilePool?
    private var _readsWaitForWriter = false
    /// Listeners told about each committed write (database, document and live-query listeners).
    let observers = DatabaseObservers()

    /// Opens the database `name` in `config.directory`, creating an empty one (2.8 layout) when absent.
    /// Throws `.databaseTooOld` for a 1.x database (convert it with `cbl upgrade`), `.wrongFormat` for
    /// a ForestDB bundle, `.notADatabaseFile` for an encrypted or foreign file.
    public init(name: String, config: DatabaseConfiguration = DatabaseConfiguration()) throws {
        guard Self.isValidName(name) else {
            throw CouchbaseLiteError(.invalidParameter, "Invalid database name '\(name)'")
        }
        self.name = name
        self.config = config
        let bundle = Self.bundleURL(name: name, directory: config.directory)
        let file = try DataFile(directory: bundle, create: !config.readOnly, readOnly: config.readOnly)
        do {
            // Index expressions call fl_value (spec 2.1): every write to an indexed table needs it,
            // and every connection that runs queries.
            try Self.prepareConnection(file)
        } catch {
            file.close()
            throw error
        }
        files = DataFilePool(writer: file, prepareReader: Self.prepareConnection)
    }

    /// Registers the SQL functions and the collations the file's indexes use on `file`'s connection.
    @Sendable static func prepareConnection(_ file: DataFile) throws {
        try QueryFunctions.register(on: file)
        for collation in try file.collationsUsedByIndexes() where !file.registeredCollations.contains(collation) {
            try QueryFunctions.registerCollation(collation, on: file)
            file.registeredCollations.insert(collation)
        }
    }

    /// Whether a database named `name` exists in `directory` (default: the default directory).
    public static func exists(withName name: String, inDirectory directory: String? = nil) -> Bool {
        let bundle = bundleURL(name: name, directory: directory ?? DatabaseConfiguration.defaultDirectory)
        return FileManager.default.fileExists(atPath: DataFile.databasePath(in: bundle))
    }

    /// Deletes the database `name` in `directory` (default: the default directory).
    public static func delete(withName name: String, inDirectory directory: String? = nil) throws {
        let bundle = bundleURL(name: name, directory: directory ?? DatabaseConfiguration.defaultDirectory)
        guard FileManager.default.fileExists(atPath: bundle.path) else {
            throw CouchbaseLiteError(.notFound, "No database named '\(name)'")
        }
        try FileManager.default.removeItem(at: bundle)
    }

    static func bundleURL(name: String, directory: String) -> URL {
        URL(fileURLWithPath: directory, isDirectory: true)
            .appendingPathComponent("\(name).\(Schema2.bundleExtension)", isDirectory: true)
    }

    /// 2.x allows any name that is a valid file name; `/` and leading `.` would escape the directory.
    static func isValidName(_ name: String) -> Bool {
        !name.isEmpty && !name.contains("/") && !name.hasPrefix(".") && name.utf8.count < 240
    }

    /// The bundle's path, or nil once closed.
    public var path: String? {
        withFile { $0.directory.path + "/" }
    }

    /// Number of live (non-deleted) documents in the default collection.
    public var count: UInt64 {
        (try? withReadFile { try $0.liveDocumentCount() }) ?? 0
    }

    /// The document with `id` in the default collection, or nil when it does not exist or is
    /// deleted (2.x semantics).
    public func document(withID id: String) -> Document? {
        try? liveDocument(withID: id, in: .default)
    }

    /// The document `id` of the default collection (nil when absent or deleted), for subscripting.
    public subscript(id: String) -> DocumentFragment {
        DocumentFragment(document(withID: id))
    }

    /// The document with `id` in `keyStore`, or nil when it does not exist or is deleted.
    func liveDocument(withID id: String, in keyStore: KeyStore) throws -> Document? {
        guard let doc = try documentIncludingDeleted(withID: id, in: keyStore), !doc.isDeleted else { return nil }
        return doc
    }

    /// The document with `id` including tombstones (for tools; the 2.x API hides deleted documents).
    package func documentIncludingDeleted(withID id: String, in keyStore: KeyStore = .default) throws -> Document? {
        try withReadFile { file in
            guard let record = try file.record(forDocumentID: id, in: keyStore) else { return nil }
            return try makeDocument(record, file: file, keyStore: keyStore)
        }
    }

    /// The stored record of a document (rev tree, flags), for tools and tests.
    package func record(forDocumentID id: String, in keyStore: KeyStore = .default) throws -> DocumentRecord? {
        try withReadFile { try $0.record(forDocumentID: id, in: keyStore) }
    }

    /// Every document of `keyStore` (optionally with tombstones) in document-ID order.
    package func allDocuments(includeDeleted: Bool = false, in keyStore: KeyStore = .default) throws -> [Document] {
        try withReadFile { file in
            var out: [Document] = []
            try file.forEachRecord(in: keyStore, includeDeleted: includeDeleted) {
                out.append(try makeDocument($0, file: file, keyStore: keyStore))
            }
            return out
        }
    }

    /// The expiration time of a document of the default collection, or nil when it has none.
    public func getDocumentExpiration(withID id: String) throws -> Date? {
        try documentExpiration(id: id, in: .default)
    }

    /// The expiration time of document `id` in `keyStore`; throws `.notFound` when there is none.
    func documentExpiration(id: String, in keyStore: KeyStore) throws -> Date? {
        try withReadFile { file in
            guard let record = try file.record(forDocumentID: id, in: keyStore) else {
                throw CouchbaseLiteError(.notFound, "Document '\(id)' not found")
            }
            return record.expiration.map { Self.expirationDate($0, schemaVersion: file.schemaVersion) }
        }
    }

    /// 2.0/2.1 stored seconds, later versions milliseconds (spec 5). Files written by 2.0–2.6 share
    /// schema 201, so a value too small to be milliseconds of a plausible date is read as seconds.
    static func expirationDate(_ stored: Int64, schemaVersion: Int) -> Date {
        if schemaVersion <= Schema2.version201 && stored < 100_000_000_000 {
            return Date(timeIntervalSince1970: TimeInterval(stored))
        }
        return Date(timeIntervalSince1970: TimeInterval(stored) / 1000)
    }

    /// Closes the database and every connection to its file (after a write in progress on
    /// another thread ends; a read in progress keeps its connection until it ends); later calls
    /// fail with `.notOpen`.
    public func close() throws {
        stateLock.lock()
        let closing = files
        files = nil
        stateLock.unlock()
        closing?.close()
        observers.removeAll()
    }

    /// Closes and deletes this database.
    public func delete() throws {
        let directory = withFile { $0.directory }
        try close()
        if let directory { try FileManager.default.removeItem(at: directory) }
    }

    // MARK: Internals

    private func makeDocument(_ record: DocumentRecord, file: DataFile, keyStore: KeyStore) throws -> Document {
        var context: DocumentContext?
        if let body = record.body, !body.isEmpty {
            do {
                context = DocumentContext(fleece: try FleeceDocument(bytes: body, sharedKeys: file.sharedKeys),
                                          blobStore: file.blobStore)
            } catch {
                throw CouchbaseLiteError(.corruptRevisionData, "Document '\(record.docID)' has a corrupt body: \(error)")
            }
        }
        let document = Document(record: record, context: context)
        document.owner = (self, keyStore)
        return document
    }

    private func withFile<R>(_ body: (DataFile) -> R) -> R? {
        stateLock.lock()
        defer { stateLock.unlock() }
        return files.map { body($0.writer) }
    }

    private func openFiles() throws -> DataFilePool {
        stateLock.lock()
        defer { stateLock.unlock() }
        guard let files else { throw CouchbaseLiteError(.notOpen, "Database '\(name)' is closed") }
        return files
    }

    /// Runs `body` on a reader connection in a read transaction (the last committed state; it
    /// never waits for a write in progress on another thread), or on the writer when this thread
    /// is inside a write (``withWriteFile(_:)``, `inBatch`), so it sees that write's changes.
    func withReadFile<R>(_ body: (DataFile) throws -> R) throws -> R {
        let files = try openFiles()
        if readsWaitForWriter { return try files.write(body) }
        return try files.read(body)
    }

    /// For benchmarks: reads go through the writer, waiting for any write, as they did before
    /// the reader connections (one connection, one lock).
    package var readsWaitForWriter: Bool {
        get { stateLock.withLock { _readsWaitForWriter } }
        set { stateLock.withLock { _readsWaitForWriter = newValue } }
    }

    /// Runs `body` on the writer, after any write in progress on another thread. Nested calls on
    /// the same thread share it (an `inBatch` block's saves join its transaction).
    /// The one place 2.x writes meet SQLite's errors: a full disk becomes ``CouchbaseLiteError/diskFull(_:)``.
    func withWriteFile<R>(_ body: (DataFile) throws -> R) throws -> R {
        do {
            return try openFiles().write(body)
        } catch let e as SQLiteError where e.isDiskFull {
            throw CouchbaseLiteError.diskFull(e.message)
        }
    }

    /// The writer, for tools and tests that look at or change the file directly (as
    /// ``withWriteFile(_:)``: after any write in progress, and excluding other writes meanwhile).
    package func withOpenFile<R>(_ body: (DataFile) throws -> R) throws -> R {
        try withWriteFile(body)
    }

    /// Reader connections open now (for tests: 0 once closed and every read ended).
    package var openReaderConnectionCount: Int {
        stateLock.lock()
        defer { stateLock.unlock() }
        return files?.openReaderCount ?? 0
    }
}
