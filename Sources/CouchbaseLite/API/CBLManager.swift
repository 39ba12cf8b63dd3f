import Foundation
import Synchronization

/// The top-level object: owns a directory of databases and hands out `CBLDatabase` instances.
///
/// Safe to use from any thread or task. The same name returns the same `CBLDatabase` while it is open.
// @unchecked because its mutable state is in Mutexes; `storageType`/`dispatchQueue` are 1.x's settable properties, set before use (as in 1.x).
public final class CBLManager: NSObject, NSCopying, @unchecked Sendable {
    /// The directory holding this manager's databases.
    public let directory: String
    /// The options the manager was created with.
    public let options: CBLManagerOptions
    /// Default storage type for new databases (`kCBLSQLiteStorage`).
    public var storageType: String = kCBLSQLiteStorage
    /// If set, change notifications are delivered asynchronously on this queue instead of
    /// synchronously right after the commit.
    public var dispatchQueue: DispatchQueue? {
        get { state.withLock { $0.dispatchQueue } }
        set { state.withLock { $0.dispatchQueue = newValue } }
    }

    private struct State {
        var databases: [String: CBLDatabase] = [:]
        /// Keys given with ``registerEncryptionKey(_:forDatabaseNamed:)``.
        var encryptionKeys: [String: CBLSymmetricKey] = [:]
        var dispatchQueue: DispatchQueue?
        var closed = false
    }
    private let state = Mutex(State())
    let lock = NSRecursiveLock()
    private let refusesUnrunnableValidations = Mutex(false)

    /// When set (the listener sets it), a write to a database whose design documents hold a
    /// `validate_doc_update` that no registered compiler can run is refused (500
    /// `unknown_query_language`) instead of accepted unchecked. Unset, 1.x's behaviour holds:
    /// design documents' validations are run only when a filter compiler is registered.
    package var refusesWritesWithUnrunnableValidations: Bool {
        get { refusesUnrunnableValidations.withLock { $0 } }
        set { refusesUnrunnableValidations.withLock { $0 = newValue } }
    }

    private static let shared = Mutex<CBLManager?>(nil)

    /// The shared manager on the default directory.
    public static func sharedInstance() -> CBLManager {
        shared.withLock { existing in
            if let existing { return existing }
            let manager = CBLManager()
            existing = manager
            return manager
        }
    }

