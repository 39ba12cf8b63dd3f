import Foundation
import JSONCore
import XCTest
@testable import CouchbaseLite

/// `CBLUnsavedRevision.properties` as 1.x's mutable dictionary owned by the revision, while every
/// Swift-dictionary spelling keeps compiling and working (issue 19, "the remaining 1.x calls").
final class UnsavedRevisionPropertiesTests: DatabaseTestCase {
    private func savedRevision() throws -> CBLSavedRevision {
        try db.document(withID: "game")!.putProperties(["name": "Chess", "players": 2, "indoor": true, "tags": ["board"]])
    }

    func testTheRealAppSnippetSavesTheEditsMadeThroughALetReference() throws {
        let savedRevision: CBLSavedRevision? = try self.savedRevision()
        // Exactly the real app's code:
        let newRev1 = savedRevision?.createRevision()
        let propsRev1 = newRev1?.properties
        propsRev1?.setValue("Foosball", forKey: "name")
        try newRev1?.saveAllowingConflict()

        let doc = db.document(withID: "game")!
        XCTAssertEqual(doc["name"] as? String, "Foosball")
        XCTAssertEqual(doc["players"] as? Int, 2)
        XCTAssertEqual(doc["indoor"] as? Bool, true)
        XCTAssertEqual(doc["tags"] as? [String], ["board"])
        XCTAssertEqual(doc.currentRevision?.properties?["name"] as? String, "Foosball")
        XCTAssertTrue(doc.currentRevisionID?.hasPrefix("2-") == true)
    }

    func testTheDictionaryIsTheRevisionsOwnAndStaysLive() throws {
        let rev = try savedRevision().createRevision()
        let a = try XCTUnwrap(rev.properties)
        let b = try XCTUnwrap(rev.properties)
        XCTAssertTrue(a === b, "one dictionary, owned by the revision")
        a.setValue(4, forKey: "players")
        a["venue"] = "pub"
        a.setValue(nil, forKey: "tags")
        XCTAssertEqual(rev["players"] as? Int, 4)
        XCTAssertEqual(rev["venue"] as? String, "pub")
        XCTAssertNil(rev["tags"])
        rev["name"] = "Darts"
        XCTAssertEqual(a["name"] as? String, "Darts", "edits through the revision show in the dictionary")
        let saved = try rev.save()
        XCTAssertEqual(saved["players"] as? Int, 4)
        XCTAssertEqual(saved["venue"] as? String, "pub")
        XCTAssertEqual(saved["name"] as? String, "Darts")
        XCTAssertNil(saved["tags"])
    }

    func testEverySwiftDictionarySpellingStillWorks() throws {
        let parent = try savedRevision()
        let newRev = parent.createRevision()

        // Reading with subscripts and casts.
        XCTAssertEqual(newRev.properties?["name"] as? String, "Chess")
        XCTAssertEqual(newRev.properties?["players"] as? Int, 2)
        XCTAssertEqual(newRev.properties?["indoor"] as? Bool, true)
        XCTAssertEqual(newRev.properties?["tags"] as? [String], ["board"])
        let asDictionary = try XCTUnwrap(newRev.properties as? [String: Any])
        XCTAssertEqual(asDictionary["name"] as? String, "Chess")
        let typed: [String: Any]? = newRev.properties
        XCTAssertEqual(typed?["_id"] as? String, "game")
        guard let name = newRev.properties?["name"] as? String else { return XCTFail("no name") }
        XCTAssertEqual(name, "Chess")
        let asBase: CBLRevision = newRev
        XCTAssertEqual(asBase.properties?["players"] as? Int, 2)
        XCTAssertEqual(parent.properties?["name"] as? String, "Chess", "a saved revision's are a Swift dictionary")

        // In-place edits, each spelling.
        newRev.properties?.setValue("Go", forKey: "name")
        newRev.properties?["players"] = 3
        newRev.properties?.setValue(nil, forKey: "indoor")
        newRev["tags"] = ["ancient"]
        XCTAssertEqual(newRev.properties?.value(forKey: "name") as? String, "Go")
        var copy = newRev.properties as [String: Any]?
        copy?["ignored"] = true
        XCTAssertNil(newRev["ignored"], "a Swift copy is a copy")
        let saved = try newRev.save()
        XCTAssertEqual(saved["name"] as? String, "Go")
        XCTAssertEqual(saved["players"] as? Int, 3)
        XCTAssertNil(saved["indoor"])
        XCTAssertEqual(saved["tags"] as? [String], ["ancient"])

        // Assigning a Swift dictionary (literal or variable) replaces them.
        let next = saved.createRevision()
        let replacement: [String: Any] = ["name": "Tennis", "players": 4]
        next.properties = replacement
        XCTAssertEqual(next.properties?["name"] as? String, "Tennis")
        let third = try next.save()
        XCTAssertEqual(bodyProperties(third.properties).keys.sorted(), ["name", "players"])
        let fourth = third.createRevision()
        fourth.properties = ["name": "Squash"]
        XCTAssertEqual(try fourth.save()["name"] as? String, "Squash")

        // userProperties keeps the `_` keys.
        let fifth = db.document(withID: "game")!.newRevision()
        fifth.userProperties = ["name": "Polo", "horses": true]
        XCTAssertEqual(fifth.properties?["_id"] as? String, "game")
        fifth.userProperties?.setValue(8, forKey: "players")
        let savedFifth = try fifth.save()
        XCTAssertEqual(savedFifth.userProperties?.keys.sorted(), ["horses", "name", "players"])

        // The document-level spelling.
        let doc = db.document(withID: "game")!
        var p = doc.properties
        p?["name"] = "Bridge"
        try doc.putProperties(p!)
        XCTAssertEqual(doc["name"] as? String, "Bridge")
    }

    func testNumbersAndNestedValuesSurviveTheMutableDictionary() throws {
        let rev = db.document(withID: "n")!.newRevision()
        let props = try XCTUnwrap(rev.properties)
        props.setValue(42, forKey: "int")
        props.setValue(2.5, forKey: "double")
        props.setValue(false, forKey: "bool")
        props.setValue(["a": [1, 2, ["b": NSNull()]]], forKey: "nested")
        let saved = try rev.save()
        let json = try JSON.canonicalData(bodyProperties(saved.properties))
        XCTAssertEqual(String(decoding: json, as: UTF8.self),
                       #"{"bool":false,"double":2.5,"int":42,"nested":{"a":[1,2,{"b":null}]}}"#)
    }
}
