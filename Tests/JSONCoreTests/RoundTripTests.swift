import Foundation
import XCTest
import JSONCore
import CBLTestSupport

/// Structural equality where numbers only need to agree as doubles to 1e-13 (relative):
/// Linux JSONSerialization does not always round correctly (e.g. -5.093341515940929e-86).
func looselyEqual(_ a: Any, _ b: Any) -> Bool {
    func number(_ v: Any) -> Double? {
        if v is Bool { return nil }
        if let n = v as? NSNumber, ObjectIdentifier(type(of: n)) == ObjectIdentifier(type(of: NSNumber(value: true))) { return nil }
        if let i = v as? Int { return Double(i) }
        if let d = v as? Double { return d }
        if let n = v as? NSNumber { return n.doubleValue }
        return nil
    }
    switch (a, b) {
    case let (x as [String: Any], y as [String: Any]):
        return x.count == y.count && x.allSatisfy { k, v in y[k].map { looselyEqual(v, $0) } ?? false }
    case let (x as [Any], y as [Any]):
        return x.count == y.count && zip(x, y).allSatisfy { looselyEqual($0, $1) }
    case let (x as String, y as String):
        return x == y
    default:
        if let x = number(a), let y = number(b) {
            return x == y || abs(x - y) <= 1e-13 * max(abs(x), abs(y))
        }
        return jsonEqual(a, b)
    }
}

final class RoundTripTests: XCTestCase {
    struct Generator {
        var rng: SplitMix64
        mutating func string() -> String {
            let pool: [Unicode.Scalar] = ["a", "b", "Z", " ", "\"", "\\", "/", "\n", "\t", "\u{0}", "\u{1F}",
                                          "\u{7F}", "\u{E9}", "\u{2028}", "\u{FF5E}", "\u{1F600}", "0", "_"]
            let n = Int(rng.next() % 20)
            var s = String.UnicodeScalarView()
            for _ in 0..<n { s.append(pool[Int(rng.next() % UInt64(pool.count))]) }
            return String(s)
        }
        mutating func double() -> Double {
            switch rng.next() % 4 {
            case 0: return Double(Int64(bitPattern: rng.next()) % 1_000_000) / 100
            case 1: let d = Double(bitPattern: rng.next()); return d.isFinite ? d : 0.5
            case 2: return Double(rng.next() % 1000)
            default: return (Double(rng.next() % 1_000_000) + 0.5) * pow(10, Double(Int(rng.next() % 40) - 20))
            }
        }
        mutating func value(depth: Int) -> Any {
            let r = rng.next() % (depth > 4 ? 6 : 8)
            switch r {
            case 0: return string()
            case 1: return Int(truncatingIfNeeded: rng.next()) >> Int(rng.next() % 64)
            case 2: return double()
            case 3: return rng.next() % 2 == 0
            case 4: return NSNull()
            case 5: return string()
            case 6:
                return (0..<Int(rng.next() % 6)).map { _ in value(depth: depth + 1) }
            default:
                var d: [String: Any] = [:]
                for _ in 0..<Int(rng.next() % 8) { d[string()] = value(depth: depth + 1) }
                return d
            }
        }
    }

    /// Doubles survive a round trip exactly only when %.16g is enough (iOS writes 16 digits,
    /// as CBJSONEncoder does), so compare through a second encoding: encode -> parse ->
    /// encode must be a fixed point, and the parsed value must equal the original up to that.
    func testRandomValuesRoundTrip() throws {
        var gen = Generator(rng: SplitMix64(seed: 20240131))
        for _ in 0..<1500 {
            let v = gen.value(depth: 0)
            let first = try JSON.canonicalData(v)
            let parsed = try JSON.parse(first)
            let second = try JSON.canonicalData(parsed)
            XCTAssertEqual(first, second)
            // Unsorted output parses to the same value.
            let unsorted = try JSON.data(v, sortedKeys: false)
            XCTAssertEqual(try JSON.canonicalData(try JSON.parse(unsorted)), first)
            // JSONSerialization reads our output as the same structure... (numbers compared
            // loosely: Linux JSONSerialization turns some exponent forms into integers and
            // writes 959.0 as 959)
            let foundation = try JSONSerialization.jsonObject(with: Data(first), options: [.fragmentsAllowed])
            XCTAssertTrue(looselyEqual(foundation, parsed), String(decoding: first, as: UTF8.self))
            // ...and we read JSONSerialization's output of the parsed value.
            let theirs = try JSONSerialization.data(withJSONObject: [parsed], options: [.fragmentsAllowed])
            let reparsed = try JSON.parse(theirs) as! [Any]
            if !looselyEqual(reparsed[0], parsed) {
                XCTFail("JSONSerialization output \(String(decoding: theirs, as: UTF8.self)) vs ours \(String(decoding: first, as: UTF8.self))")
            }
            XCTAssertTrue(JSON.isValid(v))
        }
    }

    func testStringsAndIntsRoundTripExactly() throws {
        var gen = Generator(rng: SplitMix64(seed: 1))
        for _ in 0..<3000 {
            let s = gen.string()
            XCTAssertEqual(try JSON.parse(JSON.canonicalData(s)) as? String, s)
            let i = Int(truncatingIfNeeded: gen.rng.next())
            XCTAssertEqual(try JSON.parse(JSON.canonicalData(i)) as? Int, i)
            let d = gen.double()
            let text = try JSON.canonicalData(d)
            let back = try JSON.parse(text)
            let backD = (back as? Double) ?? Double(back as! Int)
            // 16 significant digits: relative error below 1e-15.
            if d != 0 { XCTAssertLessThan(abs(backD / d - 1), 1e-15, "\(d)") } else { XCTAssertEqual(backD, 0) }
        }
    }
}
