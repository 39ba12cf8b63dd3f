import Foundation
import XCTest
import JSONCore
import CBLTestSupport

final class StringEncodingTests: XCTestCase {
    func testEscapes() {
        XCTAssertEqual(canon("a\"b\\c"), #""a\"b\\c""#)
        XCTAssertEqual(canon("\u{8}\u{C}\n\r\t"), #""\b\f\n\r\t""#)
        XCTAssertEqual(canon("/path/to"), #""/path/to""#)              // solidus not escaped
        XCTAssertEqual(canon("\r\nHELO\r \tTHER"), #""\r\nHELO\r \tTHER""#)
    }

    func testControlCharactersUseUppercaseHex() {
        XCTAssertEqual(canon("\u{0}"), #""\u0000""#)
        XCTAssertEqual(canon("\u{1}"), #""\u0001""#)
        XCTAssertEqual(canon("\u{1F}wow\u{1F}"), #""\u001Fwow\u001F""#)
        XCTAssertEqual(canon("\u{1A}\u{1B}\u{0B}"), #""\u001A\u001B\u000B""#)
        for c in 0..<0x20 {
            let s = String(UnicodeScalar(UInt8(c)))
            let encoded = canon(s)
            XCTAssertTrue(encoded.hasPrefix("\"\\"), "U+\(c)")
            XCTAssertEqual(try JSON.parse(encoded) as? String, s)
        }
    }

    func testNonASCIIAndSpecialCharactersAreRaw() {
        XCTAssertEqual(canon("\u{7F}"), "\"\u{7F}\"")                  // DEL raw
        XCTAssertEqual(canon("\u{2028}\u{2029}"), "\"\u{2028}\u{2029}\"")
        XCTAssertEqual(canon("héllo wörld"), "\"héllo wörld\"")
        XCTAssertEqual(canon("日本語"), "\"日本語\"")
        XCTAssertEqual(canon("😀👍🏽"), "\"😀👍🏽\"")
        XCTAssertEqual(canon(["ключ": "значение"]), "{\"ключ\":\"значение\"}")
        XCTAssertEqual(try JSON.canonicalData("é"), [0x22, 0xC3, 0xA9, 0x22])
        XCTAssertFalse(canon("\u{1234}\u{FFFF}").contains("\\u"))
    }

    func testLongStringsWithEscapesAtEveryPosition() throws {
        for len in 0..<40 {
            for pos in 0..<max(len, 1) {
                var chars = Array(repeating: Character("x"), count: len)
                if pos < len { chars[pos] = "\"" }
                let s = String(chars) + (len % 3 == 0 ? "é" : "")
                let encoded = canon(s)
                XCTAssertEqual(try JSON.parse(encoded) as? String, s)
                let expected = "\"" + s.replacingOccurrences(of: "\"", with: "\\\"") + "\""
                XCTAssertEqual(encoded, expected)
            }
        }
    }

    func testSubstringAndNSString() {
        let s = "hello, world"
        XCTAssertEqual(canon(s[s.startIndex..<s.firstIndex(of: ",")!]), #""hello""#)
        XCTAssertEqual(canon(NSString(string: "ns\u{e9}")), "\"ns\u{e9}\"")
        XCTAssertEqual(canon(NSMutableString(string: "m")), #""m""#)
    }
}

final class KeyOrderTests: XCTestCase {
    func ref(_ a: String, _ b: String) -> Bool { a.utf16.lexicographicallyPrecedes(b.utf16) }

    func testUTF16OrderCases() {
        let cases: [(String, String)] = [
            ("B", "a"), ("a", "b"), ("B", "b"), ("", "a"), ("a", "aa"), ("_id", "a"),
            ("Z", "_"), ("\u{1F600}", "\u{FF5E}"),            // surrogates (D83D) < FF5E
            ("\u{10000}", "\u{E000}"), ("\u{D7FF}", "\u{10000}"), ("\u{E000}", "\u{FFFF}"),
            ("a\u{1F600}", "a\u{FF5E}"), ("\u{FFFF}", "\u{FFFF}a"), ("é", "\u{1F600}"),
            ("e\u{301}", "é"),                                  // no normalization: U+0065 < U+00E9
        ]
        for (a, b) in cases {
            XCTAssertTrue(JSON.utf16Precedes(a, b), "\(a.unicodeScalars.map { $0.value }) < \(b.unicodeScalars.map { $0.value })")
            XCTAssertFalse(JSON.utf16Precedes(b, a))
            XCTAssertEqual(JSON.utf16Precedes(a, b), ref(a, b))
        }
        XCTAssertFalse(JSON.utf16Precedes("same", "same"))
    }

    func testCanonicalKeyOrder() {
        XCTAssertEqual(canon(["b": 1, "B": 2, "a": 3]), #"{"B":2,"a":3,"b":1}"#)
        XCTAssertEqual(canon(["\u{FF5E}": 1, "\u{1F600}": 2, "z": 3]), "{\"z\":3,\"\u{1F600}\":2,\"\u{FF5E}\":1}")
        XCTAssertEqual(canon(["_rev": 1, "_id": 2, "_attachments": 3, "abc": 4, "ABC": 5]),
                       #"{"ABC":5,"_attachments":3,"_id":2,"_rev":1,"abc":4}"#)
        // Keys sharing 8+ byte prefixes (full comparison path).
        XCTAssertEqual(canon(["prefix_long_b": 1, "prefix_long_a": 2, "prefix_lon": 3, "prefix_long_\u{1F600}": 4, "prefix_long_\u{FF5E}": 5]),
                       "{\"prefix_lon\":3,\"prefix_long_a\":2,\"prefix_long_b\":1,\"prefix_long_\u{1F600}\":4,\"prefix_long_\u{FF5E}\":5}")
    }

    /// Objects of every size around the writer's limits (the 256 members its packed sort takes, keys
    /// sharing their first 7 or 8 bytes, keys that need escaping, nested objects, skipped keys),
    /// against an encoder written here: members sorted by `utf16` order and joined.
    func testRandomObjectsMatchAReferenceEncoder() throws {
        var rng = SplitMix64(seed: 20261202)
        let plain: [String] = ["a", "b", "B", "_", "0", "~", "\u{E9}", "\u{FF5E}", "\u{1F600}", "key_", "key_l"]
        let escaping: [String] = ["\"", "\\", "\n", "\u{1}"]
        func randomKey(escapes: Bool) -> String {
            var key = ""
            for _ in 0..<Int(1 + rng.next() % 4) {
                let pool = escapes && rng.next() % 8 == 0 ? escaping : plain
                key += pool[Int(rng.next() % UInt64(pool.count))]
            }
            return key
        }
        func randomObject(members: Int, depth: Int, escapes: Bool) -> [String: Any] {
            var object: [String: Any] = [:]
            while object.count < members {
                let key = randomKey(escapes: escapes)
                switch rng.next() % 5 {
                case 0 where depth < 3:
                    object[key] = randomObject(members: Int(rng.next() % 6), depth: depth + 1, escapes: escapes)
                case 1: object[key] = "v\(rng.next() % 100)"
                case 2: object[key] = [Int(rng.next() % 9), "x"] as [Any]
                default: object[key] = Int(rng.next() % 1000)
                }
            }
            return object
        }
        func reference(_ value: Any, skip: (String) -> Bool = { _ in false }) throws -> String {
            guard let object = value as? [String: Any] else {
                if let array = value as? [Any] { return "[" + (try array.map { try reference($0) }).joined(separator: ",") + "]" }
                return String(decoding: try JSON.canonicalData(value), as: UTF8.self)
            }
            let keys = object.keys.filter { !skip($0) }.sorted(by: ref)
            return "{" + (try keys.map { canon($0) + ":" + (try reference(object[$0]!)) }).joined(separator: ",") + "}"
        }
        for members in [0, 1, 2, 7, 8, 16, 17, 255, 256, 257, 600] {
            for escapes in [false, true] {
                // Then short distinct keys (no two share 7 bytes: the packed sort alone orders them)
                // or, every other size, long keys sharing their first 8 bytes.
                var object = randomObject(members: min(members, 40), depth: 0, escapes: escapes)
                var n = 0
                while object.count < members {
                    let tail = "\(n % 3 == 0 ? "\u{E9}" : "")\(n)"
                    object[members % 2 == 0 ? "k" + tail : "prefix_long_" + tail] = n
                    n += 1
                }
                XCTAssertEqual(canon(object), try reference(object), "\(members) members, escapes \(escapes)")
                var writer = JSONWriter(capacity: 16)
                let skip: (String) -> Bool = { $0.hasPrefix("_") || $0.hasPrefix("b") }
                try writer.writeObject(object, skippingKey: skip)
                XCTAssertEqual(String(decoding: writer.bytes, as: UTF8.self), try reference(object, skip: skip))
            }
        }
    }

    func testRandomStringsAgreeWithUTF16Reference() {
        var rng = SplitMix64(seed: 7)
        let alphabet: [Unicode.Scalar] = ["a", "b", "A", "_", "0", "\u{0}", "\u{7F}", "\u{E9}", "\u{3042}",
                                          "\u{D7FF}", "\u{E000}", "\u{FF5E}", "\u{FFFF}", "\u{10000}",
                                          "\u{1F600}", "\u{10FFFF}"]
        func randomString() -> String {
            let n = Int(rng.next() % 12)
            var s = String.UnicodeScalarView()
            for _ in 0..<n { s.append(alphabet[Int(rng.next() % UInt64(alphabet.count))]) }
            return String(s)
        }
        var keys: [String] = []
        for _ in 0..<3000 {
            let a = randomString(), b = randomString()
            XCTAssertEqual(JSON.utf16Precedes(a, b), ref(a, b), "\(Array(a.utf16)) vs \(Array(b.utf16))")
            keys.append(a)
        }
        // Canonical key order of a big dictionary equals the UTF-16 sort.
        var dict: [String: Any] = [:]
        for k in keys { dict[k] = 1 }
        let expected = dict.keys.sorted(by: ref)
        let parsed = try? JSON.parseObject(JSON.canonicalData(dict))
        XCTAssertNotNil(parsed)
        // Recover key order from the encoded bytes by re-encoding each key in sequence.
        var w = JSONWriter()
        w.writeRaw("{".utf8)
        for (i, k) in expected.enumerated() {
            if i > 0 { w.writeRaw(",".utf8) }
            w.writeString(k)
            w.writeRaw(":1".utf8)
        }
        w.writeRaw("}".utf8)
        XCTAssertEqual(try JSON.canonicalData(dict), w.bytes)
        // Small dictionaries (insertion-sort path) too.
        for start in stride(from: 0, to: 2000, by: 7) {
            let slice = Array(keys[start..<min(start + 7, keys.count)])
            var d: [String: Any] = [:]
            for k in slice { d[k] = NSNull() }
            var v = JSONWriter()
            v.writeRaw("{".utf8)
            for (i, k) in d.keys.sorted(by: ref).enumerated() {
                if i > 0 { v.writeRaw(",".utf8) }
                v.writeString(k)
                v.writeRaw(":null".utf8)
            }
            v.writeRaw("}".utf8)
            XCTAssertEqual(try JSON.canonicalData(d), v.bytes)
        }
    }
}

/// Strings of every length around the writer's 8-byte words, with a character needing an escape at
/// every position: the word-at-a-time copy (and its short tail) must match a byte-by-byte escaper.
final class StringWordBoundaryTests: XCTestCase {
    private func reference(_ s: String) -> String {
        var out = "\""
        for byte in s.utf8 {
            switch byte {
            case 0x22: out += "\\\""
            case 0x5C: out += "\\\\"
            case 0x0A: out += "\\n"
            case 0x09: out += "\\t"
            case 0x01: out += "\\u0001"
            default: out += String(decoding: [byte], as: UTF8.self)
            }
        }
        return out + "\""
    }

    func testEveryLengthAndEscapePosition() throws {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyzé".unicodeScalars.map(String.init).joined().utf8)
        for length in 0...19 {
            let plain = String(decoding: alphabet.prefix(length), as: UTF8.self)
            XCTAssertEqual(String(decoding: try JSON.canonicalData(plain), as: UTF8.self), reference(plain), "length \(length)")
            for position in 0..<max(length, 1) where length > 0 {
                for special in ["\"", "\\", "\n", "\t", "\u{01}"] {
                    var bytes = Array(alphabet.prefix(length))
                    bytes[position] = special.utf8.first!
                    let s = String(decoding: bytes, as: UTF8.self)
                    XCTAssertEqual(String(decoding: try JSON.canonicalData(s), as: UTF8.self), reference(s),
                                   "length \(length), \(special.debugDescription) at \(position)")
                    // The same string as a key (the short-key path of sorted objects).
                    XCTAssertEqual(String(decoding: try JSON.canonicalData([s: 1]), as: UTF8.self),
                                   "{" + reference(s) + ":1}")
                }
            }
        }
    }
}
