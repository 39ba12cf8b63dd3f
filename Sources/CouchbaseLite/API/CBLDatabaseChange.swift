import Foundation

/// One change to a document, delivered after the transaction that made it commits.
// @unchecked because NSObject subclasses are not checked; every stored property is an immutable `let` of a Sendable type.
public final class CBLDatabaseChange: NSObject, @unchecked Sendable {
    /// The ID of the changed document.
    public let documentID: String
    /// The ID of the revision that was added.
    public var revisionID: String {
        switch revision {
        case .firstGeneration(let digest): return digest.firstGenerationID
        case .general(let revID, _): return revID
        }
    }
    /// True if the new revision is the document's winning revision.
    public let isCurrentRevision: Bool
    /// True if the document is in conflict (has more than one live leaf).
    public let inConflict: Bool
    /// True if the new revision is a deletion (tombstone).
    public let isDeletion: Bool
    /// The document's winning revision after the change.
    public var winningRevisionID: String? {
        switch revision {
        case .firstGeneration(let digest): return digest.firstGenerationID
        case .general(_, let winner): return winner
        }
    }
    /// The remote URL the revision came from when a replicator pulled it; nil for local edits.
    public let source: URL?
    /// The sequence number of the new revision (0 for a purge).
    public let sequence: Int64
    /// True if the document was purged (expired or `purgeDocument()`), leaving no tombstone.
    public let isPurge: Bool

    /// The revision IDs. A new document's first revision (most of what a bulk insert announces)
    /// keeps only its digest: the `1-<hex>` string is made if an observer asks for it.
    private enum Revision {
        case firstGeneration(RevisionDigest)
        case general(revID: String, winner: String?)
    }
    private let revision: Revision

    init(_ change: RevisionChange) {
        documentID = change.docID
        revision = .general(revID: change.revID, winner: change.winningRevID)
        isCurrentRevision = change.winningRevID == change.revID
        inConflict = change.inConflict
        isDeletion = change.isDeletion
        source = change.source.flatMap(URL.init(string:))
        sequence = change.sequence
        isPurge = change.isPurge
    }

    /// A new document's first revision: current, live, no conflict, local.
    init(firstRevisionOf docID: String, digest: RevisionDigest, sequence: Int64) {
        documentID = docID
        revision = .firstGeneration(digest)
        isCurrentRevision = true
        inConflict = false
        isDeletion = false
        source = nil
        self.sequence = sequence
        isPurge = false
    }

    public override var description: String {
        "CBLDatabaseChange[\(documentID) \(revisionID)\(isCurrentRevision ? " current" : "")\(inConflict ? " conflict" : "")\(isDeletion ? " deleted" : "")]"
    }
}

extension NSNotification.Name {
    /// Posted after a transaction commits, with `object` = the `CBLDatabase` and userInfo keys
    /// `changes` (`[CBLDatabaseChange]`) and `external` (Bool: true if any change came from a replicator).
    public static let cblDatabaseChange = NSNotification.Name("CBLDatabaseChange")
    /// Posted when a document changes, with `object` = the `CBLDocument` and userInfo key `change`.
    public static let cblDocumentChange = NSNotification.Name("CBLDocumentChange")
}

/// The 1.x string constants, for code that still names them.
public let kCBLDatabaseChangeNotification = NSNotification.Name.cblDatabaseChange.rawValue
public let kCBLDocumentChangeNotification = NSNotification.Name.cblDocumentChange.rawValue
