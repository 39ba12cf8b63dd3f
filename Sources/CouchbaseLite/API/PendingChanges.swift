import Foundation

/// The changes of the open transaction, kept on the writer until the outermost commit posts them.
///
/// A new document's first revision — most of what a bulk insert makes — is kept as its ID, the
/// 16 bytes of its revision digest and its sequence (48 bytes), not as a `CBLDatabaseChange` and a
/// revision-ID string (about 200 bytes): a million-document transaction holds tens of megabytes
/// until its commit, not hundreds. Notification objects are made when the changes are posted,
/// a batch at a time (see ``CBLDatabase/postPendingChanges(_:)``).
struct PendingChanges {
    private enum Entry {
        case change(CBLDatabaseChange)
        /// `1-<digest>`, current, live, no conflict, local.
        case firstRevision(docID: String, digest: RevisionDigest, sequence: Int64)
    }

    private var entries: ContiguousArray<Entry> = []

    var count: Int { entries.count }
    var isEmpty: Bool { entries.isEmpty }

    mutating func append(_ change: CBLDatabaseChange) {
        entries.append(.change(change))
    }

    /// Records a new document's first revision (`1-<digest>`).
    mutating func appendFirstRevision(docID: String, digest: RevisionDigest, sequence: Int64) {
        entries.append(.firstRevision(docID: docID, digest: digest, sequence: sequence))
    }

    func documentID(at index: Int) -> String {
        switch entries[index] {
        case .change(let change): return change.documentID
        case .firstRevision(let docID, _, _): return docID
        }
    }

    /// The notification object of entry `index` (made now for a compact entry).
    func change(at index: Int) -> CBLDatabaseChange {
        switch entries[index] {
        case .change(let change):
            return change
        case .firstRevision(let docID, let digest, let sequence):
            return CBLDatabaseChange(firstRevisionOf: docID, digest: digest, sequence: sequence)
        }
    }

    /// The notification objects of entries `range`.
    func changes(_ range: Range<Int>) -> [CBLDatabaseChange] {
        range.map(change(at:))
    }

    /// Forgets the entries from `mark` on (a rolled-back transaction level).
    mutating func removeSuffix(from mark: Int) {
        entries.removeSubrange(mark...)
    }

    mutating func removeAll() {
        entries = []
    }
}
