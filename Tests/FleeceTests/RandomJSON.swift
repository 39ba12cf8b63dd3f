import Foundation
import CBLTestSupport


/// Generates a random JSON text together with the Foundation value it denotes. Object keys
/// are emitted in UTF-8 byte order (as `FleeceEncoder.write(_:)` writes them), so both paths
/// must produce identical Fleece.
struct RandomJSON {
    var rng: SplitMix64
    /// Pool of keys, so that keys repeat across objects (shared keys, de-duplication).
    let keyPool = ["name", "age", "id", "_id", "x", "", "a b", "ü", "tags", "address", "zip",
                   "a", "b", "c", "long-key-more-than-16", "emoji😀", "k\"q", "tab\tkey",
                   "UPPER", "mixed_Case-1", "0", "9lives", "x.y"]

    init(seed: UInt64) { rng = SplitMix64(seed: seed) }

    mutating func int(_ n: Int) -> Int { Int(rng.next() % UInt64(n)) }

    mutating func value(depth: Int) -> (String, Any) {
        let kind = depth > 4 ? int(6) : int(9)
        switch kind {
        case 0: return ("null", NSNull())
        case 1: let b = int(2) == 0; return (b ? "true" : "false", b)
        case 2: return integer()
        case 3: return double()
        case 4, 5: let s = string(); return (quote(s), s)
        case 6: return integer()
        case 7: return array(depth: depth)
        default: return object(depth: depth)
        }
    }

    mutating func integer() -> (String, Any) {
        switch int(6) {
        case 0: let v = int(4096) - 2048; return (String(v), v)
        case 1: let v = Int(Int32.random(in: .min ... .max, using: &rng)); return (String(v), v)
        case 2: let v = Int.random(in: .min ... .max, using: &rng); return (String(v), v)
        case 3: let v = UInt64.random(in: UInt64(Int64.max) ... .max, using: &rng); return (String(v), v)
        case 4: let v = [2047, 2048, -2048, -2049, 255, 256, 65535, 65536, Int(Int64.max), Int(Int64.min)][int(10)]
            return (String(v), v)
        default: let v = int(100_000); return (String(v), v)
        }
    }

    mutating func double() -> (String, Any) {
        var d: Double
        switch int(5) {
        case 0: d = Double(bitPattern: rng.next())
        case 1: d = Double(int(2000) - 1000) / 8          // often float-representable or integral
        case 2: d = Double.random(in: -1e6 ... 1e6, using: &rng)
        case 3: d = [0.1, 3.14, 1e300, -2.5e-300, Double.leastNonzeroMagnitude, 1.0, -0.0, 1e19, 1.5][int(9)]
        default: d = Double(Float(bitPattern: UInt32(truncatingIfNeeded: rng.next())))
        }
        if !d.isFinite { d = 42.5 }
        var text = d.description                              // shortest round-trip form
        if int(4) == 0, !text.contains("e") { text += "e0" }
        return (text, d)
    }

    mutating func string() -> String {
        let alphabet: [String] = ["a", "b", "z", "0", " ", "\"", "\\", "/", "\n", "\t", "\u{01}",
                                  "é", "ß", "€", "😀", "\u{7F}", "hello", "hello world!"]
        let n = int(5) == 0 ? int(40) : int(8)
        var s = ""
        for _ in 0..<n { s += alphabet[int(alphabet.count)] }
        return s
    }

    mutating func quote(_ s: String) -> String {
        var out = "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += int(2) == 0 ? "\\n" : "\\u000a"
            case "\t": out += "\\t"
            case "/": out += int(2) == 0 ? "/" : "\\/"
            default:
                if u.value < 0x20 {
                    out += String(format: "\\u%04x", u.value)
                } else if u.value >= 0x80 && int(3) == 0 {
                    for unit in String(u).utf16 { out += String(format: "\\u%04X", unit) }
                } else {
                    out.unicodeScalars.append(u)
                }
            }
        }
        return out + "\""
    }

    mutating func ws() -> String { ["", "", "", " ", "\n  ", "\t"][int(6)] }

    mutating func array(depth: Int) -> (String, Any) {
        let n = int(6) == 0 ? int(40) : int(5)
        var parts: [String] = []
        var values: [Any] = []
        for _ in 0..<n {
            let (t, v) = value(depth: depth + 1)
            parts.append(ws() + t + ws())
            values.append(v)
        }
        return ("[" + parts.joined(separator: ",") + ws() + "]", values)
    }

    mutating func object(depth: Int) -> (String, Any) {
        let n = int(6) == 0 ? int(30) : int(6)
        var dict: [String: (String, Any)] = [:]
        for _ in 0..<n {
            let key = int(3) == 0 ? string() : keyPool[int(keyPool.count)]
            dict[key] = value(depth: depth + 1)
        }
        let keys = dict.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        let body = keys.map { ws() + quote($0) + ws() + ":" + ws() + dict[$0]!.0 }
        var values: [String: Any] = [:]
        for (k, v) in dict { values[k] = v.1 }
        return ("{" + body.joined(separator: ",") + ws() + "}", values)
    }
}
