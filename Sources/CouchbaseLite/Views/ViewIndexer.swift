import Foundation
import JSONCore

/// Brings view indexes up to date, incrementally from each view's last sequence (spec 7.3).
///
/// Several views are indexed in one pass over the changed documents; only winning revisions
/// are mapped; rows emitted by revisions that have since been replaced are deleted first.
/// All SQLite work happens on the calling thread. Big updates run the map functions (JSON
/// parsing, the app's map blocks, encoding what they emit) on a helper thread meanwhile, so a
/// full index costs about as much as writing its rows.
struct ViewIndexer {
    let store: SQLiteStore
    let views: [CBLView]

    /// Updates spanning at least this many sequences map on a helper thread (smaller ones are
    /// not worth a thread).
    static let pipelineMinimumSequences: Int64 = 2048
    /// Documents per batch handed to the mapper.
    static let batchSize = 256

    private struct Target {
        let view: CBLView
        let record: SQLiteStore.ViewRecord
        var totalRows: Int64
        let rows: SQLiteStore.ViewRowWriter
    }

    /// Returns the number of documents mapped.
    @discardableResult
    func run() throws -> Int {
        let dbMax = try store.lastSequence
        var targets: [Target] = []
        var mapTargets: [ViewMapper.Target] = []
        for view in views {
            guard let map = view.mapBlock, let record = try store.viewRecord(named: view.name) else { continue }
            guard record.lastSequence < dbMax else { continue }
            try store.ensureMapsTable(record)
            var total = record.totalRows < 0 ? try store.countRows(record) : record.totalRows
            if record.lastSequence == 0 {
                // A first index fills an empty table, then builds its two indexes in one sorted
                // pass each (below), instead of updating them row by row.
                try store.clearViewIndexForRebuild(record)
                total = 0
            } else {
                // Rows emitted by revisions that have since got a child (spec 7.3 step 2).
                total -= try store.deleteRowsOfReplacedRevisions(record)
            }
            targets.append(Target(
                view: view, record: record, totalRows: total, rows: try store.viewRowWriter(record)))
            mapTargets.append(ViewMapper.Target(name: view.name, map: map, jsonMap: view.jsonMapFunction,
                                                lastSequence: record.lastSequence,
                                                documentType: view.documentType,
                                                options: view.designDocumentOptions))
        }
        guard !targets.isEmpty else { return 0 }
        let minLast = targets.map(\.record.lastSequence).min()!

        let mapper = ViewMapper(targets: mapTargets)
        let pipelined = dbMax - minLast >= Self.pipelineMinimumSequences && ProcessInfo.processInfo.activeProcessorCount > 1
        let pipeline = pipelined ? MapPipeline(mapper: mapper) : nil

        // Writes what a batch of map calls emitted (on this thread: the connection's).
        func insert(_ emitted: EmittedRows) throws {
            try emitted.forEach { row, key, value in
                try targets[row.target].rows.insert(sequence: row.sequence, key: key, value: value)
                targets[row.target].totalRows += 1
            }
            if let error = emitted.error { throw error }
        }

        var batch: [MapJob] = []
        batch.reserveCapacity(Self.batchSize)
        func submit() throws {
            guard !batch.isEmpty else { return }
            defer { batch.removeAll(keepingCapacity: true) }
            if let pipeline {
                // Writes whatever the mapper has finished while it works on the next batches.
                if !pipeline.jobs.push(batch) {
                    // The mapper failed: writing what it handed back throws its error.
                    try pipeline.stop(writingWith: insert)
                    throw CBLError.dbError("View indexing stopped before every document was mapped")
                }
                while let emitted = pipeline.results.tryPop() { try insert(emitted) }
            } else {
                try insert(mapper.map(batch))
            }
        }

        do {
            let mapped = try scanChanges(minLast: minLast, targets: targets) { job in
                batch.append(job)
                if batch.count >= Self.batchSize { try submit() }
            } onStaleRows: { sequence in
                for i in targets.indices {
                    targets[i].totalRows -= try targets[i].rows.deleteRows(sequence: sequence)
                }
            }
            try submit()
            try pipeline?.stop(writingWith: insert)
            for target in targets {
                try store.createViewIndexes(target.record)
                try store.setViewProgress(target.record, lastSequence: dbMax, totalRows: target.totalRows)
            }
            return mapped
        } catch {
            pipeline?.cancel()
            throw error
        }
    }

