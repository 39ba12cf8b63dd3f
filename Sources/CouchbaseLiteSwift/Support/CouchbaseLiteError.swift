import Foundation
import SQLiteKit

/// An error from the 2.x API or the 2.x storage, with LiteCore's error code (`CBLError.Code` in
/// Couchbase Lite 2.x) and a message that says what went wrong and where.
public struct CouchbaseLiteError: Error, LocalizedError, CustomStringConvertible, CustomNSError, Sendable, Equatable {
    /// LiteCore's error codes (C4ErrorCode order, as 2.x's `CBLError` exposes them).
    public enum Code: Int, Sendable {
        case assertionFailed = 1, unimplemented, unsupportedEncryption, badRevisionID, corruptRevisionData,
             notOpen, notFound, conflict, invalidParameter, unexpectedError, cantOpenFile, ioError,
             memoryError, notWriteable, corruptData, busy, notInTransaction, transactionNotClosed,
             unsupported, notADatabaseFile, wrongFormat, crypto, invalidQuery, missingIndex,
             invalidQueryParam, remoteError, databaseTooOld, databaseTooNew, badDocID, cantUpgradeDatabase
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public static var errorDomain: String { "CouchbaseLite" }
    public var errorCode: Int { code.rawValue }
    public var errorUserInfo: [String: Any] { [NSLocalizedDescriptionKey: message] }
    public var errorDescription: String? { message }
    public var description: String { "CouchbaseLiteError(\(code)): \(message)" }

    /// A write refused for lack of space. LiteCore reports SQLITE_FULL as POSIX ENOSPC; this
    /// API has LiteCore's codes only, so it is `.ioError` with a message that says so.
    static func diskFull(_ detail: String) -> CouchbaseLiteError {
        CouchbaseLiteError(.ioError, "Insufficient storage: the disk is full (\(detail))")
    }

    /// Whether a Foundation or POSIX error is ENOSPC/EDQUOT (SQLiteKit's ``isOutOfSpaceError(_:)``).
    static func isOutOfSpace(_ error: Error) -> Bool { isOutOfSpaceError(error) }
}
