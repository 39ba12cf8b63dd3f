/// MD5 (RFC 1321) for revision IDs (spec 3.3), which hash a few hundred bytes on every save:
/// a value type on the stack with the rounds unrolled, so a digest allocates nothing.
/// Not for anything security-related (nor is MD5 itself).
struct MD5 {
    private var a: UInt32 = 0x6745_2301
    private var b: UInt32 = 0xefcd_ab89
    private var c: UInt32 = 0x98ba_dcfe
    private var d: UInt32 = 0x1032_5476
    /// Bytes of an incomplete block.
    private var pending: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0)
    private var pendingCount = 0
    private var totalCount: UInt64 = 0

    init() {}

    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard var p = bytes.baseAddress, bytes.count > 0 else { return }
        var n = bytes.count
        totalCount &+= UInt64(n)
        if pendingCount > 0 {
            let take = Swift.min(64 - pendingCount, n)
            let filled = pendingCount
            withUnsafeMutableBytes(of: &pending) { buf in (buf.baseAddress! + filled).copyMemory(from: p, byteCount: take) }
            pendingCount += take
            p += take
            n -= take
            guard pendingCount == 64 else { return }
            var block = pending
            withUnsafeBytes(of: &block) { compress($0.baseAddress!) }
            pendingCount = 0
        }
        while n >= 64 {
            compress(p)
            p += 64
            n -= 64
        }
        if n > 0 {
            withUnsafeMutableBytes(of: &pending) { $0.baseAddress!.copyMemory(from: p, byteCount: n) }
            pendingCount = n
        }
    }

    mutating func update(byte: UInt8) {
        var byte = byte
        withUnsafeBytes(of: &byte) { update($0) }
    }

    /// Pads, processes the last block(s) and returns the 16-byte digest.
    mutating func finalize() -> (UInt64, UInt64) {
        let bitLength = totalCount &* 8
        var padding: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
                      UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        // 0x80, zeros up to 56 mod 64, then the bit length (little-endian).
        let padCount = pendingCount < 56 ? 56 - pendingCount : 120 - pendingCount
        withUnsafeMutableBytes(of: &padding) { buf in
            buf[0] = 0x80
            buf.storeBytes(of: bitLength.littleEndian, toByteOffset: padCount, as: UInt64.self)
            update(UnsafeRawBufferPointer(rebasing: buf[0..<(padCount + 8)]))
        }
        return (UInt64(a) | UInt64(b) << 32, UInt64(c) | UInt64(d) << 32)
    }

    /// The digest's 16 bytes, in order.
    static func bytes(of digest: (UInt64, UInt64), _ body: (UnsafeRawBufferPointer) -> Void) {
        var words = (digest.0.littleEndian, digest.1.littleEndian)
        withUnsafeBytes(of: &words) { body($0) }
    }

    @inline(__always) private func rotl(_ x: UInt32, _ s: UInt32) -> UInt32 { (x &<< s) | (x &>> (32 &- s)) }
    // F and G in their one-operation-shorter equivalent forms: (x & y) | (~x & z) and (x & z) | (y & ~z).
    @inline(__always) private func f(_ x: UInt32, _ y: UInt32, _ z: UInt32) -> UInt32 { z ^ (x & (y ^ z)) }
    @inline(__always) private func g(_ x: UInt32, _ y: UInt32, _ z: UInt32) -> UInt32 { y ^ (z & (x ^ y)) }
    @inline(__always) private func h(_ x: UInt32, _ y: UInt32, _ z: UInt32) -> UInt32 { x ^ y ^ z }
    @inline(__always) private func i(_ x: UInt32, _ y: UInt32, _ z: UInt32) -> UInt32 { y ^ (x | ~z) }

    private mutating func compress(_ p: UnsafeRawPointer) {
        let m0 = UInt32(littleEndian: p.loadUnaligned(fromByteOffset: 0, as: UInt32.self))
        let m1 = UInt32(littleEndian: p.loadUnaligned(fromByteOffset: 4, as: UInt32.self))
        let m2 = UInt32(littleEndian: p.loadUnaligned(fromByteOffset: 8, as: UInt32.self))
        let m3 = UInt32(littleEndian: p.loadUnaligned(fromByteOffset: 12, as: UInt32.self))
        let m4 = UInt32(littleEndian: p.loadUnaligned(fromByteOffset: 16, as: UInt32.self))
        let m5 = UInt32(littleEndian: p.loadUnaligned(fromByteOffset: 20, as: UInt32.self))
        let m6 = UInt32(littleEndian: p.loadUnaligned(fromByteOffset: 24, as: UInt32.self))
        let m7 = UInt32(littleEndian: p.loadUnaligned(fromByteOffset: 28, as: UInt32.self))
        let m8 = UInt32(littleEndian: p.loadUnaligned(fromByteOffset: 32, as: UInt32.self))
        let m9 = UInt32(littleEndian: p.loadUnaligned(fromByteOffset: 36, as: UInt32.self))
        let m10 = UInt32(littleEndian: p.loadUnaligned(fromByteOffset: 40, as: UInt32.self))
        let m11 = UInt32(littleEndian: p.loadUnaligned(fromByteOffset: 44, as: UInt32.self))
        let m12 = UInt32(littleEndian: p.loadUnaligned(fromByteOffset: 48, as: UInt32.self))
        let m13 = UInt32(littleEndian: p.loadUnaligned(fromByteOffset: 52, as: UInt32.self))
        let m14 = UInt32(littleEndian: p.loadUnaligned(fromByteOffset: 56, as: UInt32.self))
        let m15 = UInt32(littleEndian: p.loadUnaligned(fromByteOffset: 60, as: UInt32.self))
        var a = self.a, b = self.b, c = self.c, d = self.d
        a = b &+ rotl(a &+ f(b, c, d) &+ m0 &+ 0xd76aa478, 7)
        d = a &+ rotl(d &+ f(a, b, c) &+ m1 &+ 0xe8c7b756, 12)
        c = d &+ rotl(c &+ f(d, a, b) &+ m2 &+ 0x242070db, 17)
        b = c &+ rotl(b &+ f(c, d, a) &+ m3 &+ 0xc1bdceee, 22)
        a = b &+ rotl(a &+ f(b, c, d) &+ m4 &+ 0xf57c0faf, 7)
        d = a &+ rotl(d &+ f(a, b, c) &+ m5 &+ 0x4787c62a, 12)
        c = d &+ rotl(c &+ f(d, a, b) &+ m6 &+ 0xa8304613, 17)
        b = c &+ rotl(b &+ f(c, d, a) &+ m7 &+ 0xfd469501, 22)
        a = b &+ rotl(a &+ f(b, c, d) &+ m8 &+ 0x698098d8, 7)
        d = a &+ rotl(d &+ f(a, b, c) &+ m9 &+ 0x8b44f7af, 12)
        c = d &+ rotl(c &+ f(d, a, b) &+ m10 &+ 0xffff5bb1, 17)
        b = c &+ rotl(b &+ f(c, d, a) &+ m11 &+ 0x895cd7be, 22)
        a = b &+ rotl(a &+ f(b, c, d) &+ m12 &+ 0x6b901122, 7)
        d = a &+ rotl(d &+ f(a, b, c) &+ m13 &+ 0xfd987193, 12)
        c = d &+ rotl(c &+ f(d, a, b) &+ m14 &+ 0xa679438e, 17)
        b = c &+ rotl(b &+ f(c, d, a) &+ m15 &+ 0x49b40821, 22)
        a = b &+ rotl(a &+ g(b, c, d) &+ m1 &+ 0xf61e2562, 5)
        d = a &+ rotl(d &+ g(a, b, c) &+ m6 &+ 0xc040b340, 9)
        c = d &+ rotl(c &+ g(d, a, b) &+ m11 &+ 0x265e5a51, 14)
        b = c &+ rotl(b &+ g(c, d, a) &+ m0 &+ 0xe9b6c7aa, 20)
        a = b &+ rotl(a &+ g(b, c, d) &+ m5 &+ 0xd62f105d, 5)
        d = a &+ rotl(d &+ g(a, b, c) &+ m10 &+ 0x02441453, 9)
        c = d &+ rotl(c &+ g(d, a, b) &+ m15 &+ 0xd8a1e681, 14)
        b = c &+ rotl(b &+ g(c, d, a) &+ m4 &+ 0xe7d3fbc8, 20)
        a = b &+ rotl(a &+ g(b, c, d) &+ m9 &+ 0x21e1cde6, 5)
        d = a &+ rotl(d &+ g(a, b, c) &+ m14 &+ 0xc33707d6, 9)
        c = d &+ rotl(c &+ g(d, a, b) &+ m3 &+ 0xf4d50d87, 14)
        b = c &+ rotl(b &+ g(c, d, a) &+ m8 &+ 0x455a14ed, 20)
        a = b &+ rotl(a &+ g(b, c, d) &+ m13 &+ 0xa9e3e905, 5)
        d = a &+ rotl(d &+ g(a, b, c) &+ m2 &+ 0xfcefa3f8, 9)
        c = d &+ rotl(c &+ g(d, a, b) &+ m7 &+ 0x676f02d9, 14)
        b = c &+ rotl(b &+ g(c, d, a) &+ m12 &+ 0x8d2a4c8a, 20)
        a = b &+ rotl(a &+ h(b, c, d) &+ m5 &+ 0xfffa3942, 4)
        d = a &+ rotl(d &+ h(a, b, c) &+ m8 &+ 0x8771f681, 11)
        c = d &+ rotl(c &+ h(d, a, b) &+ m11 &+ 0x6d9d6122, 16)
        b = c &+ rotl(b &+ h(c, d, a) &+ m14 &+ 0xfde5380c, 23)
        a = b &+ rotl(a &+ h(b, c, d) &+ m1 &+ 0xa4beea44, 4)
        d = a &+ rotl(d &+ h(a, b, c) &+ m4 &+ 0x4bdecfa9, 11)
        c = d &+ rotl(c &+ h(d, a, b) &+ m7 &+ 0xf6bb4b60, 16)
        b = c &+ rotl(b &+ h(c, d, a) &+ m10 &+ 0xbebfbc70, 23)
        a = b &+ rotl(a &+ h(b, c, d) &+ m13 &+ 0x289b7ec6, 4)
        d = a &+ rotl(d &+ h(a, b, c) &+ m0 &+ 0xeaa127fa, 11)
        c = d &+ rotl(c &+ h(d, a, b) &+ m3 &+ 0xd4ef3085, 16)
        b = c &+ rotl(b &+ h(c, d, a) &+ m6 &+ 0x04881d05, 23)
        a = b &+ rotl(a &+ h(b, c, d) &+ m9 &+ 0xd9d4d039, 4)
        d = a &+ rotl(d &+ h(a, b, c) &+ m12 &+ 0xe6db99e5, 11)
        c = d &+ rotl(c &+ h(d, a, b) &+ m15 &+ 0x1fa27cf8, 16)
        b = c &+ rotl(b &+ h(c, d, a) &+ m2 &+ 0xc4ac5665, 23)
        a = b &+ rotl(a &+ i(b, c, d) &+ m0 &+ 0xf4292244, 6)
        d = a &+ rotl(d &+ i(a, b, c) &+ m7 &+ 0x432aff97, 10)
        c = d &+ rotl(c &+ i(d, a, b) &+ m14 &+ 0xab9423a7, 15)
        b = c &+ rotl(b &+ i(c, d, a) &+ m5 &+ 0xfc93a039, 21)
        a = b &+ rotl(a &+ i(b, c, d) &+ m12 &+ 0x655b59c3, 6)
        d = a &+ rotl(d &+ i(a, b, c) &+ m3 &+ 0x8f0ccc92, 10)
        c = d &+ rotl(c &+ i(d, a, b) &+ m10 &+ 0xffeff47d, 15)
        b = c &+ rotl(b &+ i(c, d, a) &+ m1 &+ 0x85845dd1, 21)
        a = b &+ rotl(a &+ i(b, c, d) &+ m8 &+ 0x6fa87e4f, 6)
        d = a &+ rotl(d &+ i(a, b, c) &+ m15 &+ 0xfe2ce6e0, 10)
        c = d &+ rotl(c &+ i(d, a, b) &+ m6 &+ 0xa3014314, 15)
        b = c &+ rotl(b &+ i(c, d, a) &+ m13 &+ 0x4e0811a1, 21)
        a = b &+ rotl(a &+ i(b, c, d) &+ m4 &+ 0xf7537e82, 6)
        d = a &+ rotl(d &+ i(a, b, c) &+ m11 &+ 0xbd3af235, 10)
        c = d &+ rotl(c &+ i(d, a, b) &+ m2 &+ 0x2ad7d2bb, 15)
        b = c &+ rotl(b &+ i(c, d, a) &+ m9 &+ 0xeb86d391, 21)
        self.a &+= a
        self.b &+= b
        self.c &+= c
        self.d &+= d
    }
}
