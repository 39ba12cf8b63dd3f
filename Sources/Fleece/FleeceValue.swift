import Foundation

/// The type of a Fleece value.
package enum FleeceType: Sendable, Equatable {
    case null, boolean, number, string, data, array, dict
    /// The "deleted key" marker of delta-encoded dicts (§6.1, `0x3C`); never in stored bodies.
    case undefined
}

/// One value inside a ``FleeceDocument``: a view into the document's buffer that keeps the
/// document alive. Reading it never copies the document and never fails: the document was
/// validated on creation.
///
/// Conversions are lenient like Fleece's `asInt`/`asDouble`/…: asking a value for a type it
/// is not gives a default (0, false, nil) or a conversion (a double's `intValue` truncates).
// @unchecked because it holds a `FleeceStorage` (immutable bytes) and an offset.
package struct FleeceValue: @unchecked Sendable {
    let storage: FleeceStorage
    let offset: Int

    @inline(__always)
    var p: UnsafePointer<UInt8> { UnsafePointer(storage.base) }

    @inline(__always)
    var tag: UInt8 { storage.base[offset] >> 4 }

    /// What kind of value this is (integers and floating point are both `.number`).
    package var type: FleeceType {
        let b0 = storage.base[offset]
        switch b0 >> 4 {
        case 0, 1, 2: return .number
        case 3:
            switch b0 & 0x0C {
            case 0x00: return .null
            case 0x0C: return .undefined
            default: return .boolean
            }
        case 4: return .string
        case 5: return .data
        case 6: return .array
        default: return .dict
        }
    }

    /// True for integers (short or long, signed or unsigned).
    package var isInteger: Bool { tag <= 1 }

    /// True for integers stored as unsigned (only long ints ≥ 2048 written as unsigned).
    package var isUnsigned: Bool { tag == 1 && storage.base[offset] & 0x08 != 0 }

    /// True for 64-bit doubles, including doubles stored as 4-byte floats (`0x24`); false for
    /// genuine 32-bit floats (`0x20`) and integers.
    package var isDouble: Bool { tag == 2 && storage.base[offset] & 0x0C != 0 }

    /// Fleece's `asBool`: `true` is true; false/null/undefined are false; numbers are true when
    /// their integer value is non-zero; strings, data and collections are true.
    package var boolValue: Bool {
        switch tag {
        case 3: return storage.base[offset] == 0x38
        case 0, 1, 2: return intValue != 0
        default: return true
        }
    }

    /// Integer value: integers as stored (a huge unsigned wraps, like Fleece), doubles
    /// truncated (saturating), booleans 0/1, everything else 0.
    package var intValue: Int64 {
        switch tag {
        case 0: return FleeceLayout.shortInt(p, offset)
        case 1: return Int64(bitPattern: FleeceLayout.longInt(p, offset).bits)
        case 2:
            let d = doubleValue
            if d.isNaN { return 0 }
            if d >= 9.223_372_036_854_775_807e18 { return .max }
            if d <= -9.223_372_036_854_775_808e18 { return .min }
            return Int64(d)
        case 3: return storage.base[offset] == 0x38 ? 1 : 0
        default: return 0
        }
    }

    /// Unsigned value: unsigned integers as stored, signed ones reinterpreted (like Fleece's
    /// `asUnsigned`), non-negative doubles truncated (saturating).
    package var uintValue: UInt64 {
        switch tag {
        case 1:
            return FleeceLayout.longInt(p, offset).bits
        case 2:
            let d = doubleValue
            if d.isNaN { return 0 }
            if d >= 1.844_674_407_370_955_161_6e19 { return .max }
            if d >= 0 { return UInt64(d) }
            return UInt64(bitPattern: intValue)
        default:
            return UInt64(bitPattern: intValue)
        }
    }

    /// Floating-point value: floats and doubles as stored, integers converted, booleans 0/1.
    package var doubleValue: Double {
        switch tag {
        case 0: return Double(FleeceLayout.shortInt(p, offset))
        case 1:
            let (bits, unsigned) = FleeceLayout.longInt(p, offset)
            return unsigned ? Double(bits) : Double(Int64(bitPattern: bits))
        case 2:
            let raw = UnsafeRawPointer(p + offset + 2)
            if storage.base[offset] & 0x08 != 0 {
                return Double(bitPattern: UInt64(littleEndian: raw.loadUnaligned(as: UInt64.self)))
            }
            return Double(Float(bitPattern: UInt32(littleEndian: raw.loadUnaligned(as: UInt32.self))))
        case 3: return storage.base[offset] == 0x38 ? 1 : 0
        default: return 0
        }
    }

    /// The string, or nil if this is not a string. (Invalid UTF-8 is repaired.)
    package var stringValue: String? {
        guard tag == 4 else { return nil }
        let (start, length) = FleeceLayout.stringBytes(p, offset)
        return String(decoding: UnsafeBufferPointer(start: p + start, count: length), as: UTF8.self)
    }

    /// Calls `body` with the string's UTF-8 bytes (no copy); nil if this is not a string.
    package func withUTF8<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R? {
        guard tag == 4 else { return nil }
        let (start, length) = FleeceLayout.stringBytes(p, offset)
        return try body(UnsafeBufferPointer(start: p + start, count: length))
    }

    /// The binary data, or nil if this is not binary data.
    package var dataValue: [UInt8]? {
        guard tag == 5 else { return nil }
        let (start, length) = FleeceLayout.stringBytes(p, offset)
        return [UInt8](UnsafeBufferPointer(start: p + start, count: length))
    }

    /// The array, or nil if this is not an array.
    package var arrayValue: FleeceArray? {
        guard tag == 6 else { return nil }
        return FleeceArray(storage: storage, offset: offset)
    }

    /// The dict, or nil if this is not a dict.
    package var dictValue: FleeceDict? {
        guard tag == 7 else { return nil }
        return FleeceDict(storage: storage, offset: offset)
    }

    /// The value for `key` if this is a dict.
    package subscript(key: String) -> FleeceValue? { dictValue?[key] }

    /// The element at `index` if this is an array and the index is in range.
    package subscript(index: Int) -> FleeceValue? {
        guard let a = arrayValue, index >= 0, index < a.count else { return nil }
        return a[index]
    }

    /// Compact JSON: dict keys in stored order (shared keys resolved), integers exact,
    /// floating point in the shortest form that reads back to the same value, binary data as
    /// a base64 string, non-finite floats and `undefined` as null.
    package func toJSON() -> String {
        String(decoding: toJSONBytes(), as: UTF8.self)
    }

    /// ``toJSON()`` as UTF-8 bytes.
    package func toJSONBytes() -> [UInt8] {
        var w = FleeceJSONWriter(storage: storage)
        w.write(offset, depth: 0)
        return w.out
    }

    /// The value as Foundation objects: `[String: Any]`, `[Any]`, `String`, `Int` (`UInt64` for
    /// unsigned values above `Int.max`), `Double`, `Bool`, `NSNull` (also for `undefined`),
    /// `Data`.
    package func toFoundation() -> Any {
        let base = p
        switch tag {
        case 0: return Int(FleeceLayout.shortInt(base, offset))
        case 1:
            let (bits, unsigned) = FleeceLayout.longInt(base, offset)
            if unsigned && bits > UInt64(Int.max) { return bits }
            return Int(Int64(bitPattern: bits))
        case 2: return doubleValue
        case 3:
            switch storage.base[offset] {
            case 0x38: return true
            case 0x34: return false
            default: return NSNull()
            }
        case 4: return stringValue!
        case 5: return Data(dataValue!)
        case 6:
            let a = FleeceArray(storage: storage, offset: offset)
            var result: [Any] = []
            result.reserveCapacity(a.count)
            for v in a { result.append(v.toFoundation()) }
            return result
        default:
            let d = FleeceDict(storage: storage, offset: offset)
            var result = [String: Any](minimumCapacity: d.count)
            for (k, v) in d { result[k] = v.toFoundation() }
            return result
        }
    }
}
