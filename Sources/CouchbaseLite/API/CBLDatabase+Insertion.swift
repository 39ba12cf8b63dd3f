import Foundation
import JSONCore

/// An attachment body added through `CBLUnsavedRevision.setAttachmentNamed`, written to the blob
/// store before the revision's transaction.
enum PendingAttachmentBody {
    case data(Data)
    case file(URL)
}

struct PendingAttachment {
    let contentType: String?
    let body: PendingAttachmentBody
}

extension CBLDatabase {
    /// Top-level keys removed before a body is stored (spec 2.6).
    static let strippedSpecialKeys: Set<String> = [
        "_id", "_rev", "_deleted", "_revisions", "_revs_info", "_conflicts", "_deleted_conflicts", "_local_seq",
    ]
    /// `_`-prefixed keys kept in stored bodies.
    static let keptSpecialKeys: Set<String> = ["_attachments", "_removed"]

    /// Refuses unknown `_`-prefixed top-level properties with 400, as 1.x does. Returns whether
    /// there is any `_`-prefixed key at all (when not, no special key needs looking up).
    @discardableResult
    static func checkSpecialKeys(_ properties: [String: Any]) throws -> Bool {
        var found = false
        for key in properties.keys where startsWithUnderscore(key) {
            found = true
            if !strippedSpecialKeys.contains(key) && !keptSpecialKeys.contains(key) {
                throw CBLError.badRequest("Invalid top-level property '\(key)': names starting with '_' are reserved")
            }
        }
        return found
    }

    /// `value as? String`, with the common case (a Swift `String`) tested without a dynamic cast.
    @inline(__always)
    static func stringValue(_ value: Any?) -> String? {
        guard let value else { return nil }
        func exactString<T>(_ v: T) -> String? { T.self == String.self ? unsafeBitCast(v, to: String.self) : nil }
        if let string = _openExistential(value, do: exactString) { return string }
        return value as? String
    }

    /// The `type` property when it is a string (the `doc_type` column, spec 2.3). A small body's
    /// keys are scanned by length first: cheaper than hashing `"type"` for the lookup.
    @inline(__always)
    static func docType(_ properties: [String: Any]) -> String? {
        guard properties.count <= 16 else { return stringValue(properties["type"]) }
        var index = properties.startIndex
        while index != properties.endIndex {
            let key = properties.keys[index]
            if key.utf8.count == 4 && key == "type" { return stringValue(properties.values[index]) }
            properties.formIndex(after: &index)
        }
        return nil
    }

    /// True if some top-level key starts with `_` (one pass over the keys, no hashing).
    static func hasSpecialKeys(_ properties: [String: Any]) -> Bool {
        properties.keys.contains(where: startsWithUnderscore)
    }

    /// Reads the first UTF-8 byte by subscript: inlined, unlike `utf8.first` (this runs for every
    /// key of every save).
    @inline(__always)
    static func startsWithUnderscore(_ key: String) -> Bool {
        !key.isEmpty && key.utf8[key.utf8.startIndex] == UInt8(ascii: "_")
    }

    /// Skips the keys `storedBody` leaves out.
    @inline(__always)
    static func isStrippedKey(_ key: String) -> Bool {
        startsWithUnderscore(key) && strippedSpecialKeys.contains(key)
    }

    /// Encodes a body the way 1.x stores it: canonical JSON minus the special keys (spec 2.6).
    /// With a member order (a body that arrived as JSON text through the listener), the members are
    /// written in that order, as CouchDB keeps them; the revision ID is still the digest of the
    /// canonical (sorted) form.
    static func storedBody(_ properties: [String: Any], order: JSONMemberOrder? = nil) throws -> [UInt8] {
        var writer = JSONWriter(capacity: 256)
        do {
            if let order {
                try writer.writeObject(properties, order: order, skippingKey: isStrippedKey)
            } else {
                try writer.writeObject(properties, sortedKeys: true, skippingKey: isStrippedKey)
            }
        } catch let e as JSONError {
            throw CBLError.badJSON(e.message)
        } catch {
            throw CBLError.badJSON("\(error)")
        }
        return writer.bytes
    }

    // MARK: Local edits

