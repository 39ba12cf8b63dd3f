import Foundation

/// Compaction, purging and document expiration (spec 3.6–3.9, 4.5).
extension CBLDatabase {
    /// Discards the bodies of non-leaf revisions, prunes every document's history to
    /// ``maxRevTreeDepth``, vacuums the file and deletes blobs no leaf revision refers to any more.
    ///
    /// 1.x only pruned here once, for files older than 1.3 (spec 3.6); pruning every time makes a
    /// lowered depth reach documents not edited since, as CouchDB's compaction stems to `_revs_limit`.
    public func compact() throws {
        try checkWritable()
        try withWriter { store in
            guard store.connection.transactionDepth == 0 else {
                throw CBLError.conflict("Cannot compact inside a transaction")
            }
            try store.inTransaction {
                try bulkPrune(store)
                if try store.info("pruned") == nil { try store.setInfo("pruned", "true") }
                try store.discardNonLeafBodies()
            }
            try store.checkpointAndVacuum()
            try garbageCollectAttachments(store)
        }
    }

    /// Prunes every document deeper than ``maxRevTreeDepth`` (spec 3.6's one-time prune of files
    /// made before 1.3, which compaction now does every time).
    private func bulkPrune(_ store: SQLiteStore) throws {
        let depth = maxDepth
        for (numericID, maxGen) in try store.highestGenerations() where maxGen > depth {
            try store.prune(numericID: numericID, minGenerationToKeep: maxGen - depth + 1, depth: depth)
        }
    }

    /// Deletes every blob not referenced by a revision that still has a body (spec 4.5).
    private func garbageCollectAttachments(_ store: SQLiteStore) throws {
        var keep = Set<BlobKey>()
        try store.forEachBlobReference { if let key = $0.key { keep.insert(key) } }
        store.blobStore.deleteBlobs(keeping: keep)
    }

    // MARK: Purge

    /// Removes documents and all their revisions, leaving no tombstones. Each document asked
    /// for advances the purge sequence, found or not (as each of CouchDB's purge requests does).
    func purgeDocuments(_ docIDs: [String]) throws {
        try write(atomic: true) { store in
            try store.advancePurgeSequence(by: docIDs.count)
            for docID in docIDs {
                guard let numericID = try store.numericID(of: docID) else { continue }
                try store.purgeDocument(numericID: numericID)
                noteChange(RevisionChange(docID: docID, revID: "", winningRevID: nil, winningIsDeleted: true,
                                          inConflict: false, isDeletion: true, sequence: 0, source: nil, isPurge: true),
                           revision: nil)
            }
        }
    }

    /// Purges specific revisions (and their ancestors not needed by other leaves); `["*"]` purges the
    /// whole document (spec 3.8). Returns the revision IDs actually purged. Advances the purge
    /// sequence by one.
    func purgeRevisions(docID: String, revIDs: [String]) throws -> [String] {
        if revIDs.contains("*") {
            let all = try read { store -> [String] in
                guard let id = try store.numericID(of: docID) else { return [] }
                return try store.revisionTree(numericID: id).nodes.map(\.revID)
            }
            try purgeDocuments([docID])
            return all
        }
        return try write(atomic: true) { store in
            try store.advancePurgeSequence(by: 1)
            guard let numericID = try store.numericID(of: docID) else { return [] }
            let plan = try store.revisionTree(numericID: numericID).purgePlan(revIDs: revIDs)
            try store.purgeRevisions(numericID: numericID, plan: plan)
            let purgedIDs = plan.revIDs
            if !purgedIDs.isEmpty {
                let winner = try store.winningRevision(docID: docID, numericID: numericID, withBody: false)
                noteChange(RevisionChange(docID: docID, revID: purgedIDs[0], winningRevID: winner?.revID,
                                          winningIsDeleted: winner?.deleted ?? true, inConflict: false,
                                          isDeletion: false, sequence: 0, source: nil, isPurge: winner == nil),
                           revision: nil)
            }
            return purgedIDs
        }
    }

    /// How many purges this database has had: each document named in a purge counts one. Kept in
    /// the `info` table (our own key, `purge_seq`), so reopening and compaction keep it.
    package var purgeSequence: Int {
        (try? read { try $0.purgeSequence }) ?? 0
    }

    /// How many purges CouchDB would remember for its replicas (`_purged_infos_limit`, default
    /// 1000), kept in the `info` table (`purged_infos_limit`). Only stored and reported: 1.x keeps
    /// no purge history to trim.
    package var purgedInfosLimit: Int {
        get { (try? read { try $0.info(Self.purgedInfosLimitKey) }).flatMap { $0.flatMap { Int($0) } } ?? Self.defaultPurgedInfosLimit }
        set { _ = try? write(atomic: true) { try $0.setInfo(Self.purgedInfosLimitKey, String(newValue)) } }
    }

    static let purgedInfosLimitKey = "purged_infos_limit"
    static let defaultPurgedInfosLimit = 1000

    // MARK: Expiration (spec 3.9)

    /// A document's expiration date, or nil.
    func expirationDate(ofDocument docID: String) throws -> Date? {
        try read { store in
            guard store.hasExpiryColumn else { return nil }
            guard let seconds = try store.expirationTimestamp(docID: docID) else { return nil }
            return Date(timeIntervalSince1970: TimeInterval(seconds))
        }
    }

    /// Sets (or clears) a document's expiration; stored as whole seconds since 1970, NULL for none (iOS form).
    func setExpirationDate(_ date: Date?, ofDocument docID: String) throws {
        try write { store in
            guard store.hasExpiryColumn else { throw CBLError.forbidden("Database schema has no expiration support") }
            try store.setExpirationTimestamp(date.map { Int64($0.timeIntervalSince1970.rounded(.up)) }, docID: docID)
        }
        scheduleExpirationTimer()
    }

    /// Purges every document whose expiration has passed, then schedules the next check.
    @discardableResult
    func purgeExpiredDocuments() -> Int {
        let expired: [String] = (try? read { store -> [String] in
            guard store.hasExpiryColumn, !isReadOnly else { return [] }
            let now = Int64(Date().timeIntervalSince1970)
            return try store.expiredDocumentIDs(now: now)
        }) ?? []
        if !expired.isEmpty { try? purgeDocuments(expired) }
        scheduleExpirationTimer()
        return expired.count
    }

    /// Arms a timer for the next expiration.
    func scheduleExpirationTimer() {
        let next = isReadOnly ? nil : (try? read { store -> Int64? in
            guard store.hasExpiryColumn else { return nil }
            return try store.nextExpirationTimestamp()
        }) ?? nil
        lock.withLock { s in
            s.expirationTimer?.cancel()
            s.expirationTimer = nil
            guard let next, s.store != nil else { return }
            let delay = max(0, TimeInterval(next) - Date().timeIntervalSince1970)
            let timer = DispatchSource.makeTimerSource(queue: DispatchQueue.global(qos: .utility))
            timer.schedule(deadline: .now() + delay + 0.05)
            timer.setEventHandler { [weak self] in self?.purgeExpiredDocuments() }
            timer.resume()
            s.expirationTimer = timer
        }
    }
}
