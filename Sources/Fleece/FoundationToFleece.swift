import Foundation
import JSONCore

/// Foundation / Swift value trees → Fleece (`FleeceEncoder.write(_:)`).
extension FleeceWriter {
    static let maxAnyDepth = 512

    mutating func writeAny(_ value: Any, depth: Int) throws {
        guard depth < FleeceWriter.maxAnyDepth else {
            throw FleeceError.unsupportedValue("nesting deeper than \(FleeceWriter.maxAnyDepth)")
        }
        // Fleece has a data type, JSON has not: data first, then JSONCore's classification (the
        // package's one rule for what a Swift/Foundation value means as JSON).
        let t = type(of: value)
        if t == Data.self || (t is AnyObject.Type && value is NSData) {
            // Kept `as!`: each follows the type test just made.
            let bytes = t == Data.self ? value as! Data : Data(referencing: value as! NSData)
            bytes.withUnsafeBytes { writeData($0.baseAddress?.assumingMemoryBound(to: UInt8.self), $0.count) }
        } else {
            switch ValueClassifier.classify(value) {
            case .string(var s): s.withUTF8 { writeString($0.baseAddress, $0.count) }
            case .int(let i): writeInt(i)
            case .uint(let u): writeUInt(u)
            case .double(let d): try checkedDouble(d)
            case .float(let f): try checkedFloat(f)
            case .bool(let b): writeBool(b)
            case .null: writeNull()
            case .object(let d): try writeDict(d, depth: depth)
            case .objectOfOptionals(let d): try writeDict(d.mapValues { $0 as Any }, depth: depth)
            case .array(let a): try writeArray(a, depth: depth)
            case .arrayOfOptionals(let a): try writeArray(a.map { $0 as Any }, depth: depth)
            case .invalid(let reason): throw FleeceError.unsupportedValue(reason)
            }
        }
        if failed { throw error ?? .encodingMisuse("encoding failed") }
    }

    private mutating func checkedDouble(_ d: Double) throws {
        guard d.isFinite else { throw FleeceError.unsupportedValue("\(d) (NaN and infinity cannot be stored)") }
        writeDouble(d)
    }

    private mutating func checkedFloat(_ f: Float) throws {
        guard f.isFinite else { throw FleeceError.unsupportedValue("\(f) (NaN and infinity cannot be stored)") }
        writeFloat(f)
    }

    private mutating func writeArray(_ array: [Any], depth: Int) throws {
        beginCollection(isDict: false, reserve: array.count)
        for v in array { try writeAny(v, depth: depth &+ 1) }
        endArray()
    }

    /// Keys go in UTF-8 byte order (the order Fleece stores them in), so the bytes written and
    /// the order in which new shared keys are assigned do not depend on hashing.
    private mutating func writeDict(_ dict: [String: Any], depth: Int) throws {
        beginCollection(isDict: true, reserve: dict.count)
        let sortedKeys = dict.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        for key in sortedKeys {
            var k = key
            k.withUTF8 { writeKey($0.baseAddress, $0.count) }
            try writeAny(dict[key]!, depth: depth &+ 1)
        }
        endDict()
    }
}
