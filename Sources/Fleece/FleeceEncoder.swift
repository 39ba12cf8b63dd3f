/// Owns a `FleeceWriter`'s manually managed memory.
final class FleeceWriterBox {
    // Only ever accessed through the owning FleeceEncoder, which is a uniquely referenced
    // value (copy-on-write), so dynamic exclusivity checks would only cost time.
    @exclusivity(unchecked) var writer: FleeceWriter
    init(_ writer: FleeceWriter) { self.writer = writer }
    deinit { writer.deallocate() }
}

/// Builds one Fleece document at a time (cbl2-format.md §6), byte-compatible with LiteCore's
/// encoder.
///
/// Write exactly one top-level value — a scalar, or a collection built with
/// `beginArray`/`beginDict` … `endArray`/`endDict` (inside a dict, `writeKey` before each
/// value) — then call ``finish()``. The encoder is reusable: `finish` resets it but keeps its
/// buffers and its cache of shared-key codes, so encoding many documents with one encoder is
/// the fast way.
///
/// Misuse of the non-throwing methods (a value without a key, unbalanced `end…`, NaN) is
/// recorded and reported by ``finish()``; later calls are ignored until then.
///
/// A copy of an encoder is independent (copy-on-write).
// @unchecked because a copy-on-write value: its box is copied before a shared one is written.
package struct FleeceEncoder: @unchecked Sendable {
    var box: FleeceWriterBox

    /// Creates an encoder. With `sharedKeys`, dict keys are written as integer codes from that
    /// table, and eligible new keys are added to it (§6.7).
    package init(sharedKeys: SharedKeys? = nil) {
        box = FleeceWriterBox(FleeceWriter(sharedKeys: sharedKeys))
    }

    /// Creates an encoder with an explicit choice of how doubles are stored.
    package init(sharedKeys: SharedKeys? = nil, doubleEncoding: FleeceDoubleEncoding) {
        box = FleeceWriterBox(FleeceWriter(sharedKeys: sharedKeys, doubleEncoding: doubleEncoding))
    }

    @inline(__always)
    mutating func makeUnique() {
        if !isKnownUniquelyReferenced(&box) {
            box = FleeceWriterBox(box.writer.copy())
        }
    }

    /// The shared-key table this encoder uses, if any.
    package var sharedKeys: SharedKeys? { box.writer.sharedKeys }

    /// How doubles are stored; see ``FleeceDoubleEncoding``. Default: `.liteCore`.
    package var doubleEncoding: FleeceDoubleEncoding {
        get { box.writer.doubleEncoding }
        set { makeUnique(); box.writer.doubleEncoding = newValue }
    }

    // MARK: Collections

    /// Starts an array; `reserve` is a capacity hint.
    package mutating func beginArray(reserve: Int = 0) {
        makeUnique(); box.writer.beginCollection(isDict: false, reserve: reserve)
    }

    /// Ends the innermost array.
    package mutating func endArray() { makeUnique(); box.writer.endArray() }

    /// Starts a dictionary; `reserve` is a capacity hint (number of pairs).
    package mutating func beginDict(reserve: Int = 0) {
        makeUnique(); box.writer.beginCollection(isDict: true, reserve: reserve)
    }

    /// Writes the key of the next dict pair (as its shared-key code when it has or gets one).
    package mutating func writeKey(_ key: String) {
        makeUnique()
        var k = key
        k.withUTF8 { box.writer.writeKey($0.baseAddress, $0.count) }
    }

    /// Writes a key given as UTF-8 bytes (not validated).
    package mutating func writeKey(utf8 key: UnsafeBufferPointer<UInt8>) {
        makeUnique(); box.writer.writeKey(key.baseAddress, key.count)
    }

    /// Ends a dictionary; its pairs are sorted by key (§6.6). A key written twice keeps its
    /// last value.
    package mutating func endDict() { makeUnique(); box.writer.endDict() }

    // MARK: Scalars

    /// Writes `null`.
    package mutating func writeNull() { makeUnique(); box.writer.writeNull() }

    /// Writes `true` or `false`.
    package mutating func writeBool(_ value: Bool) { makeUnique(); box.writer.writeBool(value) }

    /// Writes an integer: −2048…2047 in the 2-byte short form; other non-negative values as
    /// unsigned and negative ones as signed, in the fewest little-endian bytes (§6.2, the JSON
    /// rule; Fleece's C++ `writeInt` would store non-negative values signed, which readers
    /// treat identically).
    package mutating func writeInt(_ value: Int64) { makeUnique(); box.writer.writeInt(value) }

    /// Writes an unsigned integer (short form below 2048, else minimal little-endian bytes).
    package mutating func writeUInt(_ value: UInt64) { makeUnique(); box.writer.writeUInt(value) }

    /// Writes a double as chosen by ``doubleEncoding``. NaN and infinities are an error.
    package mutating func writeDouble(_ value: Double) { makeUnique(); box.writer.writeDouble(value) }

    /// Writes a 32-bit float (with `.liteCore`, integral values in Int32 range become integers).
    package mutating func writeFloat(_ value: Float) { makeUnique(); box.writer.writeFloat(value) }

    /// Writes a string; 2–15-byte strings repeated within one document are stored once.
    package mutating func writeString(_ value: String) {
        makeUnique()
        var s = value
        s.withUTF8 { box.writer.writeString($0.baseAddress, $0.count) }
    }

    /// Writes a string given as UTF-8 bytes (not validated).
    package mutating func writeString(utf8 value: UnsafeBufferPointer<UInt8>) {
        makeUnique(); box.writer.writeString(value.baseAddress, value.count)
    }

    /// Writes binary data.
    package mutating func writeData(_ value: [UInt8]) {
        makeUnique()
        value.withUnsafeBufferPointer { box.writer.writeData($0.baseAddress, $0.count) }
    }

    // MARK: Whole values

    /// Writes a Foundation/Swift value tree: `[String: Any]`, `[Any]`, `String`, `Bool`, any
    /// integer type, `Double`, `Float`, `NSNumber`, `NSNull`, `Data` (binary), `NSArray`,
    /// `NSDictionary` (string keys), optionals (`nil` → null). Dict keys are written in UTF-8
    /// byte order, so the output (and the order new shared keys are assigned) is deterministic.
    ///
    /// - Throws: ``FleeceError/unsupportedValue(_:)`` for anything else (e.g. `Date`, NaN).
    ///   On error the encoder is reset.
    package mutating func write(_ value: Any) throws {
        makeUnique()
        do {
            try box.writer.writeAny(value, depth: 0)
            if box.writer.failed { throw box.writer.error ?? .encodingMisuse("encoding failed") }
        } catch {
            box.writer.reset()
            throw error
        }
    }

    /// Converts JSON text straight to Fleece (no intermediate objects), like LiteCore's
    /// `JSONConverter`. Numbers without fraction/exponent are integers (unsigned if ≥ 0);
    /// others, and integers beyond 64 bits, are doubles. A key repeated in one object keeps
    /// its last value.
    ///
    /// - Throws: ``FleeceError/invalidJSON(_:offset:)`` for malformed JSON, invalid UTF-8,
    ///   trailing garbage, nesting deeper than 512 or numbers out of Double range. On error the
    ///   encoder is reset.
    package mutating func writeJSON(_ json: UnsafeRawBufferPointer) throws {
        makeUnique()
        do {
            try JSONToFleece.convert(json, into: &box.writer)
        } catch {
            box.writer.reset()
            throw error
        }
    }

    /// `writeJSON` for a byte array.
    package mutating func writeJSON(_ json: [UInt8]) throws {
        try json.withUnsafeBytes { try writeJSON($0) }
    }

    // MARK: Finishing

    /// Appends the root trailer and returns the document; the encoder is reset for reuse.
    ///
    /// - Throws: ``FleeceError`` if nothing (or an unclosed collection) was written, or an
    ///   earlier call was invalid. The encoder is reset either way.
    package mutating func finish() throws -> [UInt8] {
        try finish { [UInt8]($0) }
    }

    /// Like ``finish()``, but lends the encoded bytes to `body` instead of copying them into a
    /// new array (e.g. to bind them straight to an SQLite statement). The bytes are valid only
    /// during the call.
    package mutating func finish<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) throws -> R {
        makeUnique()
        defer { box.writer.reset() }
        try box.writer.finishTrailer()
        return try body(UnsafeBufferPointer(start: box.writer.out, count: box.writer.outCount))
    }

    /// Discards everything written since the last `finish` (keeps buffers).
    package mutating func reset() {
        makeUnique(); box.writer.reset()
    }
}

/// One-call conversions.
package enum FleeceCoding {
    /// JSON text → Fleece document bytes (see `FleeceEncoder.writeJSON`).
    package static func encodeJSON(_ json: [UInt8], sharedKeys: SharedKeys?) throws -> [UInt8] {
        var encoder = FleeceEncoder(sharedKeys: sharedKeys)
        try encoder.writeJSON(json)
        return try encoder.finish()
    }

    /// Foundation value → Fleece document bytes (see ``FleeceEncoder/write(_:)``).
    package static func encode(_ value: Any, sharedKeys: SharedKeys?) throws -> [UInt8] {
        var encoder = FleeceEncoder(sharedKeys: sharedKeys)
        try encoder.write(value)
        return try encoder.finish()
    }
}
