/// The bytes of one validated document plus what is needed to read them. Shared by every
/// `FleeceValue` taken from the document, which keeps it alive.
// @unchecked because the bytes behind `base` are written once at init and only read afterwards.
final class FleeceStorage: @unchecked Sendable {
    let base: UnsafeMutablePointer<UInt8>
    let count: Int
    let sharedKeys: SharedKeys?
    /// Snapshot of the shared keys taken at validation time: every integer key in the
    /// document is below its count (codes are never removed, so it stays correct).
    let keyStrings: [String]

    init(copying bytes: UnsafeRawBufferPointer, sharedKeys: SharedKeys?) {
        count = bytes.count
        base = .allocate(capacity: Swift.max(bytes.count, 2))
        if let src = bytes.baseAddress, bytes.count > 0 {
            UnsafeMutableRawPointer(base).copyMemory(from: src, byteCount: bytes.count)
        }
        self.sharedKeys = sharedKeys
        keyStrings = sharedKeys?.allKeys() ?? []
    }

    deinit { base.deallocate() }

    /// The key string of shared-key code `code` (validated to exist).
    @inline(__always)
    func key(forCode code: Int) -> String { keyStrings[code] }
}

/// A Fleece document read from untrusted bytes (cbl2-format.md §6): the whole buffer is
/// validated once on creation, after which ``root`` and everything reached from it are read
/// in place without copying or re-checking.
///
/// Documents whose dicts use integer (shared) keys need the ``SharedKeys`` they were encoded
/// with; a document with an integer key and no SharedKeys, or with a code the table does not
/// have, is rejected.
// @unchecked because it holds a `FleeceStorage` (immutable bytes) and an offset.
package struct FleeceDocument: @unchecked Sendable {
    let storage: FleeceStorage
    let rootOffset: Int

    /// Validates `bytes` and keeps a copy.
    ///
    /// - Throws: ``FleeceError/invalidData(_:)`` for anything that is not well-formed Fleece.
    package init(bytes: [UInt8], sharedKeys: SharedKeys? = nil) throws {
        let storage = bytes.withUnsafeBytes { FleeceStorage(copying: $0, sharedKeys: sharedKeys) }
        try self.init(storage: storage)
    }

    /// Validates the bytes at `bytes` and keeps a copy (e.g. straight from an SQLite blob).
    package init(bytes: UnsafeRawBufferPointer, sharedKeys: SharedKeys? = nil) throws {
        try self.init(storage: FleeceStorage(copying: bytes, sharedKeys: sharedKeys))
    }

    private init(storage: FleeceStorage) throws {
        self.storage = storage
        rootOffset = try FleeceValidator.validate(
            UnsafePointer(storage.base), count: storage.count,
            sharedKeyCount: storage.sharedKeys == nil ? nil : storage.keyStrings.count)
    }

    /// The top-level value (usually a dict).
    package var root: FleeceValue { FleeceValue(storage: storage, offset: rootOffset) }

    /// The shared keys integer dict keys are resolved with.
    package var sharedKeys: SharedKeys? { storage.sharedKeys }

    /// The document's bytes.
    package var bytes: [UInt8] { [UInt8](UnsafeBufferPointer(start: storage.base, count: storage.count)) }
}