    /// Walks the revisions added since `minLast`, picks each changed document's winning revision
    /// and hands it to `map` (design documents and deletions excepted). `onStaleRows` gets the
    /// sequence of an older leaf indexed earlier whose rows must go. Returns the documents mapped.
    private func scanChanges(minLast: Int64, targets: [Target], map: (MapJob) throws -> Void,
                             onStaleRows: (Int64) throws -> Void) throws -> Int {
        let types = targets.compactMap { $0.view.documentType }
        // Design documents are mapped only for views whose design document asks (`include_design`).
        let mapsDesignDocuments = targets.contains { $0.view.designDocumentOptions.includeDesign }
        // Only when every view has a document type can the scan skip the other types.
        let changes = try store.changedLeaves(since: minLast, documentTypes: types.count == targets.count ? types : nil)
        let indexedLeaves = try store.indexedLeafLookup()

        struct Leaf { var sequence: Int64; var revID: String; var body: [UInt8]?; var deleted: Bool; var docType: String? }
        var mapped = 0
        var currentDocNumericID: Int64 = -1
        var currentDocID = ""
        var winner: Leaf?
        var conflicts: [String] = []

        func flush() throws {
            guard var win = winner else { return }
            defer { winner = nil; conflicts = [] }
            if !mapsDesignDocuments && currentDocID.hasPrefix("_design/") { return }
            if minLast > 0 {
                // An older leaf indexed earlier may still win, or its rows must go (spec 7.3 step 5).
                if let old = try indexedLeaves.leaf(documentNumericID: currentDocNumericID, atOrBefore: minLast) {
                    try onStaleRows(old.sequence)
                    if win.deleted || RevisionCollation.compare(old.revisionID, win.revID) > 0 {
                        if !win.deleted { conflicts.append(win.revID) }
                        win = Leaf(sequence: old.sequence, revID: old.revisionID, body: old.body, deleted: false,
                                   docType: old.documentType)
                    } else {
                        conflicts.append(old.revisionID)
                    }
                }
            }
            if win.deleted { return }
            mapped += 1
            try map(MapJob(sequence: win.sequence, docID: currentDocID, revID: win.revID, body: win.body,
                           conflicts: conflicts, docType: win.docType))
        }

        defer { changes.reset() }
        while try changes.step() {
            let docNumericID = changes.documentNumericID
            let leaf = Leaf(sequence: changes.sequence, revID: changes.revisionID, body: changes.body,
                            deleted: changes.deleted, docType: changes.documentType)
            if docNumericID != currentDocNumericID {
                try flush()
                currentDocNumericID = docNumericID
                currentDocID = changes.documentID
                winner = leaf
            } else if let w = winner, !w.deleted, !leaf.deleted {
                conflicts.append(leaf.revID)
            }
        }
        try flush()
        return mapped
    }
}

/// The helper thread of a big index update: takes batches of documents, runs the map functions
/// over them, and hands back what they emitted.
// @unchecked because `stopped` is only touched by the indexing thread that made it; the helper thread uses only the queues (which lock) and `done`.
private final class MapPipeline: @unchecked Sendable {
    let jobs = HandOffQueue<[MapJob]>(capacity: 4)
    /// Unbounded: at most the batches in `jobs` plus the one being mapped are ever in flight.
    let results = HandOffQueue<EmittedRows>(capacity: .max)
    private let done = DispatchSemaphore(value: 0)
    private var stopped = false

    init(mapper: ViewMapper) {
        let thread = Thread { [jobs, results, done] in
            while let batch = jobs.pop() {
                let emitted = mapper.map(batch)
                results.push(emitted)
                if emitted.error != nil {
                    jobs.cancel()   // unblocks the indexing thread; it finds the error in `results`
                    break
                }
            }
            results.finish()
            done.signal()
        }
        thread.stackSize = 8 << 20   // the JSON reader recurses once per nesting level
        thread.start()
    }

    /// Waits for the mapper to finish the batches handed over, writing each with `insert`
    /// (which throws the mapper's error, if any).
    func stop(writingWith insert: (EmittedRows) throws -> Void) throws {
        guard !stopped else { return }
        jobs.finish()
        while let emitted = results.pop() { try insert(emitted) }
        stopped = true
        done.wait()
    }

    /// Abandons the update: the mapper stops after its current batch.
    func cancel() {
        guard !stopped else { return }
        stopped = true
        jobs.cancel()
        results.cancel()
        done.wait()
    }
}
