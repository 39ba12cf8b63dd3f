import Foundation

/// Options for a `CBLManager` (the 1.x C struct, imported as a Swift struct).
public struct CBLManagerOptions: Sendable {
    /// No changes can be made to any database opened by a read-only manager.
    public var readOnly: Bool
    /// Kept for source compatibility; Linux has no data-protection classes.
    public var fileProtection: NSData.WritingOptions

    public init() {
        readOnly = false
        fileProtection = []
    }

    public init(readOnly: Bool, fileProtection: NSData.WritingOptions) {
        self.readOnly = readOnly
        self.fileProtection = fileProtection
    }
}


/// The storage type name for SQLite storage, the only engine this implementation has.
public let kCBLSQLiteStorage = "SQLite"
/// The storage type name for ForestDB storage (recognised, and refused with status 406).
public let kCBLForestDBStorage = "ForestDB"

/// Options for `CBLManager.openDatabaseNamed(_:with:)`.
// @unchecked because 1.x's options object: set by one thread, then read when the database opens (the manager copies what it needs).
public final class CBLDatabaseOptions: NSObject, @unchecked Sendable {
    /// Create the database if it doesn't exist.
    public var create = false
    /// Open the database read-only.
    public var readOnly = false
    /// `kCBLSQLiteStorage` (default) or `kCBLForestDBStorage` (refused: unsupported here).
    public var storageType: String?
    /// The key the database file is encrypted with (SQLCipher, as 1.x): a password `String`, 32 bytes of `Data`, or a `CBLSymmetricKey`.
    public var encryptionKey: Any?

    public override init() { super.init() }
}
