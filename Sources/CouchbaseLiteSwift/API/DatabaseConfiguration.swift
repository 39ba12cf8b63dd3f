import Foundation

/// Where a 2.x database lives (Couchbase Lite 2.x's `DatabaseConfiguration`).
public struct DatabaseConfiguration: Sendable {
    /// The directory holding `NAME.cblite2` bundles.
    public var directory: String
    /// Open an existing database without writing to it (for tools such as `cbl n1ql`);
    /// opening fails when there is none.
    package var readOnly = false

    /// The default directory: `$XDG_DATA_HOME/CouchbaseLite`, else `~/.local/share/CouchbaseLite`
    /// (the same place the 1.x `CBLManager` uses on Linux).
    public init() {
        self.directory = Self.defaultDirectory
    }

    public init(directory: String) {
        self.directory = directory
    }

    public static var defaultDirectory: String {
        let env = ProcessInfo.processInfo.environment
        if let xdg = env["XDG_DATA_HOME"], !xdg.isEmpty {
            return (xdg as NSString).appendingPathComponent("CouchbaseLite")
        }
        return (NSHomeDirectory() as NSString).appendingPathComponent(".local/share/CouchbaseLite")
    }
}
