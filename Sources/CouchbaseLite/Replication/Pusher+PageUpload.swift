import Foundation

/// The upload of one push page's missing revisions (spec 9.5): bodies are prepared 100 at a
/// time on the database queue, then sent. `_bulk_docs` requests overlap (two in flight) with
/// preparing the next bodies; multipart uploads go one at a time. The first failed sequence
/// bounds the checkpoint.
struct PushPageUpload {
    let pusher: Pusher
    /// The failed revision with the lowest sequence and its error, if any.
    private(set) var firstFailure: (sequence: Int64, error: CBLError)?
    private var inflight: [Task<Pusher.BulkOutcome, Error>] = []
    private var bulk: [[UInt8]] = []
    private var bulkCandidates: [Pusher.Candidate] = []
    private var bulkBytes = 0

    private var replicator: Replicator { pusher.replicator }

    init(pusher: Pusher) {
        self.pusher = pusher
    }

    /// Prepares and sends every missing revision (the last `_bulk_docs` may still be in flight).
    mutating func send(_ missing: [(Pusher.Candidate, [String])]) async throws {
        for start in stride(from: 0, to: missing.count, by: 100) {
            let chunk = Array(missing[start..<min(start + 100, missing.count)])
            let preparedChunk = try await pusher.prepare(chunk)
            for ((candidate, ancestors), prepared) in zip(chunk, preparedChunk) {
                switch prepared {
                case .gone:
                    replicator.report { $0.completed &+= 1 }
                case .inline(let doc, let size):
                    try await addInline(doc, size: size, candidate)
                case .multipart(let upload):
                    try await sendMultipart(upload, candidate, ancestors: ancestors)
                }
            }
        }
    }

    /// Sends the last batch and waits for every `_bulk_docs` in flight.
    mutating func finish() async throws {
        try await flushBulk()
        while !inflight.isEmpty { collect(try await inflight.removeFirst().value) }
    }

    /// Cancels the requests still in flight (the page failed).
    func cancel() {
        for task in inflight { task.cancel() }
    }

    /// One multipart upload; when the run cannot use multipart, the revision joins the batch's
    /// `_bulk_docs` with its attachments inline (base64).
    private mutating func sendMultipart(_ upload: Pusher.MultipartUpload, _ candidate: Pusher.Candidate,
                                        ancestors: [String]) async throws {
        guard let status = try await pusher.sendOrFallBack(upload, candidate) else {
            switch try await pusher.prepare([(candidate, ancestors)], threshold: .max).first! {
            case .inline(let doc, let size):
                try await addInline(doc, size: size, candidate)
            default:
                replicator.report { $0.completed &+= 1 }
            }
            return
        }
        if status == 401 || status == 403 {
            replicator.report {
                $0.completed &+= 1
                $0.lastError = Replicator.documentError(status, candidate.docID, candidate.revID, "rejected by the remote")
            }
        } else if status >= 300 {
            noteFailure(candidate, Replicator.documentError(status, candidate.docID, candidate.revID, "upload failed"))
        } else {
            replicator.report { $0.completed &+= 1 }
        }
    }

    /// Adds a revision to the next `_bulk_docs`, sending the batch when it is full.
    private mutating func addInline(_ doc: [UInt8], size: Int, _ candidate: Pusher.Candidate) async throws {
        bulk.append(doc)
        bulkCandidates.append(candidate)
        bulkBytes += size
        if bulkBytes >= pusher.tuning.bulkDocsMaxBytes || bulk.count >= 100 { try await flushBulk() }
    }

    /// Starts a `_bulk_docs` of the batch, first waiting for the oldest when two are in flight.
    private mutating func flushBulk() async throws {
        guard !bulk.isEmpty else { return }
        if inflight.count >= 2 { collect(try await inflight.removeFirst().value) }
        let docs = bulk, candidates = bulkCandidates
        let pusher = self.pusher
        inflight.append(Task { try await pusher.bulkDocs(docs, candidates) })
        bulk.removeAll()
        bulkCandidates.removeAll()
        bulkBytes = 0
    }

    private mutating func collect(_ outcome: Pusher.BulkOutcome) {
        for (candidate, error) in outcome.failures { noteFailure(candidate, error) }
        let handled = outcome.count - outcome.failures.count
        replicator.report {
            $0.completed &+= UInt32(clamping: handled)
            if let rejected = outcome.rejected { $0.lastError = rejected }
        }
    }

    private mutating func noteFailure(_ candidate: Pusher.Candidate, _ error: CBLError) {
        if firstFailure.map({ candidate.sequence < $0.sequence }) ?? true {
            firstFailure = (candidate.sequence, error)
        }
    }
}
