// UTF-16 code-unit ordering of strings, computed on UTF-8 bytes.
//
// Couchbase Lite 1.x (iOS) sorts object keys of canonical JSON with
// `-[NSString compare:options:NSLiteralSearch]`, i.e. by UTF-16 code units; Java's TreeMap
// order is the same. UTF-8 byte order equals code-point order, which agrees with UTF-16
// code-unit order except for one case: a BMP character in U+E000...U+FFFF (UTF-16 unit
// 0xE000...0xFFFF, UTF-8 lead byte 0xEE or 0xEF) sorts *after* a supplementary character
// (UTF-16 surrogates 0xD800...0xDBFF, UTF-8 lead byte 0xF0...0xF4) in UTF-16, but before it
// in code-point order. Because the two strings are identical before the first differing
// byte and valid UTF-8, that byte is either a lead byte in both strings (a character
// boundary) or a continuation byte in both (same lead byte => same encoded length, where
// both orders agree). So only the lead-byte pair {0xEE,0xEF} x {0xF0...0xF4} needs fixing.

@inline(__always)
internal func utf16Less(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
    let n = Swift.min(a.count, b.count)
    guard let pa = a.baseAddress, let pb = b.baseAddress else {
        return a.count < b.count
    }
    var i = 0
    // Compare 8 bytes at a time while equal.
    while i &+ 8 <= n {
        let wa = UnsafeRawPointer(pa + i).loadUnaligned(as: UInt64.self)
        let wb = UnsafeRawPointer(pb + i).loadUnaligned(as: UInt64.self)
        if wa != wb { break }
        i &+= 8
    }
    while i < n {
        let ca = pa[i], cb = pb[i]
        if ca != cb {
            if ca >= 0xEE && cb >= 0xEE {
                // Surrogate fix-up: supplementary (F0-F4) < U+E000-U+FFFF (EE/EF) in UTF-16.
                let aSupp = ca >= 0xF0, bSupp = cb >= 0xF0
                if aSupp != bSupp {
                    return aSupp
                }
            }
            return ca < cb
        }
        i &+= 1
    }
    return a.count < b.count
}

/// UTF-16 code-unit order; used for canonical key ordering.
@inline(__always)
internal func utf16Precedes(_ a: String, _ b: String) -> Bool {
    let r: Bool? = a.utf8.withContiguousStorageIfAvailable { ba in
        b.utf8.withContiguousStorageIfAvailable { bb in
            utf16Less(ba, bb)
        }
    } ?? nil
    if let r { return r }
    return a.utf16.lexicographicallyPrecedes(b.utf16)
}

/// The first 8 UTF-8 bytes of a key, big-endian, zero-padded, with the lead bytes 0xEE/0xEF
/// remapped to 0xF8/0xF9 (never valid in UTF-8) so that they sort after 0xF0-0xF4 as in
/// UTF-16. When two prefixes differ, their order is the keys' UTF-16 order; when equal, the
/// full keys must be compared.
@inline(__always)
internal func sortPrefix(_ b: UnsafeBufferPointer<UInt8>) -> UInt64 {
    #if _endian(little)
    // ASCII (every key of most documents): the first 8 bytes, big-endian, are the prefix.
    if let p = b.baseAddress, b.count > 0 {
        let word = b.count >= 8 ? UnsafeRawPointer(p).loadUnaligned(as: UInt64.self) : loadShortWord(p, count: b.count)
        if word & 0x8080_8080_8080_8080 == 0 { return word.byteSwapped }
    }
    #endif
    var v: UInt64 = 0
    let n = Swift.min(8, b.count)
    var shift: UInt64 = 56
    for i in 0..<n {
        var c = b[i]
        if c == 0xEE || c == 0xEF { c &+= 0x0A }
        v |= UInt64(c) << shift
        shift &-= 8
    }
    return v
}

/// ``sortPrefix(_:)-(UnsafeBufferPointer<UInt8>)`` of a key's UTF-8.
@inline(__always)
internal func sortPrefix(_ key: String) -> UInt64 {
    if let v = key.utf8.withContiguousStorageIfAvailable(sortPrefix) { return v }
    var copy = key
    return copy.withUTF8(sortPrefix)
}

#if _endian(little)
/// The `count` (1...7) bytes at `p` as the low bytes of a little-endian word, the rest zero. Never
/// reads past `p + count`: two overlapping 4-byte loads, or three single bytes.
@inline(__always)
func loadShortWord(_ p: UnsafePointer<UInt8>, count k: Int) -> UInt64 {
    if k >= 4 {
        let r = UnsafeRawPointer(p)
        let low = UInt64(r.loadUnaligned(as: UInt32.self))
        let high = UInt64(r.loadUnaligned(fromByteOffset: k &- 4, as: UInt32.self))
        return low | (high &<< UInt64((k &- 4) &* 8))
    }
    let middle = k &>> 1
    return UInt64(p[0]) | (UInt64(p[middle]) &<< UInt64(middle &* 8)) | (UInt64(p[k &- 1]) &<< UInt64((k &- 1) &* 8))
}
#endif
