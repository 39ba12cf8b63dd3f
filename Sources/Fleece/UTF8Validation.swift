/// Strict UTF-8 validation (RFC 3629): no overlong forms, no surrogates, nothing above
/// U+10FFFF, no truncated sequences.
func fleeceIsValidUTF8(_ p: UnsafePointer<UInt8>, _ n: Int) -> Bool {
    var i = 0
    while i < n {
        while i &+ 8 <= n {
            let x = UnsafeRawPointer(p + i).loadUnaligned(as: UInt64.self)
            if x & 0x8080_8080_8080_8080 != 0 { break }
            i &+= 8
        }
        if i >= n { break }
        let c0 = p[i]
        if c0 < 0x80 {
            i &+= 1
            continue
        }
        if c0 < 0xC2 { return false }
        if c0 < 0xE0 {
            guard i &+ 1 < n, p[i &+ 1] & 0xC0 == 0x80 else { return false }
            i &+= 2
            continue
        }
        if c0 < 0xF0 {
            guard i &+ 2 < n else { return false }
            let c1 = p[i &+ 1], c2 = p[i &+ 2]
            guard c1 & 0xC0 == 0x80, c2 & 0xC0 == 0x80 else { return false }
            if c0 == 0xE0 && c1 < 0xA0 { return false }
            if c0 == 0xED && c1 >= 0xA0 { return false }
            i &+= 3
            continue
        }
        if c0 < 0xF5 {
            guard i &+ 3 < n else { return false }
            let c1 = p[i &+ 1], c2 = p[i &+ 2], c3 = p[i &+ 3]
            guard c1 & 0xC0 == 0x80, c2 & 0xC0 == 0x80, c3 & 0xC0 == 0x80 else { return false }
            if c0 == 0xF0 && c1 < 0x90 { return false }
            if c0 == 0xF4 && c1 >= 0x90 { return false }
            i &+= 4
            continue
        }
        return false
    }
    return true
}
