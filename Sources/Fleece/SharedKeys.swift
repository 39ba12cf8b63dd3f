import Foundation
import JSONCore

/// LiteCore's per-database table of document keys that are stored as small integers
/// (cbl2-format.md §6.7). Index = integer code. Persisted in `kv_info['SharedKeys']` as a
/// Fleece array of strings (see ``stateData()``).
///
/// Codes are assigned in first-encounter order and are never reused or removed, which is
/// what lets encoders and documents cache them. Thread-safe: all state is behind a lock.
// @unchecked because all mutable state is only touched under `lock`.
package final class SharedKeys: @unchecked Sendable {
    /// LiteCore's `SharedKeys::kMaxCount`: no code is assigned once the table has this many keys.
    package static let maxCount = 2048
    /// LiteCore's `kDefaultMaxKeyLength`: longer keys stay strings.
    package static let maxKeyLength = 16

    private let lock = NSLock()
    private var strings: [String] = []
    private var codes: [String: Int] = [:]
    /// True if the loaded table holds a key that `encodeKey` would never have added (written
    /// by another implementation). Only set by `init(stateData:)`, so it never changes later;
    /// encoders use it to skip the lock for keys that cannot be in the table.
    let containsIneligibleKeys: Bool

    /// An empty table.
    package init() {
        containsIneligibleKeys = false
    }

    /// Decodes a `kv_info` 'SharedKeys' record: a Fleece array of strings.
    ///
    /// - Throws: ``FleeceError/invalidData(_:)`` if the data is not valid Fleece, not an array of
    ///   strings, holds a duplicate, or has more than ``maxCount`` entries.
    package init(stateData: [UInt8]) throws {
        let doc = try FleeceDocument(bytes: stateData)
        guard let array = doc.root.arrayValue else {
            throw FleeceError.invalidData("SharedKeys record is not an array")
        }
        guard array.count <= SharedKeys.maxCount else {
            throw FleeceError.invalidData("SharedKeys record has \(array.count) keys (max \(SharedKeys.maxCount))")
        }
        var ineligible = false
        strings.reserveCapacity(array.count)
        for value in array {
            guard let s = value.stringValue,
                  value.withUTF8({ JSONLexer.isValidUTF8($0.baseAddress!, $0.count) }) == true else {
                throw FleeceError.invalidData("SharedKeys record holds a non-string or invalid UTF-8")
            }
            guard codes[s] == nil else {
                throw FleeceError.invalidData("SharedKeys record holds \"\(s)\" twice")
            }
            codes[s] = strings.count
            strings.append(s)
            var copy = s
            if !copy.withUTF8({ SharedKeys.isEligible($0.baseAddress, $0.count) }) { ineligible = true }
        }
        containsIneligibleKeys = ineligible
    }

    /// The number of keys in the table.
    package var count: Int {
        lock.lock(); defer { lock.unlock() }
        return strings.count
    }

    /// The key with integer code `code`, or nil if there is none.
    package func string(forCode code: Int) -> String? {
        lock.lock(); defer { lock.unlock() }
        return code >= 0 && code < strings.count ? strings[code] : nil
    }

    /// The existing code of `key`; never adds it.
    package func code(for key: String) -> Int? {
        lock.lock(); defer { lock.unlock() }
        return codes[key]
    }

    /// The code of `key`, adding it if it is not in the table yet and is eligible
    /// (≤ 16 bytes of `[A-Za-z0-9_-]`, table below 2048 keys); nil if it must stay a string.
    package func encodeKey(_ key: String) -> Int? {
        lock.lock(); defer { lock.unlock() }
        return locked_encode(key)
    }

    /// The Fleece array-of-strings record for `kv_info['SharedKeys']`, encoded without shared
    /// keys (§6.7).
    package func stateData() -> [UInt8] {
        let keys = allKeys()
        var encoder = FleeceEncoder()
        encoder.beginArray(reserve: keys.count)
        for key in keys { encoder.writeString(key) }
        encoder.endArray()
        // Cannot fail: one well-formed array of strings.
        return (try? encoder.finish()) ?? []
    }

    /// Every key, in code order (a snapshot).
    package func allKeys() -> [String] {
        lock.lock(); defer { lock.unlock() }
        return strings
    }

    // MARK: Internal

    /// LiteCore's `SharedKeys::couldAdd` minus the count check: at most 16 bytes, each ASCII
    /// alphanumeric, '_' or '-'. (Like LiteCore, the empty key qualifies.)
    @inline(__always)
    static func isEligible(_ p: UnsafePointer<UInt8>?, _ n: Int) -> Bool {
        guard n <= maxKeyLength else { return false }
        guard let p else { return true }
        for i in 0..<n {
            let c = p[i]
            let isAlnum = (c &- 0x30) < 10 || ((c | 0x20) &- 0x61) < 26
            if !isAlnum && c != 0x5F && c != 0x2D { return false }
        }
        return true
    }

    /// `encodeKey` for raw UTF-8 (the encoder's cache-miss path).
    func encodeKey(bytes p: UnsafePointer<UInt8>?, count n: Int) -> Int? {
        let key = n == 0 ? "" : String(decoding: UnsafeBufferPointer(start: p, count: n), as: UTF8.self)
        lock.lock(); defer { lock.unlock() }
        return locked_encode(key)
    }

    private func locked_encode(_ key: String) -> Int? {
        if let code = codes[key] { return code }
        guard strings.count < SharedKeys.maxCount else { return nil }
        var copy = key
        guard copy.withUTF8({ SharedKeys.isEligible($0.baseAddress, $0.count) }) else { return nil }
        let code = strings.count
        strings.append(key)
        codes[key] = code
        return code
    }
}
