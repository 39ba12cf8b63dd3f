import CouchbaseLite
import CouchbaseLiteSwift
import Foundation

/// Converted document rows travelling from the reading thread to the writing thread, kept in one
/// flat buffer so a batch costs a few allocations, not a few per document.
struct RowBatch: Sendable {
    struct Entry: Sendable {
        var docIDEnd: Int
        var treeEnd: Int
        var flags: DocumentFlags
        var expirationMilliseconds: Int64?
    }

    var bytes: [UInt8] = []
    var entries: [Entry] = []
    /// Source documents read when the batch was handed over (progress).
    var sourceDocumentsRead = 0
    var sourceDocumentsTotal = 0

    mutating func append(docID: [UInt8], flags: DocumentFlags, tree: [UInt8], expirationMilliseconds: Int64?) {
        if bytes.isEmpty { bytes.reserveCapacity(256 * (docID.count + tree.count + 16)) }
        bytes.append(contentsOf: docID)
        let docIDEnd = bytes.count
        bytes.append(contentsOf: tree)
        entries.append(Entry(docIDEnd: docIDEnd, treeEnd: bytes.count, flags: flags, expirationMilliseconds: expirationMilliseconds))
    }

    /// Calls `body(docID, version, tree, entry)` for each row; `version` is the current revision's
    /// binary ID inside the tree (its first record, spec 3.3).
    func forEach(_ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer, UnsafeRawBufferPointer, Entry) throws -> Void) rethrows {
        try bytes.withUnsafeBytes { all in
            var start = 0
            for entry in entries {
                let docID = UnsafeRawBufferPointer(rebasing: all[start..<entry.docIDEnd])
                let tree = UnsafeRawBufferPointer(rebasing: all[entry.docIDEnd..<entry.treeEnd])
                let versionLength = Int(tree[7])
                let version = UnsafeRawBufferPointer(rebasing: tree[8..<(8 + versionLength)])
                try body(docID, version, tree, entry)
                start = entry.treeEnd
            }
        }
    }
}

/// Runs the converter on a reading thread while the calling thread writes the rows: SQLite
/// reading + JSON→Fleece on one core, SQLite inserts on the other.
// @unchecked because the reading thread owns `converter`, `report`, `readError` and `documentsRead` until it signals `done`; the caller reads them only after waiting on it.
final class ConversionPipeline: @unchecked Sendable {
    private var converter: DocumentConverter
    private var report = UpgradeReport()
    private var readError: Error?
    private var documentsRead = 0
    private let queue = HandOffQueue<RowBatch>(capacity: 8)
    private let done = DispatchSemaphore(value: 0)

    init(converter: DocumentConverter) {
        self.converter = converter
    }

    /// Converts everything into `output`; merges the reading side's findings into `report`.
    /// Returns the number of source documents read.
    func run(into output: DataFile, report: inout UpgradeReport, progress: ((UpgradeProgress) -> Void)?) throws -> Int {
        let reader = Thread { [self] in
            do {
                documentsRead = try converter.convertDocuments(into: &self.report, queue: queue)
            } catch {
                readError = error
            }
            queue.finish()
            done.signal()
        }
        reader.stackSize = 8 << 20     // the JSON reader recurses once per nesting level
        reader.start()
        do {
            progress?(UpgradeProgress(phase: .documents, completed: 0, total: 0))
            while let batch = queue.pop() {
                try batch.forEach { docID, version, tree, entry in
                    try output.insertRecord(docID: docID, flags: entry.flags, version: version, tree: tree)
                    if let ms = entry.expirationMilliseconds {
                        try output.setExpiration(docID: String(decoding: docID, as: UTF8.self), milliseconds: ms)
                    }
                }
                progress?(UpgradeProgress(phase: .documents, completed: batch.sourceDocumentsRead, total: batch.sourceDocumentsTotal))
            }
        } catch {
            queue.cancel()
            done.wait()
            throw error
        }
        done.wait()
        if let readError { throw readError }
        report.merge(self.report)
        if converter.options.includeLocalDocuments {
            try converter.copyLocalDocuments(to: output, into: &report)
        }
        return documentsRead
    }
}

extension UpgradeReport {
    /// Adds the findings of the reading side.
    mutating func merge(_ other: UpgradeReport) {
        documentsConverted += other.documentsConverted
        tombstones += other.tombstones
        conflictsDropped += other.conflictsDropped
        skippedDocuments += other.skippedDocuments
        designDocuments += other.designDocuments
        attachmentsCopied += other.attachmentsCopied
        attachmentsDeduplicated += other.attachmentsDeduplicated
        attachmentsMissing += other.attachmentsMissing
        attachmentsSkipped += other.attachmentsSkipped
        expirationsCopied += other.expirationsCopied
        historiesPruned += other.historiesPruned
        attachmentBytes += other.attachmentBytes
    }
}
