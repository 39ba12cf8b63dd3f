import Foundation
import JSONCore

/// One winning revision to map: what the indexer read from SQLite, handed to the mapper.
struct MapJob: Sendable {
    var sequence: Int64
    var docID: String
    var revID: String
    var body: [UInt8]?
    var conflicts: [String]
    var docType: String?
}

/// The rows a batch of map calls emitted: key and value JSON texts back to back in one buffer.
struct EmittedRows: Sendable {
    struct Row: Sendable {
        var target: Int
        var sequence: Int64
        var keyEnd: Int
        /// Equal to `keyEnd` when the row has no value (NULL).
        var valueEnd: Int
    }

    var text = JSONWriter(capacity: 4096)
    var rows: [Row] = []
    /// Set when a map call failed; the rows before it are kept but the update must not commit.
    var error: CBLError?

    /// Calls `body(row, key, value)` for each row; the buffers are valid only inside `body`.
    func forEach(_ body: (Row, UnsafeRawBufferPointer, UnsafeRawBufferPointer?) throws -> Void) rethrows {
        try text.withUnsafeBytes { all in
            var start = 0
            for row in rows {
                let key = UnsafeRawBufferPointer(rebasing: all[start..<row.keyEnd])
                let value = row.valueEnd > row.keyEnd ? UnsafeRawBufferPointer(rebasing: all[row.keyEnd..<row.valueEnd]) : nil
                try body(row, key, value)
                start = row.valueEnd
            }
        }
    }
}

/// Runs map functions over documents and collects what they emit as canonical JSON text.
///
/// The map blocks are called one at a time, in sequence order, on whichever single thread calls
/// `map(_:)`: the indexing thread, or for big updates a helper thread while the indexing thread
/// writes the rows (1.x also ran map functions on its background indexing thread; they must be
/// pure functions of the document and must not call back into the database).
final class ViewMapper: @unchecked Sendable {
    struct Target {
        let name: String
        let map: CBLMapBlock
        let lastSequence: Int64
        let documentType: String?
    }

    private let targets: [Target]
    // State of the map call in progress (only touched by the thread inside `map`).
    private var out = EmittedRows()
    private var target = 0
    private var sequence: Int64 = 0
    private var emitError: Error?
    /// The `emit` handed to every map call (made once, not per call).
    private var emitBlock: CBLMapEmitBlock = { _, _ in }

    init(targets: [Target]) {
        self.targets = targets
        emitBlock = { [weak self] key, value in self?.emit(key, value) }
    }

    /// Maps each job with every view that has not indexed its sequence yet.
    func map(_ jobs: [MapJob]) -> EmittedRows {
        out = EmittedRows()
        for job in jobs {
            var doc: [String: Any]
            if let body = job.body, !body.isEmpty {
                guard let parsed = try? JSON.parseObject(body, extraCapacity: 4) else {
                    out.error = CBLError.dbError("Document '\(job.docID)' revision \(job.revID) has an unreadable body")
                    break
                }
                doc = parsed
            } else {
                doc = [:]
            }
            doc["_id"] = job.docID
            doc["_rev"] = job.revID
            doc["_local_seq"] = Int(job.sequence)
            if !job.conflicts.isEmpty { doc["_conflicts"] = job.conflicts }
            sequence = job.sequence
            for i in targets.indices where targets[i].lastSequence < job.sequence {
                if let type = targets[i].documentType, type != job.docType { continue }
                target = i
                emitError = nil
                targets[i].map(doc, emitBlock)
                if let emitError {
                    out.error = CBLError.badRequest(
                        "View '\(targets[i].name)': map function emitted a value that is not JSON for document '\(job.docID)': \(emitError)")
                    break
                }
            }
            if out.error != nil { break }
        }
        let result = out
        out = EmittedRows()
        return result
    }

    private func emit(_ key: Any, _ value: Any?) {
        guard emitError == nil else { return }
        // 1.x ignores emit(nil, …) (spec 7.1).
        if isNil(key) { return }
        let mark = out.text.byteCount
        do {
            try out.text.write(key, sortedKeys: true)
            let keyEnd = out.text.byteCount
            if let value, !isNil(value) { try out.text.write(value, sortedKeys: true) }
            out.rows.append(EmittedRows.Row(target: target, sequence: sequence, keyEnd: keyEnd, valueEnd: out.text.byteCount))
        } catch {
            out.text.truncate(to: mark)
            emitError = error
        }
    }
}

/// True for `nil` wrapped in `Any` (`emit(doc["missing"], …)`).
func isNil(_ value: Any) -> Bool {
    if let optional = value as? OptionalProtocol { return optional.isNone }
    return false
}

protocol OptionalProtocol { var isNone: Bool { get } }
extension Optional: OptionalProtocol {
    var isNone: Bool {
        switch self {
        case .none: return true
        case .some(let wrapped): return isNil(wrapped)
        }
    }
}
