import CouchbaseLite
import Foundation
import HTTPTypes
import Hummingbird

/// The listener's request context: Hummingbird's, plus what its middleware found out.
struct ListenerRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    /// The user the request's credentials name (``ListenerAuthenticationMiddleware``).
    var user: String?
    /// True once the middleware checked credentials and read-only mode, so the router need not.
    var checked = false

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
    }
}

/// HTTP Basic credentials or a session cookie, when the listener has passwords: a `401` before
/// anything else (and before an upload's body is read), else the user goes on in the context.
struct ListenerAuthenticationMiddleware: RouterMiddleware {
    typealias Context = ListenerRequestContext
    let router: RESTRouter

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        // A target that does not parse is the responder's 400.
        guard var head = try? ListenerResponder.restRequest(request) else { return try await next(request, context) }
        if let denied = router.authenticate(&head) { return ListenerResponder.response(denied) }
        var context = context
        context.user = head.user
        context.checked = true
        return try await next(request, context)
    }
}

/// `--readonly`: every request that could change a database is `403` (RESTRouter.isReadOnlySafe).
struct ListenerReadOnlyMiddleware: RouterMiddleware {
    typealias Context = ListenerRequestContext
    let state: ListenerState

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if state.readOnly, let head = try? ListenerResponder.restRequest(request), !RESTRouter.isReadOnlySafe(head) {
            return ListenerResponder.response(.error(RESTError(403, "forbidden", "The listener is read-only")))
        }
        return try await next(request, context)
    }
}

/// `HEAD`: the GET answer's status and headers, its length as `Content-Length`, no body (a
/// streamed body is never produced).
struct ListenerHeadMiddleware: RouterMiddleware {
    typealias Context = ListenerRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response = try await next(request, context)
        guard (try? ListenerResponder.restRequest(request))?.method == "HEAD" else { return response }
        let length = response.headers[.contentLength] ?? response.body.contentLength.map(String.init)
        response.body = ResponseBody()
        response.headers[.contentLength] = length
        return response
    }
}

/// The middleware, then ``ListenerResponder``: what the listener's `Application` runs.
struct ListenerApplicationResponder: HTTPResponder {
    typealias Context = ListenerRequestContext
    private let authentication: ListenerAuthenticationMiddleware
    private let readOnly: ListenerReadOnlyMiddleware
    private let head = ListenerHeadMiddleware()
    private let responder: ListenerResponder

    init(router: RESTRouter) {
        authentication = ListenerAuthenticationMiddleware(router: router)
        readOnly = ListenerReadOnlyMiddleware(state: router.state)
        responder = ListenerResponder(router: router)
    }

    func respond(to request: Request, context: Context) async throws -> Response {
        try await authentication.handle(request, context: context) { request, context in
            try await readOnly.handle(request, context: context) { request, context in
                try await head.handle(request, context: context) { request, context in
                    try await responder.respond(to: request, context: context)
                }
            }
        }
    }
}
