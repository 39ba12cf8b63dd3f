// Encryption benchmarks (`--only encryption`): the 1.x API on a SQLCipher-encrypted database
// (Debian's libsqlcipher0, loaded with its symbols kept local) against the same work on a plain one,
// in paired rounds adjacent in time; and opening a database with a password.

import CouchbaseLite
import Foundation
import SQLiteKit

/// Bulk insert (≤ 1.5×) and full view index (≤ 1.5×) encrypted vs plain, each the median of the
/// rounds' encrypted/plain ratios; opening with a password (PBKDF2-HMAC-SHA256, 64,000 rounds, then
/// the first read) against a fixed 100 ms budget.
func runEncryptionBenchmarks(options: Options, fresh: (String) -> URL) throws -> (rows: [BenchRow], notes: [String]) {
    guard SQLiteLibrary.isSQLCipherAvailable else {
        return ([], ["encryption: skipped, libsqlcipher0 is not installed"])
    }
    let corpus = Corpus(count: options.docs, prefix: "enc", seed: options.seed &+ 19)
    let password = "correct horse battery staple"
    let rounds = options.quick ? 1 : 3

    func open(_ dir: URL, encrypted: Bool, create: Bool = true) throws -> (CBLManager, CBLDatabase) {
        let manager = try CBLManager(directory: dir.path)
        let dbOptions = CBLDatabaseOptions()
        dbOptions.create = create
        dbOptions.encryptionKey = encrypted ? password : nil
        return (manager, try manager.openDatabaseNamed("bench", with: dbOptions))
    }
    func insert(encrypted: Bool) throws -> (Duration, URL) {
        let dir = fresh(encrypted ? "enc-encrypted" : "enc-plain")
        let (manager, db) = try open(dir, encrypted: encrypted)
        defer { manager.close() }
        settleDisk()
        let elapsed = try timedPutProperties(db, ids: corpus.ids, properties: corpus.properties)
        try db.close()
        return (elapsed, dir)
    }
    func index(_ dir: URL, encrypted: Bool) throws -> Duration {
        let (manager, db) = try open(dir, encrypted: encrypted, create: false)
        defer { manager.close() }
        let view = defineNamesView(db, counter: MapCallCounter())
        settleDisk()
        let elapsed = try clock.measure { try view.updateIndex() }
        guard Int(view.totalRows) == corpus.ids.count else { throw CBLError(500, "view indexed \(view.totalRows) rows") }
        try db.close()
        return elapsed
    }

    // Warm-up: loads SQLCipher and runs both paths once.
    let warmDir = fresh("enc-warm")
    do {
        let (manager, db) = try open(warmDir, encrypted: true)
        _ = try db.document(withID: "warm")!.putProperties(["x": 1])
        try db.close()
        manager.close()
    }

    var plainInserts: [Duration] = [], encryptedInserts: [Duration] = [], insertRatios: [Double] = []
    var plainIndexes: [Duration] = [], encryptedIndexes: [Duration] = [], indexRatios: [Double] = []
    for round in 0..<rounds {
        // Which side goes first alternates, so neither always inherits the other's aftermath.
        let order = round % 2 == 0 ? [false, true] : [true, false]
        var inserted: [Bool: (Duration, URL)] = [:]
        for encrypted in order { inserted[encrypted] = try insert(encrypted: encrypted) }
        var indexed: [Bool: Duration] = [:]
        for encrypted in order { indexed[encrypted] = try index(inserted[encrypted]!.1, encrypted: encrypted) }
        plainInserts.append(inserted[false]!.0)
        encryptedInserts.append(inserted[true]!.0)
        insertRatios.append(seconds(inserted[true]!.0) / seconds(inserted[false]!.0))
        plainIndexes.append(indexed[false]!)
        encryptedIndexes.append(indexed[true]!)
        indexRatios.append(seconds(indexed[true]!) / seconds(indexed[false]!))
        for (_, dir) in inserted.values { try? FileManager.default.removeItem(at: dir) }
    }

    // Opening with a password: key derivation + SQLCipher open + the first read, median of 7.
    let openDir = fresh("enc-open")
    do {
        let (manager, db) = try open(openDir, encrypted: true)
        _ = try db.document(withID: "one")!.putProperties(["x": 1])
        try db.close()
        manager.close()
    }
    var opens: [Duration] = []
    for _ in 0..<7 {
        let manager = try CBLManager(directory: openDir.path)
        let elapsed = try clock.measure {
            let dbOptions = CBLDatabaseOptions()
            dbOptions.encryptionKey = password
            let db = try manager.openDatabaseNamed("bench", with: dbOptions)
            guard db.documentCount == 1 else { throw CBLError(500, "wrong document count") }
            try db.close()
        }
        manager.close()
        opens.append(elapsed)
    }
    let openBudget = Duration.milliseconds(100)

    let rows = [
        BenchRow(name: "encrypted bulk insert", base: median(plainInserts), api: median(encryptedInserts),
                 budget: 1.5, ops: options.docs, pairedRatio: median(insertRatios)),
        BenchRow(name: "encrypted full view index", base: median(plainIndexes), api: median(encryptedIndexes),
                 budget: 1.5, ops: options.docs, pairedRatio: median(indexRatios)),
        BenchRow(name: "open with password", base: openBudget, api: median(opens), budget: 1.0, ops: 1),
    ]
    let notes = [
        "encryption: base = the same work on a plain database; \(rounds) paired rounds, ratio = median of each round's encrypted/plain: "
            + "insert " + insertRatios.map { fmt($0, 2) }.joined(separator: " ")
            + ", index " + indexRatios.map { fmt($0, 2) }.joined(separator: " "),
        "encryption: \"open with password\" base = the 100 ms budget itself; API = median of 7 opens (PBKDF2 64,000 rounds + SQLCipher open + first read): "
            + opens.map { fmt(seconds($0) * 1000, 1) + " ms" }.joined(separator: " "),
    ]
    return (rows, notes)
}
