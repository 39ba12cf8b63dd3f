/// A dict key prepared for many look-ups (Fleece's `Dict::key`): its UTF-8 bytes kept, and its
/// shared-key code resolved once per ``SharedKeys`` instead of on every look-up. A key that had
/// no code is resolved again when a document knows more shared keys than there were then (codes
/// are never reassigned, so a resolved code stays valid).
///
/// Not thread-safe: use one instance from one thread at a time (e.g. per query run).
// @unchecked because NOT thread-safe (it caches its code): one instance is used by one thread at a time (one query run); Sendable only so it can be created on one thread and used on another.
package final class FleeceKey: @unchecked Sendable {
    /// The key.
    package let string: String
    let utf8: [UInt8]
    private var code: Int?
    private var resolvedKeys: SharedKeys?
    private var resolvedCount = -1

    package init(_ string: String) {
        self.string = string
        utf8 = Array(string.utf8)
    }

    /// The code to search `storage` with, nil if the key is not shared in its table.
    @inline(__always)
    func code(in storage: FleeceStorage) -> Int? {
        guard let sk = storage.sharedKeys else { return nil }
        if sk !== resolvedKeys || (code == nil && storage.keyStrings.count > resolvedCount) {
            let count = sk.count
            code = sk.code(for: string)
            resolvedKeys = sk
            resolvedCount = count
        }
        return code
    }
}

extension FleeceDict {
    /// The value for `key`, or nil: the same answer as `self[key.string]`, without hashing or
    /// locking once the key is resolved.
    package subscript(key: FleeceKey) -> FleeceValue? {
        if let code = key.code(in: storage), code < storage.keyStrings.count, let i = find(code: code) {
            return FleeceValue(storage: storage, offset: valueOffset(i))
        }
        let found = key.utf8.withUnsafeBufferPointer { find(utf8: $0) }
        return found.map { FleeceValue(storage: storage, offset: valueOffset($0)) }
    }
}

extension FleeceDocument {
    /// Calls `body` with the document's bytes (no copy; valid only inside `body`).
    package func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(start: storage.base, count: storage.count))
    }
}
