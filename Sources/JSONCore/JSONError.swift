/// An error thrown by the JSONCore reader or writer.
///
/// `offset` is the byte offset in the input at which a parse error was detected; it is `nil`
/// for encoding errors (values that cannot be represented as JSON).
package struct JSONError: Error, CustomStringConvertible, Sendable {
    package let message: String
    package let offset: Int?

    package init(_ message: String, offset: Int? = nil) {
        self.message = message
        self.offset = offset
    }

    package var description: String {
        if let offset {
            return "JSON error at byte \(offset): \(message)"
        }
        return "JSON error: \(message)"
    }
}
