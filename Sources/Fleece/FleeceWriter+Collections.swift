#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Arrays and dicts: the collection stack, key sorting, headers, narrow/wide slots and the
/// root trailer (cbl2-format.md §6.1, §6.4–6.6).
extension FleeceWriter {
    // MARK: - Collections

    mutating func beginCollection(isDict: Bool, reserve: Int) {
        guard beforeValue() else { return }
        if frameCount == frameCapacity {
            FleeceWriter.grow(&frames, &frameCapacity, count: frameCount, needed: 1)
        }
        frames[frameCount] = Frame(itemStart: itemCount, keyStart: keyCount, isDict: isDict,
                                   parentInDict: inDict, parentExpectingKey: expectingKey)
        frameCount &+= 1
        inDict = isDict
        expectingKey = isDict
        if reserve > 0 {
            let slots = isDict ? reserve &* 2 : reserve
            FleeceWriter.grow(&items, &itemCapacity, count: itemCount, needed: slots)
        }
    }

    mutating func endArray() {
        guard !failed else { return }
        guard frameCount > 0, !frames[frameCount &- 1].isDict else {
            fail(.encodingMisuse("endArray() without a matching beginArray()"))
            return
        }
        frameCount &-= 1
        let f = frames[frameCount]
        let n = itemCount &- f.itemStart
        let item = writeCollection(tag: 0x60, slots: items + f.itemStart, slotCount: n, count: n)
        itemCount = f.itemStart
        inDict = f.parentInDict
        expectingKey = f.parentExpectingKey
        pushItem(item)
    }

    mutating func endDict() {
        guard !failed else { return }
        guard frameCount > 0, frames[frameCount &- 1].isDict else {
            fail(.encodingMisuse("endDict() without a matching beginDict()"))
            return
        }
        guard expectingKey else {
            fail(.encodingMisuse("endDict() after a key without a value"))
            return
        }
        frameCount &-= 1
        let f = frames[frameCount]
        let pairs = (itemCount &- f.itemStart) >> 1
        let kept = sortPairs(itemStart: f.itemStart, keyStart: f.keyStart, pairs: pairs)
        let item = writeCollection(tag: 0x70, slots: sorted, slotCount: kept &* 2, count: kept)
        itemCount = f.itemStart
        keyCount = f.keyStart
        inDict = f.parentInDict
        expectingKey = f.parentExpectingKey
        pushItem(item)
    }

    /// §6.6: orders the pairs by key (shared-key codes ascending first, then strings by
    /// memcmp, shorter first) into `sorted`. A key given twice keeps its last value (as
    /// JSONCore's parser does); returns the number of pairs kept.
    private mutating func sortPairs(itemStart: Int, keyStart: Int, pairs: Int) -> Int {
        if pairs > sortCapacity {
            let newCapacity = Swift.max(pairs, sortCapacity &* 2)
            sorted.deallocate()
            permutation.deallocate()
            sorted = .allocate(capacity: newCapacity &* 2)
            permutation = .allocate(capacity: newCapacity)
            sortCapacity = newCapacity
        }
        let keyBase = keys + keyStart
        let src = items + itemStart
        // Fast path: all shared keys, already strictly ascending (typical: keys arrive in the
        // order their codes were assigned).
        var ascending = true
        var previous: Int32 = -1
        for i in 0..<pairs {
            let c = keyBase[i].code
            if c <= previous { ascending = false; break }
            previous = c
        }
        if ascending {
            sorted.update(from: src, count: pairs &* 2)
            return pairs
        }
        let perm = permutation
        for i in 0..<pairs { perm[i] = Int32(truncatingIfNeeded: i) }
        let out = self.out
        @inline(__always)
        func compare(_ a: Int32, _ b: Int32) -> Int {
            let ka = keyBase[Int(a)], kb = keyBase[Int(b)]
            if ka.code >= 0 || kb.code >= 0 {
                if ka.code >= 0 && kb.code >= 0 { return Int(ka.code) &- Int(kb.code) }
                return ka.code >= 0 ? -1 : 1
            }
            let la = Int(ka.length), lb = Int(kb.length)
            if la >= 2 && lb >= 2 {
                let c = memcmp(out + Int(ka.pos), out + Int(kb.pos), Swift.min(la, lb))
                return c != 0 ? Int(c) : la &- lb
            }
            // A 0- or 1-byte key (inline; its byte is kept in `pos`): the first bytes decide.
            if la == 0 || lb == 0 { return la &- lb }
            let fa = la == 1 ? Int(ka.pos & 0xFF) : Int(out[Int(ka.pos)])
            let fb = lb == 1 ? Int(kb.pos & 0xFF) : Int(out[Int(kb.pos)])
            return fa != fb ? fa &- fb : la &- lb
        }
        @inline(__always)
        func less(_ a: Int32, _ b: Int32) -> Bool {
            let c = compare(a, b)
            return c < 0 || (c == 0 && a < b)      // input order breaks ties: last one wins below
        }
        if pairs <= 16 {
            var i = 1
            while i < pairs {
                let x = perm[i]
                var j = i
                while j > 0 && less(x, perm[j &- 1]) {
                    perm[j] = perm[j &- 1]
                    j &-= 1
                }
                perm[j] = x
                i &+= 1
            }
        } else {
            var buffer = UnsafeMutableBufferPointer(start: perm, count: pairs)
            buffer.sort(by: less)
        }
        var kept = 0
        var i = 0
        while i < pairs {
            let k = perm[i]
            if i &+ 1 < pairs && compare(k, perm[i &+ 1]) == 0 {
                i &+= 1                                     // a later duplicate replaces it
                continue
            }
            sorted[kept &* 2] = src[Int(k) &* 2]
            sorted[kept &* 2 &+ 1] = src[Int(k) &* 2 &+ 1]
            kept &+= 1
            i &+= 1
        }
        return kept
    }

