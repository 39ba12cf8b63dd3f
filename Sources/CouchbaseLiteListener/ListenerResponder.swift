import CouchbaseLite
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NIOPosix

/// Adapts Hummingbird requests to the synchronous `RESTRouter` (run on worker threads, since
/// database calls block) and runs waiting changes feeds asynchronously.
struct ListenerResponder: HTTPResponder {
    typealias Context = ListenerRequestContext
    let router: RESTRouter

    func respond(to request: Request, context: Context) async throws -> Response {
        var response = await answer(request, context: context)
        // Every answer names its request, as CouchDB's do (the client's own ID when it sent a
        // plausible one), and says how long reading the body took (always 0 here: bodies are
        // read before the handler runs).
        response.headers[HTTPField.Name("X-Couch-Request-ID")!] = Self.requestID(request.headers[HTTPField.Name("X-Couch-Request-ID")!])
        response.headers[HTTPField.Name("X-CouchDB-Body-Time")!] = "0"
        return response
    }

    /// CouchDB's `nonce`: the client's `X-Couch-Request-ID` when it is at most 36 characters of
    /// `[0-9A-Za-z-]`, else 10 random hex digits.
    static func requestID(_ given: String?) -> String {
        if let given, !given.isEmpty, given.count <= 36,
           given.unicodeScalars.allSatisfy({ ($0.isASCII && CharacterSet.alphanumerics.contains($0)) || $0 == "-" }) {
            return given
        }
        return (0..<5).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    }

    private func answer(_ request: Request, context: Context) async -> Response {
        // Parsed once by ListenerParseMiddleware, let through (with its user) by ListenerAccessMiddleware.
        if let malformed = context.malformedTarget { return Self.response(.error(malformed)) }
        var syncRequest = context.restRequest

        let router = self.router
        let isAttachment = RESTRouter.isAttachmentUpload(method: syncRequest.method, segments: syncRequest.segments)
        if isAttachment || RESTRouter.isMultipartDocumentUpload(syncRequest) {
            // Attachment bodies go to the blob store as they arrive, whatever their size.
            let probe = syncRequest
            guard let start = await router.state.onWorker({ router.beginUpload(probe) }) else {
                return Self.response(.error(RESTError(503, "service_unavailable", "The listener is stopping")))
            }
            let db: CBLDatabase
            switch start {
            case .refused(let response): return Self.response(response)
            case .accepted(let opened): db = opened
            }
            if let refusal = isAttachment ? await Self.streamAttachment(request.body, db: db, into: &syncRequest, state: router.state)
                                          : await Self.streamMultipart(request.body, db: db, into: &syncRequest, state: router.state) {
                return Self.response(.error(refusal))
            }
        } else {
            // JSON (and the other small) bodies are read whole, up to `maxBodySize`.
            let maxBody = router.state.requestSizeLimit
            if let length = request.headers[.contentLength].flatMap(Int.init), length > maxBody {
                return Self.response(.error(Self.tooLarge(maxBody)))
            }
            do {
                var buffer = try await request.body.collect(upTo: maxBody)
                syncRequest = syncRequest.with(body: buffer.readBytes(length: buffer.readableBytes) ?? [])
            } catch is NIOTooManyBytesError {
                return Self.response(.error(Self.tooLarge(maxBody)))
            } catch {
                return Self.response(.error(RESTError(400, "bad_request", "Could not read the request body")))
            }
        }

        let handled = syncRequest
        let outcome = await router.state.onWorker({ router.handle(handled) })
        // An upload the handler did not install (an error answer) is dropped; no-op once installed.
        syncRequest.upload?.cancel()
        guard let outcome else {
            return Self.response(.error(RESTError(503, "service_unavailable", "The listener is stopping")))
        }
        switch outcome {
        case .response(let response):
            return Self.response(response, state: router.state)
        case .changesFeed(let feed):
            return ChangesFeedRunner(router: router, feed: feed).response()
        }
    }

    /// Bytes gathered before each write to the blob file (one worker-thread hop per batch).
    static let uploadBatchSize = 1 << 20

    /// `PUT /{db}/{doc}/{att}`: the body streamed into a blob-store writer, handed to the
    /// handler as `upload`; the error to answer instead, if any.
    private static func streamAttachment(_ body: RequestBody, db: CBLDatabase, into request: inout RESTRequest,
                                         state: ListenerState) async -> RESTError? {
        // A body CouchDB would store compressed is compressed as it arrives (not stored twice).
        let rule = state.attachmentCompression
        // Only an unencoded upload (no `Content-Encoding`, or `identity`); the handler refuses other codings.
        let unencoded = (try? RESTRouter.uploadIsGzipped(request)) == false
        let compression = unencoded && rule.compresses(contentType: request.header("content-type")) ? rule : nil
        let begun = await state.onWorker { () -> Result<SyncBlobDownload, Error> in
            Result { try db.syncBeginBlobDownload(compression: compression) }
        }
        guard case .success(let upload)? = begun else {
            if case .failure(let error)? = begun { return RESTError.from(error) }
            return RESTError(503, "service_unavailable", "The listener is stopping")
        }
        if let error = await stream(body, state: state, { try upload.append($0) }) {
            upload.cancel()
            return error
        }
        request.upload = upload
        return nil
    }

