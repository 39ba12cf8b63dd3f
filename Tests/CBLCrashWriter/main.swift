// CBLCrashWriter: a small program the durability tests kill with SIGKILL while it writes.
//
// Usage: CBLCrashWriter <manager-directory> <db-name> <start-index> <count>
//
// Creates documents `doc-<i>` for i in start..<start+count, one write at a time, mixing:
//   - single `putProperties` saves,
//   - `inTransaction` batches of 1–10 new documents,
//   - `update` of an earlier document (any index below the current one),
//   - now and then an attachment via `CBLUnsavedRevision.setAttachmentNamed`.
// After each commit returns it writes `ACK <docID> <revID>` (one line per revision committed)
// to stdout with a single unbuffered write(2), so a line the parent reads was committed.
// When the new indices are used up it keeps updating earlier documents. It runs until killed.
//
// Also: CBLCrashWriter rekey … (see below), and the kill -9 trial modes seed, index, compact,
// pullack and upgrade (CrashModes.swift).
//
// Exit codes: 2 = bad arguments, 3 = cannot open the database, 4 = a write failed.
//
// Replication mode: CBLCrashWriter pull|push <manager-directory> <db-name> <remote-url> <page-size>
// runs a one-shot pull (or push, creating the target) with small pages and prints `HAVE <n>`
// (documents stored so far) after every committed batch, then `DONE <peak RSS in KiB>` and exits 0
// (6 if the replication failed). The replication tests kill a pull with SIGKILL part-way and check
// that the next pull resumes without loss, and read the peak RSS to check that a large attachment
// is streamed rather than held in memory.

import CouchbaseLite
import Foundation
#if canImport(Glibc)
import Glibc
import CBLTestSupport
#endif


/// Writes one line to fd 1 with a single write(2) (no stdio buffering), retrying short writes.
func emit(_ line: String) {
    var bytes = Array((line + "\n").utf8)
    var offset = 0
    while offset < bytes.count {
        let n = bytes.withUnsafeMutableBytes { buf in
            write(1, buf.baseAddress! + offset, buf.count - offset)
        }
        if n < 0 {
            if errno == EINTR { continue }
            exit(5)  // the reader went away
        }
        offset += n
    }
}

func fail(_ message: String, code: Int32) -> Never {
    FileHandle.standardError.write(Data("CBLCrashWriter: \(message)\n".utf8))
    exit(code)
}

let args = CommandLine.arguments
// seed, index, compact, pullack, upgrade (CrashModes.swift).
if let code = runCrashMode(args) { exit(code) }
if args.count == 6, args[1] == "pull" || args[1] == "push", let pageSize = Int(args[5]), let url = URL(string: args[4]) {
    do {
        let manager = try CBLManager(directory: args[2])
        let db = try manager.databaseNamed(args[3])
        let pull = args[1] == "pull" ? db.createPullReplication(url) : db.createPushReplication(url)
        pull.createTarget = true
        var tuning = pull.tuning
        tuning.changesPageSize = pageSize
        tuning.revsPerBulkGet = max(1, pageSize / 2)
        tuning.checkpointInterval = .zero
        pull.tuning = tuning
        _ = db.addChangeListener { _ in emit("HAVE \(db.documentCount)") }
        pull.start()
        while pull.running { usleep(2_000) }
        if let error = pull.lastError { fail("pull failed: \(error)", code: 6) }
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let peak = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") }?
            .split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "0"
        emit("DONE \(peak)")
        exit(0)
    } catch {
        fail("cannot open \(args[3]) in \(args[2]): \(error)", code: 3)
    }
}
// Re-key mode: CBLCrashWriter rekey <manager-directory> <db-name> <old-password|-> <new-password|->
// opens the database with the old key ("-": none), calls changeEncryptionKey with the new one and
// prints `DONE`. The encryption tests kill it at random moments (or at a named step, through
// CBL_REKEY_CRASH_AT) and check the database still opens with one of the two keys, intact.
if args.count == 6, args[1] == "rekey" {
    do {
        let manager = try CBLManager(directory: args[2])
        let options = CBLDatabaseOptions()
        options.create = true
        options.encryptionKey = args[4] == "-" ? nil : args[4]
        let db = try manager.openDatabaseNamed(args[3], with: options)
        emit("OPEN")
        try db.changeEncryptionKey(args[5] == "-" ? nil : args[5])
        emit("DONE")
        exit(0)
    } catch {
        fail("re-key of \(args[3]) failed: \(error)", code: 4)
    }
}
guard args.count == 5, let startIndex = Int(args[3]), let count = Int(args[4]), startIndex >= 0, count >= 0 else {
    fail("usage: CBLCrashWriter <manager-directory> <db-name> <start-index> <count>", code: 2)
}
let directory = args[1]
let dbName = args[2]
let endIndex = startIndex + count

