import Foundation
import JSONCore
import SQLiteKit

/// Brings view indexes up to date, incrementally from each view's last sequence (spec 7.3).
///
/// Several views are indexed in one pass over the changed documents; only winning revisions
/// are mapped; rows emitted by revisions that have since been replaced are deleted first.
struct ViewIndexer {
    let store: SQLiteStore
    let views: [CBLView]

    /// Collects the rows one map call emits for one view.
    final class Emitter {
        var rows: [(key: [UInt8], value: [UInt8]?)] = []
        var error: Error?

        func emit(_ key: Any, _ value: Any?) {
            guard error == nil else { return }
            // 1.x ignores emit(nil, …) (spec 7.1).
            if isNil(key) { return }
            do {
                let keyJSON = try JSON.data(key, sortedKeys: true)
                let valueJSON = try value.flatMap { isNil($0) ? nil : $0 }.map { try JSON.data($0, sortedKeys: true) }
                rows.append((keyJSON, valueJSON))
            } catch {
                self.error = error
            }
        }
    }

    /// Returns the number of documents mapped.
    @discardableResult
    func run() throws -> Int {
        let dbMax = try store.lastSequence
        struct Target {
            let view: CBLView
            let map: CBLMapBlock
            let record: SQLiteStore.ViewRecord
            let documentType: String?
            var totalRows: Int64
            let insert: SQLiteStatement
            let deleteBySequence: SQLiteStatement
        }
        var targets: [Target] = []
        for view in views {
            guard let map = view.mapBlock, let record = try store.viewRecord(named: view.name) else { continue }
            guard record.lastSequence < dbMax else { continue }
            try store.ensureMapsTable(record)
            let table = "'\(record.table)'"
            var total = record.totalRows < 0 ? try store.countRows(record) : record.totalRows
            if record.lastSequence == 0 {
                try store.connection.execute("DELETE FROM \(table)")
                total = 0
            } else {
                // Rows emitted by revisions that have since got a child (spec 7.3 step 2).
                try store.connection.run(
                    "DELETE FROM \(table) WHERE sequence IN (SELECT parent FROM revs WHERE sequence>? AND +parent>0 AND +parent<=?)",
                    [.integer(record.lastSequence), .integer(record.lastSequence)])
                total -= Int64(store.connection.changes)
            }
            targets.append(Target(
                view: view, map: map, record: record, documentType: view.documentType, totalRows: total,
                insert: try store.connection.cached("INSERT INTO \(table) (sequence, key, value) VALUES (?, ?, ?)"),
                deleteBySequence: try store.connection.cached("DELETE FROM \(table) WHERE sequence=?")))
        }
        guard !targets.isEmpty else { return 0 }
        let minLast = targets.map(\.record.lastSequence).min()!

        var sql = "SELECT revs.doc_id, sequence, docid, revid, json, deleted, doc_type FROM revs, docs WHERE sequence>? AND current!=0"
        if minLast == 0 { sql += " AND deleted=0" }
        let types = targets.compactMap(\.documentType)
        if types.count == targets.count {
            sql += " AND doc_type IN (" + types.map { _ in "?" }.joined(separator: ",") + ")"
        }
        // `+revs.doc_id`: order by sorting the rows selected by sequence (a rowid range), instead
        // of walking the whole revs_current index to get that order (incremental updates must
        // not scan the database: 1.x issues #615, #1737).
        sql += " AND revs.doc_id=docs.doc_id ORDER BY +revs.doc_id, deleted, revid DESC"
        let scan = try store.connection.prepare(sql)
        try scan.bind(minLast, at: 1)
        if types.count == targets.count {
            for (i, type) in types.enumerated() { try scan.bind(type, at: Int32(i + 2)) }
        }
        let olderLeaf = try store.connection.cached(
            "SELECT revid, sequence, json, doc_type FROM revs WHERE doc_id=? AND sequence<=? AND current!=0 AND deleted=0 ORDER BY revid DESC LIMIT 1")

        struct Leaf { var sequence: Int64; var revID: String; var body: [UInt8]?; var deleted: Bool; var docType: String? }
        var mapped = 0
        var currentDocNumericID: Int64 = -1
        var currentDocID = ""
        var winner: Leaf?
        var conflicts: [String] = []

        func flush() throws {
            guard var win = winner else { return }
            defer { winner = nil; conflicts = [] }
            if currentDocID.hasPrefix("_design/") { return }
            if minLast > 0 {
                // An older leaf indexed earlier may still win, or its rows must go (spec 7.3 step 5).
                try olderLeaf.bind(currentDocNumericID, at: 1)
                try olderLeaf.bind(minLast, at: 2)
                if try olderLeaf.step() {
                    let oldRevID = olderLeaf.string(0) ?? ""
                    let oldSequence = olderLeaf.int64(1)
                    for i in targets.indices {
                        try targets[i].deleteBySequence.run([.integer(oldSequence)])
                        targets[i].totalRows -= Int64(store.connection.changes)
                    }
                    if win.deleted || RevisionCollation.compare(oldRevID, win.revID) > 0 {
                        if !win.deleted { conflicts.append(win.revID) }
                        win = Leaf(sequence: oldSequence, revID: oldRevID, body: olderLeaf.bytes(2), deleted: false,
                                   docType: olderLeaf.string(3))
                    } else {
                        conflicts.append(oldRevID)
                    }
                }
                olderLeaf.reset()
            }
            if win.deleted { return }
            var doc: [String: Any]
            if let body = win.body, !body.isEmpty {
                guard let parsed = try? JSON.parseObject(body) else {
                    throw CBLError.dbError("Document '\(currentDocID)' revision \(win.revID) has an unreadable body")
                }
                doc = parsed
            } else {
                doc = [:]
            }
            doc["_id"] = currentDocID
            doc["_rev"] = win.revID
            doc["_local_seq"] = Int(win.sequence)
            if !conflicts.isEmpty { doc["_conflicts"] = conflicts }
            mapped += 1
            for i in targets.indices where targets[i].record.lastSequence < win.sequence {
                if let type = targets[i].documentType, type != win.docType { continue }
                let emitter = Emitter()
                targets[i].map(doc, emitter.emit)
                if let error = emitter.error {
                    throw CBLError.badRequest("View '\(targets[i].view.name)': map function emitted a value that is not JSON for document '\(currentDocID)': \(error)")
                }
                for row in emitter.rows {
                    let insert = targets[i].insert
                    try insert.bind(win.sequence, at: 1)
                    try insert.bindText(row.key, at: 2)
                    if let value = row.value { try insert.bindText(value, at: 3) } else { try insert.bindNull(at: 3) }
                    try insert.step()
                    insert.reset()
                }
                targets[i].totalRows += Int64(emitter.rows.count)
            }
        }

        while try scan.step() {
            let docNumericID = scan.int64(0)
            let leaf = Leaf(sequence: scan.int64(1), revID: scan.string(3) ?? "", body: scan.bytes(4),
                            deleted: scan.bool(5), docType: scan.string(6))
            if docNumericID != currentDocNumericID {
                try flush()
                currentDocNumericID = docNumericID
                currentDocID = scan.string(2) ?? ""
                winner = leaf
            } else if let w = winner, !w.deleted, !leaf.deleted {
                conflicts.append(leaf.revID)
            }
        }
        try flush()
        scan.reset()

        for target in targets {
            for sql in Schema.createMapsIndexes(viewID: target.record.id) { try store.connection.execute(sql) }
            try store.setViewProgress(target.record, lastSequence: dbMax, totalRows: target.totalRows)
        }
        return mapped
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
