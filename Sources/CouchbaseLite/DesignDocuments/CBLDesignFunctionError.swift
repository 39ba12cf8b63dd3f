import Foundation

/// A design-document function that cannot run or did not finish: its source does not compile,
/// no compiler for its language is registered where one is required, it was stopped at its time
/// or memory limit, or its reduce output grows with its input. The listener answers it in CouchDB's
/// words (`compilation_error`, `unknown_query_language`, `os_process_error`,
/// `reduce_overflow_error`) without reading the message.
public struct CBLDesignFunctionError: Error, CustomNSError, LocalizedError, CustomStringConvertible, Sendable, Equatable {
    /// Why the function cannot run.
    public enum Kind: Sendable, Equatable {
        /// The source does not compile (CouchDB's `compilation_error`, 400).
        case compilation
        /// No compiler is registered for the function's language, or its engine is not installed (CouchDB's
        /// `unknown_query_language`, 500).
        case noCompiler
        /// The function was stopped at its time or memory limit (CouchDB's `os_process_error`, 500).
        case stopped
        /// A reduce function's output does not shrink as its input grows (CouchDB's `reduce_limit`:
        /// `reduce_overflow_error`, answered as the row's error).
        case reduceOverflow
    }

    /// Why the function cannot run.
    public let kind: Kind
    /// A human-readable reason naming the function.
    public let message: String

    /// An error of `kind` with `message`.
    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    /// The HTTP-style status CouchDB answers: 400 for a source that does not compile, 500 otherwise.
    public var code: Int { kind == .compilation ? 400 : 500 }

    public static var errorDomain: String { CBLHTTPErrorDomain }
    public var errorCode: Int { code }
    public var errorUserInfo: [String: Any] { [NSLocalizedDescriptionKey: message, NSLocalizedFailureReasonErrorKey: message] }
    public var errorDescription: String? { message }
    public var description: String { message }
}
