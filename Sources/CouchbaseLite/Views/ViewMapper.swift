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
    var error: (any Error & Sendable)?

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
// @unchecked because map blocks (not `@Sendable` in the 1.x API) run on one thread at a time: the indexing thread or the pipeline's helper, never both.
final class ViewMapper: @unchecked Sendable {
    struct Target {
        let name: String
        let map: CBLMapBlock
        /// The JSON-text form of `map`, preferred when present.
        let jsonMap: CBLJSONMapFunction?
        let lastSequence: Int64
        let documentType: String?
        let options: CBLView.DesignOptions
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
            sequence = job.sequence
            // Each form of the document is made once, when the first view needing it maps it.
            var properties: [String: Any]?
            var json: [UInt8]?
            var jsonWithSequence: [UInt8]?
            let isDesign = job.docID.hasPrefix("_design/")
            for i in targets.indices where targets[i].lastSequence < job.sequence {
                if let type = targets[i].documentType, type != job.docType { continue }
                if isDesign && !targets[i].options.includeDesign { continue }
                target = i
                if let jsonMap = targets[i].jsonMap {
                    // CouchDB hands `_local_seq` only to the views of a design document with `local_seq`.
                    let withSequence = targets[i].options.localSeq
                    if (withSequence ? jsonWithSequence : json) == nil {
                        guard let made = Self.documentJSON(job, localSequence: withSequence) else {
                            out.error = unreadable(job); break
                        }
                        if withSequence { jsonWithSequence = made } else { json = made }
                    }
                    let document = withSequence ? jsonWithSequence! : json!
                    do {
                        guard let emitted = try document.withUnsafeBytes({ try jsonMap.map(json: $0) }) else { continue }
                        try appendRows(emitted)
                    } catch let error as CBLError {
                        out.error = CBLError(error.code, "View '\(targets[i].name)': \(error.message)")
                        break
                    } catch let error as CBLDesignFunctionError {
                        out.error = CBLDesignFunctionError(error.kind, "View '\(targets[i].name)': \(error.message)")
                        break
                    } catch {
                        out.error = CBLError(500, "View '\(targets[i].name)': map function emitted rows that are not JSON for document '\(job.docID)': \(error)")
                        break
                    }
                    continue
                }
                if properties == nil {
                    properties = documentProperties(job)
                    if properties == nil { out.error = unreadable(job); break }
                }
                emitError = nil
                targets[i].map(properties!, emitBlock)
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

    private func unreadable(_ job: MapJob) -> CBLError {
        CBLError.dbError("Document '\(job.docID)' revision \(job.revID) has an unreadable body")
    }

    /// The properties a map block gets (1.x adds `_id`, `_rev`, `_local_seq` and `_conflicts`).
    private func documentProperties(_ job: MapJob) -> [String: Any]? {
        var doc: [String: Any]
        if let body = job.body, !body.isEmpty {
            guard let parsed = try? JSON.parseObject(body, extraCapacity: 4) else { return nil }
            doc = parsed
        } else {
            doc = [:]
        }
        doc["_id"] = job.docID
        doc["_rev"] = job.revID
        doc["_local_seq"] = Int(job.sequence)
        if !job.conflicts.isEmpty { doc["_conflicts"] = job.conflicts }
        return doc
    }

    /// The document as CouchDB hands it to a JavaScript map: `_id`, `_rev`, `_conflicts` when
    /// there are any, `_local_seq` when asked (`local_seq`), then the stored body, whose attachments become stubs (`"stub": true`).
    /// Built by splicing the stored JSON text: no parse unless the document has attachments.
    static func documentJSON(_ job: MapJob, localSequence: Bool = false) -> [UInt8]? {
        var body = job.body ?? []
        if body.isEmpty { body = Array("{}".utf8) }
        guard body.first == UInt8(ascii: "{") else { return nil }
        if body.count > 2, body.starts(with: Array(#"{"_attachments":"#.utf8)) || contains(body, #""_attachments":{"#) {
            guard var doc = try? JSON.parseObject(body) else { return nil }
            if var atts = doc["_attachments"] as? [String: Any] {
                for (name, meta) in atts {
                    if var meta = meta as? [String: Any] { meta["stub"] = true; atts[name] = meta }
                }
                doc["_attachments"] = atts
            }
            guard let text = try? JSON.data(doc, sortedKeys: true) else { return nil }
            body = text
        }
        var w = JSONWriter(capacity: body.count + 96)
        w.writeRaw(#"{"_id":"#.utf8)
        w.writeString(job.docID)
        w.writeRaw(#","_rev":"#.utf8)
        w.writeString(job.revID)
        if !job.conflicts.isEmpty {
            w.writeRaw(#","_conflicts":["#.utf8)
            for (i, rev) in job.conflicts.enumerated() {
                if i > 0 { w.writeRaw(CollectionOfOne(UInt8(ascii: ","))) }
                w.writeString(rev)
            }
            w.writeRaw(CollectionOfOne(UInt8(ascii: "]")))
        }
        if localSequence {
            w.writeRaw(#","_local_seq":"#.utf8)
            w.writeRaw(String(job.sequence).utf8)
        }
        if body.count > 2 { w.writeRaw(CollectionOfOne(UInt8(ascii: ","))) }
        w.writeRaw(body.dropFirst())
        return w.bytes
    }

    private static func contains(_ bytes: [UInt8], _ needle: String) -> Bool {
        let n = Array(needle.utf8)
        guard bytes.count >= n.count else { return false }
        return bytes.withUnsafeBufferPointer { b in
            var i = 0
            while i + n.count <= b.count {
                if b[i] == n[0] && b[i..<(i + n.count)].elementsEqual(n) { return true }
                i += 1
            }
            return false
        }
    }

    /// Appends the rows a JSON map function emitted (key and value JSON texts, one per line).
    /// Texts without an object are already canonical and are copied as they are; those with one
    /// are re-encoded canonically, keeping the members in their emitted order.
    private func appendRows(_ emitted: [UInt8]) throws {
        let newline = UInt8(ascii: "\n"), brace = UInt8(ascii: "{")
        try emitted.withUnsafeBufferPointer { all in
            var start = 0
            var keyEnd = -1
            var mark = out.text.byteCount
            var sawBrace = false
            for i in 0..<all.count {
                let byte = all[i]
                if byte == brace { sawBrace = true; continue }
                guard byte == newline else { continue }
                let text = UnsafeBufferPointer(rebasing: all[start..<i])
                if keyEnd < 0 {
                    mark = out.text.byteCount
                    try write(text, canonicalizing: sawBrace)
                    keyEnd = out.text.byteCount
                } else {
                    // `null` (no value, or emit(key, null)) is stored as SQL NULL, as 1.x does.
                    if !(text.count == 4 && text.elementsEqual("null".utf8)) {
                        do { try write(text, canonicalizing: sawBrace) } catch { out.text.truncate(to: mark); throw error }
                    }
                    out.rows.append(EmittedRows.Row(target: target, sequence: sequence, keyEnd: keyEnd, valueEnd: out.text.byteCount))
                    keyEnd = -1
                }
                sawBrace = false
                start = i + 1
            }
            if keyEnd >= 0 { out.text.truncate(to: mark) }
        }
    }

    private func write(_ text: UnsafeBufferPointer<UInt8>, canonicalizing: Bool) throws {
        if canonicalizing {
            // Objects keep the order their members were emitted in: CouchDB's collation compares
            // them member by member in that order. Read once, typed, written back in that order.
            try out.text.write(try JSON.value(UnsafeRawBufferPointer(text)), sortedKeys: false)
        } else {
            out.text.writeRaw(text)
        }
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
