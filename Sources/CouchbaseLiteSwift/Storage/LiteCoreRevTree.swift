import Fleece

/// Flags of one revision inside a rev tree (spec 3.1; the values of `C4RevisionFlags`).
package struct RevisionFlags: OptionSet, Sendable, Hashable {
    package let rawValue: UInt8
    package init(rawValue: UInt8) { self.rawValue = rawValue }

    package static let deleted = RevisionFlags(rawValue: 0x01)
    package static let leaf = RevisionFlags(rawValue: 0x02)
    /// In-memory only; never stored.
    package static let new = RevisionFlags(rawValue: 0x04)
    package static let hasAttachments = RevisionFlags(rawValue: 0x08)
    package static let keepBody = RevisionFlags(rawValue: 0x10)
    package static let isConflict = RevisionFlags(rawValue: 0x20)
    package static let closed = RevisionFlags(rawValue: 0x40)
    /// On disk only: a Fleece body follows the revision's header (stripped when decoding).
    package static let hasData = RevisionFlags(rawValue: 0x80)

    /// The flags of a current (leaf) revision. Built from raw bits: option-set literals go through
    /// a generic initializer that the converter's hot loop cannot afford.
    package static func leaf(deleted: Bool, hasAttachments: Bool) -> RevisionFlags {
        RevisionFlags(rawValue: 0x02 | (deleted ? 0x01 : 0) | (hasAttachments ? 0x08 : 0))
    }
}

/// Flags of a document row (`flags` column, low 16 bits; spec 3.1).
package struct DocumentFlags: OptionSet, Sendable, Hashable {
    package let rawValue: Int64
    package init(rawValue: Int64) { self.rawValue = rawValue }

    package static let deleted = DocumentFlags(rawValue: 0x01)
    package static let conflicted = DocumentFlags(rawValue: 0x02)
    /// Some stored revision references blobs; LiteCore's compaction keeps only blobs of such documents.
    package static let hasAttachments = DocumentFlags(rawValue: 0x04)
    package static let synced = DocumentFlags(rawValue: 0x08)

    package static func current(deleted: Bool, hasAttachments: Bool) -> DocumentFlags {
        DocumentFlags(rawValue: (deleted ? 0x01 : 0) | (hasAttachments ? 0x04 : 0))
    }
}

/// One revision of a serialized rev tree.
package struct TreeRevision: Sendable, Equatable {
    /// Binary revision ID (spec 3.2).
    package var revID: [UInt8]
    /// Index of the parent in the tree's revision list; nil for a root.
    package var parentIndex: Int?
    /// Flags without `hasData` and `new`.
    package var flags: RevisionFlags
    /// Sequence at which the revision was saved; 0 means "the record's sequence".
    package var sequence: UInt64
    /// Fleece-encoded properties, when the revision kept its body.
    package var body: [UInt8]?

    package init(revID: [UInt8], parentIndex: Int?, flags: RevisionFlags, sequence: UInt64 = 0, body: [UInt8]? = nil) {
        self.revID = revID
        self.parentIndex = parentIndex
        self.flags = flags
        self.sequence = sequence
        self.body = body
    }

    package var revIDString: String? { BinaryRevisionID.decode(revID) }
    package var isDeleted: Bool { flags.contains(.deleted) }
    package var isLeaf: Bool { flags.contains(.leaf) }
}

