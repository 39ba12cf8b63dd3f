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
