import Foundation
import XCTest
@testable import Fleece
import CBLTestSupport

/// Untrusted bytes must be refused with `FleeceError` (or, if they happen to be valid Fleece,
/// be fully readable) — never crash or read out of bounds.
final class HostileInputTests: XCTestCase {
    /// Decodes and, if accepted, walks every value (the accessors trust validation).
    @discardableResult
    private func accepts(_ data: [UInt8], sharedKeys: SharedKeys? = nil) -> Bool {
        do {
            let doc = try FleeceDocument(bytes: data, sharedKeys: sharedKeys)
            walk(doc.root, depth: 0)
            _ = doc.root.toJSONBytes()
            return true
        } catch let error as FleeceError {
            guard case .invalidData = error else {
                XCTFail("unexpected error kind \(error)")
                return false
            }
            return false
        } catch {
            XCTFail("non-Fleece error \(error)")
            return false
        }
    }

    private func walk(_ v: FleeceValue, depth: Int) {
        _ = (v.type, v.intValue, v.uintValue, v.doubleValue, v.boolValue, v.stringValue, v.dataValue)
        if let a = v.arrayValue { for x in a { walk(x, depth: depth + 1) } }
        if let d = v.dictValue {
            for (k, x) in d {
                walk(x, depth: depth + 1)
                if !k.contains("\u{FFFD}") {      // repaired invalid UTF-8 cannot be looked up
                    XCTAssertNotNil(d[k], "key \(k) found by iteration must be found by lookup")
                }
            }
        }
    }

    private func sampleDocuments() throws -> [([UInt8], SharedKeys?)] {
        var docs: [([UInt8], SharedKeys?)] = []
        let sk = SharedKeys()
        for text in [#"{"name":"Lue","age":3000,"tags":["a","bc"],"pi":3.14,"ok":true,"neg":-5}"#,
                     #"[1,-1,2048,-3000,1e300,0.5,"hello","hello",null,true,[],{},[{"x":"yz"}]]"#,
                     #"{"a b":{"c d":["long string over fifteen bytes","ü"]},"long-key-more-than-16":1}"#] {
            var e = FleeceEncoder(sharedKeys: sk)
            try e.writeJSON(Array(text.utf8))
            docs.append((try e.finish(), sk))
            docs.append((try FleeceCoding.encodeJSON(Array(text.utf8), sharedKeys: nil), nil))
        }
        var wide = FleeceEncoder()
        wide.beginArray()
        wide.writeString(String(repeating: "w", count: 33_000))
        for i in 0..<10 { wide.writeInt(Int64(i * 5000)) }
        wide.writeData([1, 2, 3, 4])
        wide.endArray()
        docs.append((try wide.finish(), nil))
        return docs
    }

    func testTruncationAtEveryLength() throws {
        for (doc, sk) in try sampleDocuments() {
            XCTAssertTrue(accepts(doc, sharedKeys: sk))
            var acceptedPrefixes = 0
            for length in 0..<doc.count where accepts(Array(doc.prefix(length)), sharedKeys: sk) {
                acceptedPrefixes += 1
            }
            // A prefix that happens to end in a slot pointing back at a complete value *is* valid
            // Fleece (real Fleece accepts it too): those must decode cleanly (checked above);
            // everything else must be refused.
            XCTAssertLessThan(acceptedPrefixes * 5, doc.count, "most truncations are refused")
            // Dropping bytes from the front moves every value: also refused.
            for cut in stride(from: 2, to: Swift.min(doc.count, 200), by: 2) {
                XCTAssertFalse(accepts(Array(doc.dropFirst(cut)), sharedKeys: sk))
            }
        }
    }

    func testRandomBytes() {
        var rng = SplitMix64(seed: 7)
        for i in 0..<20_000 {
            let n = Int(rng.next() % 64)
            var data = (0..<n).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            if i % 2 == 0 && n >= 2 { data[n - 2] = 0x80 | (data[n - 2] & 0x3F) }   // make the root a pointer
            accepts(data, sharedKeys: i % 3 == 0 ? SharedKeys() : nil)
        }
    }

    func testMutatedDocuments() throws {
        var rng = SplitMix64(seed: 99)
        let docs = try sampleDocuments()
        for round in 0..<30_000 {
            var (data, sk) = docs[round % docs.count]
            if data.count > 1000 { continue }
            for _ in 0..<(1 + Int(rng.next() % 3)) {
                let i = Int(rng.next() % UInt64(data.count))
                data[i] = round % 2 == 0 ? UInt8(truncatingIfNeeded: rng.next()) : data[i] ^ (1 << UInt8(rng.next() % 8))
            }
            accepts(data, sharedKeys: sk)
        }
    }

