#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

// Hash tables used by the encoder's hot path. Both are keyed by raw UTF-8 bytes so that a
// JSON key or string never has to become a Swift `String` just to be looked up.

/// Up to 8 bytes of `p[0..<n]` (n ≤ 8) packed into a word, reading only inside the range
/// (overlapping loads instead of a byte loop).
@inline(__always)
private func fleeceLoadTail(_ p: UnsafeRawPointer, _ n: Int) -> UInt64 {
    if n >= 4 {
        let a = UInt64(p.loadUnaligned(as: UInt32.self))
        let b = UInt64(p.loadUnaligned(fromByteOffset: n &- 4, as: UInt32.self))
        return a << 32 | b
    }
    if n == 0 { return 0 }
    let b = p.assumingMemoryBound(to: UInt8.self)
    return UInt64(b[0]) << 16 | UInt64(b[n >> 1]) << 8 | UInt64(b[n &- 1])
}

/// A fast non-cryptographic hash of a short byte string (keys and 2–15-byte strings).
@inline(__always)
func fleeceHashBytes(_ p: UnsafePointer<UInt8>, _ n: Int) -> UInt32 {
    let raw = UnsafeRawPointer(p)
    var h: UInt64 = 0x9E37_79B9_7F4A_7C15 ^ UInt64(truncatingIfNeeded: n)
    if n <= 8 {
        h = (h ^ fleeceLoadTail(raw, n)) &* 0xFF51_AFD7_ED55_8CCD
    } else {
        var i = 0
        while i &+ 8 < n {
            h = (h ^ raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)) &* 0xFF51_AFD7_ED55_8CCD
            h ^= h >> 32
            i &+= 8
        }
        // The last 8 bytes (overlapping the previous word if needed).
        h = (h ^ raw.loadUnaligned(fromByteOffset: n &- 8, as: UInt64.self)) &* 0xFF51_AFD7_ED55_8CCD
    }
    h = (h ^ (h >> 29)) &* 0xBF58_476D_1CE4_E5B9
    h ^= h >> 32
    return UInt32(truncatingIfNeeded: h)
}

@inline(__always)
func fleeceBytesEqual(_ a: UnsafePointer<UInt8>, _ b: UnsafePointer<UInt8>, _ n: Int) -> Bool {
    let ra = UnsafeRawPointer(a), rb = UnsafeRawPointer(b)
    if n <= 8 { return fleeceLoadTail(ra, n) == fleeceLoadTail(rb, n) }
    if n <= 16 {
        return ra.loadUnaligned(as: UInt64.self) == rb.loadUnaligned(as: UInt64.self)
            && ra.loadUnaligned(fromByteOffset: n &- 8, as: UInt64.self)
            == rb.loadUnaligned(fromByteOffset: n &- 8, as: UInt64.self)
    }
    return memcmp(a, b, n) == 0
}

/// Doubles an open-addressing table (linear probing from each slot's hash): a new array twice
/// the size, filled with `empty`, into which every occupied slot moves. Both tables below grow
/// this way; it runs once per doubling, not per value.
@inline(__always)
private func fleeceGrowTable<Slot>(_ slots: inout UnsafeMutablePointer<Slot>, capacity: inout Int, empty: Slot,
                                   hash: (Slot) -> UInt32, isOccupied: (Slot) -> Bool) {
    let oldSlots = slots, oldCapacity = capacity
    capacity = oldCapacity &* 2
    slots = .allocate(capacity: capacity)
    slots.initialize(repeating: empty, count: capacity)
    let mask = capacity &- 1
    for j in 0..<oldCapacity where isOccupied(oldSlots[j]) {
        var i = Int(hash(oldSlots[j])) & mask
        while isOccupied(slots[i]) { i = (i &+ 1) & mask }
        slots[i] = oldSlots[j]
    }
    oldSlots.deallocate()
}

/// The per-encoding table of strings already written (2–15 bytes), for de-duplication
/// (cbl2-format.md §6.5). Entries refer to the bytes in the encoder's output buffer.
/// Cleared in O(1) between encodings by bumping a generation number.
struct StringDedupTable {
    struct Slot {
        var hash: UInt32 = 0
        var generation: UInt32 = 0
        var length: Int32 = 0
        /// Offset of the string's bytes in the output.
        var dataPos: Int32 = 0
        /// Offset of the string value (its header) in the output: the pointer target.
        var valuePos: Int32 = 0
    }

    private(set) var slots: UnsafeMutablePointer<Slot>
    private(set) var capacity: Int
    private var count = 0
    private(set) var generation: UInt32 = 1

    init(capacity: Int = 64) {
        self.capacity = capacity
        slots = .allocate(capacity: capacity)
        slots.initialize(repeating: Slot(), count: capacity)
    }

    func copy() -> StringDedupTable {
        var t = StringDedupTable(capacity: capacity)
        t.slots.update(from: slots, count: capacity)
        t.count = count
        t.generation = generation
        return t
    }

    func deallocate() { slots.deallocate() }

    /// Forgets every entry.
    mutating func clear() {
        count = 0
        generation &+= 1
        if generation == 0 {
            slots.update(repeating: Slot(), count: capacity)
            generation = 1
        }
    }

