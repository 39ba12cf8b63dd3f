import CouchbaseLite
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NIOPosix

/// Adapts Hummingbird requests to the synchronous `RESTRouter` (run on worker threads, since
/// database calls block) and runs waiting changes feeds asynchronously.
struct ListenerResponder: HTTPResponder {
    typealias Context = BasicRequestContext
    let router: RESTRouter

    func respond(to request: Request, context: Context) async throws -> Response {
        var response = await answer(request)
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

    private func answer(_ request: Request) async -> Response {
        let maxBody = router.state.maxBodySize
        if let length = request.headers[.contentLength].flatMap(Int.init), length > maxBody {
            return Self.response(.error(Self.tooLarge(maxBody)))
        }
        let bytes: [UInt8]
        do {
            var buffer = try await request.body.collect(upTo: maxBody)
            bytes = buffer.readBytes(length: buffer.readableBytes) ?? []
        } catch is NIOTooManyBytesError {
            return Self.response(.error(Self.tooLarge(maxBody)))
        } catch {
            return Self.response(.error(RESTError(400, "bad_request", "Could not read the request body")))
        }

        let syncRequest: RESTRequest
        do {
            let (segments, query, nonUTF8) = try RESTRequest.parseTargetMarkingNonUTF8(request.head.path ?? "/")
            var headers: [String: String] = [:]
            for field in request.headers {
                let name = field.name.canonicalName
                headers[name] = headers[name].map { $0 + ", " + field.value } ?? field.value
            }
            // HTTPTypes keeps `Host` as the request's authority, not as a header field.
            if headers["host"] == nil, let authority = request.head.authority { headers["host"] = authority }
            // `X-HTTP-Method-Override` lets a client limited to GET and POST send any method,
            // on POST only (CouchDB's couch_httpd).
            var method = request.method.rawValue
            if method == "POST", let override = headers["x-http-method-override"], !override.isEmpty {
                method = override.uppercased()
            }
            syncRequest = RESTRequest(method: method, segments: segments, query: query,
                                      headers: headers, body: bytes, nonUTF8Segments: nonUTF8)
        } catch {
            return Self.response(.error(RESTError.from(error)))
        }

        let router = self.router
        guard let outcome = await router.state.onWorker({ router.handle(syncRequest) }) else {
            return Self.response(.error(RESTError(503, "service_unavailable", "The listener is stopping")))
        }
        switch outcome {
        case .response(let response):
            return Self.response(response)
        case .changesFeed(let feed):
            return ChangesFeedRunner(router: router, feed: feed).response()
        case .stream(let stream):
            return stream.response(state: router.state)
        }
    }

    static func tooLarge(_ limit: Int) -> RESTError {
        RESTError(413, "too_large", "The request entity is too large (limit \(limit) bytes)")
    }

    static func response(_ r: RESTResponse) -> Response {
        var fields = HTTPFields()
        for (name, value) in r.headers {
            if let fieldName = HTTPField.Name(name) { fields.append(HTTPField(name: fieldName, value: value)) }
        }
        var buffer = ByteBufferAllocator().buffer(capacity: r.body.count)
        buffer.writeBytes(r.body)
        return Response(status: HTTPResponse.Status(code: r.status), headers: fields,
                        body: ResponseBody(byteBuffer: buffer))
    }
}

/// Wakes a waiting changes feed when its database changes (or the listener stops).
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
