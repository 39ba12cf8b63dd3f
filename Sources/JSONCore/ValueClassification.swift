import Foundation

/// Lets a boxed `Optional` of any wrapped type be unwrapped from an `Any`.
internal protocol _JSONAnyOptional {
    var _jsonWrapped: Any? { get }
}

extension Optional: _JSONAnyOptional {
    var _jsonWrapped: Any? {
        switch self {
        case .some(let w): return w
        case .none: return nil
        }
    }
}

/// What an arbitrary Swift/Foundation value is in JSON terms, one level deep (slow, general path):
/// the public 1.x/2.x APIs hand the package `Any`, and this is how it is read at that edge. Not a
/// JSON value (containers stay unconverted, a `Float` stays apart for 1.x's 6-digit formatting):
/// the package's JSON value is ``JSONValue``, which ``JSONValue/init(foundation:)`` builds from
/// this. The one classifier of the package: the JSON writer, the Fleece encoder, the 2.x value
/// rules and that conversion ask it.
package enum FoundationValueKind {
    case string(String)
    case int(Int64)
    case uint(UInt64)
    case double(Double)
    case float(Float)
    case bool(Bool)
    case null
    case object([String: Any])
    case objectOfOptionals([String: Any?])
    case array([Any])
    case arrayOfOptionals([Any?])
    case invalid(String)
}