    /// Finds `bytes` (whose copy, if present, lives in `out`). Returns the slot index and
    /// whether it holds the string; if not, the index is where to insert it.
    @inline(__always)
    func find(_ p: UnsafePointer<UInt8>, _ n: Int, hash: UInt32,
              out: UnsafePointer<UInt8>) -> (index: Int, found: Bool) {
        let mask = capacity &- 1
        var i = Int(hash) & mask
        while true {
            let s = slots[i]
            if s.generation != generation { return (i, false) }
            if s.hash == hash && Int(s.length) == n
                && fleeceBytesEqual(out + Int(s.dataPos), p, n) {
                return (i, true)
            }
            i = (i &+ 1) & mask
        }
    }

    @inline(__always)
    mutating func update(at index: Int, dataPos: Int, valuePos: Int) {
        slots[index].dataPos = Int32(truncatingIfNeeded: dataPos)
        slots[index].valuePos = Int32(truncatingIfNeeded: valuePos)
    }

    /// Inserts at an index returned by `find` (which must not have found the string).
    @inline(__always)
    mutating func insert(at index: Int, hash: UInt32, length: Int, dataPos: Int, valuePos: Int) {
        slots[index] = Slot(hash: hash, generation: generation, length: Int32(length),
                            dataPos: Int32(truncatingIfNeeded: dataPos),
                            valuePos: Int32(truncatingIfNeeded: valuePos))
        count &+= 1
        if count &* 2 > capacity { grow() }
    }

    private mutating func grow() {
        let current = generation
        fleeceGrowTable(&slots, capacity: &capacity, empty: Slot(), hash: \.hash) { $0.generation == current }
    }
}

/// An encoder-local cache of SharedKeys look-ups: key bytes → code, or −1 for "never
/// encodable" (ineligible, or the table was full — both permanent, since codes are never
/// removed). It lets the hot path skip the SharedKeys lock for every key after the first.
struct SharedKeyCache {
    struct Slot {
        var hash: UInt32 = 0
        var length: Int32 = -1      // -1 = empty
        var start: Int32 = 0        // offset in `arena`
        var code: Int32 = 0
    }

    /// Cap on remembered negative answers, so documents with endless distinct long keys
    /// cannot grow the cache without bound.
    static let maxNegativeEntries = 8192

    private var slots: UnsafeMutablePointer<Slot>
    private var capacity: Int
    private var count = 0
    private var negativeCount = 0
    private var arena: UnsafeMutablePointer<UInt8>
    private var arenaCount = 0
    private var arenaCapacity: Int

    init(capacity: Int = 256) {
        self.capacity = capacity
        slots = .allocate(capacity: capacity)
        slots.initialize(repeating: Slot(), count: capacity)
        arenaCapacity = 4096
        arena = .allocate(capacity: arenaCapacity)
    }

    func copy() -> SharedKeyCache {
        var c = SharedKeyCache(capacity: capacity)
        c.slots.update(from: slots, count: capacity)
        c.count = count
        c.negativeCount = negativeCount
        if arenaCapacity > c.arenaCapacity {
            c.arena.deallocate()
            c.arena = .allocate(capacity: arenaCapacity)
            c.arenaCapacity = arenaCapacity
        }
        c.arena.update(from: arena, count: arenaCount)
        c.arenaCount = arenaCount
        return c
    }

    func deallocate() {
        slots.deallocate()
        arena.deallocate()
    }

    /// The cached code (≥ 0), −1 if known not encodable, nil if not cached.
    @inline(__always)
    func lookup(_ p: UnsafePointer<UInt8>, _ n: Int, hash: UInt32) -> Int32? {
        let mask = capacity &- 1
        var i = Int(hash) & mask
        while true {
            let s = slots[i]
            if s.length < 0 { return nil }
            if s.hash == hash && Int(s.length) == n
                && fleeceBytesEqual(arena + Int(s.start), p, n) {
                return s.code
            }
            i = (i &+ 1) & mask
        }
    }

    mutating func insert(_ p: UnsafePointer<UInt8>, _ n: Int, hash: UInt32, code: Int32) {
        if code < 0 {
            if negativeCount >= SharedKeyCache.maxNegativeEntries { return }
            negativeCount &+= 1
        }
        if arenaCount &+ n > arenaCapacity {
            let newCapacity = Swift.max(arenaCapacity &* 2, arenaCount &+ n)
            let newArena = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
            newArena.update(from: arena, count: arenaCount)
            arena.deallocate()
            arena = newArena
            arenaCapacity = newCapacity
        }
        if n > 0 { (arena + arenaCount).update(from: p, count: n) }
        let start = arenaCount
        arenaCount &+= n
        let mask = capacity &- 1
        var i = Int(hash) & mask
        while slots[i].length >= 0 { i = (i &+ 1) & mask }
        slots[i] = Slot(hash: hash, length: Int32(n), start: Int32(start), code: code)
        count &+= 1
        if count &* 2 > capacity { grow() }
    }

    private mutating func grow() {
        fleeceGrowTable(&slots, capacity: &capacity, empty: Slot(), hash: \.hash) { $0.length >= 0 }
    }
}
