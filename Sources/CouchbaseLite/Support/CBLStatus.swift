import Foundation
import SQLiteKit

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
    /// 1.x `kCBLStatusInsufficientStorage`: the disk (or quota) is full.
    static func insufficientStorage(_ m: String) -> CBLError { CBLError(507, "Insufficient storage: " + m) }

    /// An SQLite failure as 1.x reported it: 507 for a full disk (`SQLITE_FULL`, or an I/O error
    /// with ENOSPC, as 1.x's CBL_SQLiteStorage mapped them), otherwise a database error (500).
    static func database(_ e: SQLiteError) -> CBLError {
        e.isDiskFull ? insufficientStorage("the disk is full (\(e.message))") : dbError(e.description)
    }

    /// A file write that failed: 507 when the disk is full, otherwise `fallback` (500 by default).
    static func fileWrite(_ error: Error, _ what: String) -> CBLError {
        if let e = error as? CBLError { return e }
        if isOutOfSpace(error) { return insufficientStorage("the disk is full (\(what))") }
        return dbError("\(what) failed: \(error.localizedDescription)")
    }

    /// Whether a Foundation or POSIX error is ENOSPC/EDQUOT (SQLiteKit's ``isOutOfSpaceError(_:)``).
    static func isOutOfSpace(_ error: Error) -> Bool { isOutOfSpaceError(error) }
}
