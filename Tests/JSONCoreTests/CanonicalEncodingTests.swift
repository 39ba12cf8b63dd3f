import Foundation
import XCTest
import JSONCore

final class CanonicalEncodingTests: XCTestCase {
    func testFooBarExactBytes() throws {
        XCTAssertEqual(try JSON.canonicalData(["foo": "bar"]), Array(#"{"foo":"bar"}"#.utf8))
        // ...and its iOS revision ID (cbl1-format.md 3.3).
        XCTAssertEqual(cblRevID(json: try JSON.canonicalData(["foo": "bar"]), parent: nil, deleted: false),
                       "1-cd809becc169215072fd567eebd8b8de")
    }

    func testNestedUnsortedDictionaries() {
        let value: [String: Any] = [
            "zeta": ["b": 2, "a": 1, "c": ["y": true, "x": NSNull()]],
            "alpha": [3, ["z": "last", "m": "mid", "a": "first"], []],
            "Mid": [String: Any](),
            "_id": "x",
        ]
        XCTAssertEqual(canon(value),
                       #"{"Mid":{},"_id":"x","alpha":[3,{"a":"first","m":"mid","z":"last"},[]],"zeta":{"a":1,"b":2,"c":{"x":null,"y":true}}}"#)
    }

    func testScalarsAndEmptyContainers() {
        XCTAssertEqual(canon(true), "true")
        XCTAssertEqual(canon(false), "false")
        XCTAssertEqual(canon(NSNull()), "null")
        XCTAssertEqual(canon(0), "0")
        XCTAssertEqual(canon(-17), "-17")
        XCTAssertEqual(canon(""), #""""#)
        XCTAssertEqual(canon([Any]()), "[]")
        XCTAssertEqual(canon([String: Any]()), "{}")
        XCTAssertEqual(canon([[Any]()]), "[[]]")
    }

    /// The ios140 fixture's gen-1 body re-encodes byte-identically, and hashes to its rev ID.
    func testFixtureBodyRoundTrip() throws {
        let body = #"{"boolean":true,"date":"2017-01-31T23:56:31.714Z","foo":"bar","number":1,"type":"doc"}"#
        let parsed = try JSON.parseObject(Array(body.utf8))
        XCTAssertEqual(String(decoding: try JSON.canonicalData(parsed), as: UTF8.self), body)
        XCTAssertEqual(cblRevID(json: try JSON.canonicalData(parsed), parent: nil, deleted: false),
                       "1-b7123bd4ca12ee6cf95c0be4410dbac3")
        // Built by hand instead of parsed (native Bool and Int values).
        let built: [String: Any] = ["type": "doc", "number": 1, "foo": "bar",
                                    "date": "2017-01-31T23:56:31.714Z", "boolean": true]
        XCTAssertEqual(canon(built), body)
        // Gen 2 adds an attachment stub.
        var gen2 = built
        gen2["_attachments"] = ["attach1": ["content_type": "text/plain; charset=utf-8",
                                            "digest": "sha1-P1i5kI/sosq745/9BDR7kEghKps=",
                                            "length": 7, "revpos": 2, "stub": true]]
        XCTAssertEqual(cblRevID(json: try JSON.canonicalData(gen2), parent: "1-b7123bd4ca12ee6cf95c0be4410dbac3",
                                deleted: false),
                       "2-b7f9508257a0bc0835f745cb5809af7e")
    }

    /// Every stored body of the real 1.x fixture databases (read from `facts.json` at run time):
    /// parses and round-trips; bodies written by canonical encoders (iOS 1.1+, .NET 1.2+,
    /// Android 1.4) re-encode byte-identically; iOS 1.1+ rev IDs are reproduced from our bytes.
    func testRealFixtureBodies() throws {
        let bodies = try FixtureFacts.winningBodies()
        XCTAssertGreaterThan(bodies.count, 50)
        var canonicalChecks = 0, revChecks = 0
        for f in bodies {
            let parsed = try JSON.parseObject(Array(f.stored.utf8))
            let encoded = try JSON.canonicalData(parsed)
            XCTAssertEqual(canon(try JSON.parseObject(encoded)), canon(parsed), "\(f.fixture) \(f.docID) round trip")
            // The same bytes from JSONSerialization-produced values (NSNumber, __NSCFBoolean).
            let viaFoundation = try JSONSerialization.jsonObject(with: Data(f.stored.utf8))
            XCTAssertEqual(canon(viaFoundation), String(decoding: encoded, as: UTF8.self), "\(f.fixture) \(f.docID) via JSONSerialization")
            guard f.canonicalProducer else { continue }
            canonicalChecks += 1
            XCTAssertEqual(String(decoding: encoded, as: UTF8.self), f.stored, "\(f.fixture) \(f.docID)")
            if f.iOSRevIDRule, let parent = f.parentRevID {
                revChecks += 1
                XCTAssertEqual(cblRevID(json: encoded, parent: parent, deleted: f.deleted), f.revID, "\(f.fixture) \(f.docID)")
            }
        }
        XCTAssertGreaterThan(canonicalChecks, 20)
        XCTAssertGreaterThan(revChecks, 5)
    }

    func testUnsortedOutputIsValidAndEquivalent() throws {
        let value: [String: Any] = ["b": 1, "a": [1, 2.5, "x"], "c": ["q": NSNull(), "p": false]]
        let bytes = try JSON.data(value, sortedKeys: false)
        XCTAssertFalse(bytes.contains(UInt8(ascii: " ")))
        XCTAssertTrue(jsonEqual(try JSON.parse(bytes), value))
        XCTAssertEqual(try JSON.data(value, sortedKeys: true), try JSON.canonicalData(value))
        XCTAssertEqual(try JSON.string(value), canon(value))
        XCTAssertTrue(jsonEqual(try JSON.parse(try JSON.string(value, sortedKeys: false)), value))
    }

    func testWriterSkippingKeys() throws {
        let doc: [String: Any] = ["_id": "doc1", "_rev": "1-abc", "_revisions": ["start": 1],
                                  "b": 2, "a": 1, "_attachments": ["x": ["stub": true]]]
        var w = JSONWriter()
        try w.writeObject(doc) { $0 == "_id" || $0 == "_rev" || $0 == "_revisions" }
        XCTAssertEqual(String(decoding: w.bytes, as: UTF8.self), #"{"_attachments":{"x":{"stub":true}},"a":1,"b":2}"#)

        var u = JSONWriter(capacity: 1)
        try u.writeObject(["k": 1, "skip": 2], sortedKeys: false) { $0 == "skip" }
        XCTAssertEqual(String(decoding: u.bytes, as: UTF8.self), #"{"k":1}"#)

        // Skipping everything leaves an empty object; only top-level keys are skipped.
        var e = JSONWriter()
        try e.writeObject(["a": ["a": 1]]) { _ in true }
        XCTAssertEqual(String(decoding: e.bytes, as: UTF8.self), "{}")
        var t = JSONWriter()
        try t.writeObject(["a": ["a": 1], "b": 2]) { $0 == "a" }
        XCTAssertEqual(String(decoding: t.bytes, as: UTF8.self), #"{"b":2}"#)
        var nested = JSONWriter()
        try nested.writeObject(["x": ["_id": 1]]) { $0 == "_id" }
        XCTAssertEqual(String(decoding: nested.bytes, as: UTF8.self), #"{"x":{"_id":1}}"#)
    }

    func testWriterPieces() throws {
        var w = JSONWriter(capacity: 4)
        w.writeRaw(Array("[".utf8))
        w.writeString("a\"b")
        w.writeRaw(",".utf8)
        try w.write(["z": 1, "y": [true, NSNull()]])
        w.writeRaw(CollectionOfOne(UInt8(ascii: ",")))
        try w.write(2.5)
        w.writeRaw(AnySequence([UInt8(ascii: "]")]))
        XCTAssertEqual(String(decoding: w.bytes, as: UTF8.self), #"["a\"b",{"y":[true,null],"z":1},2.5]"#)
    }

    func testFailedWriteAppendsNothing() throws {
        var w = JSONWriter()
        w.writeRaw("[".utf8)
        XCTAssertThrowsError(try w.write(["a": 1, "b": [1, Date()]]))
        XCTAssertThrowsError(try w.writeObject(["a": Double.nan]) { _ in false })
        try w.write(1)
        w.writeRaw("]".utf8)
        XCTAssertEqual(String(decoding: w.bytes, as: UTF8.self), "[1]")
    }

    func testWriterHasValueSemantics() throws {
        var a = JSONWriter()
        a.writeString("x")
        var b = a
        b.writeRaw(Array(",1".utf8))
        a.writeRaw(Array(",2".utf8))
        XCTAssertEqual(String(decoding: a.bytes, as: UTF8.self), #""x",2"#)
        XCTAssertEqual(String(decoding: b.bytes, as: UTF8.self), #""x",1"#)
    }

    func testLargeOutputGrowsBuffer() throws {
        var big: [String: Any] = [:]
        for i in 0..<2000 { big["key\(i)"] = String(repeating: "v", count: i % 50) + "\u{e9}\n" }
        let bytes = try JSON.canonicalData(big)
        let back = try JSON.parseObject(bytes)
        XCTAssertTrue(jsonEqual(back, big))
        // keys in UTF-16 order
        var w = JSONWriter(capacity: 1)
        try w.write(big)
        XCTAssertEqual(w.bytes, bytes)
    }
}