package enum ValueClassifier {
    /// The class of `NSNumber(value: true)` (`__NSCFBoolean` in swift-corelibs-foundation;
    /// every boolean NSNumber, including those produced by JSONSerialization, is an instance).
    static let booleanNumberClass = ObjectIdentifier(type(of: NSNumber(value: true)))

    /// Classifies an NSNumber the way CBJSONEncoder does (by objCType), except that booleans
    /// are recognised by their class instead of by pointer identity with kCFBoolean*.
    @inline(__always)
    package static func classify(number n: NSNumber) -> FoundationValueKind {
        if ObjectIdentifier(type(of: n)) == booleanNumberClass {
            return .bool(n.boolValue)
        }
        let code = n.objCType.pointee
        switch UInt8(bitPattern: code) {
        case UInt8(ascii: "d"):
            return .double(n.doubleValue)
        case UInt8(ascii: "f"):
            return .float(n.floatValue)
        case UInt8(ascii: "Q"), UInt8(ascii: "L"):
            return .uint(n.uint64Value)
        default:
            return .int(n.int64Value)
        }
    }

    /// General classification; the writer uses inline fast paths for the common exact types
    /// and falls back to this.
    package static func classify(_ value: Any) -> FoundationValueKind {
        let t = type(of: value)
        // Exact native types first. Order matters: a boxed NSNumber would answer `as? Int`
        // and `as? Bool`, and a native Int answers `is NSNumber`, so only exact-type checks
        // are used before the NSNumber test. Each `as!` follows an exact type match: it cannot fail.
        if t == String.self { return .string(value as! String) }
        if t == Int.self { return .int(Int64(value as! Int)) }
        if t == Double.self { return .double(value as! Double) }
        if t == Bool.self { return .bool(value as! Bool) }
        if t == [String: Any].self { return .object(value as! [String: Any]) }
        if t == [Any].self { return .array(value as! [Any]) }
        if t is NSNumber.Type { return classify(number: value as! NSNumber) }
        if t == NSNull.self { return .null }
        if t == Substring.self { return .string(String(value as! Substring)) }
        if t == Int64.self { return .int(value as! Int64) }
        if t == Int32.self { return .int(Int64(value as! Int32)) }
        if t == Int16.self { return .int(Int64(value as! Int16)) }
        if t == Int8.self { return .int(Int64(value as! Int8)) }
        if t == UInt.self { return .uint(UInt64(value as! UInt)) }
        if t == UInt64.self { return .uint(value as! UInt64) }
        if t == UInt32.self { return .uint(UInt64(value as! UInt32)) }
        if t == UInt16.self { return .uint(UInt64(value as! UInt16)) }
        if t == UInt8.self { return .uint(UInt64(value as! UInt8)) }
        if t == Float.self { return .float(value as! Float) }
        if t == CGFloat.self { return .double(Double(value as! CGFloat)) }
        if t == Decimal.self {
            // Bridges to NSDecimalNumber (objCType 'd') on Apple platforms.
            return .double(NSDecimalNumber(decimal: value as! Decimal).doubleValue)
        }
        // Homogeneous collections from Swift literals (`"tags": ["a", "b"]` is a [String]):
        // exact-type checks avoid the runtime's element-by-element conditional casts below.
        if t == [String].self { return .array(value as! [String]) }
        if t == [Int].self { return .array(value as! [Int]) }
        if t == [Double].self { return .array(value as! [Double]) }
        if t == [Bool].self { return .array(value as! [Bool]) }
        if t == [[String: Any]].self { return .array(value as! [[String: Any]]) }
        if t == [[Any]].self { return .array(value as! [[Any]]) }
        if t == [String: String].self { return .object(value as! [String: String]) }
        if t == [String: Int].self { return .object(value as! [String: Int]) }
        if t == [String: Double].self { return .object(value as! [String: Double]) }
        if t == [String: Bool].self { return .object(value as! [String: Bool]) }
        if t == [String: [String: Any]].self { return .object(value as! [String: [String: Any]]) }
        if t == [String: Any?].self { return .objectOfOptionals(value as! [String: Any?]) }
        if t == [Any?].self { return .arrayOfOptionals(value as! [Any?]) }
        if t is AnyObject.Type {
            return classify(object: value as AnyObject, type: t)
        }
        if let opt = value as? any _JSONAnyOptional {
            guard let wrapped = opt._jsonWrapped else { return .null }
            return classify(wrapped)
        }
        if t == Date.self {
            return .invalid("Date is not a JSON value (convert it to an ISO-8601 string)")
        }
        if t == Data.self {
            return .invalid("Data is not a JSON value (encode it as base64)")
        }
        // Other collection types ([String], [Int], [String: String], [AnyHashable: Any], ...).
        if let d = value as? [String: Any] { return .object(d) }
        if value is [AnyHashable: Any] {
            return .invalid("dictionary has a non-string key")
        }
        if let a = value as? [Any] { return .array(a) }
        return .invalid("\(t) is not a JSON value")
    }

    /// Class instances. No `as?` casts to Swift types are attempted on them: on Linux a failed
    /// cast of an NSArray/NSDictionary tries Foundation bridging, which converts all nested
    /// containers eagerly (and never terminates on a cycle).
    static func classify(object: AnyObject, type t: Any.Type) -> FoundationValueKind {
        if let n = object as? NSNumber { return classify(number: n) }
        if object is NSNull { return .null }
        if let s = object as? NSString { return .string(s.description) }
        // NSArray/NSDictionary are converted one level at a time.
        if let nd = object as? NSDictionary {
            var d = [String: Any](minimumCapacity: nd.count)
            for (k, v) in nd {
                if let key = k as? NSString {
                    d[key.description] = v
                } else if let key = k as? String {
                    d[key] = v
                } else {
                    return .invalid("dictionary has a non-string key (\(type(of: k)))")
                }
            }
            return .object(d)
        }
        if let na = object as? NSArray {
            var a: [Any] = []
            a.reserveCapacity(na.count)
            for i in 0..<na.count { a.append(na.object(at: i)) }
            return .array(a)
        }
        if object is NSDate {
            return .invalid("Date is not a JSON value (convert it to an ISO-8601 string)")
        }
        if object is NSData {
            return .invalid("Data is not a JSON value (encode it as base64)")
        }
        return .invalid("\(t) is not a JSON value")
    }

    static func isValid(_ value: Any, depth: Int) -> Bool {
        if depth > JSONWriter.maxDepth { return false }
        switch classify(value) {
        case .string, .int, .uint, .bool, .null:
            return true
        case .double(let d):
            return d.isFinite
        case .float(let f):
            return f.isFinite
        case .object(let d):
            for (_, v) in d where !isValid(v, depth: depth + 1) { return false }
            return true
        case .objectOfOptionals(let d):
            for (_, v) in d {
                if let v, !isValid(v, depth: depth + 1) { return false }
            }
            return true
        case .array(let a):
            for v in a where !isValid(v, depth: depth + 1) { return false }
            return true
        case .arrayOfOptionals(let a):
            for v in a {
                if let v, !isValid(v, depth: depth + 1) { return false }
            }
            return true
        case .invalid:
            return false
        }
    }
}
