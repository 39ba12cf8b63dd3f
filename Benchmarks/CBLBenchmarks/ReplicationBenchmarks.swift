// Replication benchmark (`--only replication`): pull then push between two databases through our
// own listener on loopback, against the store's bulk insert of the same documents (the floor a
// pull cannot beat: it must at least store what it receives), measured in the same run.
//
//   small:       N documents of ~1 KB (10k by default; --docs sets it for this group too when < 10k)
//   attachments: 200 documents with one 100 KB attachment each
// Rows: pull vs bulk insert (budget 3x), push vs bulk insert (info), attachments pull/push vs
// bulk insert of the same documents with their attachments (info); docs/s and MB/s in the notes.

import CouchbaseLite
import CouchbaseLiteListener
import Foundation
import JSONCore
import CBLTestSupport

/// The documents: ~1 KB JSON each, optionally with one attachment of `attachmentSize` bytes.
struct ReplicationCorpus {
    let ids: [String]
    let properties: [[String: Any]]
    let attachments: [Data]

    init(count: Int, attachmentSize: Int, seed: UInt64) {
        var rng = SplitMix64(seed: seed)
        var ids: [String] = [], props: [[String: Any]] = [], atts: [Data] = []
        let words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"]
        for i in 0..<count {
            var text = ""
            while text.utf8.count < 800 { text += words[Int(rng.next() % 10)] + " " }
            ids.append(String(format: "r%06d", i))
            props.append([
                "type": "note", "n": i, "title": "Note \(i)", "body": text,
                "tags": [words[i % 10], words[(i / 10) % 10]], "score": Double(rng.next() % 10_000) / 100,
                "author": ["name": "User \(i % 97)", "id": i % 97] as [String: Any],
            ])
            if attachmentSize > 0 {
                var bytes = [UInt8](repeating: 0, count: attachmentSize)
                for k in stride(from: 0, to: attachmentSize, by: 8) {
                    let v = rng.next()
                    for b in 0..<min(8, attachmentSize - k) { bytes[k + b] = UInt8(truncatingIfNeeded: v >> (8 * UInt64(b))) }
                }
                atts.append(Data(bytes))
            }
        }
        self.ids = ids; self.properties = props; self.attachments = atts
    }

    var jsonBytes: Int { properties.reduce(0) { $0 + ((try? JSON.canonicalData($1).count) ?? 0) } }
    var attachmentBytes: Int { attachments.reduce(0) { $0 + $1.count } }

    /// The store's bulk insert: one transaction of `putProperties` (with the attachment).
    func insert(into db: CBLDatabase) throws {
        var failure: Error?
        db.inTransaction {
            do {
                for i in 0..<ids.count {
                    let doc = db.document(withID: ids[i])!
                    if attachments.isEmpty {
                        try doc.putProperties(properties[i])
                    } else {
                        let rev = doc.newRevision()
                        rev.userProperties = properties[i]
                        rev.setAttachmentNamed("blob.bin", withContentType: "application/octet-stream", content: attachments[i])
                        try rev.save()
                    }
                }
                return true
            } catch {
                failure = error
                return false
            }
        }
        if let failure { throw failure }
    }
}

/// Runs one-shot replications to completion and returns the elapsed time.
func timedReplication(_ replication: CBLReplication) throws -> Duration {
    let start = clock.now
    replication.start()
    while replication.running { usleep(500) }
    let elapsed = clock.now - start
    if let error = replication.lastError { throw error }
    return elapsed
}

