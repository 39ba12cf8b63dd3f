import CBLTestSupport
import Foundation
import SQLiteKit
import XCTest
@testable import CouchbaseLite
#if canImport(Glibc)
import Glibc
#endif

/// kill -9 during `changeEncryptionKey`, in a separate process (CBLCrashWriter's `rekey` mode):
/// afterwards the database opens with the old key or the new one, every document intact.
/// `CBL_REKEY_CRASH_TRIALS` sets the number of random kills per key change (default 20 in all).
final class EncryptionCrashTests: XCTestCase {
    static let documentCount = 400

    func testKillDuringChangeEncryptionKeyLeavesOldOrNewKey() throws {
        guard SQLiteLibrary.isSQLCipherAvailable else { throw XCTSkip("libsqlcipher0 is not installed") }
        let writer = try XCTUnwrap(CrashWriterLocator.find(),
                                   "CBLCrashWriter executable not found; build it with `swift build --build-tests`")
        let totalTrials = Int(ProcessInfo.processInfo.environment["CBL_REKEY_CRASH_TRIALS"] ?? "") ?? 20
        let root = TempDirectory("cbl-rekey-crash")
        var rng = SplitMix64(seed: 0x5EC12E7)
        let changes: [(old: String?, new: String?)] = [(nil, "new-pw"), ("old-pw", "new-pw"), ("old-pw", nil)]
        var outcomes: [String: Int] = [:]

        for (index, change) in changes.enumerated() {
            let template = root.url.appendingPathComponent("template-\(index)")
            try makeTemplate(at: template, key: change.old)

            // One run to the end: how long the re-key itself takes.
            let calibration = try trialCopy(of: template, in: root, name: "calibrate-\(index)")
            let full = try runWriter(writer, manager: calibration, change: change, killAfter: nil, crashAt: nil)
            XCTAssertTrue(full.done, "the uninterrupted re-key did not finish: \(full.output)")
            XCTAssertEqual(try verify(calibration, change: change), "new")
            let duration = max(full.rekeySeconds, 0.005)

            // Each named step of the protocol, then random moments.
            let steps: [(String, String)] = [("staged", "old"), ("attachments-staged", "old"), ("committed", "new"),
                                             ("before-rename", "new"), ("renamed", "new")]
            for (step, expected) in steps {
                let copy = try trialCopy(of: template, in: root, name: "step-\(index)-\(step)")
                let run = try runWriter(writer, manager: copy, change: change, killAfter: nil, crashAt: step)
                XCTAssertFalse(run.done, "CBL_REKEY_CRASH_AT=\(step) did not stop the writer")
                XCTAssertEqual(try verify(copy, change: change), expected, "killed at \(step)")
            }
            let trials = max(1, totalTrials / changes.count + (index < totalTrials % changes.count ? 1 : 0))
            for trial in 0..<trials {
                let copy = try trialCopy(of: template, in: root, name: "random-\(index)-\(trial)")
                let delay = Double(rng.next() % 1_000) / 1_000 * duration * 1.3
                let run = try runWriter(writer, manager: copy, change: change, killAfter: delay, crashAt: nil)
                let opened = try verify(copy, change: change)
                outcomes["\(opened)\(run.done ? " (finished)" : "")", default: 0] += 1
                try? FileManager.default.removeItem(at: copy)
            }
        }
        print("EncryptionCrashTests: \(totalTrials) random kills: \(outcomes)")
        XCTAssertEqual(outcomes.values.reduce(0, +), max(totalTrials, changes.count))
    }

    /// Without libsqlcipher (here: CBL_SQLCIPHER_LIBRARY naming a missing file) a key is a clear 501,
    /// not a crash, and plain databases keep working.
    func testMissingSQLCipherFailsClearly() throws {
        let writer = try XCTUnwrap(CrashWriterLocator.find(), "CBLCrashWriter executable not found")
        let root = TempDirectory("cbl-no-sqlcipher")
        for (old, new) in [("-", "pw"), ("pw", "-")] {
            let process = Process()
            process.executableURL = writer
            process.arguments = ["rekey", root.path, "db\(old == "-" ? 1 : 2)", old, new]
            var environment = ProcessInfo.processInfo.environment
            environment["CBL_SQLCIPHER_LIBRARY"] = "/nonexistent/libsqlcipher.so.0"
            process.environment = environment
            let out = Pipe()
            process.standardOutput = out
            process.standardError = out
            try process.run()
            let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            XCTAssertEqual(process.terminationReason, .exit, text)
            XCTAssertEqual(process.terminationStatus, 4, text)
            XCTAssertTrue(text.contains("501") && text.contains("SQLCipher is not available"), text)
            XCTAssertEqual(text.contains("OPEN"), old == "-", "a plain database still opens: \(text)")
        }
    }