    /// Writes a collection header and its slots; returns the item that refers to it.
    /// §6.5: wide iff some pointer would reach back more than 0x7FFE bytes from a narrow slot.
    private mutating func writeCollection(tag: UInt8, slots: UnsafePointer<UInt32>,
                                          slotCount: Int, count: Int) -> UInt32 {
        if count == 0 { return UInt32(tag) << 8 }            // empty: inline `60 00` / `70 00`
        let headerPos = outCount
        var headerSize = 2
        if count >= FleeceWriter.longCount {
            headerSize &+= Varint.size(UInt64(count &- FleeceWriter.longCount))
            if headerSize & 1 != 0 { headerSize &+= 1 }
        }
        var wide = false
        var origin = headerPos &+ headerSize
        // No pointer can reach back further than the start of the output.
        let lastSlot = origin &+ 2 &* slotCount
        for i in 0..<(lastSlot > FleeceWriter.maxNarrowOffset ? slotCount : 0) {
            let v = slots[i]
            if v & FleeceWriter.pointerFlag != 0
                && origin &- (Int(v & ~FleeceWriter.pointerFlag) << 1) > FleeceWriter.maxNarrowOffset {
                wide = true
                break
            }
            origin &+= 2
        }
        let width = wide ? 4 : 2
        reserveOut(headerSize &+ slotCount &* width)
        let dst = out + headerPos
        let inlineCount = Swift.min(count, FleeceWriter.longCount)
        dst[0] = tag | (wide ? 0x08 : 0) | UInt8(truncatingIfNeeded: inlineCount >> 8)
        dst[1] = UInt8(truncatingIfNeeded: inlineCount)
        if count >= FleeceWriter.longCount {
            let n = Varint.write(UInt64(count &- FleeceWriter.longCount), to: dst + 2)
            if 2 &+ n < headerSize { dst[2 &+ n] = 0 }
        }
        var pos = headerPos &+ headerSize
        if wide {
            for i in 0..<slotCount {
                let v = slots[i]
                let s = out + pos
                if v & FleeceWriter.pointerFlag != 0 {
                    let offset = UInt32(truncatingIfNeeded: pos &- (Int(v & ~FleeceWriter.pointerFlag) << 1))
                    let raw = 0x8000_0000 | (offset >> 1)
                    s[0] = UInt8(truncatingIfNeeded: raw >> 24)
                    s[1] = UInt8(truncatingIfNeeded: raw >> 16)
                    s[2] = UInt8(truncatingIfNeeded: raw >> 8)
                    s[3] = UInt8(truncatingIfNeeded: raw)
                } else {
                    s[0] = UInt8(truncatingIfNeeded: v >> 8)
                    s[1] = UInt8(truncatingIfNeeded: v)
                    s[2] = 0
                    s[3] = 0
                }
                pos &+= 4
            }
        } else {
            for i in 0..<slotCount {
                let v = slots[i]
                let s = out + pos
                if v & FleeceWriter.pointerFlag != 0 {
                    let offset = pos &- (Int(v & ~FleeceWriter.pointerFlag) << 1)
                    let raw = 0x8000 | (offset >> 1)
                    s[0] = UInt8(truncatingIfNeeded: raw >> 8)
                    s[1] = UInt8(truncatingIfNeeded: raw)
                } else {
                    s[0] = UInt8(truncatingIfNeeded: v >> 8)
                    s[1] = UInt8(truncatingIfNeeded: v)
                }
                pos &+= 2
            }
        }
        outCount = pos
        return FleeceWriter.pointerItem(to: headerPos)
    }

    // MARK: - Finishing

    /// §6.4: appends the root trailer (a narrow pointer, or a wide pointer followed by
    /// `80 02` when the root is more than 0x7FFE bytes back, or the inline root value itself).
    mutating func finishTrailer() throws {
        if failed { throw error ?? .encodingMisuse("encoding failed") }
        guard frameCount == 0 else {
            throw FleeceError.encodingMisuse("\(frameCount) unclosed array/dictionary")
        }
        guard itemCount == 1 else {
            throw FleeceError.encodingMisuse("nothing was written")
        }
        let root = items[0]
        reserveOut(6)
        let pos = outCount
        let s = out + pos
        if root & FleeceWriter.pointerFlag != 0 {
            let offset = pos &- (Int(root & ~FleeceWriter.pointerFlag) << 1)
            if offset > FleeceWriter.maxNarrowOffset {
                let raw = UInt32(0x8000_0000) | UInt32(truncatingIfNeeded: offset >> 1)
                s[0] = UInt8(truncatingIfNeeded: raw >> 24)
                s[1] = UInt8(truncatingIfNeeded: raw >> 16)
                s[2] = UInt8(truncatingIfNeeded: raw >> 8)
                s[3] = UInt8(truncatingIfNeeded: raw)
                s[4] = 0x80
                s[5] = 0x02
                outCount = pos &+ 6
            } else {
                let raw = 0x8000 | (offset >> 1)
                s[0] = UInt8(truncatingIfNeeded: raw >> 8)
                s[1] = UInt8(truncatingIfNeeded: raw)
                outCount = pos &+ 2
            }
        } else {
            s[0] = UInt8(truncatingIfNeeded: root >> 8)
            s[1] = UInt8(truncatingIfNeeded: root)
            outCount = pos &+ 2
        }
        itemCount = 0
    }
}
