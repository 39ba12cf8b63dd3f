import Foundation

/// Low-level appending JSON writer producing compact output.
///
/// With `sortedKeys: true` (the default) the output is Couchbase Lite 1.x canonical JSON,
/// byte-exact with iOS `[CBJSONEncoder canonicalEncoding:]` (yajl-based):
///   * no whitespace at all;
///   * object keys sorted by UTF-16 code units (`-compare:options:NSLiteralSearch`), at
///     every level;
///   * strings: `"` and `\` are escaped, control characters below U+0020 as `\b \f \n \r \t`
///     or else `\u00XX` with UPPERCASE hex digits (yajl `CharToHex` uses "0123456789ABCDEF");
///     everything else -- `/`, DEL (U+007F), U+2028/U+2029 and all other non-ASCII
///     characters -- is written as raw UTF-8 (yajl only escapes bytes below 0x20, and CBL
///     does not enable yajl_gen_escape_solidus);
///   * numbers as described in NumberFormatting.swift; `true`, `false`, `null` literals.
///
/// The writer has value semantics (copy-on-write storage).
// @unchecked because a copy-on-write value: its storage is copied before a shared one is written.
/// JSON text written as it is where a value is expected (the caller vouches that it is valid JSON):
/// a stored view key or value keeps its exact text, object member order included.
package struct JSONFragment: Sendable {
    package let bytes: [UInt8]
    package init(_ bytes: [UInt8]) { self.bytes = bytes }
}

