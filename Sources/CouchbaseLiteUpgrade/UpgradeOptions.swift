import CouchbaseLite

/// What the upgrader does beyond what real Couchbase Lite 2.x does on open (all off by default).
public struct UpgradeOptions: Sendable {
    /// Copy `_local/…` documents into a `local` key-store (2.x itself drops them).
    public var includeLocalDocuments = false
    /// Carry `docs.expiry_timestamp` (seconds) into the 2.x `expiration` column (milliseconds, 2.5+).
    public var includeExpiration = false
    /// Accept a legacy single-file `.cblite` database (1.0/1.1), upgraded through the 1.x store first.
    public var allowLegacySingleFile = false
    /// Replace the source bundle with the converted database (what 2.x does when it opens a 1.x file).
    public var inPlace = false
    /// History kept per document (LiteCore's default for 2.x files).
    public var maxRevTreeDepth = 20
    /// The key of an encrypted (SQLCipher) 1.x source, as 1.x opened it; the 2.x output is not encrypted.
    public var encryptionKey: CBLSymmetricKey?

    public init() {}

    public init(includeLocalDocuments: Bool = false, includeExpiration: Bool = false,
                allowLegacySingleFile: Bool = false, inPlace: Bool = false, maxRevTreeDepth: Int = 20) {
        self.includeLocalDocuments = includeLocalDocuments
        self.includeExpiration = includeExpiration
        self.allowLegacySingleFile = allowLegacySingleFile
        self.inPlace = inPlace
        self.maxRevTreeDepth = maxRevTreeDepth
    }
}

/// Progress of a running upgrade, reported every few hundred documents.
public struct UpgradeProgress: Sendable {
    public enum Phase: String, Sendable { case documents, finishing }
    public var phase: Phase
    public var completed: Int
    public var total: Int

    /// 0…1.
    public var fraction: Double { total > 0 ? min(1, Double(completed) / Double(total)) : 1 }
}