    /// Saves a new revision made by the app (spec 3.5, "local edit").
    ///
    /// - Parameters:
    ///   - prevRevID: the parent revision; nil for a new document (or to resurrect a deleted one).
    ///   - allowConflict: allow a parent that is not a leaf, or a new branch.
    ///   - pendingAttachments: bodies set on an unsaved revision (nil value = removed).
    ///   - memberOrder: the order of the members in the text the properties were read from; the
    ///     stored body keeps it (the revision ID is computed over the canonical form all the same).
    func putRevision(docID: String, prevRevID: String?, properties inputProperties: [String: Any],
                     deleting: Bool, allowConflict: Bool,
                     pendingAttachments: [String: PendingAttachment?] = [:],
                     document knownDocument: CBLDocument? = nil,
                     knownWithoutSpecialKeys: Bool = false,
                     memberOrder: JSONMemberOrder? = nil) throws -> CBLSavedRevision {
        try checkWritable()
        guard CBLDatabase.isValidDocumentID(docID) else {
            throw CBLError.badID("Invalid document ID '\(docID)'")
        }
        // `knownWithoutSpecialKeys`: the caller has seen no `_`-prefixed key (nothing to check).
        let hasSpecialKeys = knownWithoutSpecialKeys ? false : try CBLDatabase.checkSpecialKeys(inputProperties)
        let isDeletion = deleting || (hasSpecialKeys && (inputProperties["_deleted"] as? Bool ?? false))
        if let prevRevID, !RevisionID.isValid(prevRevID) {
            throw CBLError.badRequest("Invalid revision ID '\(prevRevID)'")
        }
        // A first revision without attachments may be a brand-new document (see `insertNewDocument`).
        let mayBeNewDocument = prevRevID == nil && !isDeletion && pendingAttachments.isEmpty && memberOrder == nil
            && !(hasSpecialKeys && inputProperties["_attachments"] != nil)

        // Blob bodies go to the store first: content-addressed, so a failed save leaves only
        // an orphan that `compact` removes (spec 4.2).
        var properties = inputProperties
        var newBlobs: [String: [String: Any]] = [:]
        // Without `_attachments` (no `_` key) or pending bodies there is nothing to install.
        if !isDeletion && (hasSpecialKeys || !pendingAttachments.isEmpty) {
            newBlobs = try installNewAttachmentBodies(properties: &properties, pending: pendingAttachments)
        }

        // A design document from a user who is not the database's admin (CouchDB's check_is_admin):
        // refused after the parent is checked (a conflict answers first, as in CouchDB), before
        // any validation runs.
        let designRefusal = CBLRequestUser.designDocumentWriteRefusal(docID: docID)

        return try write { store in
            let validations = validationBlocksToRun
            if mayBeNewDocument, validations.isEmpty, designRefusal == nil,
               let saved = try insertNewDocument(store: store, docID: docID, properties: properties,
                                                 hasSpecialKeys: hasSpecialKeys, document: knownDocument) {
                return saved
            }
            // Nothing is written before every check has passed, so a failed save inside an
            // app's transaction leaves no trace (see `write`).
            let existingID = try store.numericID(of: docID)
            let isNew = existingID == nil
            var numericID = existingID ?? 0
            let (parent, documentWasEmpty) = try parentOfNewRevision(
                store: store, docID: docID, numericID: numericID, isNew: isNew, prevRevID: prevRevID,
                allowConflict: allowConflict)
            if isDeletion && parent == nil {
                throw CBLError.notFound("Cannot delete '\(docID)': document not found")
            }
            let generation = (parent?.generation ?? 0) + 1

            if isDeletion {
                properties["_attachments"] = nil
            } else if properties["_attachments"] != nil {
                try finishAttachments(properties: &properties, newBlobs: newBlobs, generation: generation,
                                      parent: parent, store: store)
            }
            let canonical = try CBLDatabase.storedBody(properties)
            let revID = try RevisionID.generate(json: canonical, deleted: isDeletion, parent: parent?.revID)
            let body = try memberOrder.map { try CBLDatabase.storedBody(properties, order: $0) } ?? canonical

            let document = try knownDocument ?? self.savedDocument(docID)
            if let designRefusal { throw designRefusal }
            if !validations.isEmpty {
                try runValidations(validations, storedProperties: properties, document: document, revID: revID,
                                   deleted: isDeletion, parent: parent)
            }

            let hasAttachments = (properties["_attachments"] as? [String: Any]).map { !$0.isEmpty } ?? false
            let docType = properties["type"] as? String
            if isNew { numericID = try store.createNumericID(of: docID).id }
            guard let sequence = try store.insertRevisionRow(
                numericID: numericID, revID: revID, parentSequence: parent?.sequence, current: true,
                deleted: isDeletion, body: body, hasAttachments: hasAttachments, docType: docType)
            else {
                // The identical revision already exists: success, as in 1.x (spec 3.5 step 7).
                if let parent { try store.setParentIfMissing(numericID: numericID, revID: revID, parentSequence: parent.sequence) }
                guard let existing = try store.revision(docID: docID, numericID: numericID, revID: revID) else {
                    throw CBLError.dbError("Revision \(revID) vanished")
                }
                return CBLSavedRevision(document: document, stored: existing)
            }
            if let parent { try store.makeNonLeaf(sequence: parent.sequence) }
            let depth = maxDepth
            if generation > depth {
                try store.prune(numericID: numericID, minGenerationToKeep: generation - depth + 1, depth: depth)
            }

            let saved = CBLSavedRevision(document: document, revID: revID, sequence: sequence, deleted: isDeletion,
                                         body: body, properties: properties, propertiesNeedSpecialKeys: true)
            let change: RevisionChange
            if documentWasEmpty {
                change = RevisionChange(docID: docID, revID: revID, winningRevID: revID, winningIsDeleted: isDeletion,
                                        inConflict: false, isDeletion: isDeletion, sequence: sequence, source: nil)
            } else {
                change = try makeChange(store: store, docID: docID, numericID: numericID, revID: revID,
                                        isDeletion: isDeletion, sequence: sequence, source: nil)
            }
            noteChange(change, revision: saved)
            return saved
        }
    }