let database: CBLDatabase
do {
    let manager = try CBLManager(directory: directory)
    database = try manager.databaseNamed(dbName)
} catch {
    fail("cannot open \(dbName) in \(directory): \(error)", code: 3)
}

var rng = SplitMix64(seed: UInt64(startIndex) &* 0x1234_5678_9ABC_DEF1 &+ UInt64(getpid()))

@MainActor func payload(_ i: Int) -> String {
    let length = Int.random(in: 16...400, using: &rng)
    let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789 ".utf8)
    var bytes = [UInt8]()
    bytes.reserveCapacity(length)
    for _ in 0..<length { bytes.append(alphabet[Int.random(in: 0..<alphabet.count, using: &rng)]) }
    return "\(i):" + String(decoding: bytes, as: UTF8.self)
}

@MainActor func attachmentBody(_ i: Int) -> Data {
    let size = Int.random(in: 1...8_192, using: &rng)
    var bytes = [UInt8](repeating: 0, count: size)
    for k in 0..<size { bytes[k] = UInt8(truncatingIfNeeded: i &* 31 &+ k &* 7) }
    return Data(bytes)
}

/// Creates `doc-<i>` (or, if a previous run committed it without the parent seeing the ACK,
/// updates it). Returns the new revision ID.
@MainActor func createDocument(_ i: Int, withAttachment: Bool) throws -> (docID: String, revID: String) {
    let docID = "doc-\(i)"
    guard let doc = database.document(withID: docID) else { fail("invalid ID \(docID)", code: 4) }
    let properties: [String: Any] = ["i": i, "payload": payload(i), "updates": 0]
    let saved: CBLSavedRevision
    if doc.currentRevision != nil {
        saved = try doc.update { rev in
            rev["i"] = i
            rev["payload"] = properties["payload"]
            return true
        }
    } else if withAttachment {
        let rev = doc.newRevision()
        rev.userProperties = properties
        rev.setAttachmentNamed("blob-\(i).bin", withContentType: "application/octet-stream",
                               content: attachmentBody(i))
        saved = try rev.save()
    } else {
        saved = try doc.putProperties(properties)
    }
    return (docID, saved.revisionID!)
}

/// Updates an earlier document with `update` (retrying on conflict), sometimes adding an attachment.
@MainActor func updateDocument(_ j: Int, withAttachment: Bool) throws -> (docID: String, revID: String)? {
    let docID = "doc-\(j)"
    guard let doc = database.existingDocument(withID: docID) else { return nil }
    let body = withAttachment ? attachmentBody(j) : nil
    let newPayload = payload(j)
    let saved = try doc.update { rev in
        rev["updates"] = (rev["updates"] as? Int ?? 0) + 1
        rev["payload"] = newPayload
        if let body {
            rev.setAttachmentNamed("update.bin", withContentType: "application/octet-stream", content: body)
        }
        return true
    }
    return (docID, saved.revisionID!)
}

emit("START \(getpid()) \(startIndex) \(endIndex)")
var next = startIndex
while true {
    do {
        let roll = Int.random(in: 0..<100, using: &rng)
        if next < endIndex && roll < 45 {
            // One document, committed on its own.
            let attach = Int.random(in: 0..<12, using: &rng) == 0
            let (docID, revID) = try createDocument(next, withAttachment: attach)
            next += 1
            emit("ACK \(docID) \(revID)")
        } else if next < endIndex && roll < 70 {
            // A batch of 1–10 new documents in one transaction; ACKed only after it commits.
            let size = min(Int.random(in: 1...10, using: &rng), endIndex - next)
            var acks: [(String, String)] = []
            var failure: Error?
            let committed = database.inTransaction {
                do {
                    for k in 0..<size {
                        let attach = Int.random(in: 0..<15, using: &rng) == 0
                        acks.append(try createDocument(next + k, withAttachment: attach))
                    }
                    return true
                } catch {
                    failure = error
                    return false
                }
            }
            if let failure { throw failure }
            guard committed else { fail("transaction of \(size) docs at \(next) did not commit", code: 4) }
            next += size
            for (docID, revID) in acks { emit("ACK \(docID) \(revID)") }
        } else if next > 0 {
            // Update an earlier document (possibly one from a previous run).
            let j = Int.random(in: 0..<next, using: &rng)
            let attach = Int.random(in: 0..<10, using: &rng) == 0
            if let (docID, revID) = try updateDocument(j, withAttachment: attach) {
                emit("ACK \(docID) \(revID)")
            }
        } else {
            next = max(next, 0)
            if endIndex == 0 { usleep(1_000) }
        }
    } catch {
        fail("write failed near index \(next): \(error)", code: 4)
    }
}
