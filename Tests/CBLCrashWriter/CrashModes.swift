// The crash writer's other modes (`seed`, `index`, `compact`, `pullack`, `upgrade`), for the kill -9
// trials of CrashTrialTests. Each prints `ACK <docID> <revID>` only after the write is committed,
// with one write(2), so every ACK line the parent reads names a durable revision.

import CBLTestSupport
import CouchbaseLite
import CouchbaseLiteUpgrade
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Writes documents of the CrashShape shape into one database.
struct ShapedWriter {
    let db: CBLDatabase
    var rng: SplitMix64

    /// Creates `doc-<i>` (updating it if it exists), with an attachment when `attach`.
    mutating func create(_ i: Int, attach: Bool, maxPayload: Int = 400) throws -> (String, String) {
        let docID = CrashShape.docID(i)
        guard let doc = db.document(withID: docID) else { fail("invalid ID \(docID)", code: 4) }
        let payload = CrashShape.payload(i, maxLength: maxPayload, using: &rng)
        let body = attach ? Data(CrashShape.attachmentBytes(index: i, size: Int.random(in: 1...8_192, using: &rng))) : nil
        let saved = try doc.update { rev in
            rev["i"] = i
            rev["payload"] = payload
            if rev["updates"] == nil { rev["updates"] = 0 }
            if let body { rev.setAttachmentNamed("blob-\(i).bin", withContentType: "application/octet-stream", content: body) }
            return true
        }
        return (docID, saved.revisionID!)
    }

    /// Updates `doc-<j>`: bumps `updates`, new payload, sometimes a new attachment.
    mutating func update(_ j: Int, attach: Bool, maxPayload: Int = 400) throws -> (String, String)? {
        guard let doc = db.existingDocument(withID: CrashShape.docID(j)) else { return nil }
        let payload = CrashShape.payload(j, maxLength: maxPayload, using: &rng)
        let body = attach ? Data(CrashShape.attachmentBytes(index: j, size: Int.random(in: 1...8_192, using: &rng))) : nil
        let saved = try doc.update { rev in
            rev["updates"] = (rev["updates"] as? Int ?? 0) + 1
            rev["payload"] = payload
            if let body { rev.setAttachmentNamed("update.bin", withContentType: "application/octet-stream", content: body) }
            return true
        }
        return (doc.documentID, saved.revisionID!)
    }

    /// Runs `body` in one transaction and ACKs what it wrote once the transaction committed.
    mutating func transaction(_ body: (inout ShapedWriter) throws -> [(String, String)]) throws {
        var acks: [(String, String)] = []
        var failure: Error?
        var copy = self
        let committed = db.inTransaction {
            do {
                acks = try body(&copy)
                return true
            } catch {
                failure = error
                return false
            }
        }
        rng = copy.rng
        if let failure { throw failure }
        guard committed else { fail("a transaction did not commit", code: 4) }
        for (docID, revID) in acks { emit("ACK \(docID) \(revID)") }
    }
}

func openDatabase(_ directory: String, _ name: String) -> CBLDatabase {
    do {
        return try CBLManager(directory: directory).databaseNamed(name)
    } catch {
        fail("cannot open \(name) in \(directory): \(error)", code: 3)
    }
}