package struct JSONWriter: @unchecked Sendable {
    /// Containers nested deeper than this are rejected (guards against stack exhaustion),
    /// the same limit as the parser's.
    static let maxDepth = 512

    /// Owns the output memory; `ptr` always equals `storage.base`.
    private final class Storage {
        let base: UnsafeMutablePointer<UInt8>
        init(capacity: Int) { base = .allocate(capacity: capacity) }
        deinit { base.deallocate() }
    }

    private var storage: Storage
    private var ptr: UnsafeMutablePointer<UInt8>
    private var count = 0
    /// The bytes the writer can hold before it allocates more.
    package private(set) var capacity: Int

    package init(capacity: Int = 256) {
        let cap = Swift.max(capacity, 16)
        storage = Storage(capacity: cap)
        ptr = storage.base
        self.capacity = cap
    }

    /// The bytes written so far.
    package var bytes: [UInt8] {
        [UInt8](UnsafeBufferPointer(start: ptr, count: count))
    }

    /// The number of bytes written so far.
    package var byteCount: Int { count }

    /// Calls `body` with the bytes written so far, without copying them. The buffer is valid
    /// only inside `body`.
    package func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withExtendedLifetime(storage) {
            try body(UnsafeRawBufferPointer(start: ptr, count: count))
        }
    }

    /// Forgets what was written, keeping the memory for the next value (a writer reused for
    /// many values allocates only when one is larger than every earlier one).
    package mutating func removeAll() {
        count = 0
    }

    /// Drops everything written after the first `byteCount` bytes.
    package mutating func truncate(to byteCount: Int) {
        // Kept: callers pass a `count` they read earlier; growing `count` would expose uninitialized bytes.
        precondition(byteCount >= 0 && byteCount <= count, "truncate(to:) beyond the written bytes")
        count = byteCount
    }

    /// Appends `value` as JSON. If it throws, nothing is appended.
    package mutating func write(_ value: Any, sortedKeys: Bool = true) throws {
        makeUnique()
        let mark = count
        do {
            try writeValue(value, sorted: sortedKeys, depth: 0)
        } catch {
            count = mark
            throw error
        }
    }

    /// Writes an object, omitting top-level keys for which `skip` returns true (nil: none).
    /// If it throws, nothing is appended.
    package mutating func writeObject(_ dict: [String: Any], sortedKeys: Bool = true,
                                     skippingKey skip: ((String) -> Bool)?) throws {
        makeUnique()
        let mark = count
        do {
            if let skip {
                try writeDict(dict, sorted: sortedKeys, depth: 0, skipping: true, skip: skip)
            } else {
                try writeDict(dict, sorted: sortedKeys, depth: 0, skipping: false, skip: JSONWriter.neverSkip)
            }
        } catch {
            count = mark
            throw error
        }
    }

    /// Writes an object with its members in the order `order` gives (the order of the text the
    /// object was read from; see ``JSONMemberOrder``), at every level the order covers; members it
    /// does not list, and values it has no order for, are written sorted. Omits top-level keys for
    /// which `skip` returns true. If it throws, nothing is appended.
    package mutating func writeObject(_ dict: [String: Any], order: JSONMemberOrder,
                                     skippingKey skip: ((String) -> Bool)?) throws {
        makeUnique()
        let mark = count
        do {
            try writeOrdered(dict, order: order, depth: 0, skip: skip ?? JSONWriter.neverSkip)
        } catch {
            count = mark
            throw error
        }
    }

    /// Appends `value` as JSON with its objects' members in the order `order` gives (sorted
    /// where it gives none). If it throws, nothing is appended.
    package mutating func write(_ value: Any, order: JSONMemberOrder?) throws {
        makeUnique()
        let mark = count
        do {
            try writeOrdered(value, order: order, depth: 0, skip: JSONWriter.neverSkip)
        } catch {
            count = mark
            throw error
        }
    }

    private mutating func writeOrdered(_ value: Any, order: JSONMemberOrder?, depth: Int,
                                       skip: (String) -> Bool) throws {
        guard let order, depth < JSONWriter.maxDepth else {
            try writeValue(value, sorted: true, depth: depth)
            return
        }
        switch order {
        case .object(let members):
            guard let dict = value as? [String: Any] else { return try writeValue(value, sorted: true, depth: depth) }
            put(UInt8(ascii: "{"))
            var first = true
            var written = Set<String>()
            func member(_ key: String, _ value: Any, _ order: JSONMemberOrder?) throws {
                if first { first = false } else { put(UInt8(ascii: ",")) }
                putString(key)
                put(UInt8(ascii: ":"))
                try writeOrdered(value, order: order, depth: depth &+ 1, skip: JSONWriter.neverSkip)
            }
            for m in members where !skip(m.name) && !written.contains(m.name) {
                guard let v = dict[m.name] else { continue }
                written.insert(m.name)
                try member(m.name, v, m.order)
            }
            for key in dict.keys.sorted(by: JSON.utf16Precedes) where !written.contains(key) && !skip(key) {
                try member(key, dict[key]!, nil)
            }
            put(UInt8(ascii: "}"))
        case .array(let elements):
            guard let array = value as? [Any] else { return try writeValue(value, sorted: true, depth: depth) }
            put(UInt8(ascii: "["))
            for (i, element) in array.enumerated() {
                if i > 0 { put(UInt8(ascii: ",")) }
                try writeOrdered(element, order: i < elements.count ? elements[i] : nil, depth: depth &+ 1,
                                 skip: JSONWriter.neverSkip)
            }
            put(UInt8(ascii: "]"))
        }
    }

    /// Appends a quoted, escaped JSON string.
    package mutating func writeString(_ s: String) {
        makeUnique()
        putString(s)
    }

    /// Appends one byte verbatim (e.g. a prefix the caller strips before storing the JSON).
    package mutating func writeRawByte(_ byte: UInt8) {
        makeUnique()
        put(byte)
    }

    /// Appends bytes verbatim (the caller is responsible for their being valid JSON).
    package mutating func writeRaw(_ bytes: some Sequence<UInt8>) {
        makeUnique()
        let done: Void? = bytes.withContiguousStorageIfAvailable { put($0) }
        if done == nil {
            for b in bytes { put(b) }
        }
    }

    // MARK: - Buffer

    private mutating func makeUnique() {
        if !isKnownUniquelyReferenced(&storage) {
            let s = Storage(capacity: capacity)
            s.base.update(from: ptr, count: count)
            storage = s
            ptr = s.base
        }
    }

    @inline(never)
    private mutating func grow(_ extra: Int) {
        let newCapacity = Swift.max(capacity &* 2, count &+ extra)
        let s = Storage(capacity: newCapacity)
        s.base.update(from: ptr, count: count)
        storage = s
        ptr = s.base
        capacity = newCapacity
    }

    @inline(__always)
    private mutating func reserve(_ n: Int) {
        if capacity &- count < n { grow(n) }
    }

    @inline(__always)
    private mutating func put(_ b: UInt8) {
        if count == capacity { grow(1) }
        ptr[count] = b
        count &+= 1
    }

    @inline(__always)
    private mutating func put(_ b: UnsafeBufferPointer<UInt8>) {
        let n = b.count
        guard n > 0 else { return }
        reserve(n)
        (ptr + count).update(from: b.baseAddress!, count: n)
        count &+= n
    }

    @inline(__always)
    private mutating func putLiteral(_ s: StaticString) {
        s.withUTF8Buffer { put($0) }
    }

    // MARK: - Values

    private mutating func writeValue(_ value: Any, sorted: Bool, depth: Int) throws {
        // The common exact types are written from the opened existential (no classification
        // enum, no extra copy); everything else goes through the general classifier.
        if try writeExactType(value, sorted: sorted, depth: depth) { return }
        if let fragment = value as? JSONFragment {
            fragment.bytes.withUnsafeBufferPointer { put($0) }
            return
        }
        if type(of: value) is NSNumber.Type, let n = value as? NSNumber {
            try writeKind(ValueClassifier.classify(number: n), sorted: sorted, depth: depth)
            return
        }
        if type(of: value) == NSNull.self {
            putLiteral("null")
            return
        }
        try writeKind(ValueClassifier.classify(value), sorted: sorted, depth: depth)
    }

    /// Writes `v` if its type is exactly one of the common JSON types; false otherwise. Only exact
    /// types are matched: a boxed NSNumber would also answer `as? Int`/`as? Bool`, and a Swift Int
    /// answers `is NSNumber`.
    private mutating func writeExactType<T>(_ v: T, sorted: Bool, depth: Int) throws -> Bool {
        if T.self == String.self {
            putString(unsafeBitCast(v, to: String.self))
        } else if T.self == Int.self {
            putInt(Int64(unsafeBitCast(v, to: Int.self)))
        } else if T.self == [String: Any].self {
            try writeDict(unsafeBitCast(v, to: [String: Any].self), sorted: sorted, depth: depth,
                          skipping: false, skip: JSONWriter.neverSkip)
        } else if T.self == [Any].self {
            try writeArray(unsafeBitCast(v, to: [Any].self), sorted: sorted, depth: depth)
        } else if T.self == Double.self {
            try putFloatingPoint(unsafeBitCast(v, to: Double.self), precision: 16)
        } else if T.self == Bool.self {
            putLiteral(unsafeBitCast(v, to: Bool.self) ? "true" : "false")
        } else if T.self == [String].self {
            // Arrays of one element type (`["a", "b"]` is a [String]): the same output as the
            // [Any] they convert to, without boxing every element.
            try writeTypedArray(unsafeBitCast(v, to: [String].self), depth: depth) { $0.putString($1) }
        } else if T.self == [Int].self {
            try writeTypedArray(unsafeBitCast(v, to: [Int].self), depth: depth) { $0.putInt(Int64($1)) }
        } else if T.self == [Double].self {
            try writeTypedArray(unsafeBitCast(v, to: [Double].self), depth: depth) {
                try $0.putFloatingPoint($1, precision: 16)
            }
        } else if T.self == [Bool].self {
            try writeTypedArray(unsafeBitCast(v, to: [Bool].self), depth: depth) { $0.putLiteral($1 ? "true" : "false") }
        } else if T.self == [[String: Any]].self {
            try writeTypedArray(unsafeBitCast(v, to: [[String: Any]].self), depth: depth) {
                try $0.writeDict($1, sorted: sorted, depth: depth &+ 1, skipping: false, skip: JSONWriter.neverSkip)
            }
        } else {
            return false
        }
        return true
    }

    private mutating func writeKind(_ kind: FoundationValueKind, sorted: Bool, depth: Int) throws {
        switch kind {
        case .string(let s):
            putString(s)
        case .int(let i):
            putInt(i)
        case .uint(let u):
            reserve(NumberFormat.maxLength)
            count &+= NumberFormat.formatUInt(u, into: ptr + count)
        case .double(let d):
            try putFloatingPoint(d, precision: 16)
        case .float(let f):
            try putFloatingPoint(Double(f), precision: 6)
        case .bool(let b):
            putLiteral(b ? "true" : "false")
        case .null:
            putLiteral("null")
        case .object(let d):
            try writeDict(d, sorted: sorted, depth: depth, skipping: false, skip: JSONWriter.neverSkip)
        case .objectOfOptionals(let d):
            try writeDict(d.mapValues { $0 ?? JSONParser.null }, sorted: sorted, depth: depth,
                          skipping: false, skip: JSONWriter.neverSkip)
        case .array(let a):
            try writeArray(a, sorted: sorted, depth: depth)
        case .arrayOfOptionals(let a):
            try writeArray(a.map { $0 ?? JSONParser.null }, sorted: sorted, depth: depth)
        case .invalid(let why):
            throw JSONError(why)
        }
    }

    @inline(__always)
    private mutating func putInt(_ i: Int64) {
        reserve(NumberFormat.maxLength)
        count &+= NumberFormat.formatInt(i, into: ptr + count)
    }

    @inline(__always)
    private mutating func putFloatingPoint(_ d: Double, precision: Int) throws {
        reserve(NumberFormat.maxLength)
        count &+= try NumberFormat.formatFloatingPoint(d, precision: precision, into: ptr + count)
    }

    private mutating func writeArray(_ array: [Any], sorted: Bool, depth: Int) throws {
        try writeTypedArray(array, depth: depth) { try $0.writeValue($1, sorted: sorted, depth: depth &+ 1) }
    }

    /// An array whose elements `writeElement` writes. Arrays of one element type (`["a", "b"]`
    /// is a `[String]`) use it directly, without boxing every element into an `Any`.
    @inline(__always)
    private mutating func writeTypedArray<Element>(_ array: [Element], depth: Int,
                                                   _ writeElement: (inout JSONWriter, Element) throws -> Void) throws {
        guard depth < JSONWriter.maxDepth else {
            throw JSONError("nesting deeper than \(JSONWriter.maxDepth) levels")
        }
        put(UInt8(ascii: "["))
        var first = true
        for item in array {
            if first { first = false } else { put(UInt8(ascii: ",")) }
            try writeElement(&self, item)
        }
        put(UInt8(ascii: "]"))
    }

    private mutating func writeDict(_ dict: [String: Any], sorted: Bool, depth: Int,
                                    skipping: Bool, skip: (String) -> Bool) throws {
        guard depth < JSONWriter.maxDepth else {
            throw JSONError("nesting deeper than \(JSONWriter.maxDepth) levels")
        }
        put(UInt8(ascii: "{"))
        let count = dict.count
        if !sorted || count <= 1 {
            var first = true
            for (key, value) in dict {
                if skipping && skip(key) { continue }
                if first { first = false } else { put(UInt8(ascii: ",")) }
                putString(key)
                put(UInt8(ascii: ":"))
                try writeValue(value, sorted: sorted, depth: depth &+ 1)
            }
        } else {
            try writeSortedMembers(dict, depth: depth, skipping: skipping, skip: skip)
        }
        put(UInt8(ascii: "}"))
    }

    private static func neverSkip(_: String) -> Bool { false }

    /// Writes the members of `dict` in canonical (UTF-16 key) order, between braces the caller
    /// writes. Each `"key":value` is written once, in the dictionary's own order; then the
    /// members are sorted by key (read back from the output) and their bytes moved into place:
    /// one pass over the dictionary, no key strings compared or copied, no second lookup.
    /// An object whose keys needed escaping (a quote, a backslash or a control character: the
    /// bytes written are then not the key's) is rare; it is written again by index.
    private mutating func writeSortedMembers(_ dict: [String: Any], depth: Int,
                                             skipping: Bool, skip: (String) -> Bool) throws {
        let regionStart = count
        let capacity = dict.count
        try withUnsafeTemporaryAllocation(of: WrittenMember.self, capacity: capacity) { membersBuffer in
            try withUnsafeTemporaryAllocation(of: UInt64.self, capacity: capacity) { orderBuffer in
                let members = membersBuffer.baseAddress!, order = orderBuffer.baseAddress!
                var n = 0
                var escaped = false
                for (key, value) in dict {
                    if skipping && skip(key) { continue }
                    if n > 0 { put(UInt8(ascii: ",")) }
                    let start = count
                    if putString(key) { escaped = true }
                    let keyEnd = count &- 1
                    // The sort key: the key's prefix, its low byte replaced by the member's number.
                    let prefix = sortPrefix(UnsafeBufferPointer(start: ptr + (start &+ 1), count: keyEnd &- start &- 1))
                    (order + n).initialize(to: prefix & ~0xFF | UInt64(truncatingIfNeeded: n))
                    put(UInt8(ascii: ":"))
                    try writeValue(value, sorted: true, depth: depth &+ 1)
                    (members + n).initialize(to: WrittenMember(start: start, keyEnd: keyEnd, end: count))
                    n &+= 1
                }
                if escaped {
                    count = regionStart
                    try writeMembersByIndex(dict, depth: depth, skipping: skipping, skip: skip)
                    return
                }
                let written = UnsafeMutableBufferPointer(start: members, count: n)
                let sorted = UnsafeMutableBufferPointer(start: order, count: n)
                if sortMembers(sorted, written) { moveMembers(written, into: sorted, regionStart: regionStart) }
            }
        }
    }

    /// Where one member's bytes are in the output: offsets, as the buffer moves when it grows.
    private struct WrittenMember {
        /// The key's opening quote.
        var start: Int
        /// The key's closing quote.
        var keyEnd: Int
        /// Just past the value.
        var end: Int
    }

    /// The unescaped key of a member, as written.
    @inline(__always)
    private func keyBytes(_ m: WrittenMember) -> UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(start: ptr + (m.start &+ 1), count: m.keyEnd &- m.start &- 1)
    }

    /// Sorts `order` (sort keys whose low byte is a member's number) into the members' numbers in
    /// key order; false if the members were written in that order already. Sort keys that agree
    /// above their low byte (keys sharing their first 7 bytes), and objects of more than 256
    /// members, are ordered by comparing the keys themselves.
    private func sortMembers(_ order: UnsafeMutableBufferPointer<UInt64>,
                             _ members: UnsafeMutableBufferPointer<WrittenMember>) -> Bool {
        let n = order.count
        guard n <= 256 else { return sortMembersByKey(order, members) }
        // Insertion sort: fastest for the handful of keys typical documents have.
        var i = 1
        while i < n {
            let x = order[i]
            var j = i
            while j > 0 && x < order[j &- 1] {
                order[j] = order[j &- 1]
                j &-= 1
            }
            order[j] = x
            i &+= 1
        }
        var moved = false
        var previous: UInt64 = 0
        i = 0
        while i < n {
            let x = order[i]
            if i > 0 && (x ^ previous) < 0x100 { return sortMembersByKey(order, members) }
            previous = x
            order[i] = x & 0xFF
            if x & 0xFF != UInt64(truncatingIfNeeded: i) { moved = true }
            i &+= 1
        }
        return moved
    }

    /// `sortMembers` by comparing prefixes and then whole keys.
    private func sortMembersByKey(_ order: UnsafeMutableBufferPointer<UInt64>,
                                  _ members: UnsafeMutableBufferPointer<WrittenMember>) -> Bool {
        for i in 0..<order.count { order[i] = UInt64(truncatingIfNeeded: i) }
        var order = order
        order.sort { a, b in
            let ka = keyBytes(members[Int(truncatingIfNeeded: a)])
            let kb = keyBytes(members[Int(truncatingIfNeeded: b)])
            let pa = sortPrefix(ka), pb = sortPrefix(kb)
            if pa != pb { return pa < pb }
            return utf16Less(ka, kb)
        }
        return true
    }

    /// Rewrites the members (written from `regionStart` to the end, comma-separated) in `order`
    /// (their numbers), through a copy of the region made past the end of the output.
    private mutating func moveMembers(_ members: UnsafeMutableBufferPointer<WrittenMember>,
                                      into order: UnsafeMutableBufferPointer<UInt64>, regionStart: Int) {
        let length = count &- regionStart
        reserve(length)
        let copy = ptr + count
        copy.update(from: ptr + regionStart, count: length)
        var o = ptr + regionStart
        for i in 0..<order.count {
            if i > 0 {
                o.pointee = UInt8(ascii: ",")
                o += 1
            }
            let m = members[Int(truncatingIfNeeded: order[i])]
            let size = m.end &- m.start
            o.update(from: copy + (m.start &- regionStart), count: size)
            o += size
        }
    }

    /// The members of `dict` in canonical order, found by sorting (key prefix, dictionary index)
    /// pairs and then looked up one by one: for objects whose keys need escaping.
    private mutating func writeMembersByIndex(_ dict: [String: Any], depth: Int,
                                              skipping: Bool, skip: (String) -> Bool) throws {
        try withUnsafeTemporaryAllocation(of: SortEntry.self, capacity: dict.count) { tmp in
            let base = tmp.baseAddress!
            var n = 0
            var idx = dict.startIndex
            let endIdx = dict.endIndex
            while idx != endIdx {
                let key = dict.keys[idx]
                if !(skipping && skip(key)) {
                    (base + n).initialize(to: SortEntry(prefix: sortPrefix(key), index: idx))
                    n &+= 1
                }
                dict.formIndex(after: &idx)
            }
            var entries = UnsafeMutableBufferPointer(start: base, count: n)
            entries.sort { JSONWriter.less($0, $1, dict) }
            for i in 0..<n {
                if i > 0 { put(UInt8(ascii: ",")) }
                let (key, value) = dict[entries[i].index]
                putString(key)
                put(UInt8(ascii: ":"))
                try writeValue(value, sorted: true, depth: depth &+ 1)
            }
        }
    }

    private struct SortEntry {
        var prefix: UInt64
        var index: Dictionary<String, Any>.Index
    }

    private static func less(_ a: SortEntry, _ b: SortEntry, _ dict: [String: Any]) -> Bool {
        if a.prefix != b.prefix { return a.prefix < b.prefix }
        return utf16Precedes(dict.keys[a.index], dict.keys[b.index])
    }

    // MARK: - Strings

    /// Writes `s` quoted and escaped; true if some character needed an escape.
    @inline(__always) @discardableResult
    private mutating func putString(_ s: String) -> Bool {
        if let escaped = s.utf8.withContiguousStorageIfAvailable({ putQuoted($0) }) { return escaped }
        var copy = s
        return copy.withUTF8 { putQuoted($0) }
    }

    /// Writes `s` quoted and escaped; true if some byte needed an escape. The bytes are copied a
    /// word at a time while checked for bytes to escape; only a string that has one (rare) is
    /// written again by the escaping loop.
    @discardableResult
    private mutating func putQuoted(_ s: UnsafeBufferPointer<UInt8>) -> Bool {
        let n = s.count
        guard n > 0, let p = s.baseAddress else {
            putLiteral("\"\"")
            return false
        }
        reserve(n &+ 10)
        let out = UnsafeMutableRawPointer(ptr + count)
        out.storeBytes(of: UInt8(ascii: "\""), as: UInt8.self)
        var special: UInt64
        if n < 8 {
            let word = JSONWriter.loadPartialWord(p, count: n)
            out.storeBytes(of: word, toByteOffset: 1, as: UInt64.self)
            special = JSONWriter.needsEscape(word)
        } else {
            special = 0
            var i = 0
            while i &+ 8 < n {
                let word = UnsafeRawPointer(p + i).loadUnaligned(as: UInt64.self)
                out.storeBytes(of: word, toByteOffset: i &+ 1, as: UInt64.self)
                special |= JSONWriter.needsEscape(word)
                i &+= 8
            }
            // The last 8 bytes, overlapping the previous word.
            let last = UnsafeRawPointer(p + (n &- 8)).loadUnaligned(as: UInt64.self)
            out.storeBytes(of: last, toByteOffset: n &- 7, as: UInt64.self)
            special |= JSONWriter.needsEscape(last)
        }
        guard special == 0 else { return putQuotedEscaping(s) }
        out.storeBytes(of: UInt8(ascii: "\""), toByteOffset: n &+ 1, as: UInt8.self)
        count &+= n &+ 2
        return false
    }

    /// The high bit of each byte of `word` (little-endian) that must be escaped: '"', '\\' or
    /// below 0x20. The lowest flagged byte is always a true match.
    @inline(__always)
    private static func needsEscape(_ word: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let x = UInt64(littleEndian: word)
        let q = x ^ (ones &* 0x22)
        let b = x ^ (ones &* 0x5C)
        return (((x &- ones &* 0x20) & ~x) | ((q &- ones) & ~q) | ((b &- ones) & ~b)) & (ones &* 0x80)
    }

    /// ``putQuoted(_:)`` for a string with bytes to escape.
    @inline(never)
    private mutating func putQuotedEscaping(_ s: UnsafeBufferPointer<UInt8>) -> Bool {
        var escaped = false
        let n = s.count
        // Room for the unescaped string, both quotes and 8 bytes of slack for word stores;
        // escapes reserve more as needed.
        reserve(n &+ 10)
        var o = count
        ptr[o] = UInt8(ascii: "\"")
        o &+= 1
        if n > 0, let p = s.baseAddress {
            var i = 0
            // Copy 8 bytes at a time while scanning them for bytes needing an escape; the final
            // partial word is padded with spaces (bytes past the end are overwritten later).
            while i < n {
                let raw: UInt64 = i &+ 8 <= n
                    ? UnsafeRawPointer(p + i).loadUnaligned(as: UInt64.self)
                    : JSONWriter.loadPartialWord(p + i, count: n &- i)
                UnsafeMutableRawPointer(ptr + o).storeBytes(of: raw, as: UInt64.self)
                let special = JSONWriter.needsEscape(raw)
                if special == 0 {
                    let k = Swift.min(8, n &- i)
                    i &+= k
                    o &+= k
                    continue
                }
                let k = special.trailingZeroBitCount &>> 3
                i &+= k
                o &+= k
                count = o
                escaped = true
                putEscape(p[i])
                i &+= 1
                reserve(n &- i &+ 10)
                o = count
            }
        }
        ptr[o] = UInt8(ascii: "\"")
        count = o &+ 1
        return escaped
    }

    /// The `count` (1...7) bytes at `p` as the first bytes of a word, the rest spaces (a string's
    /// tail, or all of a short key).
    @inline(__always)
    private static func loadPartialWord(_ p: UnsafePointer<UInt8>, count k: Int) -> UInt64 {
        #if _endian(little)
        return loadShortWord(p, count: k) | (0x2020_2020_2020_2020 &<< UInt64(k &* 8))
        #else
        var raw: UInt64 = 0x2020_2020_2020_2020
        withUnsafeMutableBytes(of: &raw) { w in
            for j in 0..<k { w[j] = p[j] }
        }
        return raw
        #endif
    }

    private mutating func putEscape(_ c: UInt8) {
        reserve(6)
        let o = ptr + count
        o[0] = UInt8(ascii: "\\")
        var n = 2
        switch c {
        case 0x22: o[1] = UInt8(ascii: "\"")
        case 0x5C: o[1] = UInt8(ascii: "\\")
        case 0x08: o[1] = UInt8(ascii: "b")
        case 0x0C: o[1] = UInt8(ascii: "f")
        case 0x0A: o[1] = UInt8(ascii: "n")
        case 0x0D: o[1] = UInt8(ascii: "r")
        case 0x09: o[1] = UInt8(ascii: "t")
        default:
            // yajl CharToHex: uppercase hex digits.
            let hex: StaticString = "0123456789ABCDEF"
            o[1] = UInt8(ascii: "u")
            o[2] = UInt8(ascii: "0")
            o[3] = UInt8(ascii: "0")
            o[4] = hex.utf8Start[Int(c >> 4)]
            o[5] = hex.utf8Start[Int(c & 0x0F)]
            n = 6
        }
        count &+= n
    }
}

