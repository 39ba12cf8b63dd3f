import CouchbaseLite
import CouchbaseLiteSwift
import CouchbaseLiteUpgrade
import Foundation
import XCTest

/// Issue 22: one format detection. The probe `cbl` uses, the 1.x `CBLManager`, the 2.x `Database`
/// and the upgrader look at the same bundle and agree on what it is; each keeps its own status.
final class OpenerAgreementTests: XCTestCase {
    private struct Verdicts {
        var probe: String
        var oneX: String
        var twoX: String
        var upgrader: String
    }

    /// What each opener makes of the bundle `name` in `scratch`: "ok" or its failure.
    private func verdicts(_ name: String, _ scratch: Scratch) -> Verdicts {
        let bundle = scratch.path("\(name).cblite2")
        func describe(_ body: () throws -> Void) -> String {
            do {
                try body()
                return "ok"
            } catch let e as CBLError {
                return "\(e.code)"
            } catch let e as CouchbaseLiteError {
                return "\(e.code)"
            } catch {
                return "\(error)"
            }
        }
        let probe = describe {
            let p = try StorageProbe(bundle: bundle, encryptionKey: nil)
            throw NSError(domain: p.generation == .sqlite1x ? "sqlite1x" : "liteCore", code: p.schemaVersion)
        }
        let upgrader = describe {
            try DatabaseUpgrader(source: bundle, destination: scratch.path("out/\(name).cblite2")).run()
        }
        let twoX = describe {
            var config = DatabaseConfiguration(directory: scratch.url.path)
            config.readOnly = true
            try Database(name: name, config: config).close()
        }
        let oneX = describe {
            var options = CBLManagerOptions()
            options.readOnly = true
            let manager = try withUnsafePointer(to: options) { try CBLManager(directory: scratch.url.path, options: $0) }
            defer { manager.close() }
            _ = try manager.existingDatabaseNamed(name)
        }
        return Verdicts(probe: probe, oneX: oneX, twoX: twoX, upgrader: upgrader)
    }

    private func assertVerdicts(_ v: Verdicts, probe: String, oneX: String, twoX: String, upgrader: String,
                                file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertTrue(v.probe.contains(probe), "probe: \(v.probe)", file: file, line: line)
        XCTAssertEqual(v.oneX, oneX, "CBLManager", file: file, line: line)
        XCTAssertEqual(v.twoX, twoX, "Database", file: file, line: line)
        XCTAssertEqual(v.upgrader, upgrader, "DatabaseUpgrader", file: file, line: line)
    }

    private func makeBundle(_ name: String, _ scratch: Scratch, files: [String: Data]) throws {
        let bundle = scratch.path("\(name).cblite2")
        try FileManager.default.createDirectory(at: bundle.appendingPathComponent("attachments"), withIntermediateDirectories: true)
        for (file, data) in files { try data.write(to: bundle.appendingPathComponent(file)) }
    }

    func testForestDBGarbageAndLockedBundles() throws {
        let scratch = Scratch()
        try makeBundle("forest", scratch, files: ["db.forest.0": Data("forest".utf8)])
        assertVerdicts(verdicts("forest", scratch), probe: "forestDB", oneX: "406", twoX: "wrongFormat", upgrader: "wrongFormat")

        let garbage = Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
        try makeBundle("garbage", scratch, files: ["db.sqlite3": garbage])
        assertVerdicts(verdicts("garbage", scratch), probe: "notADatabase(plainSQLiteHeader: false)",
                       oneX: "401", twoX: "notADatabaseFile", upgrader: "notADatabaseFile")

        // A 1.x bundle whose blob store says it is encrypted: no key, so 1.x and the upgrader refuse
        // before SQLite reads it; 2.x refuses the 1.x file by its schema.
        let manager = try CBLManager(directory: scratch.url.path)
        try manager.databaseNamed("locked").document(withID: "a")!.putProperties(["a": 1])
        manager.close()
        try Data("AES".utf8).write(to: scratch.path("locked.cblite2/attachments/_encryption"))
        assertVerdicts(verdicts("locked", scratch), probe: "encryptedWithoutKey",
                       oneX: "401", twoX: "databaseTooOld", upgrader: "notADatabaseFile")
    }

    func testEachGenerationIsOpenedByItsOwnTypeOnly() throws {
        let scratch = Scratch()
        let manager = try CBLManager(directory: scratch.url.path)
        try manager.databaseNamed("one").document(withID: "a")!.putProperties(["a": 1])
        manager.close()
        let two = try Database(name: "two", config: DatabaseConfiguration(directory: scratch.url.path))
        try two.saveDocument(MutableDocument(id: "a").setInt(1, forKey: "a"))
        try two.close()

        assertVerdicts(verdicts("one", scratch), probe: "sqlite1x", oneX: "ok", twoX: "databaseTooOld", upgrader: "ok")
        assertVerdicts(verdicts("two", scratch), probe: "liteCore", oneX: "406", twoX: "ok", upgrader: "cantUpgradeDatabase")
    }
}
