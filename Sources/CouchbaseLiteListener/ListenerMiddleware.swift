import CouchbaseLite
import Foundation
import HTTPTypes
import Hummingbird

/// What the listener's middleware leaves in a request context for what runs after it: the
/// request parsed once (``ListenerParseMiddleware``), with the user ``ListenerAccessMiddleware``
/// let through. HTTP requests carry a ``ListenerRequestContext``, WebSocket upgrades a
/// ``ChangesWebSocketContext``; both pass through the same middleware.
protocol ListenerContext: RequestContext {
    /// The request's method, target and headers as the handlers see them (no body yet), with
    /// `user` set once allowed; ``RESTRequest/unparsed`` until ``ListenerParseMiddleware`` ran.
    var restRequest: RESTRequest { get set }
    /// Why the target could not be parsed, if it could not: the responder's `400`.
    var malformedTarget: RESTError? { get set }
    /// The client's IP address, when the connection has one.
    var peerAddress: String? { get }
}

/// The listener's request context: Hummingbird's, plus what its middleware found out.
struct ListenerRequestContext: ListenerContext {
    var coreContext: CoreRequestContextStorage
    var restRequest = RESTRequest.unparsed
    var malformedTarget: RESTError?
    let peerAddress: String?

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        peerAddress = source.channel.remoteAddress?.ipAddress
    }
}

/// The first middleware: the request's target split and percent-decoded, and its headers
/// gathered, once; everything after reads ``ListenerContext/restRequest``.
struct ListenerParseMiddleware<Context: ListenerContext>: RouterMiddleware {
    /// Where `[chttpd] decode_plus_to_space` is read.
    let configuration: ListenerConfiguration

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        do {
            context.restRequest = try RESTRequest(head: request.head, plusAsSpace: configuration.settings.decodePlusToSpace)
            context.restRequest.peerAddress = context.peerAddress
        } catch {
            context.malformedTarget = RESTError.from(error)
        }
        return try await next(request, context)
    }
}

/// Asks ``ListenerAccessPolicy`` about every request before its body is read (an upload's
/// too): a `401` or `403` answers it, else the user goes on in the context. A target that does
/// not parse goes on to the responder's `400`.
struct ListenerAccessMiddleware<Context: ListenerContext>: RouterMiddleware {
    let policy: ListenerAccessPolicy

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard context.malformedTarget == nil else { return try await next(request, context) }
        let decision = await policy.decide(context.restRequest)
        guard case .allow(let access, let setCookie) = decision else {
            return ListenerResponder.response(decision.refusal ?? .error(RESTError(500, "error", "refused")))
        }
        var context = context
        context.restRequest.access = access
        var response = try await next(request, context)
        // A session cookie past a tenth of its life is renewed with the answer (CouchDB's refresh).
        if let setCookie, response.headers[.setCookie] == nil { response.headers[.setCookie] = setCookie }
        return response
    }
}

/// `HEAD`: the GET answer's status and headers, its length as `Content-Length`, no body (a
/// streamed body is never produced).
struct ListenerHeadMiddleware: RouterMiddleware {
    typealias Context = ListenerRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response = try await next(request, context)
        guard context.malformedTarget == nil, context.restRequest.method == "HEAD" else { return response }
        let length = response.headers[.contentLength] ?? response.body.contentLength.map(String.init)
        response.body = ResponseBody()
        response.headers[.contentLength] = length
        return response
    }
}

/// The middleware, then ``ListenerResponder``: what the listener's `Application` runs.
struct ListenerApplicationResponder: HTTPResponder {
    typealias Context = ListenerRequestContext
    private let parse: ListenerParseMiddleware<Context>
    private let access: ListenerAccessMiddleware<Context>
    private let head = ListenerHeadMiddleware()
    private let responder: ListenerResponder

    init(router: RESTRouter) {
        parse = ListenerParseMiddleware(configuration: router.state.configuration)
        access = ListenerAccessMiddleware(policy: ListenerAccessPolicy(state: router.state))
        responder = ListenerResponder(router: router)
    }

    func respond(to request: Request, context: Context) async throws -> Response {
        try await parse.handle(request, context: context) { request, context in
            try await access.handle(request, context: context) { request, context in
                try await head.handle(request, context: context) { request, context in
                    try await responder.respond(to: request, context: context)
                }
            }
        }
    }
}

extension RESTRequest {
    /// A placeholder until ``ListenerParseMiddleware`` parsed the request (no allocation).
    static let unparsed = RESTRequest(method: "", segments: [], query: [:], headers: [:], body: [])

    /// The request's method, target and headers as the handlers see them (no body yet).
    init(head: HTTPRequest, plusAsSpace: Bool = false) throws {
        let (segments, query, nonUTF8) = try RESTRequest.parseTargetMarkingNonUTF8(head.path ?? "/", plusAsSpace: plusAsSpace)
        var headers: [String: String] = [:]
        for field in head.headerFields {
            let name = field.name.canonicalName
            headers[name] = headers[name].map { $0 + ", " + field.value } ?? field.value
        }
        // HTTPTypes keeps `Host` as the request's authority, not as a header field.
        if headers["host"] == nil, let authority = head.authority { headers["host"] = authority }
        // `X-HTTP-Method-Override` lets a client limited to GET and POST send any method,
        // on POST only (CouchDB's couch_httpd).
        var method = head.method.rawValue
        if method == "POST", let override = headers["x-http-method-override"], !override.isEmpty {
            method = override.uppercased()
        }
        self.init(method: method, segments: segments, query: query, headers: headers, body: [],
                  nonUTF8Segments: nonUTF8)
    }
}