    /// The revision a new one extends (spec 3.5 steps 3–5): `prevRevID`'s, or for a document
    /// re-created after its deletion, the tombstone; and whether the document has no revision.
    private func parentOfNewRevision(store: SQLiteStore, docID: String, numericID: Int64, isNew: Bool,
                                     prevRevID: String?, allowConflict: Bool) throws
        -> (parent: StoredRevision?, documentWasEmpty: Bool) {
        if let prevRevID {
            guard !isNew, let rev = try store.revision(docID: docID, numericID: numericID, revID: prevRevID, withBody: false) else {
                // As 1.x: a parent that is gone (e.g. pruned) is a conflict while the document
                // has a current revision, so `update` retries; otherwise it is not found.
                if !isNew, let winner = try store.winningRevision(docID: docID, numericID: numericID, withBody: false),
                   !winner.deleted {
                    throw CBLError.conflict()
                }
                throw CBLError.notFound("Revision \(prevRevID) of '\(docID)' not found")
            }
            if !rev.isLeaf && !allowConflict { throw CBLError.conflict() }
            return (rev, false)
        }
        if isNew { return (nil, true) }
        guard let winner = try store.winningRevision(docID: docID, numericID: numericID, withBody: false) else {
            return (nil, true)
        }
        if !winner.deleted && !allowConflict { throw CBLError.conflict() }
        // Re-creating a deleted document continues its tombstone's branch (spec 3.5 step 5).
        return (winner.deleted ? winner : nil, false)
    }

