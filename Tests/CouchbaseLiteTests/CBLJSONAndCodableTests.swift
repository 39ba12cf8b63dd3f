import CouchbaseLite
import Foundation
import XCTest

/// `CBLJSON` (the 1.x JSON helper class), the `Codable` helpers on documents, revisions and query
/// rows, and in-place edits of an unsaved revision's properties.
final class CBLJSONAndCodableTests: SingleDatabaseTestCase {
    override var databaseName: String { "json" }

    // MARK: CBLJSON

    func testDataAndStringWithJSONObject() throws {
        let object: [String: Any] = ["url": "http://x/y", "n": [1, 2.5, true] as [Any], "none": NSNull()]
        let data = try CBLJSON.data(withJSONObject: object, options: [.sortedKeys])
        XCTAssertEqual(String(decoding: data, as: UTF8.self), #"{"n":[1,2.5,true],"none":null,"url":"http:\/\/x\/y"}"#)
        let unescaped = try CBLJSON.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        XCTAssertEqual(String(decoding: unescaped, as: UTF8.self), #"{"n":[1,2.5,true],"none":null,"url":"http://x/y"}"#)
        let pretty = try CBLJSON.data(withJSONObject: ["a": [1, ["b": "c"]] as [Any], "e": [String: Any]()],
                                      options: [.prettyPrinted, .sortedKeys])
        XCTAssertEqual(String(decoding: pretty, as: UTF8.self), "{\n  \"a\" : [\n    1,\n    {\n      \"b\" : \"c\"\n    }\n  ],\n  \"e\" : {}\n}")

        let string = try CBLJSON.string(withJSONObject: ["k": "v"], options: 0)
        XCTAssertEqual(string, #"{"k":"v"}"#)
        XCTAssertThrowsError(try CBLJSON.string(withJSONObject: "fragment", options: 0))
        XCTAssertEqual(try CBLJSON.string(withJSONObject: "fragment", options: UInt(CBLJSONWritingAllowFragments)), #""fragment""#)
        XCTAssertEqual(try CBLJSON.data(withJSONObject: 42, options: [.fragmentsAllowed]), Data("42".utf8))
        XCTAssertThrowsError(try CBLJSON.data(withJSONObject: ["d": Date()]), "dates are not JSON")
        XCTAssertTrue(CBLJSON.isValidJSONObject(["a": [1, 2]]))
        XCTAssertFalse(CBLJSON.isValidJSONObject("top-level string"))
    }

    func testJSONObjectWithData() throws {
        let parsed = try XCTUnwrap(CBLJSON.jsonObject(with: Data(#"{"a":[1,2.5,"x",null,false]}"#.utf8)) as? [String: Any])
        let array = try XCTUnwrap(parsed["a"] as? [Any])
        XCTAssertEqual(array[0] as? Int, 1)
        XCTAssertEqual(array[1] as? Double, 2.5)
        XCTAssertEqual(array[2] as? String, "x")
        XCTAssertTrue(array[3] is NSNull)
        XCTAssertEqual(array[4] as? Bool, false)
        XCTAssertNotNil(try CBLJSON.jsonObject(with: Data("[]".utf8), options: .mutableContainers) as? [Any])
        XCTAssertThrowsError(try CBLJSON.jsonObject(with: Data("7".utf8)))
        XCTAssertEqual(try CBLJSON.jsonObject(with: Data("7".utf8), options: .fragmentsAllowed) as? Int, 7)
        XCTAssertEqual(try CBLJSON.jsonObject(with: Data("7".utf8), options: UInt(CBLJSONReadingAllowFragments)) as? Int, 7)
        XCTAssertThrowsError(try CBLJSON.jsonObject(with: Data("{bad".utf8)))
    }

    func testDatesBase64PointersAndAppending() throws {
        // The fixture dates (`sqlite-cblite2/ios1x0` doc1 `date`, written by iOS CBLJSON) round-trip exactly.
        for stored in ["2016-01-15T23:08:40.803Z", "2016-07-07T03:12:13.471Z", "2017-01-31T23:56:31.714Z",
                       "2015-04-30T15:45:34.922Z", "1969-12-31T23:59:59.999Z", "2000-02-29T00:00:00.000Z"] {
            let date = try XCTUnwrap(CBLJSON.date(withJSONObject: stored), stored)
            XCTAssertEqual(CBLJSON.jsonObject(with: date), stored)
        }
        XCTAssertEqual(CBLJSON.jsonObject(with: Date(timeIntervalSince1970: 0.0009)), "1970-01-01T00:00:00.000Z", "milliseconds truncate")
        XCTAssertEqual(CBLJSON.jsonObject(with: Date(timeIntervalSince1970: 3600), timeZone: TimeZone(secondsFromGMT: 5400)!),
                       "1970-01-01T02:30:00.000+01:30")
        XCTAssertEqual(CBLJSON.date(withJSONObject: "2016-01-15"), Date(timeIntervalSince1970: 1_452_816_000))
        XCTAssertEqual(CBLJSON.date(withJSONObject: "2016-01-15T23:08:40Z"), Date(timeIntervalSince1970: 1_452_899_320))
        XCTAssertEqual(CBLJSON.date(withJSONObject: "2016-01-16T00:08:40.5+0100"), Date(timeIntervalSince1970: 1_452_899_320.5))
        XCTAssertEqual(CBLJSON.date(withJSONObject: "2016-01-15 23:08"), Date(timeIntervalSince1970: 1_452_899_280))
        XCTAssertNil(CBLJSON.date(withJSONObject: "yesterday"))
        XCTAssertNil(CBLJSON.date(withJSONObject: 12))
        XCTAssertNil(CBLJSON.date(withJSONObject: "2016-13-01"))
        XCTAssertTrue(CBLJSON.absoluteTime(withJSONObject: "junk").isNaN)
        XCTAssertEqual(CBLJSON.absoluteTime(withJSONObject: "2001-01-01T00:00:10Z"), 10)

        XCTAssertEqual(CBLJSON.base64String(with: Data("attach1".utf8)), "YXR0YWNoMQ==")
        XCTAssertEqual(CBLJSON.data(withBase64String: "YXR0YWNoMQ"), Data("attach1".utf8))
        XCTAssertEqual(CBLJSON.data(withBase64String: "YXR0\nYWNoMQ=="), Data("attach1".utf8))
        XCTAssertNil(CBLJSON.data(withBase64String: 5))

        let object: [String: Any] = ["a": ["b": [10, ["c/d": "x", "e~f": "y"] as [String: Any]] as [Any]]]
        XCTAssertEqual(CBLJSON.value(atPointer: "/a/b/0", inObject: object) as? Int, 10)
        XCTAssertEqual(CBLJSON.value(atPointer: "/a/b/1/c~1d", inObject: object) as? String, "x")
        XCTAssertEqual(CBLJSON.value(atPointer: "/a/b/1/e~0f", inObject: object) as? String, "y")
        XCTAssertNil(CBLJSON.value(atPointer: "/a/b/7", inObject: object))

        let appended = try XCTUnwrap(CBLJSON.appendDictionary(["z": 1], toJSONDictionaryData: Data(#"{"a":true}"#.utf8)))
        XCTAssertEqual(String(decoding: appended, as: UTF8.self), #"{"a":true,"z":1}"#)
        XCTAssertEqual(CBLJSON.appendDictionary(["z": 1], toJSONDictionaryData: Data("{}".utf8)), Data(#"{"z":1}"#.utf8))
        XCTAssertGreaterThan(CBLJSON.estimateMemorySize(object), 100)
    }

    // MARK: Codable

    struct Task: Codable, Equatable {
        var title: String
        var createdAt: Date
        var checked: Bool
        var photo: Data?
        var tags: [String]
        var priority: Int8
        var ratio: Float
    }

    func testDocumentsDecodeAndPutCodableValues() throws {
        let task = Task(title: "Milk", createdAt: Date(timeIntervalSince1970: 1_452_899_320.803), checked: false,
                        photo: Data([1, 2, 3]), tags: ["a"], priority: 3, ratio: 0.5)
        let doc = try XCTUnwrap(db.document(withID: "task1"))
        try doc.putProperties(from: task)
        XCTAssertEqual(doc["createdAt"] as? String, "2016-01-15T23:08:40.803Z")
        XCTAssertEqual(doc["photo"] as? String, "AQID")
        XCTAssertEqual(try doc.decode(as: Task.self), task)
        XCTAssertEqual(try doc.currentRevision?.decode(as: Task.self), task)

        // Updating keeps attachments and `_` properties and replaces the rest.
        try doc.update { rev in
            rev.setAttachmentNamed("a.txt", withContentType: "text/plain", content: Data("hi".utf8))
            return true
        }
        var edited = task
        edited.checked = true
        edited.photo = nil
        try doc.putProperties(from: edited)
        XCTAssertNil(doc["photo"], "a nil optional is left out")
        XCTAssertEqual(doc.currentRevision?.attachmentNames, ["a.txt"])
        XCTAssertEqual(try doc.decode(as: Task.self), edited)

        struct Missing: Decodable { var nothere: String }
        XCTAssertThrowsError(try doc.decode(as: Missing.self))
        XCTAssertThrowsError(try db.document(withID: "absent")!.decode(as: Task.self)) { error in
            XCTAssertEqual((error as NSError).code, 404)
        }

        let newRev = doc.newRevision()
        try newRev.setUserProperties(from: task)
        try newRev.save()
        XCTAssertEqual(try doc.decode(as: Task.self), task)
        XCTAssertEqual(doc.currentRevision?.attachmentNames, ["a.txt"])

        XCTAssertEqual(try CBLJSON.decode(Task.self, fromJSONObject: try CBLJSON.jsonObject(fromEncodable: task)), task)
    }

    func testQueryRowsDecode() throws {
        struct Row: Decodable { let title: String }
        for i in 0..<3 { try db.document(withID: "d\(i)")!.putProperties(["title": "T\(i)", "at": "2016-01-0\(i + 1)T00:00:00.000Z"]) }
        let view = db.viewNamed("byTitle")
        view.setMapBlock({ doc, emit in emit([doc["title"]!, doc["at"]!], ["len": (doc["title"] as! String).count]) }, version: "1")
        let query = view.createQuery()
        query.prefetch = true
        let result = try query.run()
        XCTAssertEqual(try result.decode(as: Row.self).map(\.title), ["T0", "T1", "T2"])
        let row = result.row(at: 1)
        XCTAssertEqual(try row.decode(as: Row.self).title, "T1")
        struct Value: Decodable { let len: Int }
        XCTAssertEqual(try row.decodeValue(as: Value.self).len, 2)
        let key = try row.decodeKey(as: [String].self)
        XCTAssertEqual(key, ["T1", "2016-01-02T00:00:00.000Z"])
        struct Key: Decodable {
            let title: String
            let at: Date
            init(from decoder: Decoder) throws {
                var c = try decoder.unkeyedContainer()
                title = try c.decode(String.self)
                at = try c.decode(Date.self)
            }
        }
        XCTAssertEqual(try row.decodeKey(as: Key.self).at, Date(timeIntervalSince1970: 1_451_692_800))
    }

    // MARK: In-place edits of an unsaved revision (1.x handed out a mutable dictionary)

    func testUnsavedRevisionPropertiesSetValueInPlace() throws {
        let doc = try XCTUnwrap(db.document(withID: "person"))
        try doc.putProperties(["name": "old", "age": 40])
        let newRev = doc.newRevision()
        newRev.properties?.setValue("Alice", forKey: "name")
        newRev.properties?.setValue(nil, forKey: "age")
        newRev.userProperties?.setValue(true, forKey: "active")
        XCTAssertEqual(newRev.properties?.value(forKey: "name") as? String, "Alice")
        try newRev.save()
        XCTAssertEqual(doc["name"] as? String, "Alice")
        XCTAssertNil(doc["age"])
        XCTAssertEqual(doc["active"] as? Bool, true)

        var dict: [String: Any] = ["a": ["b": ["c": 1]]]
        dict.setValue(2, forKey: "z")
        XCTAssertEqual(dict.value(forKeyPath: "a.b.c") as? Int, 1)
        XCTAssertEqual(dict.value(forKey: "z") as? Int, 2)
    }
}