    // MARK: Helpers

    private func makeTemplate(at directory: URL, key: String?) throws {
        let manager = try CBLManager(directory: directory.path)
        let options = CBLDatabaseOptions()
        options.create = true
        options.encryptionKey = key
        let db = try manager.openDatabaseNamed("crash", with: options)
        try db.inTransaction {
            for i in 0..<Self.documentCount {
                _ = try db.document(withID: String(format: "doc-%04d", i))!
                    .putProperties(["n": i, "text": String(repeating: "payload \(i) ", count: 8)])
            }
            return true
        }
        let rev = db.document(withID: "with-attachment")!.newRevision()
        rev.setAttachmentNamed("a.txt", withContentType: "text/plain", content: Data("attachment body".utf8))
        _ = try rev.save()
        try db.close()
        manager.close()
    }

    private func trialCopy(of template: URL, in root: TempDirectory, name: String) throws -> URL {
        let copy = root.url.appendingPathComponent(name)
        try FileManager.default.copyItem(at: template, to: copy)
        return copy
    }

    /// Opens the database after a trial: with the old key, else the new one; checks every document.
    /// Returns which key opened it.
    private func verify(_ managerDirectory: URL, change: (old: String?, new: String?)) throws -> String {
        let manager = try CBLManager(directory: managerDirectory.path)
        defer { manager.close() }
        var opened: (CBLDatabase, String)?
        var errors: [String] = []
        for (label, key) in [("old", change.old), ("new", change.new)] {
            let options = CBLDatabaseOptions()
            options.encryptionKey = key
            do {
                opened = (try manager.openDatabaseNamed("crash", with: options), label)
                break
            } catch {
                XCTAssertEqual((error as? CBLError)?.code, 401, "\(error)")
                errors.append("\(label): \(error)")
            }
        }
        guard let (db, label) = opened else {
            XCTFail("opens with neither key: \(errors)")
            return "none"
        }
        XCTAssertEqual(db.documentCount, UInt(Self.documentCount + 1))
        for i in stride(from: 0, to: Self.documentCount, by: 37) {
            XCTAssertEqual(db.existingDocument(withID: String(format: "doc-%04d", i))?.properties?["n"] as? Int, i)
        }
        let attachment = db.existingDocument(withID: "with-attachment")?.currentRevision?.attachmentNamed("a.txt")
        XCTAssertEqual(attachment?.content, Data("attachment body".utf8))
        let bundle = db.directoryURL
        try db.close()
        for leftover in [DatabaseRekey.stagedFileName, DatabaseRekey.commitMarkerName] {
            XCTAssertFalse(FileManager.default.fileExists(atPath: bundle.appendingPathComponent(leftover).path),
                           "\(leftover) left after recovery")
        }
        return label
    }

    private struct Run {
        var done = false
        var rekeySeconds = 0.0
        var output = ""
    }

    /// Runs `CBLCrashWriter rekey`; kills it `killAfter` seconds after it reports the database open.
    private func runWriter(_ writer: URL, manager: URL, change: (old: String?, new: String?),
                           killAfter: Double?, crashAt: String?) throws -> Run {
        let process = Process()
        process.executableURL = writer
        process.arguments = ["rekey", manager.path, "crash", change.old ?? "-", change.new ?? "-"]
        var environment = ProcessInfo.processInfo.environment
        environment["CBL_REKEY_CRASH_AT"] = crashAt
        process.environment = environment
        let out = Pipe()
        process.standardOutput = out
        process.standardError = out
        process.standardInput = FileHandle.nullDevice
        try process.run()
        var run = Run()
        var text = ""
        var openedAt: Date?
        let deadline = Date().addingTimeInterval(120)
        let handle = out.fileHandleForReading
        while Date() < deadline {
            let chunk = handle.availableData
            if chunk.isEmpty { break }   // end of file: the writer exited
            text += String(decoding: chunk, as: UTF8.self)
            if openedAt == nil, text.contains("OPEN\n") {
                openedAt = Date()
                if let killAfter {
                    if killAfter > 0 { usleep(useconds_t(killAfter * 1_000_000)) }
                    kill(process.processIdentifier, SIGKILL)
                }
            }
            if text.contains("DONE\n"), let openedAt { run.rekeySeconds = Date().timeIntervalSince(openedAt) }
        }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        run.done = text.contains("DONE\n")
        run.output = text
        return run
    }
}