    /// Saves the first revision of a document the store has never seen (no parent, not a
    /// deletion, no attachments, no validation blocks, not a design document refused to the
    /// writing user): the same rows, revision ID, change and
    /// returned revision as the general path, with fewer lookups. The body is encoded into the
    /// reused `bodyWriter` and bound from there.
    ///
    /// Returns nil, having written nothing, when the document already has a `docs` row or the
    /// body cannot be encoded; the general path then decides (and reports errors in its order).
    /// Called holding the writer, inside `write`.
    private func insertNewDocument(store: SQLiteStore, docID: String, properties: [String: Any], hasSpecialKeys: Bool,
                                   document knownDocument: CBLDocument?) throws -> CBLSavedRevision? {
        // One access to the writer's fields for the whole save: nothing below reaches them but this body.
        try writer.withState { w in
            w.bodyWriter.removeAll()
            defer {
                // Don't keep a huge buffer around after an unusually large document.
                if w.bodyWriter.capacity > 1 << 16 { w.bodyWriter = JSONWriter(capacity: 1024) }
            }
            // The digest's `deleted` byte (spec 3.3) goes first, so the revision ID is one hash of
            // one buffer; the body stored is what follows it.
            w.bodyWriter.writeRawByte(0)
            do {
                try w.bodyWriter.writeObject(properties, sortedKeys: true,
                                             skippingKey: hasSpecialKeys ? { CBLDatabase.isStrippedKey($0) } : nil)
            } catch {
                return nil
            }
            // Every check has passed: a new document has no parent to find or conflict with.
            guard let numericID = try store.createNumericIDIfNew(of: docID) else { return nil }
            let digest = w.bodyWriter.withUnsafeBytes { RevisionID.firstGenerationDigest(digestInput: $0) }
            let document = try knownDocument ?? self.savedDocument(docID)
            let docType = CBLDatabase.docType(properties)
            // The revision ID is bound from a stack buffer; its string is made only if asked for.
            guard let sequence = try digest.withFirstGenerationID({ revIDText in
                try w.bodyWriter.withUnsafeBytes {
                    try store.insertFirstRevisionRow(numericID: numericID, revID: revIDText,
                                                     body: UnsafeRawBufferPointer(rebasing: $0.dropFirst()), docType: docType)
                }
            }) else {
                // Cannot happen for a new docs row; answered as the general path does (spec 3.5 step 7).
                let revID = digest.firstGenerationID
                guard let existing = try store.revision(docID: docID, numericID: numericID, revID: revID) else {
                    throw CBLError.dbError("Revision \(revID) vanished")
                }
                return CBLSavedRevision(document: document, stored: existing)
            }
            let saved = CBLSavedRevision(document: document, data: RevisionBody(
                docID: docID, firstGenerationDigest: digest, sequence: sequence, savedProperties: properties))
            w.pendingChanges.appendFirstRevision(docID: docID, digest: digest, sequence: sequence)
            let serial = w.transactionSerial
            let stale = lock.withLock { s in
                // Every live CBLDocument of this database is in its identity map, so `document` is the
                // one `noteChange` would look up.
                assert(s.cachedDocument(docID) === document)
                document.firstRevisionAdded(saved, serial: serial)
                return s.designDocumentChanged(docID)
            }
            _ = stale   // released here, after the lock
            return saved
        }
    }

    /// Builds the notification record after a write, reading the new winner and conflict state.
    func makeChange(store: SQLiteStore, docID: String, numericID: Int64, revID: String, isDeletion: Bool,
                    sequence: Int64, source: String?) throws -> RevisionChange {
        let leaves = try store.leaves(docID: docID, numericID: numericID)
        let winner = leaves.first
        let liveLeaves = leaves.filter { !$0.deleted }.count
        return RevisionChange(docID: docID, revID: revID, winningRevID: winner?.revID,
                              winningIsDeleted: winner?.deleted ?? true, inConflict: liveLeaves > 1,
                              isDeletion: isDeletion, sequence: sequence, source: source)
    }

    // MARK: Inserting revisions with history (replication)

