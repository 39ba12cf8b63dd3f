/// A document looked up by subscript (`collection["id"]`, `database["id"]`).
public struct DocumentFragment: @unchecked Sendable {
    /// The document, or nil when it does not exist or is deleted.
    public let document: Document?

    init(_ document: Document?) {
        self.document = document
    }

    /// Whether the document exists.
    public var exists: Bool { document != nil }

    /// The value of the document's property `key` (nil when absent, or no document).
    public subscript(key: String) -> Any? { document?.value(forKey: key) }
}
