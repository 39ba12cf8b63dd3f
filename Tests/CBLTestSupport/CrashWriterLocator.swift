import Foundation

private final class BundleAnchor {}

/// Finds the CBLCrashWriter executable SwiftPM built next to the test bundle.
public enum CrashWriterLocator {
    public static func find() -> URL? { BuiltExecutable.find("CBLCrashWriter") }
}

/// Finds an executable of this package (`cbl`, `CBLCrashWriter`) that SwiftPM built next to the
/// test bundle.
public enum BuiltExecutable {
    public static func find(_ name: String) -> URL? {
        let fm = FileManager.default
        var candidates: [URL] = []
        // On Linux the tests run as `<products>/CouchbaseLitePackageTests.xctest`, a plain executable,
        // and Bundle(for:) is the main bundle, whose bundleURL is the products directory itself
        // (.build/<triple>/debug). On macOS it is the .xctest bundle, whose parent is the products directory.
        let bundleURL = Bundle(for: BundleAnchor.self).bundleURL
        candidates.append(bundleURL.deletingLastPathComponent())
        candidates.append(bundleURL)
        candidates.append(Bundle.main.bundleURL)
        candidates.append(Bundle.main.bundleURL.deletingLastPathComponent())
        if let exe = Bundle.main.executableURL { candidates.append(exe.deletingLastPathComponent()) }
        candidates.append(URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent())
        // Fallback: the package's .build directory, found from this source file.
        let packageRoot = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        candidates.append(packageRoot.appendingPathComponent(".build/debug"))
        candidates.append(packageRoot.appendingPathComponent(".build/release"))
        for dir in candidates {
            let url = dir.appendingPathComponent(name)
            var isDir: ObjCBool = false
            if fm.fileExists(atPath: url.path, isDirectory: &isDir), !isDir.boolValue,
               fm.isExecutableFile(atPath: url.path) {
                return url
            }
        }
        return nil
    }
}

extension BuiltExecutable {
    /// What a finished (or stopped) run of a built executable printed and returned.
    public struct Output: Sendable {
        public var status: Int32
        public var stdout: String
        public var stderr: String
        /// True when the run outlived its time limit and was terminated.
        public var timedOut: Bool
    }

    /// Runs the built executable `name` with `arguments`, its output captured in files under
    /// `scratch` (pipes could fill up and block it), stopping it after `timeout` seconds; nil when
    /// the executable was not built.
    public static func run(_ name: String, _ arguments: [String], scratch: URL,
                           timeout: TimeInterval = 120) throws -> Output? {
        guard let executable = find(name) else { return nil }
        let id = UUID().uuidString
        let out = scratch.appendingPathComponent("stdout-\(id)"), err = scratch.appendingPathComponent("stderr-\(id)")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        _ = FileManager.default.createFile(atPath: err.path, contents: nil)
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.standardOutput = try FileHandle(forWritingTo: out)
        process.standardError = try FileHandle(forWritingTo: err)
        try process.run()
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        let timedOut = process.isRunning
        if timedOut { process.terminate() }
        process.waitUntilExit()
        return Output(status: process.terminationStatus, stdout: try String(contentsOf: out, encoding: .utf8),
                      stderr: try String(contentsOf: err, encoding: .utf8), timedOut: timedOut)
    }
}