    /// The default directory: `$XDG_DATA_HOME/CouchbaseLite`, else `~/.local/share/CouchbaseLite`.
    public static func defaultDirectory() -> String {
        let env = ProcessInfo.processInfo.environment
        if let xdg = env["XDG_DATA_HOME"], !xdg.isEmpty {
            return (xdg as NSString).appendingPathComponent("CouchbaseLite")
        }
        let home = env["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        return (home as NSString).appendingPathComponent(".local/share/CouchbaseLite")
    }

    /// A manager on the default directory. If the directory cannot be created the manager still
    /// exists; opening databases then throws.
    public override convenience init() {
        self.init(existingDirectory: CBLManager.defaultDirectory(), options: nil)
    }

    /// A manager on `directory` with optional options (passed by pointer, as 1.x's C struct was).
    public convenience init(directory: String, options: UnsafePointer<CBLManagerOptions>?) throws {
        self.init(existingDirectory: directory, options: options?.pointee)
        try ensureDirectory()
        upgradeLegacyDatabases()
    }

    /// A manager on `directory` with default options.
    public convenience init(directory: String) throws {
        try self.init(directory: directory, options: nil)
    }

    /// A manager that neither creates nor upgrades its directory (opening a database there
    /// throws if it is missing): what `init()` and `copy()` need, which cannot throw.
    private init(existingDirectory directory: String, options: CBLManagerOptions?) {
        self.directory = (directory as NSString).standardizingPath
        self.options = options ?? CBLManagerOptions()
        super.init()
    }

    private func ensureDirectory() throws {
        let fm = FileManager.default
        var isDir: ObjCBool = false
        if fm.fileExists(atPath: directory, isDirectory: &isDir) {
            guard isDir.boolValue else { throw CBLError.badRequest("\(directory) is not a directory") }
            return
        }
        guard !options.readOnly else { return }
        do {
            try fm.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw CBLError.dbError("Cannot create manager directory \(directory): \(error.localizedDescription)")
        }
    }

    /// Upgrades every legacy `*.cblite` file in the directory to `.cblite2`, as 1.2+ did on start (spec 1.1).
    private func upgradeLegacyDatabases() {
        guard !options.readOnly else { return }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        for file in names where file.hasSuffix(".cblite") {
            let name = String(file.dropLast(".cblite".count)).replacingOccurrences(of: ":", with: "/")
            guard CBLManager.isValidDatabaseName(name) else { continue }
            let source = URL(fileURLWithPath: directory).appendingPathComponent(file)
            do {
                try LegacyDatabaseUpgrader(legacyFile: source, attachmentsDirectory: nil)
                    .upgrade(into: databaseDirectory(for: name), deleteSource: true)
            } catch {
                CBLLog.warning("Database", "Could not upgrade legacy database \(file): \(error)")
            }
        }
    }

    // MARK: Names and paths

    /// True if `name` is a valid database name: lowercase ASCII letters, digits and `_$()+-/`,
    /// starting with a letter, shorter than 240 bytes (spec 1.2).
    public static func isValidDatabaseName(_ name: String) -> Bool {
        let utf8 = name.utf8
        guard !utf8.isEmpty, utf8.count < 240, let first = utf8.first, first >= 0x61, first <= 0x7A else {
            return false
        }
        let allowed = Set("abcdefghijklmnopqrstuvwxyz0123456789_$()+-/".utf8)
        return utf8.allSatisfy(allowed.contains)
    }

    /// CouchDB's system databases (`_users`, `_replicator`), which a listener serves beside the
    /// app's: valid names for the manager although they start with `_` (1.x accepted
    /// `_replicator` the same way).
    package static let systemDatabaseNames: Set<String> = ["_users", "_replicator"]

    /// A valid name (``isValidDatabaseName(_:)``) or a system database's.
    package static func isServableDatabaseName(_ name: String) -> Bool {
        isValidDatabaseName(name) || systemDatabaseNames.contains(name)
    }

    /// `foo/bar` → `<directory>/foo:bar.cblite2`; an existing `foo.bar.cblite2` (.NET's form) is used if present.
    func databaseDirectory(for name: String) -> URL {
        let base = URL(fileURLWithPath: directory)
        let url = base.appendingPathComponent(name.replacingOccurrences(of: "/", with: ":") + ".cblite2")
        if name.contains("/"), !FileManager.default.fileExists(atPath: url.path) {
            let dotted = base.appendingPathComponent(name.replacingOccurrences(of: "/", with: ".") + ".cblite2")
            if FileManager.default.fileExists(atPath: dotted.path) { return dotted }
        }
        return url
    }

    private func validate(_ name: String) throws {
        guard CBLManager.isServableDatabaseName(name) else {
            throw CBLError.badID("Invalid database name '\(name)': use lowercase letters, digits and _$()+-/, starting with a letter")
        }
    }

    /// The names of every database in the directory.
    public var allDatabaseNames: [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.filter { $0.hasSuffix(".cblite2") }
            .map { String($0.dropLast(".cblite2".count)).replacingOccurrences(of: ":", with: "/") }
            .filter(CBLManager.isServableDatabaseName)
            .sorted()
    }

    // MARK: Opening databases

    /// Returns the database with this name, creating it if it doesn't exist.
    public func databaseNamed(_ name: String) throws -> CBLDatabase {
        let options = CBLDatabaseOptions()
        options.create = !self.options.readOnly
        options.readOnly = self.options.readOnly
        return try openDatabaseNamed(name, with: options)
    }

    /// Returns the database with this name; throws 404 if it doesn't exist.
    public func existingDatabaseNamed(_ name: String) throws -> CBLDatabase {
        let options = CBLDatabaseOptions()
        options.readOnly = self.options.readOnly
        return try openDatabaseNamed(name, with: options)
    }

    /// True if a database with this name exists.
    public func databaseExistsNamed(_ name: String) -> Bool {
        guard CBLManager.isServableDatabaseName(name) else { return false }
        if state.withLock({ $0.databases[name] }) != nil { return true }
        return FileManager.default.fileExists(atPath: databaseDirectory(for: name).path)
    }

    /// Opens a database with options (create, read-only, storage type, encryption key).
    public func openDatabaseNamed(_ name: String, with options: CBLDatabaseOptions?) throws -> CBLDatabase {
        try validate(name)
        let options = options ?? CBLDatabaseOptions()
        if let type = options.storageType ?? Optional(storageType), type != kCBLSQLiteStorage {
            if type == kCBLForestDBStorage {
                throw CBLError.notAcceptable("Unsupported storage type ForestDB: only SQLite storage is supported")
            }
            throw CBLError.badRequest("Unknown storage type '\(type)'")
        }
        var key: CBLSymmetricKey?
        if let option = options.encryptionKey {
            guard let given = CBLSymmetricKey.from(option) else {
                throw CBLError.badRequest("Invalid encryption key: give a password String, 32 bytes of Data or a CBLSymmetricKey")
            }
            key = given
        } else {
            key = registeredEncryptionKey(forDatabaseNamed: name)
        }
        lock.lock()
        defer { lock.unlock() }
        if let db = state.withLock({ $0.databases[name] }) {
            return db
        }
        let readOnly = options.readOnly || self.options.readOnly
        let dir = databaseDirectory(for: name)
        let db = try CBLDatabase(name: name, directory: dir, manager: self,
                                 create: options.create && !readOnly, readOnly: readOnly, encryptionKey: key)
        state.withLock { $0.databases[name] = db }
        return db
    }

    func registeredEncryptionKey(forDatabaseNamed name: String) -> CBLSymmetricKey? {
        state.withLock { $0.encryptionKeys[name] }
    }

    func setRegisteredEncryptionKey(_ key: CBLSymmetricKey?, forDatabaseNamed name: String) {
        state.withLock { $0.encryptionKeys[name] = key }
    }

    func databaseDidClose(_ db: CBLDatabase) {
        state.withLock { state in
            if state.databases[db.name] === db { state.databases[db.name] = nil }
        }
    }

    /// Installs a prebuilt `.cblite2` database directory under `name`, replacing any existing one (spec 1.6).
    public func replaceDatabaseNamed(_ name: String, withDatabaseDir databaseDir: String) throws {
        try validate(name)
        try replace(name) { dest in
            try FileManager.default.copyItem(atPath: databaseDir, toPath: dest.path)
        }
    }

    /// Installs a legacy single-file `.cblite` database (and its attachments folder), upgrading it
    /// to the current format as 1.x did (spec 1.6, 10.1).
    public func replaceDatabaseNamed(_ name: String, withDatabaseFile databasePath: String,
                                     withAttachments attachmentsPath: String?) throws {
        try validate(name)
        try replace(name) { dest in
            try LegacyDatabaseUpgrader(legacyFile: URL(fileURLWithPath: databasePath),
                                       attachmentsDirectory: attachmentsPath.map { URL(fileURLWithPath: $0) })
                .upgrade(into: dest, deleteSource: false)
        }
    }

    private func replace(_ name: String, install: (URL) throws -> Void) throws {
        lock.lock()
        defer { lock.unlock() }
        if let open = state.withLock({ $0.databases[name] }) {
            try open.close()
        }
        let dest = databaseDirectory(for: name)
        let fm = FileManager.default
        let staging = URL(fileURLWithPath: directory).appendingPathComponent(".replace-\(UUID().uuidString).cblite2")
        defer { try? fm.removeItem(at: staging) }
        try install(staging)
        // Open once to validate and upgrade the schema, then re-key the UUIDs (spec 1.6).
        let store = try SQLiteStore(directory: staging, create: false, readOnly: false,
                                    encryptionKey: registeredEncryptionKey(forDatabaseNamed: name))
        do {
            try store.inTransaction {
                if let oldPrivate = try store.info("privateUUID") {
                    try store.putLocalCheckpointUUID(oldPrivate)
                }
                try store.setInfo("privateUUID", SQLiteStore.generateUUID())
                try store.setInfo("publicUUID", SQLiteStore.generateUUID())
            }
            try store.truncateWAL()
        } catch {
            store.close()
            throw error
        }
        store.close()
        if fm.fileExists(atPath: dest.path) { try fm.removeItem(at: dest) }
        try fm.moveItem(at: staging, to: dest)
    }

    // MARK: Lifecycle

    /// Closes every open database.
    public func close() {
        let dbs = state.withLock { state -> [CBLDatabase] in
            state.closed = true
            return Array(state.databases.values)
        }
        for db in dbs { try? db.close() }
    }

    /// Runs `block` with the named database on a background queue (1.x's way to do work off the main thread).
    public func backgroundTellDatabaseNamed(_ name: String, to block: @escaping @Sendable (CBLDatabase) -> Void) {
        DispatchQueue.global().async {
            guard let db = try? self.databaseNamed(name) else { return }
            block(db)
        }
    }

    /// A new manager on the same directory with the same options (`manager.copy() as! CBLManager`).
    /// 1.x needed one manager per thread; here every manager is thread-safe, so this exists only
    /// for code that expects it.
    public func copy(with zone: NSZone? = nil) -> Any {
        // This manager already made (and upgraded) the directory; were it removed since, opening
        // a database on the copy throws, as on this manager.
        CBLManager(existingDirectory: directory, options: options)
    }

    /// Enables logging for a 1.x tag ("Sync", "View", "Database", "Query", "Listener", "All", …).
    public static func enableLogging(_ tag: String) {
        CBLLog.enable(tag)
    }

    /// The library version.
    public static let versionString = "1.4.4-linux"
}

/// The 1.x version function.
public func CBLVersion() -> String { CBLManager.versionString }
