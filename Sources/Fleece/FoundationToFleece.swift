import Foundation

/// Lets a boxed `Optional` of any wrapped type be unwrapped from an `Any`.
private protocol FleeceAnyOptional {
    var fleeceWrapped: Any? { get }
}

extension Optional: FleeceAnyOptional {
    fileprivate var fleeceWrapped: Any? {
        switch self {
        case .some(let w): return w
        case .none: return nil
        }
    }
}

/// The class of boolean NSNumbers (`__NSCFBoolean`): every boolean NSNumber, including those
/// from JSONSerialization, is an instance, so 1 and `true` are never confused.
private let booleanNumberClass = ObjectIdentifier(type(of: NSNumber(value: true)))

/// Foundation / Swift value trees → Fleece (`FleeceEncoder.write(_:)`).
extension FleeceWriter {
    static let maxAnyDepth = 512

    mutating func writeAny(_ value: Any, depth: Int) throws {
        guard depth < FleeceWriter.maxAnyDepth else {
            throw FleeceError.unsupportedValue("nesting deeper than \(FleeceWriter.maxAnyDepth)")
        }
        let t = type(of: value)
        // Exact native types first: a native Int would also answer `is NSNumber`.
        if t == String.self {
            var s = value as! String
            s.withUTF8 { writeString($0.baseAddress, $0.count) }
        } else if t == Int.self {
            writeInt(Int64(value as! Int))
        } else if t == Double.self {
            try checkedDouble(value as! Double)
        } else if t == Bool.self {
            writeBool(value as! Bool)
        } else if t == [String: Any].self {
            try writeDict(value as! [String: Any], depth: depth)
        } else if t == [Any].self {
            try writeArray(value as! [Any], depth: depth)
        } else if t is NSNumber.Type {
            try writeNumber(value as! NSNumber)
        } else if t == NSNull.self {
            writeNull()
        } else if t == Data.self {
            (value as! Data).withUnsafeBytes {
                writeData($0.baseAddress?.assumingMemoryBound(to: UInt8.self), $0.count)
            }
        } else if t == Substring.self {
            var s = String(value as! Substring)
            s.withUTF8 { writeString($0.baseAddress, $0.count) }
        } else if t == Int64.self {
            writeInt(value as! Int64)
        } else if t == Int32.self {
            writeInt(Int64(value as! Int32))
        } else if t == Int16.self {
            writeInt(Int64(value as! Int16))
        } else if t == Int8.self {
            writeInt(Int64(value as! Int8))
        } else if t == UInt.self {
            writeUInt(UInt64(value as! UInt))
        } else if t == UInt64.self {
            writeUInt(value as! UInt64)
        } else if t == UInt32.self {
            writeUInt(UInt64(value as! UInt32))
        } else if t == UInt16.self {
            writeUInt(UInt64(value as! UInt16))
        } else if t == UInt8.self {
            writeUInt(UInt64(value as! UInt8))
        } else if t == Float.self {
            try checkedFloat(value as! Float)
        } else if t == [String: Any?].self {
            try writeDict((value as! [String: Any?]).mapValues { $0 as Any }, depth: depth)
        } else if t == [Any?].self {
            try writeArray((value as! [Any?]).map { $0 as Any }, depth: depth)
        } else if t == Date.self || value is NSDate {
            throw FleeceError.unsupportedValue("Date (convert it to an ISO-8601 string first)")
        } else if let opt = value as? any FleeceAnyOptional {
            if let wrapped = opt.fleeceWrapped {
                try writeAny(wrapped, depth: depth)
            } else {
                writeNull()
            }
        } else if t is AnyObject.Type {
            try writeObject(value as AnyObject, type: t, depth: depth)
        } else if let d = value as? [String: Any] {
            try writeDict(d, depth: depth)
        } else if value is [AnyHashable: Any] {
            throw FleeceError.unsupportedValue("dictionary with non-string keys")
        } else if let a = value as? [Any] {
            try writeArray(a, depth: depth)
        } else {
            throw FleeceError.unsupportedValue("\(t)")
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

    /// NSNumbers by kind: booleans by class, then by objCType like CBJSONEncoder.
    private mutating func writeNumber(_ n: NSNumber) throws {
        if ObjectIdentifier(type(of: n)) == booleanNumberClass {
            writeBool(n.boolValue)
            return
        }
        switch UInt8(bitPattern: n.objCType.pointee) {
        case UInt8(ascii: "d"): try checkedDouble(n.doubleValue)
        case UInt8(ascii: "f"): try checkedFloat(n.floatValue)
        case UInt8(ascii: "Q"), UInt8(ascii: "L"): writeUInt(n.uint64Value)
        default: writeInt(n.int64Value)
        }
    }

    /// Class instances, converted without `as?` casts to Swift collections (on Linux those
    /// bridge eagerly and never terminate on cycles).
    private mutating func writeObject(_ object: AnyObject, type t: Any.Type, depth: Int) throws {
        if let n = object as? NSNumber {
            try writeNumber(n)
        } else if object is NSNull {
            writeNull()
        } else if let s = object as? NSString {
            var str = s.description
            str.withUTF8 { writeString($0.baseAddress, $0.count) }
        } else if let data = object as? NSData {
            let bytes = Data(referencing: data)
            bytes.withUnsafeBytes {
                writeData($0.baseAddress?.assumingMemoryBound(to: UInt8.self), $0.count)
            }
        } else if let nd = object as? NSDictionary {
            var d = [String: Any](minimumCapacity: nd.count)
            for (k, v) in nd {
                if let key = k as? NSString {
                    d[key.description] = v
                } else if let key = k as? String {
                    d[key] = v
                } else {
                    throw FleeceError.unsupportedValue("dictionary with a non-string key (\(type(of: k)))")
                }
            }
            try writeDict(d, depth: depth)
        } else if let na = object as? NSArray {
            var a: [Any] = []
            a.reserveCapacity(na.count)
            for i in 0..<na.count { a.append(na.object(at: i)) }
            try writeArray(a, depth: depth)
        } else {
            throw FleeceError.unsupportedValue("\(t)")
        }
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