    func testCraftedBuffers() {
        let invalid: [(String, String)] = [
            ("", "empty"),
            ("30", "one byte"),
            ("300000", "odd length"),
            ("8000", "pointer with offset 0"),
            ("8001", "root pointer before the start"),
            ("30008002", "narrow pointer to itself via pointer?"),
            ("3000 3000", "inline root with extra data"),
            ("4261", "inline string longer than its slot"),
            ("6001", "inline non-empty array"),
            ("6001 8000 8002", "array slot pointer with offset 0"),
            ("6001 8002 8002", "array slot pointing at its own header → array contains itself"),
            ("6002 3000 8003", "array items past the pointer"),
            ("67FF FFFFFFFF0F 8004", "huge varint count"),
            ("67FF 80 8002", "truncated varint count"),
            ("6801 0000 8002", "wide array extends past the pointer"),
            ("6801 C000 0002 8003", "external wide pointer"),
            ("2C00 0000 0000 8003", "unknown float kind"),
            ("3100 8001", "bad special"),
            ("2000 0000 8002", "truncated float"),
            ("1700 0000 8002", "truncated long int"),
            ("4F80 8001", "truncated string varint"),
            ("4F14 6161 8002", "string longer than the data"),
            ("7001 0001 3000 8003", "integer key without SharedKeys"),
            ("7001 0800 3000 8003", "parent-dict key (-2048)"),
            ("7001 3000 3000 8003", "null as a dict key"),
            ("4162 0000 7002 4162 3000 4161 3000 8005", "unsorted dict (b before a)"),
            ("6001 2000 8002", "inline float in a narrow slot"),
            ("8002 8002", "root pointer to a pointer to a pointer at 0 (offset overlaps)"),
            ("9000 0000 8002", "wide pointer at 0 pointing before the start"),
        ]
        for (h, why) in invalid {
            XCTAssertFalse(accepts(bytes(h)), why)
        }
        // Valid hand-made documents: narrow/wide arrays, legacy 15-bit pointer, wide root.
        XCTAssertTrue(accepts(bytes("6002 3000 3800 8003")))
        XCTAssertTrue(accepts(bytes("6802 3000 0000 3800 0000 8005")))     // wide array, inline values
        // An "external" narrow pointer in a stand-alone document is a ≤2.x 15-bit offset (§6.3).
        var legacy = bytes("4F E8 81 02") + [UInt8](repeating: 0x6C, count: 33_000)   // 33000-byte string
        legacy += [0x60, 0x01]
        let units = (legacy.count) >> 1                                              // slot → offset 0
        legacy += [0x80 | UInt8(units >> 8), UInt8(units & 0xFF), 0x80, 0x02]
        XCTAssertEqual(legacy[legacy.count - 4] & 0x40, 0x40)
        XCTAssertEqual(try FleeceDocument(bytes: legacy).root[0]?.stringValue?.count, 33_000)
        XCTAssertTrue(accepts(bytes("4161 6001 8002 8000 0002 8002")))     // wide root pointer chain
        XCTAssertTrue(accepts(bytes("1201 0203 6001 8002 8002")))           // 3-byte int
        XCTAssertEqual(try FleeceDocument(bytes: bytes("1201 0203 8002")).root.intValue, 0x030201)
        XCTAssertEqual(try FleeceDocument(bytes: bytes("1081 8001")).root.intValue, -127)
        XCTAssertEqual(try FleeceDocument(bytes: bytes("1881 8001")).root.intValue, 129)
        // Shared keys: known code accepted, unknown refused.
        let sk = SharedKeys()
        _ = sk.encodeKey("a")
        XCTAssertTrue(accepts(bytes("7001 0000 3800 8003"), sharedKeys: sk))
        XCTAssertFalse(accepts(bytes("7001 0001 3800 8003"), sharedKeys: sk))
    }

    /// Deep nesting is refused beyond 512 levels.
    func testDeepNesting() throws {
        for depth in [511, 600] {
            var e = FleeceEncoder()
            for _ in 0..<depth { e.beginArray(); e.writeInt(1) }
            for _ in 0..<depth { e.endArray() }
            let data = try e.finish()
            XCTAssertEqual(accepts(data), depth < 512, "depth \(depth)")
        }
    }

    /// Every collection referring twice to the one below: 2^40 paths. Validation visits each
    /// collection once, so it stays linear.
    func testSharedSubtreesValidateInLinearTime() throws {
        var data: [UInt8] = [0x60, 0x02, 0x30, 0x00, 0x38, 0x00]
        var previous = 0
        for _ in 0..<40 {
            let pos = data.count
            data += [0x60, 0x02]
            for slot in [pos + 2, pos + 4] {
                let units = (slot - previous) >> 1
                data += [0x80 | UInt8(units >> 8), UInt8(units & 0xFF)]
            }
            previous = pos
        }
        let units = (data.count - previous) >> 1
        data += [0x80 | UInt8(units >> 8), UInt8(units & 0xFF)]
        let start = Date()
        let doc = try FleeceDocument(bytes: data)
        XCTAssertLessThan(Date().timeIntervalSince(start), 1.0)
        XCTAssertEqual(doc.root[0]?[1]?[0]?.arrayValue?.count, 2)
    }

    func testSharedKeysRecordValidation() {
        XCTAssertThrowsError(try SharedKeys(stateData: []))
        XCTAssertThrowsError(try SharedKeys(stateData: bytes("3800")))                    // not an array
        XCTAssertThrowsError(try SharedKeys(stateData: bytes("6002 4161 0001 8003")))     // non-string
        XCTAssertThrowsError(try SharedKeys(stateData: bytes("6002 4161 4161 8003")))     // duplicate
        XCTAssertThrowsError(try SharedKeys(stateData: bytes("42C3 2800 6001 8003 8002")))  // bad UTF-8
        XCTAssertEqual(try SharedKeys(stateData: bytes("6000")).count, 0)
        let sk = try? SharedKeys(stateData: bytes("4568 656C 6C6F 6002 4161 8005 8003"))
        XCTAssertEqual(sk?.allKeys(), ["a", "hello"])
        XCTAssertEqual(sk?.encodeKey("b"), 2)
    }
}
