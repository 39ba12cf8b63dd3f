import Foundation
import XCTest
import JSONCore
@testable import Fleece

final class RoundTripTests: XCTestCase {
    /// Seeded random documents: JSON → Fleece → decode equals the source; `writeJSON` and
    /// `write(Any)` give identical bytes; `toJSON` re-parses to the same value.
    func testRandomJSONRoundTrip() throws {
        var gen = RandomJSON(seed: 0xF1EEC3)
        for round in 0..<1500 {
            let (text, value) = gen.value(depth: 0)
            let json = Array(text.utf8)
            let sk: SharedKeys? = round % 3 == 0 ? nil : SharedKeys()
            var e1 = FleeceEncoder(sharedKeys: sk)
            try e1.writeJSON(json)
            let viaJSON = try e1.finish()
            let doc = try FleeceDocument(bytes: viaJSON, sharedKeys: sk)
            XCTAssertTrue(jsonEqual(doc.root.toFoundation(), value), "round \(round): \(text)")
            XCTAssertTrue(jsonEqual(try JSON.parse(doc.root.toJSONBytes()), value), "round \(round) toJSON: \(doc.root.toJSON())")
            // Same bytes through the Foundation path (fresh table with the same content).
            let sk2: SharedKeys? = sk == nil ? nil : SharedKeys()
            var e2 = FleeceEncoder(sharedKeys: sk2)
            try e2.write(value)
            let viaAny = try e2.finish()
            XCTAssertEqual(hex(viaAny), hex(viaJSON), "round \(round): \(text)")
            XCTAssertEqual(sk2?.allKeys(), sk?.allKeys())
            if round % 100 == 0 {
                // Through JSONCore's parser as well (numbers there are Int/Double only).
                let parsed = try JSON.parse(json)
                let viaParsed = try FleeceCoding.encode(parsed, sharedKeys: nil)
                XCTAssertTrue(jsonEqual(try FleeceDocument(bytes: viaParsed).root.toFoundation(), value))
            }
        }
    }

    /// Several encoders sharing one table on different threads agree on every code.
    func testSharedKeysAreThreadSafe() throws {
        let sk = SharedKeys()
        let results = LockedResults()
        DispatchQueue.concurrentPerform(iterations: 8) { worker in
            var e = FleeceEncoder(sharedKeys: sk)
            for i in 0..<300 {
                let key = "key\((i * 7 + worker * 13) % 500)"
                e.beginDict()
                e.writeKey(key)
                e.writeInt(Int64(i))
                e.endDict()
                if let out = try? e.finish() { results.append(key, out) }
            }
        }
        XCTAssertEqual(Set(sk.allKeys()).count, sk.count)
        for (key, out) in results.all {
            let doc = try FleeceDocument(bytes: out, sharedKeys: sk)
            XCTAssertEqual(doc.root.dictValue?.keys, [key])
            XCTAssertEqual(sk.string(forCode: sk.code(for: key) ?? -1), key)
        }
        XCTAssertEqual(results.all.count, 2400)
    }