// MARK: - JSONValue

extension JSONWriter {
    /// Writes a ``JSONValue``: with `sortedKeys` members in canonical (UTF-16) order at every level,
    /// the 1.x canonical form; without, in the object's own member order.
    package mutating func write(_ value: JSONValue, sortedKeys: Bool) throws {
        try writeJSONValue(value, sorted: sortedKeys, depth: 0)
    }

    /// Writes an object's members, skipping those `skip` names (`_id`, `_rev`… that a caller writes
    /// itself); `sortedKeys` as in ``write(_:sortedKeys:)``.
    package mutating func writeObject(_ object: JSONObject, sortedKeys: Bool, skippingKey skip: (String) -> Bool = { _ in false }) throws {
        try writeJSONObject(object, sorted: sortedKeys, depth: 0, skip: skip)
    }

    private mutating func writeJSONValue(_ value: JSONValue, sorted: Bool, depth: Int) throws {
        switch value {
        case .null: putLiteral("null")
        case .bool(let b): putLiteral(b ? "true" : "false")
        case .int(let i): putInt(i)
        case .uint(let u):
            reserve(NumberFormat.maxLength)
            count &+= NumberFormat.formatUInt(u, into: ptr + count)
        case .double(let d): try putFloatingPoint(d, precision: 16)
        case .string(let s): putString(s)
        case .array(let items):
            guard depth < JSONWriter.maxDepth else { throw JSONError("nesting deeper than \(JSONWriter.maxDepth) levels") }
            put(UInt8(ascii: "["))
            for (index, item) in items.enumerated() {
                if index > 0 { put(UInt8(ascii: ",")) }
                try writeJSONValue(item, sorted: sorted, depth: depth &+ 1)
            }
            put(UInt8(ascii: "]"))
        case .object(let object):
            try writeJSONObject(object, sorted: sorted, depth: depth, skip: JSONWriter.neverSkip)
        }
    }

