import Foundation

/// Converts a legacy single-file `.cblite` database (1.0.x/1.1.x) into a `.cblite2` directory (spec 10.1).
struct LegacyDatabaseUpgrader {
    let legacyFile: URL
    let attachmentsDirectory: URL?

    init(legacyFile: URL, attachmentsDirectory: URL?) {
        self.legacyFile = legacyFile
        self.attachmentsDirectory = attachmentsDirectory
    }

    func upgrade(into destination: URL, deleteSource: Bool) throws {
        throw CBLError.notImplemented("legacy upgrade: in progress")
    }
}