    func testEncoderIsReusableAndCopyOnWrite() throws {
        var e = FleeceEncoder()
        e.beginArray()
        e.writeString("hello")
        var copy = e
        copy.writeInt(1)
        copy.endArray()
        e.endArray()
        XCTAssertEqual(try FleeceDocument(bytes: try copy.finish()).root.toJSON(), #"["hello",1]"#)
        XCTAssertEqual(try FleeceDocument(bytes: try e.finish()).root.toJSON(), #"["hello"]"#)
        for i in 0..<3 {
            try e.writeJSON(Array(#"{"k":"hello","n":\#(i)}"#.utf8))
            XCTAssertEqual(try FleeceDocument(bytes: try e.finish()).root.toJSON(), #"{"k":"hello","n":\#(i)}"#)
        }
        XCTAssertThrowsError(try e.finish())            // nothing written since the last finish
    }

    func testFinishWithBodyAndErrorsReset() throws {
        var e = FleeceEncoder()
        XCTAssertThrowsError(try e.finish())
        e.beginDict()
        e.writeInt(1)                        // value without key
        XCTAssertThrowsError(try e.finish()) { XCTAssertTrue("\($0)".contains("without a key")) }
        e.beginArray()
        XCTAssertThrowsError(try e.finish())  // unclosed
        e.endDict()
        XCTAssertThrowsError(try e.finish())
        e.writeInt(1)
        e.writeInt(2)
        XCTAssertThrowsError(try e.finish())  // two top-level values
        e.writeDouble(.nan)
        XCTAssertThrowsError(try e.finish())
        e.writeKey("x")
        XCTAssertThrowsError(try e.finish())
        e.writeString("ok")
        XCTAssertEqual(try e.finish { Array($0) }, bytes("426F6B008002"))
        XCTAssertThrowsError(try e.write(Date()))
        XCTAssertThrowsError(try e.write(["a": Double.infinity]))
        XCTAssertThrowsError(try e.write([1: 2] as [Int: Int]))
        try e.write(["d": Data([1, 2, 3]), "n": NSNumber(value: 7), "t": NSNumber(value: true),
                     "o": Optional<Int>.none as Any, "u": UInt8(9), "f": Float(0.25), "s": "x"[...]] as [String: Any])
        let doc = try FleeceDocument(bytes: try e.finish())
        XCTAssertEqual(doc.root.toJSON(), #"{"d":"AQID","f":0.25,"n":7,"o":null,"s":"x","t":true,"u":9}"#)
        XCTAssertEqual(doc.root["d"]?.dataValue, [1, 2, 3])
        XCTAssertEqual(doc.root["d"]?.type, .data)
        XCTAssertEqual(doc.root["t"]?.type, .boolean)
        XCTAssertEqual(doc.root["f"]?.doubleValue, 0.25)
    }

    func testMalformedJSONIsRejected() throws {
        let bad = ["", " ", "{", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "[1 2]", "01", "1.", ".5", "1e",
                   "-", "+1", "tru", "nul", "\"abc", "\"a\u{01}b\"", "\"\\x\"", "\"\\u12\"",
                   "\"\\ud800\"", "\"\\udc00x\"", "[1]x", "{} {}", "{1:2}", "NaN", "Infinity",
                   "1e400", "-1e400", "[\"\u{FFFF}\"]x"]
        for text in bad {
            var e = FleeceEncoder()
            XCTAssertThrowsError(try e.writeJSON(Array(text.utf8)), text) { error in
                guard case FleeceError.invalidJSON = error else { return XCTFail("\(text): \(error)") }
            }
        }
        var e = FleeceEncoder()
        XCTAssertThrowsError(try e.writeJSON([0x22, 0xC3, 0x28, 0x22]))     // invalid UTF-8
        XCTAssertThrowsError(try e.writeJSON([0x22, 0xED, 0xA0, 0x80, 0x22]))  // encoded surrogate
        let deep = String(repeating: "[", count: 513) + String(repeating: "]", count: 513)
        XCTAssertThrowsError(try e.writeJSON(Array(deep.utf8)))
        let ok = String(repeating: "[", count: 512) + String(repeating: "]", count: 512)
        XCTAssertNoThrow(try e.writeJSON(Array(ok.utf8)))
        XCTAssertNoThrow(try FleeceDocument(bytes: try e.finish()))
        // After an error the encoder is usable again.
        XCTAssertThrowsError(try e.writeJSON(Array("[1,".utf8)))
        try e.writeJSON(Array(" [\"\\u00e9\\ud83d\\ude00\", -0, 1E2, 2.5e-1] ".utf8))
        XCTAssertEqual(try FleeceDocument(bytes: try e.finish()).root.toJSON(), "[\"é😀\",0,100,0.25]")
    }

    /// A document over 32 KiB needs wide collections and the wide root trailer (§6.4/§6.5).
    func testWideCollections() throws {
        let big = String(repeating: "x", count: 40_000)
        // Dict whose first value is far from its slots → the dict is wide.
        var e = FleeceEncoder()
        e.beginDict()
        e.writeKey("big"); e.writeString(big)
        e.writeKey("n"); e.writeInt(100_000)
        e.writeKey("s"); e.writeString("small")
        e.endDict()
        let out = try e.finish()
        let doc = try FleeceDocument(bytes: out)
        let dictPos = out.count - 2 - 6 * 4 - 2
        XCTAssertEqual(out[dictPos], 0x78)                           // wide dict, 3 pairs
        XCTAssertEqual(doc.root["big"]?.stringValue, big)
        XCTAssertEqual(doc.root["n"]?.intValue, 100_000)
        XCTAssertEqual(doc.root["s"]?.stringValue, "small")
        XCTAssertEqual(doc.root.dictValue?.keys, ["big", "n", "s"])

        // Array of 20000 long ints: the root array itself is > 0x7FFE bytes → wide root.
        var values: [Any] = []
        for i in 0..<20_000 { values.append(100_000 + i) }
        var e2 = FleeceEncoder()
        try e2.write(values)
        let out2 = try e2.finish()
        XCTAssertEqual(Array(out2.suffix(2)), [0x80, 0x02])            // narrow ptr to a wide ptr
        XCTAssertEqual(out2[out2.count - 6] & 0xC0, 0x80)
        let doc2 = try FleeceDocument(bytes: out2)
        XCTAssertEqual(doc2.root.arrayValue?.count, 20_000)
        XCTAssertTrue(jsonEqual(doc2.root.toFoundation(), values))
        // Nested wide: a dict holding that array plus strings repeated far apart.
        var e3 = FleeceEncoder(sharedKeys: SharedKeys())
        e3.beginDict()
        e3.writeKey("a"); e3.writeString("hello")
        e3.writeKey("b"); e3.writeString(big)
        e3.writeKey("c"); e3.writeString("hello")       // too far for a narrow pointer: copied
        e3.writeKey("d"); e3.writeString("hello")       // near the copy: pointer
        e3.endDict()
        let out3 = try e3.finish()
        XCTAssertEqual(occurrences(of: Array("hello".utf8), in: out3), 2)
        let doc3 = try FleeceDocument(bytes: out3, sharedKeys: e3.sharedKeys)
        XCTAssertEqual(doc3.root.toJSON(), #"{"a":"hello","b":"\#(big)","c":"hello","d":"hello"}"#)
    }

    private func occurrences(of needle: [UInt8], in hay: [UInt8]) -> Int {
        var count = 0
        var i = 0
        while i + needle.count <= hay.count {
            if Array(hay[i..<(i + needle.count)]) == needle { count += 1 }
            i += 1
        }
        return count
    }

    /// Counts ≥ 2047 use the varint form (§6.1), for arrays and dicts.
    func testLongCollections() throws {
        for n in [2046, 2047, 2048, 2049, 70_000] {
            var e = FleeceEncoder()
            e.beginArray(reserve: n)
            for i in 0..<n { e.writeInt(Int64(i % 3000)) }
            e.endArray()
            let out = try e.finish()
            let doc = try FleeceDocument(bytes: out)
            let a = try XCTUnwrap(doc.root.arrayValue)
            XCTAssertEqual(a.count, n)
            XCTAssertEqual(a[n - 1].intValue, Int64((n - 1) % 3000))
            XCTAssertEqual(a.map { $0.intValue }.reduce(0, +), (0..<n).map { Int64($0 % 3000) }.reduce(0, +))
            var d = FleeceEncoder()
            d.beginDict()
            for i in 0..<n { d.writeKey("k\(i)"); d.writeInt(Int64(i)) }
            d.endDict()
            let dd = try FleeceDocument(bytes: try d.finish())
            XCTAssertEqual(dd.root.dictValue?.count, n)
            XCTAssertEqual(dd.root["k\(n / 2)"]?.intValue, Int64(n / 2))
            XCTAssertEqual(dd.root["k0"]?.intValue, 0)
            XCTAssertNil(dd.root["k\(n)"])
        }
        // Header of a 2047-item array: 67 FF, varint 0, pad.
        var e = FleeceEncoder()
        e.beginArray()
        for _ in 0..<2047 { e.writeNull() }
        e.endArray()
        let out = try e.finish()
        XCTAssertEqual(Array(out.prefix(4)), [0x67, 0xFF, 0x00, 0x00])
    }

    func testAccessors() throws {
        let json = #"{"i":-7,"u":18446744073709551615,"d":2.5,"f":1e300,"b":true,"n":null,"s":"str","a":[1,"two",[]],"o":{}}"#
        let doc = try FleeceDocument(bytes: try FleeceCoding.encodeJSON(Array(json.utf8), sharedKeys: nil))
        let r = doc.root
        XCTAssertEqual(r.type, .dict)
        XCTAssertEqual(r["i"]?.intValue, -7)
        XCTAssertEqual(r["i"]?.isInteger, true)
        XCTAssertEqual(r["i"]?.isUnsigned, false)
        XCTAssertEqual(r["u"]?.uintValue, .max)
        XCTAssertEqual(r["u"]?.isUnsigned, true)
        XCTAssertEqual(r["u"]?.toFoundation() as? UInt64, .max)
        XCTAssertEqual(r["d"]?.doubleValue, 2.5)
        XCTAssertEqual(r["d"]?.intValue, 2)
        XCTAssertEqual(r["d"]?.isInteger, false)
        XCTAssertEqual(r["f"]?.isDouble, true)
        XCTAssertEqual(r["f"]?.intValue, .max)
        XCTAssertEqual(r["b"]?.boolValue, true)
        XCTAssertEqual(r["b"]?.type, .boolean)
        XCTAssertEqual(r["n"]?.type, .null)
        XCTAssertEqual(r["s"]?.stringValue, "str")
        XCTAssertNil(r["s"]?.arrayValue)
        XCTAssertEqual(r["a"]?.arrayValue?.count, 3)
        XCTAssertEqual(r["a"]?[1]?.stringValue, "two")
        XCTAssertNil(r["a"]?[3])
        XCTAssertEqual(r["o"]?.dictValue?.isEmpty, true)
        XCTAssertEqual(r.toJSON(), #"{"a":[1,"two",[]],"b":true,"d":2.5,"f":1e+300,"i":-7,"n":null,"o":{},"s":"str","u":18446744073709551615}"#)
        XCTAssertEqual(Array(r.dictValue!.map { $0.key }), ["a", "b", "d", "f", "i", "n", "o", "s", "u"])
    }
}

final class LockedResults: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [(String, [UInt8])] = []
    func append(_ key: String, _ bytes: [UInt8]) { lock.lock(); items.append((key, bytes)); lock.unlock() }
    var all: [(String, [UInt8])] { lock.lock(); defer { lock.unlock() }; return items }
}
