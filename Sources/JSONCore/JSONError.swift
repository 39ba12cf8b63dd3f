/// An error thrown by the JSONCore reader or writer.
///
/// `offset` is the byte offset in the input at which a parse error was detected; it is `nil`
/// for encoding errors (values that cannot be represented as JSON).
public struct JSONError: Error, CustomStringConvertible, Sendable {
    public let message: String
    public let offset: Int?

    public init(_ message: String, offset: Int? = nil) {
        self.message = message
        self.offset = offset
    }

    public var description: String {
        if let offset {
            return "JSON error at byte \(offset): \(message)"
        }
        return "JSON error: \(message)"
    }
}