/// Runs one of the modes below and returns its exit code, or nil when `args` names none of them.
func runCrashMode(_ args: [String]) -> Int32? {
    guard args.count >= 2 else { return nil }
    do {
        switch (args[1], args.count) {
        // seed <dir> <db> <count> <seed>: count documents (1 in 8 with an attachment) in batches
        // of 100, a third of them updated once or twice more; then `DONE`.
        case ("seed", 6):
            guard let count = Int(args[4]), let seed = UInt64(args[5]) else { return nil }
            var writer = ShapedWriter(db: openDatabase(args[2], args[3]), rng: SplitMix64(seed: seed))
            for start in stride(from: 0, to: count, by: 100) {
                try writer.transaction { w in
                    try (start..<min(count, start + 100)).map { i in try w.create(i, attach: i % 8 == 3) }
                }
            }
            for start in stride(from: 0, to: count, by: 300) {
                try writer.transaction { w in
                    try (start..<min(count, start + 300)).filter { $0 % 3 == 0 }.compactMap { j -> (String, String)? in
                        let first = try w.update(j, attach: j % 9 == 0)
                        return try j % 2 == 0 ? w.update(j, attach: false) : first
                    }
                }
            }
            emit("DONE")
            return 0

        // index <dir> <db> <insert 0|1> <seed>: over and over, (with insert: writes a batch of new and
        // updated documents,) sometimes discards the view's index, and brings it up to date.
        case ("index", 6):
            guard let seed = UInt64(args[5]) else { return nil }
            let insert = args[4] == "1"
            let db = openDatabase(args[2], args[3])
            let view = db.viewNamed(CrashShape.viewName)
            _ = view.setMapBlock({ doc, emit in CrashShape.map(doc, emit) }, version: CrashShape.viewVersion)
            var writer = ShapedWriter(db: db, rng: SplitMix64(seed: seed))
            var next = Int(db.documentCount)
            emit("READY \(next)")
            while true {
                if insert {
                    let size = Int.random(in: 1...20, using: &writer.rng)
                    let first = next
                    try writer.transaction { w in
                        try (0..<size).compactMap { k -> (String, String)? in
                            if Int.random(in: 0..<3, using: &w.rng) == 0 {
                                return try w.update(Int.random(in: 0..<max(1, first), using: &w.rng), attach: false)
                            }
                            return try w.create(first + k, attach: false)
                        }
                    }
                    next = Int(db.documentCount)
                }
                if !insert || Int.random(in: 0..<5, using: &writer.rng) == 0 {
                    view.deleteIndex()
                    emit("DISCARDED")
                }
                try view.updateIndex()
                emit("INDEXED \(view.lastSequenceIndexed)")
            }

        // compact <dir> <db> <seed>: over and over, updates 1–30 documents (a third with a new
        // attachment, so old blobs become garbage), then compacts.
        case ("compact", 5):
            guard let seed = UInt64(args[4]) else { return nil }
            let db = openDatabase(args[2], args[3])
            var writer = ShapedWriter(db: db, rng: SplitMix64(seed: seed))
            let count = Int(db.documentCount)
            guard count > 0 else { fail("compact needs a seeded database", code: 2) }
            emit("READY \(count)")
            while true {
                let size = Int.random(in: 1...30, using: &writer.rng)
                for _ in 0..<size {
                    let j = Int.random(in: 0..<count, using: &writer.rng)
                    let attach = Int.random(in: 0..<3, using: &writer.rng) == 0
                    if let (docID, revID) = try writer.update(j, attach: attach, maxPayload: 2_000) {
                        emit("ACK \(docID) \(revID)")
                    }
                }
                emit("COMPACTING")
                try db.compact()
                emit("COMPACTED")
            }

        // pullack <dir> <db> <remote-url> <page-size>: a one-shot pull that ACKs every current
        // revision as its batch commits; `DONE <changes read>` at the end (6 if it failed).
        case ("pullack", 6):
            guard let url = URL(string: args[4]), let pageSize = Int(args[5]) else { return nil }
            let db = openDatabase(args[2], args[3])
            let pull = db.createPullReplication(url)
            var tuning = pull.tuning
            tuning.changesPageSize = pageSize
            tuning.revsPerBulkGet = max(1, pageSize / 2)
            tuning.checkpointInterval = .zero
            pull.tuning = tuning
            _ = db.addChangeListener { changes in
                for change in changes where change.isCurrentRevision && !change.isDeletion {
                    emit("ACK \(change.documentID) \(change.revisionID)")
                }
            }
            emit("READY")
            pull.start()
            while pull.running { usleep(2_000) }
            if let error = pull.lastError { fail("pull failed: \(error)", code: 6) }
            emit("DONE \(pull.changesCount)")
            return 0

        // upgrade <source.cblite2> <destination.cblite2>: the 1.x → 2.x converter; `PROGRESS <n>`
        // every 100 documents, `DONE <documents converted>` at the end.
        case ("upgrade", 4):
            let upgrader = DatabaseUpgrader(source: URL(fileURLWithPath: args[2]), destination: URL(fileURLWithPath: args[3]))
            emit("READY")
            let report = try upgrader.run { progress in
                if progress.completed % 100 == 0 { emit("PROGRESS \(progress.completed)") }
            }
            emit("DONE \(report.documentsConverted)")
            return 0

        default:
            return nil
        }
    } catch {
        fail("\(args[1]) failed: \(error)", code: 4)
    }
}