@MainActor func runReplicationBenchmarks(options: Options) throws -> ([BenchRow], [String]) {
    let smallCount = options.quick ? 10_000 : max(10_000, min(options.docs, 10_000))
    let small = ReplicationCorpus(count: smallCount, attachmentSize: 0, seed: options.seed)
    let withAttachments = ReplicationCorpus(count: 200, attachmentSize: 100_000, seed: options.seed &+ 1)
    let rounds = 3
    var rows: [BenchRow] = []
    var notes: [String] = []
    print(String(format: "  replication corpus: %d docs, %.0f bytes JSON on average; 200 docs with a 100 KB attachment",
                 small.ids.count, Double(small.jsonBytes) / Double(small.ids.count)))

    for (label, corpus) in [("10k x 1 KB", small), ("200 x 100 KB att", withAttachments)] {
        var insertTimes: [Duration] = [], pullTimes: [Duration] = [], pushTimes: [Duration] = []
        var pullRatios: [Double] = [], pushRatios: [Double] = []
        for round in 0..<rounds {
            let serverDir = fresh("repl-server"), clientDir = fresh("repl-client"), floorDir = fresh("repl-floor")
            let serverManager = try CBLManager(directory: serverDir.path)
            let clientManager = try CBLManager(directory: clientDir.path)
            let floorManager = try CBLManager(directory: floorDir.path)
            let listener = CBLListener(manager: serverManager, port: 0)
            listener.bindAddress = "127.0.0.1"
            try listener.start()
            defer {
                listener.stop()
                serverManager.close(); clientManager.close(); floorManager.close()
            }
            // The source of the pull, written untimed.
            let source = try serverManager.databaseNamed("source")
            try corpus.insert(into: source)
            settleDisk()

            // Floor: the store's own bulk insert of the same documents.
            let floorDB = try floorManager.databaseNamed("floor")
            let insertTime = try clock.measure { try corpus.insert(into: floorDB) }
            settleDisk()

            // Pull from the listener into an empty database.
            let pullDB = try clientManager.databaseNamed("pulled")
            let pull = pullDB.createPullReplication(URL(string: "http://127.0.0.1:\(listener.port)/source")!)
            let pullTime = try timedReplication(pull)
            guard pullDB.documentCount == UInt(corpus.ids.count) else {
                throw CBLError(500, "pull stored \(pullDB.documentCount) docs, expected \(corpus.ids.count)")
            }
            settleDisk()

            // Push those documents to a new database on the listener.
            let push = pullDB.createPushReplication(URL(string: "http://127.0.0.1:\(listener.port)/pushed")!)
            push.createTarget = true
            let pushTime = try timedReplication(push)
            guard try serverManager.existingDatabaseNamed("pushed").documentCount == UInt(corpus.ids.count) else {
                throw CBLError(500, "push stored the wrong number of documents")
            }
            insertTimes.append(insertTime); pullTimes.append(pullTime); pushTimes.append(pushTime)
            pullRatios.append(seconds(pullTime) / seconds(insertTime))
            pushRatios.append(seconds(pushTime) / seconds(insertTime))
            print(String(format: "  %@ round %d: insert %.3fs, pull %.3fs (%.2fx), push %.3fs (%.2fx)", label, round + 1,
                         seconds(insertTime), seconds(pullTime), pullRatios.last!, seconds(pushTime), pushRatios.last!))
        }
        let insert = median(insertTimes), pull = median(pullTimes), push = median(pushTimes)
        let n = corpus.ids.count
        let megabytes = Double(corpus.jsonBytes + corpus.attachmentBytes) / 1_048_576
        rows.append(BenchRow(name: "pull \(label)", base: insert, api: pull, budget: corpus.attachments.isEmpty ? 3.0 : nil,
                             ops: n, pairedRatio: median(pullRatios)))
        rows.append(BenchRow(name: "push \(label) (info)", base: insert, api: push, budget: nil, ops: n,
                             pairedRatio: median(pushRatios)))
        notes.append(String(format: "%@: pull %.0f docs/s, %.1f MB/s; push %.0f docs/s, %.1f MB/s; bulk insert %.0f docs/s",
                            label, Double(n) / seconds(pull), megabytes / seconds(pull),
                            Double(n) / seconds(push), megabytes / seconds(push), Double(n) / seconds(insert)))
    }
    notes.append("replication rows: base = the store's bulk insert of the same documents (one transaction), API = a one-shot")
    notes.append("replication through our listener on 127.0.0.1; ratio = median of \(rounds) rounds' ratios.")
    return (rows, notes)
}
