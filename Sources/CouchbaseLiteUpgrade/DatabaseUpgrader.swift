import CouchbaseLite
import CouchbaseLiteSwift
import Fleece
import Foundation
import JSONCore
import SQLiteKit

/// Converts a Couchbase Lite 1.x database (`NAME.cblite2` with SQLite storage) into the 2.x format
/// exactly as LiteCore's own upgrader does when 2.x opens a 1.x file (spec 8.2): the winning
/// revision of every document with its ancestry as bodiless history, revision IDs kept,
/// bodies re-encoded to Fleece with shared keys, `_attachments` kept and their blobs copied
/// (SHA-1 verified), documents whose ID starts with `_` skipped, sequences renumbered 1…N.
///
/// The source is opened read-only and never modified. The destination is built in a temporary
/// directory beside it and renamed into place at the end; a failure leaves nothing behind.
///
/// ```swift
/// let upgrader = DatabaseUpgrader(source: URL(fileURLWithPath: "old.cblite2"),
///                                 destination: URL(fileURLWithPath: "out/new.cblite2"))
/// let report = try upgrader.run { print($0.completed, "/", $0.total) }
/// print(report.summary)
/// ```
public struct DatabaseUpgrader: Sendable {
    /// The 1.x bundle (`.cblite2` directory), or a legacy `.cblite` file with `allowLegacySingleFile`.
    public let source: URL
    /// The 2.x bundle to create (`NAME.cblite2`); must not exist. Ignored with `inPlace`.
    public let destination: URL
    public let options: UpgradeOptions

    public init(source: URL, destination: URL, options: UpgradeOptions = UpgradeOptions()) {
        self.source = source
        self.destination = destination
        self.options = options
    }

    /// Runs the upgrade and returns its report. `progress` is called on the calling thread.
    @discardableResult
    public func run(progress: ((UpgradeProgress) -> Void)? = nil) throws -> UpgradeReport {
        let started = DispatchTime.now()
        let fm = FileManager.default
        let target = options.inPlace ? source : destination
        if options.inPlace { restoreInterruptedInPlaceSource(target) }
        if !options.inPlace, fm.fileExists(atPath: target.path) {
            throw CouchbaseLiteError(.invalidParameter, "\(target.path) already exists; choose a new destination")
        }
        let parent = target.deletingLastPathComponent()
        try fm.createDirectory(at: parent, withIntermediateDirectories: true)
        removeStaleWorkDirectories(of: target)
        // Work directory beside the target, so the final rename stays on one file system.
        let work = parent.appendingPathComponent(Self.workDirectoryPrefix(of: target) + UUID().uuidString, isDirectory: true)
        try fm.createDirectory(at: work, withIntermediateDirectories: true)
        // Held while this run works: a run of the same target started meanwhile leaves it alone.
        let workLock = Self.lockWorkDirectory(work)
        defer {
            try? fm.removeItem(at: work)
            if workLock >= 0 { close(workLock) }
        }

        var report = UpgradeReport()
        report.source = source.path
        report.destination = target.path

        let sourceBundle = try prepareSource(work: work)
        report.sourceBytes = Self.size(of: source)
        let built = work.appendingPathComponent("new.\(Schema2.bundleExtension)", isDirectory: true)
        let legacy = try LegacySource(bundle: sourceBundle, workDirectory: work, encryptionKey: options.encryptionKey)
        defer { legacy.close() }
        report.sourceSchemaVersion = legacy.schemaVersion
        report.sourceEncrypted = options.encryptionKey != nil

        // Read before any document: the conversion covers at least this much (catch-up resumes here).
        var checkpoint = SourceCheckpoint(publicUUID: try legacy.publicUUID(), sequence: try legacy.lastSequence())
        let output = try DataFile(creatingForBulkLoadAt: built)
        do {
            let converter = DocumentConverter(source: legacy, output: output, options: options)
            let read = try ConversionPipeline(converter: converter).run(into: output, report: &report, progress: progress)
            progress?(UpgradeProgress(phase: .finishing, completed: read, total: read))
            report.sharedKeys = output.sharedKeys.count
            try output.finishBulkLoad()
            checkpoint.destinationSequence = try output.lastSequence()
            output.close()
            // Beside the database, not in it: the file stays byte-identical to LiteCore's own upgrade.
            try checkpoint.write(into: built)
        } catch {
            output.abandonBulkLoad()
            throw error
        }
        report.destinationSchemaVersion = Schema2.version302
        report.destinationBytes = Self.size(of: built)
        try install(built, at: target)
        report.seconds = Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9
        return report
    }

