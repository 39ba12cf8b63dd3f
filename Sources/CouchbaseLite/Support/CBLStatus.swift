import Foundation

/// The error domain 1.x used for HTTP-style status codes.
public let CBLHTTPErrorDomain = "CBLHTTP"

/// An error carrying a 1.x status code (400, 401, 403, 404, 406, 409, 412, 500, …) and a message.
///
/// Bridges to `NSError` with domain ``CBLHTTPErrorDomain`` and `code` = the status, so code
/// written for 1.x (`(error as NSError).code == 409`) keeps working.
public struct CBLError: Error, CustomNSError, LocalizedError, CustomStringConvertible, Sendable, Equatable {
    /// The HTTP-style status code.
    public let code: Int
    /// A human-readable reason.
    public let message: String

    public init(_ code: Int, _ message: String) {
        self.code = code
        self.message = message
    }

    public static var errorDomain: String { CBLHTTPErrorDomain }
    public var errorCode: Int { code }
    public var errorUserInfo: [String: Any] { [NSLocalizedDescriptionKey: message, NSLocalizedFailureReasonErrorKey: message] }
    public var errorDescription: String? { message }
    public var description: String { "CBLError \(code): \(message)" }

    // Common statuses, named as 1.x's CBLStatus constants.
    static func badRequest(_ m: String) -> CBLError { CBLError(400, m) }
    static func unauthorized(_ m: String) -> CBLError { CBLError(401, m) }
    static func forbidden(_ m: String) -> CBLError { CBLError(403, m) }
    static func notFound(_ m: String = "not found") -> CBLError { CBLError(404, m) }
    static func notAcceptable(_ m: String) -> CBLError { CBLError(406, m) }
    static func conflict(_ m: String = "Document update conflict") -> CBLError { CBLError(409, m) }
    static func preconditionFailed(_ m: String) -> CBLError { CBLError(412, m) }
    static func badJSON(_ m: String) -> CBLError { CBLError(400, "Invalid JSON: " + m) }
    static func badID(_ m: String) -> CBLError { CBLError(400, m) }
    static func badAttachment(_ m: String) -> CBLError { CBLError(400, "Invalid attachment: " + m) }
    static func dbError(_ m: String) -> CBLError { CBLError(500, m) }
    static func notImplemented(_ m: String) -> CBLError { CBLError(501, m) }
}