/// LiteCore's serialized revision tree ("RawRevTree", spec 3.3): the `body` of a 2.x document row
/// and the `extra` of a 3.x row. Revision 0 is the current (winning) revision. (The 1.x tree, rows
/// of the `revs` table, is `CouchbaseLite`'s `RevsTableTree`.)
package struct LiteCoreRevTree: Sendable, Equatable {
    package var revisions: [TreeRevision]
    /// `(remoteDBID, revisionIndex)` pairs: the current revision on each replication remote.
    package var remotes: [(remote: UInt16, revision: Int)]

    package init(revisions: [TreeRevision], remotes: [(remote: UInt16, revision: Int)] = []) {
        self.revisions = revisions
        self.remotes = remotes
    }

    package static func == (a: LiteCoreRevTree, b: LiteCoreRevTree) -> Bool {
        a.revisions == b.revisions && a.remotes.elementsEqual(b.remotes) { $0.remote == $1.remote && $0.revision == $1.revision }
    }

    package var current: TreeRevision? { revisions.first }

    /// Revision IDs from the current revision back through its ancestors (current first).
    package var currentHistory: [String] {
        var out: [String] = []
        var index: Int? = revisions.isEmpty ? nil : 0
        var steps = 0
        while let i = index, i < revisions.count, steps <= revisions.count {
            if let id = revisions[i].revIDString { out.append(id) }
            index = revisions[i].parentIndex
            steps += 1
        }
        return out
    }

    // MARK: Encoding

    /// Serializes the tree in the on-disk layout. `includeCurrentBody` is false for the 3.x
    /// `extra` column, where the current body lives in `body` instead (spec 3.4).
    package func encoded(includeCurrentBody: Bool = true) -> [UInt8] {
        var out: [UInt8] = []
        encode(into: &out, includeCurrentBody: includeCurrentBody)
        return out
    }

    package func encode(into out: inout [UInt8], includeCurrentBody: Bool = true) {
        for (index, rev) in revisions.enumerated() {
            let body = (index > 0 || includeCurrentBody) ? rev.body : nil
            _ = Self.appendRecord(into: &out, parentIndex: rev.parentIndex, flags: rev.flags, sequence: rev.sequence,
                                  body: body) { $0.append(contentsOf: rev.revID); return true }
        }
        Self.appendEnd(into: &out)
        for (remote, revision) in remotes {
            out.append(UInt8(remote >> 8)); out.append(UInt8(remote & 0xFF))
            let r = UInt16(truncatingIfNeeded: revision)
            out.append(UInt8(r >> 8)); out.append(UInt8(r & 0xFF))
        }
    }

    /// Appends one record of a linear tree straight from a text revision ID (the converter's hot
    /// path: no intermediate tree). Returns false when the revision ID is not valid for LiteCore.
    package static func appendRecord(into out: inout [UInt8], revID: UnsafeRawBufferPointer, parentIndex: Int?,
                                     flags: RevisionFlags, body: [UInt8]?) -> Bool {
        // Sequence 0 = "the record's sequence", as LiteCore writes revisions added in one save (spec 3.3).
        appendRecord(into: &out, parentIndex: parentIndex, flags: flags, sequence: 0, body: body) {
            BinaryRevisionID.append(revID, to: &$0)
        }
    }

    /// One record (spec 3.3): u32 size, u16 parent, flags (HasData when a body follows), revision ID
    /// length and bytes (appended by `writeRevID`), varint sequence, body. False when `writeRevID` fails.
    @inline(__always)
    private static func appendRecord(into out: inout [UInt8], parentIndex: Int?, flags: RevisionFlags, sequence: UInt64,
                                     body: [UInt8]?, writeRevID: (inout [UInt8]) -> Bool) -> Bool {
        let start = out.count
        out.append(contentsOf: [0, 0, 0, 0])                    // size, patched below
        let parent = UInt16(truncatingIfNeeded: parentIndex ?? 0xFFFF)
        out.append(UInt8(parent >> 8)); out.append(UInt8(parent & 0xFF))
        let stored = flags.rawValue & ~(RevisionFlags.new.rawValue | RevisionFlags.hasData.rawValue)
        out.append(stored | (body != nil ? RevisionFlags.hasData.rawValue : 0))
        let lengthIndex = out.count
        out.append(0)                                           // revision ID length, patched below
        guard writeRevID(&out) else { return false }
        out[lengthIndex] = UInt8(truncatingIfNeeded: out.count - lengthIndex - 1)
        Varint.append(sequence, to: &out)
        if let body { out.append(contentsOf: body) }
        let size = UInt32(out.count - start)
        out[start] = UInt8(size >> 24); out[start + 1] = UInt8((size >> 16) & 0xFF)
        out[start + 2] = UInt8((size >> 8) & 0xFF); out[start + 3] = UInt8(size & 0xFF)
        return true
    }

    /// Appends the end-of-revisions marker.
    package static func appendEnd(into out: inout [UInt8]) {
        out.append(contentsOf: [0, 0, 0, 0])
    }

    // MARK: Decoding

    /// Whether `bytes` parses as a rev tree (LiteCore's `RawRevision::isRevTree`): walking the
    /// size fields reaches a zero size inside the blob, and the first record is not empty.
    package static func looksLikeRevisionTree(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var offset = 0
        var first = true
        while offset + 4 <= bytes.count {
            let size = Int(readUInt32(bytes, offset))
            if size == 0 { return !first }
            guard size >= 8, size <= bytes.count - offset else { return false }
            first = false
            offset += size
        }
        return false
    }

    /// Decodes a serialized tree, validating every field; throws on malformed input.
    package static func decode(_ bytes: UnsafeRawBufferPointer) throws -> LiteCoreRevTree {
        var revisions: [TreeRevision] = []
        var offset = 0
        while true {
            guard offset + 4 <= bytes.count else { throw CouchbaseLiteError(.corruptRevisionData, "Corrupt revision tree: truncated revision record") }
            let size = Int(readUInt32(bytes, offset))
            if size == 0 { offset += 4; break }
            guard size >= 8, size <= bytes.count - offset else { throw CouchbaseLiteError(.corruptRevisionData, "Corrupt revision tree: bad revision size \(size)") }
            let end = offset + size
            let parentRaw = Int(bytes[offset + 4]) << 8 | Int(bytes[offset + 5])
            let rawFlags = RevisionFlags(rawValue: bytes[offset + 6])
            let revIDLength = Int(bytes[offset + 7])
            var cursor = offset + 8
            guard revIDLength > 0, cursor + revIDLength <= end else { throw CouchbaseLiteError(.corruptRevisionData, "Corrupt revision tree: bad revision ID length") }
            let revID = Array(bytes[cursor..<(cursor + revIDLength)])
            cursor += revIDLength
            let limited = UnsafeRawBufferPointer(rebasing: bytes[..<end])
            guard let sequence = Varint.read(limited, at: &cursor) else { throw CouchbaseLiteError(.corruptRevisionData, "Corrupt revision tree: bad sequence") }
            var body: [UInt8]?
            if rawFlags.contains(.hasData) {
                body = Array(bytes[cursor..<end])
            } else if cursor != end {
                throw CouchbaseLiteError(.corruptRevisionData, "Corrupt revision tree: unexpected bytes after a bodiless revision")
            }
            revisions.append(TreeRevision(revID: revID, parentIndex: parentRaw == 0xFFFF ? nil : parentRaw,
                                          flags: rawFlags.subtracting([.hasData, .new]), sequence: sequence, body: body))
            offset = end
        }
        guard !revisions.isEmpty else { throw CouchbaseLiteError(.corruptRevisionData, "Corrupt revision tree: empty revision tree") }
        for rev in revisions {
            if let p = rev.parentIndex, p >= revisions.count {
                throw CouchbaseLiteError(.corruptRevisionData, "Corrupt revision tree: parent index \(p) out of range")
            }
        }
        var remotes: [(remote: UInt16, revision: Int)] = []
        while offset + 4 <= bytes.count {
            let remote = UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
            let revision = Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
            offset += 4
            if remote == 0 { break }     // 3.x "rejected revisions" section follows (spec 3.3); not needed
            guard revision < revisions.count else { throw CouchbaseLiteError(.corruptRevisionData, "Corrupt revision tree: remote revision index out of range") }
            remotes.append((remote, revision))
        }
        return LiteCoreRevTree(revisions: revisions, remotes: remotes)
    }

    package static func decode(_ bytes: [UInt8]) throws -> LiteCoreRevTree {
        try bytes.withUnsafeBytes { try decode($0) }
    }

    private static func readUInt32(_ bytes: UnsafeRawBufferPointer, _ offset: Int) -> UInt32 {
        UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8 | UInt32(bytes[offset + 3])
    }
}