    /// `PUT /{db}/{doc}` with `multipart/related`: split as it arrives, the JSON part kept (up
    /// to `maxBodySize`), the attachment parts streamed into the blob store; the parts are
    /// handed to the handler as `relatedParts`. The error to answer instead, if any.
    private static func streamMultipart(_ body: RequestBody, db: CBLDatabase, into request: inout RESTRequest,
                                        state: ListenerState) async -> RESTError? {
        let splitter = MultipartUploadStream(boundary: request.contentTypeParameter("boundary") ?? "",
                                             maxInMemory: state.maxBodySize,
                                             beginBlob: { try db.syncBeginBlobDownload() })
        if let error = await stream(body, state: state, { try splitter.feed($0) }) {
            splitter.cancel()
            return error
        }
        let finished = await state.onWorker { () -> Result<[MultipartUploadStream.Part], Error> in Result { try splitter.finish() } }
        switch finished {
        case .success(let parts)?:
            request.relatedParts = parts
            return nil
        case .failure(let error)?:
            splitter.cancel()
            if let error = error as? MultipartError { return RESTError(400, "bad_request", error.message) }
            return RESTError.from(error)
        case nil:
            splitter.cancel()
            return RESTError(503, "service_unavailable", "The listener is stopping")
        }
    }

    /// Hands a request body to `consume` a batch at a time on the worker threads; the error to
    /// answer when the body cannot be read or consumed, nil when all of it was consumed.
    private static func stream(_ body: RequestBody, state: ListenerState,
                               _ consume: @escaping @Sendable (UnsafeRawBufferPointer) throws -> Void) async -> RESTError? {
        var batch = ByteBuffer()
        func flush() async -> RESTError? {
            let chunk = batch
            batch = ByteBuffer()
            let written = await state.onWorker { () -> RESTError? in
                do {
                    try chunk.withUnsafeReadableBytes { try consume($0) }
                    return nil
                } catch let error as MultipartError {
                    return RESTError(400, "bad_request", error.message)
                } catch {
                    return RESTError.from(error)
                }
            }
            return written ?? RESTError(503, "service_unavailable", "The listener is stopping")
        }
        do {
            for try await buffer in body {
                var buffer = buffer
                batch.writeBuffer(&buffer)
                if batch.readableBytes >= uploadBatchSize, let error = await flush() { return error }
            }
        } catch {
            return RESTError(400, "bad_request", "Could not read the request body")
        }
        return batch.readableBytes > 0 ? await flush() : nil
    }

    static func tooLarge(_ limit: Int) -> RESTError {
        // CouchDB's words (chttpd's request_entity_too_large).
        RESTError(413, "too_large", "the request entity is too large")
    }

    static func response(_ r: RESTResponse, state: ListenerState? = nil) -> Response {
        var fields = HTTPFields()
        for (name, value) in r.headers {
            if let fieldName = HTTPField.Name(name) { fields.append(HTTPField(name: fieldName, value: value)) }
        }
        if let stream = r.stream {
            guard let state else {
                stream.close()
                return response(.error(RESTError(500, "internal_server_error", "A streamed answer without workers")))
            }
            return Response(status: HTTPResponse.Status(code: r.status), headers: fields,
                            body: stream.responseBody(state: state))
        }
        var buffer = ByteBufferAllocator().buffer(capacity: r.body.count)
        buffer.writeBytes(r.body)
        return Response(status: HTTPResponse.Status(code: r.status), headers: fields,
                        body: ResponseBody(byteBuffer: buffer))
    }
}

/// Wakes a waiting changes feed when its database changes (or the listener stops).
// @unchecked because `pending`, `stopping`, `waiter` and `generation` are only touched under `lock`.
final class ChangeSignal: @unchecked Sendable {
    private let lock = NSLock()
    private var pending = false
    private(set) var stopping = false
    private var waiter: CheckedContinuation<Bool, Never>?
    private var generation = 0

    /// Marks a change; resumes the waiter if there is one.
    func fire(stopping: Bool = false) {
        lock.lock()
        pending = true
        if stopping { self.stopping = true }
        let w = waiter
        waiter = nil
        lock.unlock()
        w?.resume(returning: true)
    }

    private func consumePending() {
        lock.lock()
        pending = false
        lock.unlock()
    }

    var isStopping: Bool {
        lock.lock(); defer { lock.unlock() }
        return stopping
    }

    /// Waits until a change arrives (true) or `seconds` pass (false). Consumes the change.
    /// Timers run on NIO's event loops, so a saturated Dispatch pool cannot delay them.
    func wait(seconds: Double) async -> Bool {
        let fired = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                lock.lock()
                if pending || stopping {
                    pending = false
                    lock.unlock()
                    continuation.resume(returning: true)
                    return
                }
                generation += 1
                let myGeneration = generation
                waiter = continuation
                lock.unlock()
                let delay = TimeAmount.milliseconds(Int64(max(0, min(seconds, 86_400)) * 1000))
                MultiThreadedEventLoopGroup.singleton.any().scheduleTask(in: delay) { [self] in
                    lock.lock()
                    guard generation == myGeneration, let w = waiter else { lock.unlock(); return }
                    waiter = nil
                    lock.unlock()
                    w.resume(returning: false)
                }
            }
        } onCancel: {
            self.fire(stopping: true)
        }
        if fired { consumePending() }
        return fired
    }
}