    private mutating func writeJSONObject(_ object: JSONObject, sorted: Bool, depth: Int, skip: (String) -> Bool) throws {
        guard depth < JSONWriter.maxDepth else { throw JSONError("nesting deeper than \(JSONWriter.maxDepth) levels") }
        put(UInt8(ascii: "{"))
        var first = true
        func member(_ key: String, _ value: JSONValue, _ w: inout JSONWriter) throws {
            if skip(key) { return }
            if !first { w.put(UInt8(ascii: ",")) }
            first = false
            w.putString(key)
            w.put(UInt8(ascii: ":"))
            try w.writeJSONValue(value, sorted: sorted, depth: depth &+ 1)
        }
        if sorted && !object.isSorted {
            for (k, v) in object.sortedMembers { try member(k, v, &self) }
        } else {
            for (k, v) in object { try member(k, v, &self) }
        }
        put(UInt8(ascii: "}"))
    }
}

extension JSON {
    /// A ``JSONValue`` as compact JSON bytes: canonical (members sorted by UTF-16 code units, 1.x's
    /// number forms) with `sortedKeys`, else in each object's member order.
    package static func data(_ value: JSONValue, sortedKeys: Bool) throws -> [UInt8] {
        var w = JSONWriter(capacity: 256)
        try w.write(value, sortedKeys: sortedKeys)
        return w.bytes
    }

    /// A ``JSONValue`` as compact JSON text (see ``data(_:sortedKeys:)-(JSONValue,_)``).
    package static func string(_ value: JSONValue, sortedKeys: Bool) throws -> String {
        String(decoding: try data(value, sortedKeys: sortedKeys), as: UTF8.self)
    }
}