    /// Inserts a revision received from a peer together with its history, without generating a
    /// new revision ID (CouchDB's new_edits=false). May create a conflict. Used by the
    /// replicator and the listener.
    ///
    /// - Parameter history: rev IDs newest first, starting with the revision's own ID.
    @discardableResult
    func forceInsert(docID: String, history: [String], properties inputProperties: [String: Any],
                     memberOrder: JSONMemberOrder? = nil, source: String? = nil) throws -> CBLSavedRevision? {
        try checkWritable()
        guard CBLDatabase.isValidDocumentID(docID) else { throw CBLError.badID("Invalid document ID '\(docID)'") }
        guard let revID = history.first, history.allSatisfy(RevisionID.isValid) else {
            throw CBLError.badRequest("Invalid revision history for '\(docID)'")
        }
        try CBLDatabase.checkSpecialKeys(inputProperties)
        let deleted = inputProperties["_deleted"] as? Bool ?? false
        var properties = inputProperties
        let newBlobs = deleted ? [:] : try installNewAttachmentBodies(properties: &properties, pending: [:])
        let designRefusal = CBLRequestUser.designDocumentWriteRefusal(docID: docID)

        return try write { store in
            let generation = RevisionID.generation(revID)
            if deleted {
                properties["_attachments"] = nil
            } else if let attachments = properties["_attachments"] {
                // Stubs refer to the nearest ancestor we have (spec 4.3). A pulled revision
                // arrives with its stubs already resolved against that ancestor (the puller
                // looked it up to know which bodies to download), so it is not looked up again.
                let hasStubs = (attachments as? [String: Any])?.values
                    .contains { ($0 as? [String: Any])?["stub"] as? Bool == true } ?? false
                var ancestor: StoredRevision?
                if hasStubs, let numericID = try store.numericID(of: docID) {
                    for id in history.dropFirst() {
                        if let rev = try store.revision(docID: docID, numericID: numericID, revID: id, withBody: true), rev.body != nil {
                            ancestor = rev
                            break
                        }
                    }
                }
                try finishAttachments(properties: &properties, newBlobs: newBlobs, generation: generation,
                                      parent: ancestor, store: store, keepRevpos: true)
            }
            let validations = validationBlocksToRun
            if !validations.isEmpty || designRefusal != nil,
               try store.revision(docID: docID, revID: revID, withBody: false) == nil {
                // As CouchDB, a revision already present is no update: neither checked nor refused.
                if let designRefusal { throw designRefusal }
                // Revisions from a peer are validated like local edits, against the current winner
                // (1.x does the same; a rejection is a 403 the replicator counts as handled).
                try runValidations(validations, storedProperties: properties, document: self.savedDocument(docID),
                                   revID: revID, deleted: deleted, parent: try store.winningRevision(docID: docID))
            }
            let body = try CBLDatabase.storedBody(properties, order: memberOrder)
            let hasAttachments = (properties["_attachments"] as? [String: Any]).map { !$0.isEmpty } ?? false
            let (sequence, numericID) = try store.forceInsert(
                docID: docID, revID: revID, history: history, deleted: deleted, body: body,
                hasAttachments: hasAttachments, docType: properties["type"] as? String, maxDepth: maxDepth)
            guard let sequence else { return nil }
            let document = try self.savedDocument(docID)
            let saved = CBLSavedRevision(document: document, revID: revID, sequence: sequence, deleted: deleted,
                                         body: body, properties: properties, propertiesNeedSpecialKeys: true)
            let change = try makeChange(store: store, docID: docID, numericID: numericID, revID: revID,
                                        isDeletion: deleted, sequence: sequence, source: source)
            noteChange(change, revision: saved)
            return saved
        }
    }

    /// `forceInsert` for a revision whose stored body is already written (a pulled revision
    /// without attachments or special keys, ``IncomingRevision``): nothing to check or
    /// re-encode but the history. Callers fall back to `forceInsert` when validations run; a
    /// design document from a user who is not the database's admin is refused here all the same.
    @discardableResult
    func forceInsert(docID: String, history: [String], storedBody body: [UInt8], deleted: Bool, docType: String?,
                     source: String? = nil) throws -> CBLSavedRevision? {
        try checkWritable()
        guard CBLDatabase.isValidDocumentID(docID) else { throw CBLError.badID("Invalid document ID '\(docID)'") }
        guard let revID = history.first, history.allSatisfy(RevisionID.isValid) else {
            throw CBLError.badRequest("Invalid revision history for '\(docID)'")
        }
        let designRefusal = CBLRequestUser.designDocumentWriteRefusal(docID: docID)
        return try write { store in
            if let designRefusal, try store.revision(docID: docID, revID: revID, withBody: false) == nil {
                throw designRefusal
            }
            let (sequence, numericID) = try store.forceInsert(
                docID: docID, revID: revID, history: history, deleted: deleted, body: body,
                hasAttachments: false, docType: docType, maxDepth: maxDepth)
            guard let sequence else { return nil }
            let document = self.document(withID: docID)!
            let saved = CBLSavedRevision(document: document, revID: revID, sequence: sequence, deleted: deleted,
                                         body: body, properties: nil)
            let change = try makeChange(store: store, docID: docID, numericID: numericID, revID: revID,
                                        isDeletion: deleted, sequence: sequence, source: source)
            noteChange(change, revision: saved)
            return saved
        }
    }

    /// Whether inserting a revision must run validation blocks (then the full path does).
    var hasValidationsToRun: Bool { !validationBlocksToRun.isEmpty }
}

extension CBLDatabase {
    /// The document object for a revision being saved. `document(withID:)` is nil only for an
    /// invalid ID, which every save checks on entry; should the two rules ever differ, the save
    /// fails with 400 (bad ID) instead of trapping inside the write transaction.
    fileprivate func savedDocument(_ docID: String) throws -> CBLDocument {
        guard let document = document(withID: docID) else { throw CBLError.badID("Invalid document ID '\(docID)'") }
        return document
    }
}
