import CouchbaseLite
import CouchbaseLiteSwift
import CouchbaseLiteUpgrade
import Foundation

/// A 1.x database open through a manager, and the temporary link used to reach a bundle whose
/// name a manager would refuse (1.x names are lowercase, spec 1.2).
final class V1Database {
    let manager: CBLManager
    let database: CBLDatabase
    private let linkDirectory: URL?

    init(bundle: DatabaseBundle, readOnly: Bool) throws {
        var directory = bundle.url.deletingLastPathComponent()
        var name = bundle.name.replacingOccurrences(of: ":", with: "/")
        var link: URL?
        if !CBLManager.isValidDatabaseName(name) {
            let temp = FileManager.default.temporaryDirectory.appendingPathComponent("cbl-link-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: temp, withIntermediateDirectories: true)
            try FileManager.default.createSymbolicLink(at: temp.appendingPathComponent("db.cblite2"), withDestinationURL: bundle.url)
            directory = temp
            name = "db"
            link = temp
        }
        linkDirectory = link
        var options = CBLManagerOptions(readOnly: readOnly, fileProtection: [])
        do {
            manager = try CBLManager(directory: directory.path, options: &options)
            if let key = bundle.encryptionKey { manager.registerEncryptionKey(key, forDatabaseNamed: name) }
            database = try manager.existingDatabaseNamed(name)
        } catch {
            if let link { try? FileManager.default.removeItem(at: link) }
            throw error
        }
    }

    func close() {
        manager.close()
        if let linkDirectory { try? FileManager.default.removeItem(at: linkDirectory) }
    }
}

/// A 2.x database to run N1QL on: the bundle itself (read-only), or, for a 1.x bundle, a copy
/// converted into a temporary directory as 2.x would convert it on open (spec 10.2).
final class QueryableDatabase {
    let database: Database
    private let temporaryDirectory: URL?

    /// With `copy`, a 2.x bundle is copied into a temporary directory and the copy opened for
    /// writing (for a query that needs the schema changed, as LiteCore changes it).
    init(bundle: DatabaseBundle, command: String, copy: Bool = false) throws {
        switch bundle.format {
        case .v2 where !copy:
            database = try bundle.openV2Database(readOnly: true)
            temporaryDirectory = nil
        case .v2:
            let temp = FileManager.default.temporaryDirectory.appendingPathComponent("cbl-\(command)-\(UUID().uuidString)")
            do {
                try FileManager.default.createDirectory(at: temp, withIntermediateDirectories: true)
                try FileManager.default.copyItem(at: bundle.url, to: temp.appendingPathComponent(bundle.url.lastPathComponent))
                database = try Database(name: bundle.name, config: DatabaseConfiguration(directory: temp.path))
            } catch {
                try? FileManager.default.removeItem(at: temp)
                throw error
            }
            temporaryDirectory = temp
        case .v1:
            let temp = FileManager.default.temporaryDirectory.appendingPathComponent("cbl-\(command)-\(UUID().uuidString)")
            let destination = temp.appendingPathComponent(bundle.url.lastPathComponent)
            do {
                var upgrade = UpgradeOptions()
                upgrade.encryptionKey = bundle.encryptionKey
                _ = try DatabaseUpgrader(source: bundle.url, destination: destination, options: upgrade).run()
                note(command, "\(bundle.argument) is a \(bundle.formatDescription) database; querying a 2.x copy "
                     + "converted into a temporary directory (winning revisions, no design documents)")
                database = try Database(name: bundle.name, config: DatabaseConfiguration(directory: temp.path))
            } catch {
                try? FileManager.default.removeItem(at: temp)
                throw error
            }
            temporaryDirectory = temp
        }
    }

    func close() {
        try? database.close()
        if let temporaryDirectory { try? FileManager.default.removeItem(at: temporaryDirectory) }
    }
}