    /// The 1.x bundle to read: the source itself, or for a legacy `.cblite` file a `.cblite2`
    /// made from it in the work directory by the 1.x store's schema upgrade (spec 10.1 of the 1.x format).
    private func prepareSource(work: URL) throws -> URL {
        var isDir: ObjCBool = false
        let exists = FileManager.default.fileExists(atPath: source.path, isDirectory: &isDir)
        guard exists, !isDir.boolValue else { return source }
        guard source.pathExtension == "cblite" else {
            throw CouchbaseLiteError(.wrongFormat, "\(source.path) is neither a .cblite2 directory nor a legacy .cblite file")
        }
        guard options.allowLegacySingleFile else {
            throw CouchbaseLiteError(.wrongFormat,
                "\(source.lastPathComponent) is a legacy single-file (1.0/1.1) database; pass the legacy .cblite option to upgrade it")
        }
        let staged = work.appendingPathComponent("legacy.cblite2", isDirectory: true)
        let attachments = LegacyDatabaseUpgrader.defaultAttachmentsDirectory(for: source)
        do {
            try LegacyDatabaseUpgrader(legacyFile: source, attachmentsDirectory: attachments).upgrade(into: staged, deleteSource: false)
        } catch let e as CBLError {
            throw CouchbaseLiteError(.cantUpgradeDatabase, "Cannot upgrade legacy database \(source.lastPathComponent): \(e.message)")
        }
        return staged
    }

    /// Moves the finished bundle into place: a rename for a new destination; for an in-place
    /// upgrade, the source is swapped out and deleted only once the new bundle is in place.
    private func install(_ built: URL, at target: URL) throws {
        let fm = FileManager.default
        if !options.inPlace {
            do {
                try fm.moveItem(at: built, to: target)
            } catch {
                throw CouchbaseLiteError(.ioError, "Cannot create \(target.path): \(error.localizedDescription)")
            }
            return
        }
        let old = target.deletingLastPathComponent().appendingPathComponent(".\(target.lastPathComponent).old-\(UUID().uuidString)")
        try fm.moveItem(at: target, to: old)
        do {
            try fm.moveItem(at: built, to: target)
        } catch {
            try? fm.moveItem(at: old, to: target)
            throw CouchbaseLiteError(.ioError, "Cannot replace \(target.path): \(error.localizedDescription)")
        }
        try? fm.removeItem(at: old)
    }

    /// An in-place install swaps the bundles with two renames (source → `.NAME.old-<uuid>`, new →
    /// NAME). A process killed between them leaves the 1.x original only under the `.old-` name:
    /// it is put back before anything else, so the rerun upgrades it. (When both exist, the new
    /// bundle landed; the original is left where it is, never deleted here.)
    private func restoreInterruptedInPlaceSource(_ target: URL) {
        let fm = FileManager.default
        guard !fm.fileExists(atPath: target.path) else { return }
        let parent = target.deletingLastPathComponent()
        let prefix = ".\(target.lastPathComponent).old-"
        guard let name = (try? fm.contentsOfDirectory(atPath: parent.path))?.filter({ $0.hasPrefix(prefix) }).sorted().first else { return }
        try? fm.moveItem(at: parent.appendingPathComponent(name), to: target)
    }

    /// The name of a work directory of `target`, before its UUID: `.NAME.upgrading-`.
    static func workDirectoryPrefix(of target: URL) -> String { ".\(target.lastPathComponent).upgrading-" }

    /// A killed run leaves its work directory (`.NAME.upgrading-<uuid>`) beside the target. It is
    /// never the source of truth (the source is only replaced by the install's renames, after
    /// the work is done), so the next run of the same target deletes it before starting.
    /// One still locked by a live run (see ``lockWorkDirectory(_:)``) is left alone.
    private func removeStaleWorkDirectories(of target: URL) {
        let fm = FileManager.default
        let parent = target.deletingLastPathComponent()
        let prefix = Self.workDirectoryPrefix(of: target)
        for name in (try? fm.contentsOfDirectory(atPath: parent.path)) ?? [] where name.hasPrefix(prefix) {
            let directory = parent.appendingPathComponent(name, isDirectory: true)
            let fd = open(directory.appendingPathComponent(Self.workLockName).path, O_RDWR | O_CLOEXEC)
            if fd >= 0 {
                defer { close(fd) }
                // Another process holds it: that run is alive.
                guard flock(fd, LOCK_EX | LOCK_NB) == 0 else { continue }
            }
            try? fm.removeItem(at: directory)
        }
    }

    private static let workLockName = ".lock"

    /// Takes an advisory lock on a file in `work`, held (by the returned descriptor) until the
    /// run ends or its process dies; -1 when it cannot be taken (the run goes on without it).
    private static func lockWorkDirectory(_ work: URL) -> Int32 {
        let fd = open(work.appendingPathComponent(workLockName).path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return -1 }
        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            close(fd)
            return -1
        }
        return fd
    }

    static func size(of url: URL) -> Int64 {
        let fm = FileManager.default
        var isDir: ObjCBool = false
        guard fm.fileExists(atPath: url.path, isDirectory: &isDir) else { return 0 }
        if !isDir.boolValue { return (try? fm.attributesOfItem(atPath: url.path)[.size] as? NSNumber)??.int64Value ?? 0 }
        var total: Int64 = 0
        if let e = fm.enumerator(at: url, includingPropertiesForKeys: [.fileSizeKey]) {
            for case let file as URL in e {
                total += Int64((try? file.resourceValues(forKeys: [.fileSizeKey]).fileSize) ?? 0)
            }
        }
        return total
    }
}
