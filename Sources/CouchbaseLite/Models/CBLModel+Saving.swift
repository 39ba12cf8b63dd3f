import Foundation

extension CBLModel {
    /// What one save wrote: the change counters of the changes it included, so changes made
    /// meanwhile (on another thread) stay pending.
    struct SaveSnapshot {
        let names: [String: UInt64]
        let attachments: [String: UInt64]
        var revisionID: String?
    }

    // MARK: Saving

    /// Writes the model's changes as a new revision of its document; does nothing if there are
    /// none. Throws 409 if the document changed since ``propertiesToSave()`` read it.
    public func save() throws {
        try CBLModel.saveModels([self])
    }

    /// Saves several models of one database in one transaction (1.x `saveModels:error:`):
    /// all or none of them are saved. Models without changes are skipped.
    public class func saveModels(_ models: [CBLModel]) throws {
        var seen = Set<ObjectIdentifier>()
        let pending = models.filter { model in
            seen.insert(ObjectIdentifier(model)).inserted && model.state.withLock { $0.needsSave && $0.hasChanges }
        }
        guard let first = pending.first else { return }
        guard let database = first.database else {
            throw CBLError.notFound("\(first) has no document (it was deleted, or made with neither a document nor a database)")
        }
        var saved: [(CBLModel, SaveSnapshot)] = []
        var locked: [CBLModel] = []
        defer {
            for model in locked {
                model.state.withLock { $0.saving = false }
                model.saveLock.unlock()
            }
        }
        func writeAll() throws {
            for model in pending {
                guard model.database === database else {
                    throw CBLError.badRequest("Models saved together must belong to one database")
                }
                // Model locks are taken inside the write transaction, so their order never
                // inverts against another thread's save.
                model.saveLock.lock()
                locked.append(model)
                // Notifications of these saves arrive after the transaction: echoes until then.
                model.state.withLock { $0.saving = true }
                if let snapshot = try model.writeChanges(into: database) { saved.append((model, snapshot)) }
            }
        }

        let committed: Bool
        do {
            committed = try database.inTransaction { () throws -> Bool in
                try writeAll()
                return true
            }
        } catch {
            // Rolled back: those revisions do not exist, so their IDs must not pass for echoes.
            for (model, snapshot) in saved {
                model.state.withLock { s in s.ownRevisionIDs.removeAll { $0 == snapshot.revisionID } }
            }
            throw error
        }
        guard committed else { throw database.closedError }
        for (model, snapshot) in saved { model.didSave(snapshot) }
    }

    /// Calls `willSave`, then saves `propertiesToSave()` and the attachment changes (1.x `justSave`).
    private func writeChanges(into database: CBLDatabase) throws -> SaveSnapshot? {
        guard let changed = state.withLock({ s in s.needsSave && s.hasChanges ? Set(s.changedNames.keys) : nil }) else {
            return nil
        }
        willSave(Set(changed.map(AnyHashable.init)))
        let (taken, attachments, document) = state.withLock { s in
            (SaveSnapshot(names: s.changedNames, attachments: s.changedAttachments.mapValues(\.version)),
             s.changedAttachments.mapValues(\.attachment), s.document)
        }
        var snapshot = taken
        guard let document else { throw CBLError.notFound("\(self) has no document (it was deleted)") }
        var properties = stringKeyed(propertiesToSave())
        let parentRevID = properties["_rev"] as? String
        properties["_rev"] = nil
        let deleting = properties["_deleted"] as? Bool ?? false
        let revision = try database.putRevision(docID: document.documentID, prevRevID: parentRevID, properties: properties,
                                                deleting: deleting, allowConflict: false, pendingAttachments: attachments,
                                                document: document)
        snapshot.revisionID = revision.revisionID
        if let revID = revision.revisionID {
            state.withLock { s in
                s.ownRevisionIDs.append(revID)
                if s.ownRevisionIDs.count > 32 { s.ownRevisionIDs.removeFirst() }
            }
        }
        return snapshot
    }

    /// After the transaction committed: forgets the saved changes (unless changed again since).
    private func didSave(_ snapshot: SaveSnapshot) {
        let stillUnsaved = state.withLock { s -> Bool in
            for (name, version) in snapshot.names where s.changedNames[name] == version {
                s.changedNames[name] = nil
                s.values[name] = nil
            }
            for (name, version) in snapshot.attachments where s.changedAttachments[name]?.version == version {
                s.changedAttachments[name] = nil
            }
            s.isNew = false
            s.needsSave = s.hasChanges
            return s.needsSave
        }
        if stillUnsaved {
            if autosaves { scheduleAutosave() }
        } else if let database {
            database.modelRegistry.setUnsaved(self, false)
        }
    }

    /// Forgets the unsaved property and attachment changes.
    public func revertChanges() {
        let (wasUnsaved, database) = state.withLock { s -> (Bool, CBLDatabase?) in
            defer {
                s.values = [:]
                s.changedNames = [:]
                s.changedAttachments = [:]
                s.needsSave = false
            }
            return (s.needsSave, s.document?.database)
        }
        if wasUnsaved { database?.modelRegistry.setUnsaved(self, false) }
    }

    /// Deletes the document: saves a tombstone with ``propertiesToSaveForDeletion()`` (after
    /// calling ``willSave(_:)`` with nil). Pending changes are not saved. When the deletion's
    /// notification arrives the model detaches (its ``document`` becomes nil), as in 1.x.
    /// Does nothing if the document has no current revision.
    public func deleteDocument() throws {
        guard let document, let current = document.currentRevision else { return }
        willSave(nil)
        var properties = stringKeyed(propertiesToSaveForDeletion())
        properties["_deleted"] = true
        let wasUnsaved = state.withLock { s -> Bool in
            defer { s.needsSave = false }
            return s.needsSave
        }
        if wasUnsaved { document.database.modelRegistry.setUnsaved(self, false) }
        try current.createRevision(withProperties: properties)
    }

    // MARK: Relations

    /// The models whose property `relation` holds this model's document ID (the inverse of a
    /// to-one relation: the tasks whose `list_id` is this list), restricted to the document types
    /// registered for `fromClass` when given. Scans all documents.
    public func findInverse(ofRelation relation: String, fromClass: CBLModel.Type?) throws -> [CBLModel] {
        guard let database, let docID = document?.documentID else { return [] }
        let types = fromClass.map { (database.modelFactory ?? CBLModelFactory.sharedInstance()).documentTypes(for: $0) }
        let query = database.createAllDocumentsQuery()
        query.prefetch = true
        var models: [CBLModel] = []
        for row in try query.run() {
            guard let props = row.documentProperties, props[relation] as? String == docID else { continue }
            if let types, !types.contains(props["type"] as? String ?? "") { continue }
            guard let doc = row.document else { continue }
            let model = fromClass.flatMap { $0.modelForDocument(doc) } ?? CBLModel.modelForDocument(doc)
            if let model { models.append(model) }
        }
        return models
    }
}
