/// One row of the `revs` table as the store hands it out.
struct StoredRevision: Sendable {
    let docID: String
    let revID: String
    let sequence: Int64
    let deleted: Bool
    /// The stored JSON bytes (spec 2.6), or nil when the body is not available (pruned/compacted
    /// ancestor, stub inserted by replication) or was not loaded.
    let body: [UInt8]?
    /// Whether the row is a leaf (`current=1`).
    var isLeaf: Bool = true

    var generation: Int { RevisionID.generation(revID) }
}

/// What a write did to a document, for change notifications (`CBLDatabaseChange`).
struct RevisionChange: Sendable {
    let docID: String
    let revID: String
    /// The document's winning revision after the write.
    let winningRevID: String?
    let winningIsDeleted: Bool
    let inConflict: Bool
    let isDeletion: Bool
    let sequence: Int64
    let source: String?
    /// True for a purge (document removed without a tombstone).
    var isPurge: Bool = false
}
